"""The fitted tree: plain node arrays, prediction without the GIL."""

import numpy as np
from scipy import sparse

from libc.math cimport floor, isnan

cdef double _N_CODES = 256.0

_ARRAYS = ("children_left", "children_right", "feature", "threshold",
           "n_node_samples", "node_objective", "intercept", "coef")
# Keyword-only arrays with a default (older call sites and descriptions lack
# them): the training-value gap around each threshold, NaN where unknown.
_OPTIONAL_ARRAYS = ("gap_lower", "gap_upper")


def _int_array(values, name, dtype):
    """``values`` as a contiguous integer array; non-integral numbers are an error."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array) & (array == np.round(array))):
            raise ValueError(f"{name} must hold integers")
    elif array.size and array.dtype.kind not in "iub":
        raise ValueError(f"{name} must hold integers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=dtype)


def _flag_array(values, name, count):
    """A 0/1 flag per node (all 0 when ``values`` is None)."""
    if values is None:
        return np.zeros(count, dtype=np.uint8)
    array = _int_array(values, name, np.intp)
    if np.any((array != 0) & (array != 1)):
        raise ValueError(f"{name} must hold 0 or 1")
    return np.ascontiguousarray(array, dtype=np.uint8)


def _rebuild(arrays):
    """Unpickle a :class:`Tree` (any set of optional arrays)."""
    return Tree.from_arrays(arrays)


# Arrays added after the first format; keyword-only, with defaults that
# describe a tree of numeric splits fitted without missing values or weights.
_TABLE_ARRAYS = ("missing_go_left", "is_categorical", "categories_left",
                 "weighted_n_node_samples", "fill_value")
# fill_value has one entry per feature, the others one per node.
_PER_NODE_TABLE_ARRAYS = tuple(name for name in _TABLE_ARRAYS if name != "fill_value")
# Training statistics of every node (clarytree._explain.node_statistics):
# boxes and target ranges (unbounded by default) and the model shares of the
# feature importances (0 by default).
_STAT_ARRAYS = ("box_lower", "box_upper", "target_lower", "target_upper", "model_share")
# Categorical splits send a set of level codes left, as a 256-bit set.
MAX_CATEGORIES = 256
CATEGORY_WORDS = MAX_CATEGORIES // 32


def categories_bitset(codes):
    """The ``categories_left`` row (8 uint32 words) of a set of level codes."""
    words = np.zeros(CATEGORY_WORDS, dtype=np.uint32)
    for c in np.asarray(codes, dtype=np.intp).ravel():
        if not 0 <= c < MAX_CATEGORIES:
            raise ValueError(f"level codes must lie in [0, {MAX_CATEGORIES}), got {c}")
        words[c >> 5] |= np.uint32(1 << (c & 31))
    return words


def bitset_codes(words):
    """Level codes whose bit is set in a ``categories_left`` row."""
    words = np.asarray(words, dtype=np.uint32)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
    return np.flatnonzero(bits.ravel())


cdef class Tree:
    """Binary tree with a linear model in every node.

    Parameters
    ----------
    n_features : int
        Number of input columns.
    children_left, children_right : ndarray of shape (node_count,), intp
        Child node ids, ``-1`` for leaves.
    feature : ndarray of shape (node_count,), intp
        Split feature, ``-2`` for leaves.
    threshold : ndarray of shape (node_count,), float64
        Rows with ``x[feature] <= threshold`` go left.
    n_node_samples : ndarray of shape (node_count,), intp
        Training rows reaching each node.
    node_objective : ndarray of shape (node_count,), float64
        Leaf objective (loss plus ridge penalty) of each node's training rows.
    intercept : ndarray of shape (node_count,), float64
    coef : ndarray of shape (node_count, n_features), float64
        Each node's own leaf model in original units: the prediction of a row
        reaching leaf ``l`` is ``intercept[l] + x @ coef[l]``, where a missing
        (NaN) ``x[j]`` counts as ``fill_value[j]``, evaluated as the intercept
        plus the products ``x[j] * coef[l, j]`` of the nonzero coefficients
        added one by one in feature order.
    gap_lower, gap_upper : ndarray of shape (node_count,), float64, optional
        At a split, the largest training value of the split feature that went
        left and the smallest that went right: any threshold in
        ``[gap_lower, gap_upper)`` routes the node's training rows like
        ``threshold``. Exports print a short decimal from this gap. NaN for
        leaves and where unknown (the default).
    missing_go_left : ndarray of shape (node_count,), uint8, optional
        1 where a row whose split feature is NaN goes left (0 for leaves).
        Default: 0 everywhere.
    is_categorical : ndarray of shape (node_count,), uint8, optional
        1 for a split on a categorical feature: the column holds level codes
        0..K-1 (as floats), code ``c`` goes left when bit ``c`` of
        ``categories_left[node]`` is set, and NaN (missing, or a level unseen
        in training) follows ``missing_go_left``; ``threshold`` is unused
        (``TREE_UNDEFINED``).  Default: 0 everywhere.
    categories_left : ndarray of shape (node_count, 8), uint32, optional
        The left level set of each categorical split, a 256-bit set (bit
        ``c & 31`` of word ``c >> 5``).  Default: empty sets.
    weighted_n_node_samples : ndarray of shape (node_count,), float64, optional
        Training weight reaching each node.  Default: ``n_node_samples``.
    fill_value : ndarray of shape (n_features,), float64, optional
        Value of a missing feature in the leaf equations (its weighted
        training mean, so it adds nothing to a standardized leaf model).
        Default: zeros.
    box_lower, box_upper : ndarray of shape (node_count, n_features), optional
        Each node's training box: the smallest and largest value of every
        feature over the node's training rows (``-inf``/``+inf`` where a
        feature is unbounded or not tracked).  ``predict(X, clip=True)`` moves
        each value into its leaf's box before applying the leaf model.
        Default: unbounded.
    target_lower, target_upper : ndarray of shape (node_count,), optional
        Smallest and largest training target of each node (default: -inf and
        +inf).
    model_share : ndarray of shape (node_count, n_features), optional
        Each feature's share of the variation of the node's own model over
        the node's training rows (see
        ``clarytree._explain.feature_importances``); default 0.

    Notes
    -----
    A numeric split may have threshold ``-inf`` (missing values left, every
    present value right) or ``+inf`` (every present value left, missing
    values right): the "missing versus present" splits.
    """

    def __init__(self, Py_ssize_t n_features, children_left, children_right,
                 feature, threshold, n_node_samples, node_objective,
                 intercept, coef, *, gap_lower=None, gap_upper=None,
                 missing_go_left=None, is_categorical=None, categories_left=None,
                 weighted_n_node_samples=None, fill_value=None, box_lower=None,
                 box_upper=None, target_lower=None, target_upper=None, model_share=None):
        self.n_features = n_features
        self.children_left = _int_array(children_left, "children_left", np.intp)
        self.node_count = self.children_left.shape[0]
        self.children_right = _int_array(children_right, "children_right", np.intp)
        self.feature = _int_array(feature, "feature", np.intp)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.n_node_samples = _int_array(n_node_samples, "n_node_samples", np.intp)
        self.node_objective = np.ascontiguousarray(node_objective, dtype=np.float64)
        self.intercept = np.ascontiguousarray(intercept, dtype=np.float64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64).reshape(
            self.node_count, n_features)
        self.gap_lower = self._optional(gap_lower)
        self.gap_upper = self._optional(gap_upper)
        count = self.node_count
        self.missing_go_left = _flag_array(missing_go_left, "missing_go_left", count)
        self.is_categorical = _flag_array(is_categorical, "is_categorical", count)
        self.categories_left = np.ascontiguousarray(
            np.zeros((count, CATEGORY_WORDS)) if categories_left is None
            else categories_left, dtype=np.uint32).reshape(count, CATEGORY_WORDS)
        self.weighted_n_node_samples = np.ascontiguousarray(
            self.n_node_samples if weighted_n_node_samples is None
            else weighted_n_node_samples, dtype=np.float64)
        self.fill_value = np.ascontiguousarray(
            np.zeros(n_features) if fill_value is None else fill_value, dtype=np.float64)
        shape = (count, n_features)
        self.box_lower = _float_array(box_lower, shape, -np.inf)
        self.box_upper = _float_array(box_upper, shape, np.inf)
        self.target_lower = _float_array(target_lower, (count,), -np.inf)
        self.target_upper = _float_array(target_upper, (count,), np.inf)
        self.model_share = _float_array(model_share, shape, 0.0)
        self._validate()
        for name in _ARRAYS + _OPTIONAL_ARRAYS + _TABLE_ARRAYS + _STAT_ARRAYS:
            getattr(self, name).setflags(write=False)
        self._left = self.children_left
        self._right = self.children_right
        self._feature = self.feature
        self._threshold = self.threshold
        self._intercept = self.intercept
        self._coef = self.coef
        self._missing_left = self.missing_go_left
        self._is_categorical = self.is_categorical
        self._categories_left = self.categories_left
        self._fill = self.fill_value
        self._box_lower = self.box_lower
        self._box_upper = self.box_upper

    def _optional(self, values):
        if values is None:
            return np.full(self.node_count, np.nan)
        return np.ascontiguousarray(
            [np.nan if v is None else v for v in values], dtype=np.float64)

    def _validate(self):
        count = self.node_count
        if count < 1:
            raise ValueError("a tree needs at least one node")
        for name in _ARRAYS + _OPTIONAL_ARRAYS + _PER_NODE_TABLE_ARRAYS:
            if getattr(self, name).shape[0] != count:
                raise ValueError(f"{name} must have {count} entries")
        if self.fill_value.shape != (self.n_features,):
            raise ValueError(f"fill_value must have {self.n_features} entries")
        left, right = self.children_left, self.children_right
        internal = left != TREE_LEAF
        if np.any((right != TREE_LEAF) != internal):
            raise ValueError("a node must have both children or none")
        ids = np.arange(count)
        if np.any(internal & ((left <= ids) | (right <= ids) | (left >= count)
                              | (right >= count))):
            raise ValueError("children must be later nodes of the tree")
        parents = np.bincount(np.r_[left[internal], right[internal]], minlength=count)
        if parents[0] != 0 or np.any(parents[1:] != 1):
            raise ValueError("every node but the root must be the child of exactly one "
                             "node")
        feat = self.feature[internal]
        if np.any((feat < 0) | (feat >= self.n_features)):
            raise ValueError("split features must index the input columns")
        numeric = internal & (self.is_categorical == 0)
        thr = self.threshold[numeric]
        go_left = self.missing_go_left[numeric]
        # +-inf only as the "missing versus present" splits.
        if not np.all(np.isfinite(thr) | ((thr == -np.inf) & (go_left == 1))
                      | ((thr == np.inf) & (go_left == 0))):
            raise ValueError("split thresholds must be finite (or -inf with missing "
                             "values left, +inf with missing values right)")
        if np.any(self.missing_go_left[~internal] != 0):
            raise ValueError("missing_go_left must be 0 for leaves")
        if np.any((self.is_categorical != 0) & ~internal):
            raise ValueError("is_categorical must be 0 for leaves")
        if (np.any(np.isnan(self.box_lower)) or np.any(np.isnan(self.box_upper))
                or np.any(self.box_lower > self.box_upper)):
            raise ValueError("training boxes need box_lower <= box_upper (no NaN)")
        if (np.any(np.isnan(self.target_lower)) or np.any(np.isnan(self.target_upper))
                or np.any(self.target_lower > self.target_upper)):
            raise ValueError("target ranges need target_lower <= target_upper (no NaN)")

    def __reduce__(self):
        return (_rebuild, (self.to_arrays(),))

    def to_arrays(self):
        """Dict of the node arrays (copies) and ``n_features``."""
        out = {name: np.array(getattr(self, name))
               for name in _ARRAYS + _OPTIONAL_ARRAYS + _TABLE_ARRAYS + _STAT_ARRAYS}
        out["n_features"] = self.n_features
        return out

    @classmethod
    def from_arrays(cls, arrays):
        """Rebuild a tree from :meth:`to_arrays` output (lists are accepted).

        Optional arrays that ``arrays`` lacks (older files) get their defaults.
        """
        optional = {name: arrays[name] for name in _OPTIONAL_ARRAYS
                    if arrays.get(name) is not None}
        optional.update({name: np.asarray(arrays[name]) for name in _TABLE_ARRAYS
                         if arrays.get(name) is not None})
        optional.update({name: np.asarray(arrays[name], dtype=np.float64)
                         for name in _STAT_ARRAYS if arrays.get(name) is not None})
        return cls(int(arrays["n_features"]),
                   *(np.asarray(arrays[name]) for name in _ARRAYS), **optional)

    @property
    def n_leaves(self):
        return int(np.count_nonzero(self.children_left == TREE_LEAF))

    @property
    def max_depth(self):
        depth = np.zeros(self.node_count, dtype=np.intp)
        for node in range(self.node_count):
            if self.children_left[node] != TREE_LEAF:
                depth[self.children_left[node]] = depth[node] + 1
                depth[self.children_right[node]] = depth[node] + 1
        return int(depth.max())

    def _check_input(self, X):
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_features}), got {X.shape}")
        return X

    cdef bint _goes_left(self, Py_ssize_t node, double x) noexcept nogil:
        cdef int code
        if isnan(x):
            return self._missing_left[node]
        if self._is_categorical[node]:
            # A code outside the learned levels counts as unseen (missing).
            if not (x >= 0.0 and x < _N_CODES and x == floor(x)):
                return self._missing_left[node]
            code = <int>x
            return (self._categories_left[node, code >> 5] >> (code & 31)) & 1
        return x <= self._threshold[node]

    cdef inline Py_ssize_t _child(self, Py_ssize_t node, double x) noexcept nogil:
        return self._left[node] if self._goes_left(node, x) else self._right[node]

    cdef inline double _filled(self, const double[:, ::1] X, Py_ssize_t i,
                               Py_ssize_t j) noexcept nogil:
        # A leaf model reads a missing value as its fill value.
        return self._fill[j] if isnan(X[i, j]) else X[i, j]

    cdef void _apply(self, const double[:, ::1] X, Py_ssize_t[::1] out) noexcept nogil:
        cdef Py_ssize_t i, node
        for i in range(X.shape[0]):
            node = 0
            while self._left[node] != TREE_LEAF:
                node = self._child(node, X[i, self._feature[node]])
            out[i] = node

    def apply(self, X):
        """Leaf id of each row of ``X`` (float64, shape (n, n_features))."""
        X = self._check_input(X)
        out = np.empty(X.shape[0], dtype=np.intp)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t[::1] outv = out
        with nogil:
            self._apply(Xv, outv)
        return out

    cdef double _leaf_value(self, const double[:, ::1] X, Py_ssize_t i, Py_ssize_t leaf,
                            bint clip, double[:, ::1] terms, bint store) noexcept nogil:
        cdef Py_ssize_t j
        cdef double acc = self._intercept[leaf], x, c, t
        for j in range(self.n_features):
            c = self._coef[leaf, j]
            if c == 0.0:
                continue
            x = X[i, j]
            if isnan(x):
                # The fill value is what the leaf model read for a missing
                # value in training too: never clipped.
                x = self._fill[j]
            elif clip:
                if x < self._box_lower[leaf, j]:
                    x = self._box_lower[leaf, j]
                elif x > self._box_upper[leaf, j]:
                    x = self._box_upper[leaf, j]
            t = x * c
            if store:
                terms[i, j] = t
            acc = acc + t
        return acc

    def predict(self, X, bint clip=False):
        """Leaf model of each row's leaf: ``intercept[leaf] + x @ coef[leaf]``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float64
            A missing (NaN) value counts as ``fill_value`` in the leaf model.
        clip : bool, default=False
            Move every value into the leaf's training box
            (``box_lower``/``box_upper``) before applying the leaf model.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        X = self._check_input(X)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t[::1] leaves = np.empty(X.shape[0], dtype=np.intp)
        out = np.empty(X.shape[0], dtype=np.float64)
        cdef double[::1] outv = out
        cdef double[:, ::1] no_terms = np.empty((0, 0))
        cdef Py_ssize_t i
        with nogil:
            self._apply(Xv, leaves)
            for i in range(Xv.shape[0]):
                outv[i] = self._leaf_value(Xv, i, leaves[i], clip, no_terms, False)
        return out

    def contributions(self, X, bint clip=False):
        """Each row's leaf, leaf-model terms and prediction, computed as ``predict``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features), float64
        clip : bool, default=False
            As in :meth:`predict`.

        Returns
        -------
        leaves : ndarray of shape (n_samples,), intp
        terms : ndarray of shape (n_samples, n_features), float64
            ``x[j] * coef[leaf, j]`` (missing values filled, then clipped),
            0 where the coefficient is 0.  Adding them one by one in column
            order to ``intercept[leaves]`` gives ``prediction`` bit for bit.
        prediction : ndarray of shape (n_samples,)
            Equal to ``predict(X, clip)``.
        """
        X = self._check_input(X)
        cdef const double[:, ::1] Xv = X
        leaves_arr = np.empty(X.shape[0], dtype=np.intp)
        terms_arr = np.zeros((X.shape[0], self.n_features))
        out = np.empty(X.shape[0], dtype=np.float64)
        cdef Py_ssize_t[::1] leaves = leaves_arr
        cdef double[:, ::1] terms = terms_arr
        cdef double[::1] outv = out
        cdef Py_ssize_t i
        with nogil:
            self._apply(Xv, leaves)
            for i in range(Xv.shape[0]):
                outv[i] = self._leaf_value(Xv, i, leaves[i], clip, terms, True)
        return leaves_arr, terms_arr, out

    def training_statistics(self, X, y, features, double scale=1.0, sample_weight=None):
        """Training statistics of every node, in one nogil pass per row.

        See :func:`clarytree._explain.node_statistics` for their meaning.
        Each row walks its path from the root; the shares are centred with
        the node's weighted means from a first pass (two passes, as a
        centred sum of products is exact where the raw-moment formula
        cancels).

        Returns
        -------
        lower, upper : ndarray of shape (node_count, n_features)
        y_lower, y_upper : ndarray of shape (node_count,)
        share : ndarray of shape (node_count, n_features)
            In units of ``(y / scale) ** 2``.
        """
        X = self._check_input(X)
        cdef Py_ssize_t n = X.shape[0], count = self.node_count, p = self.n_features
        y_arr = np.ascontiguousarray(y, dtype=np.float64)
        w_arr = (np.ones(n) if sample_weight is None
                 else np.ascontiguousarray(sample_weight, dtype=np.float64))
        feat_arr = np.ascontiguousarray(features, dtype=np.intp)
        if y_arr.shape[0] != n or w_arr.shape[0] != n:
            raise ValueError("X, y and sample_weight need the same number of rows")
        if feat_arr.size and (feat_arr.min() < 0 or feat_arr.max() >= p):
            raise ValueError(f"features must lie in [0, {p})")
        # Each node's model terms: the columns with a nonzero coefficient,
        # in units of y / scale.
        coef = np.asarray(self.coef) / scale
        used_ptr = np.zeros(count + 1, dtype=np.intp)
        used_ptr[1:] = np.cumsum(np.count_nonzero(coef, axis=1))
        used_idx = np.ascontiguousarray(np.nonzero(coef)[1], dtype=np.intp)
        lower = np.full((count, p), np.inf)
        upper = np.full((count, p), -np.inf)
        y_lower = np.full(count, np.inf)
        y_upper = np.full(count, -np.inf)
        share = np.zeros((count, p))
        weight = np.zeros(count)
        mean_t = np.zeros((count, p))
        mean_fit = np.zeros(count)
        cdef const double[:, ::1] Xv = X
        cdef const double[::1] yv = y_arr, wv = w_arr
        cdef const Py_ssize_t[::1] fv = feat_arr, uptr = used_ptr, uidx = used_idx
        cdef const double[:, ::1] cv = coef
        cdef double[:, ::1] lo = lower, hi = upper, sh = share, mt = mean_t
        cdef double[::1] ylo = y_lower, yhi = y_upper, wsum = weight, mfit = mean_fit
        cdef Py_ssize_t i, node, k, j, n_feat = feat_arr.shape[0]
        cdef double x, wi, fitted, t
        with nogil:
            # Pass 1: boxes, target range, weights and weighted sums.
            for i in range(n):
                wi = wv[i]
                node = 0
                while True:
                    for k in range(n_feat):
                        # A missing value (NaN) compares false: it bounds
                        # nothing.  Selects, not branches: a tenth of the
                        # values missing at random would be mispredicted.
                        x = Xv[i, fv[k]]
                        t = lo[node, fv[k]]
                        lo[node, fv[k]] = x if x < t else t
                        t = hi[node, fv[k]]
                        hi[node, fv[k]] = x if x > t else t
                    if yv[i] < ylo[node]:
                        ylo[node] = yv[i]
                    if yv[i] > yhi[node]:
                        yhi[node] = yv[i]
                    wsum[node] += wi
                    fitted = 0.0
                    for k in range(uptr[node], uptr[node + 1]):
                        j = uidx[k]
                        x = self._filled(Xv, i, j)
                        t = x * cv[node, j]
                        mt[node, j] += wi * t
                        fitted = fitted + t
                    mfit[node] += wi * fitted
                    if self._left[node] == TREE_LEAF:
                        break
                    node = self._child(node, Xv[i, self._feature[node]])
            for node in range(count):
                if wsum[node] > 0.0:
                    mfit[node] = mfit[node] / wsum[node]
                    for k in range(uptr[node], uptr[node + 1]):
                        mt[node, uidx[k]] = mt[node, uidx[k]] / wsum[node]
            # Pass 2: centred sums of products (term share of the fit's spread).
            for i in range(n):
                wi = wv[i]
                node = 0
                while True:
                    fitted = 0.0
                    for k in range(uptr[node], uptr[node + 1]):
                        j = uidx[k]
                        x = self._filled(Xv, i, j)
                        fitted = fitted + x * cv[node, j]
                    fitted = wi * (fitted - mfit[node])
                    for k in range(uptr[node], uptr[node + 1]):
                        j = uidx[k]
                        x = self._filled(Xv, i, j)
                        sh[node, j] += (x * cv[node, j] - mt[node, j]) * fitted
                    if self._left[node] == TREE_LEAF:
                        break
                    node = self._child(node, Xv[i, self._feature[node]])
        # Unseen (all missing) or nodes without rows: unbounded.
        empty = lower > upper
        lower[empty] = -np.inf
        upper[empty] = np.inf
        no_rows = y_lower > y_upper
        y_lower[no_rows] = -np.inf
        y_upper[no_rows] = np.inf
        untracked = np.ones(p, dtype=bool)
        untracked[feat_arr] = False
        lower[:, untracked] = -np.inf
        upper[:, untracked] = np.inf
        return lower, upper, y_lower, y_upper, share

    def decision_path(self, X):
        """CSR indicator matrix (n_samples, node_count) of the nodes visited."""
        X = self._check_input(X)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t n = X.shape[0], i, node, k = 0
        indptr = np.zeros(n + 1, dtype=np.intp)
        indices = np.empty(n * (self.max_depth + 1), dtype=np.intp)
        cdef Py_ssize_t[::1] ip = indptr, ind = indices
        with nogil:
            for i in range(n):
                node = 0
                while True:
                    ind[k] = node
                    k += 1
                    if self._left[node] == TREE_LEAF:
                        break
                    node = self._child(node, Xv[i, self._feature[node]])
                ip[i + 1] = k
        data = np.ones(k, dtype=np.intp)
        return sparse.csr_matrix((data, indices[:k], indptr),
                                 shape=(n, self.node_count))


def _float_array(values, shape, fill):
    """``values`` as a C-contiguous float64 array of ``shape`` (``fill`` if None)."""
    if values is None:
        return np.full(shape, fill)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.size != int(np.prod(shape)):
        raise ValueError(f"expected {int(np.prod(shape))} values for an array of shape "
                         f"{shape}, got {values.size}")
    return values.reshape(shape)
