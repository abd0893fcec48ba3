# The fitted tree as plain arrays (preorder; node 0 is the root).

# Node sentinels, shared by every module that writes or reads node arrays
# (also importable from Python: clarytree._tree.TREE_LEAF).
cpdef enum:
    TREE_LEAF = -1              # children of a leaf
    TREE_UNDEFINED = -2         # feature (and threshold) of a leaf


cdef class Tree:
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t node_count
    cdef readonly object children_left      # intp, TREE_LEAF for leaves
    cdef readonly object children_right     # intp, TREE_LEAF for leaves
    cdef readonly object feature            # intp, TREE_UNDEFINED for leaves
    cdef readonly object threshold          # float64, x <= threshold goes left
    cdef readonly object n_node_samples     # intp
    cdef readonly object node_objective     # float64, leaf loss of the node's rows
    cdef readonly object intercept          # float64, each node's own leaf model
    cdef readonly object coef               # float64 (node_count, n_features)
    cdef readonly object gap_lower          # float64, largest training value going left
    cdef readonly object gap_upper          # float64, smallest training value going right
    cdef readonly object missing_go_left    # uint8, 1 where NaN goes left (0 for leaves)
    cdef readonly object is_categorical     # uint8, 1 for a split on level codes
    cdef readonly object categories_left    # uint32 (node_count, 8): bit c <=> code c left
    cdef readonly object weighted_n_node_samples  # float64, training weight per node
    # float64 (n_features,): value of a missing x in the leaf equations (training mean)
    cdef readonly object fill_value
    cdef readonly object box_lower          # float64 (node_count, n_features), training box
    cdef readonly object box_upper          # float64 (node_count, n_features), +-inf unbounded
    cdef readonly object target_lower       # float64, smallest training target of the node
    cdef readonly object target_upper       # float64, largest training target of the node
    cdef readonly object model_share        # float64 (node_count, n_features), importances

    cdef const Py_ssize_t[::1] _left
    cdef const Py_ssize_t[::1] _right
    cdef const Py_ssize_t[::1] _feature
    cdef const double[::1] _threshold
    cdef const double[::1] _intercept
    cdef const double[:, ::1] _coef
    cdef const unsigned char[::1] _missing_left
    cdef const unsigned char[::1] _is_categorical
    cdef const unsigned int[:, ::1] _categories_left
    cdef const double[::1] _fill
    cdef const double[:, ::1] _box_lower
    cdef const double[:, ::1] _box_upper

    cdef bint _goes_left(self, Py_ssize_t node, double x) noexcept nogil
    cdef Py_ssize_t _child(self, Py_ssize_t node, double x) noexcept nogil
    cdef double _filled(self, const double[:, ::1] X, Py_ssize_t i,
                        Py_ssize_t j) noexcept nogil
    cdef void _apply(self, const double[:, ::1] X, Py_ssize_t[::1] out) noexcept nogil
    # The one place a leaf model is evaluated (predict, contributions): the
    # intercept plus the terms x_j * coef_j of the features with a nonzero
    # coefficient, added in feature order; a missing x_j counts as fill_value[j],
    # ``clip`` then moves x_j into the leaf's training box; the terms go to
    # ``terms[i]`` when ``store``.
    cdef double _leaf_value(self, const double[:, ::1] X, Py_ssize_t i, Py_ssize_t leaf,
                            bint clip, double[:, ::1] terms, bint store) noexcept nogil
