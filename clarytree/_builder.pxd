# Tree construction: greedy (CholeskyTree) and lookahead (CLARITree).

from ._criterion cimport Criterion
from ._splitter cimport Splitter, Candidate, SplitRecord


cdef struct NodeRecord:
    Py_ssize_t left_child
    Py_ssize_t right_child
    Py_ssize_t feature
    Py_ssize_t bin
    Py_ssize_t n_samples
    Py_ssize_t depth
    double loss                  # leaf objective of the node's rows (no penalty)


cdef class TreeBuilder:
    cdef Splitter splitter
    cdef Criterion criterion
    cdef readonly Py_ssize_t max_depth
    cdef readonly Py_ssize_t lookahead_depth
    cdef readonly double leaf_cost           # lambda * TSS
    cdef Py_ssize_t min_samples_leaf
    cdef Py_ssize_t n_stats
    cdef Py_ssize_t levels

    # Per (depth, side) slots: the statistics of the node being worked on.
    cdef double[:, :, ::1] totals            # (levels, 2, n_stats)
    cdef double[:, :, ::1] hists             # (levels, 2, hist_size * n_stats)
    cdef unsigned long long[:, :, ::1] keys  # (levels, 2, hist_size)
    cdef Candidate** cand                    # per depth: candidate lists
    cdef Py_ssize_t* cand_capacity
    cdef int** saved                         # per depth: node orders to restore
    cdef Py_ssize_t* saved_capacity

    cdef NodeRecord* nodes
    cdef double* coefs
    cdef Py_ssize_t node_count
    cdef Py_ssize_t node_capacity

    cdef object progress                     # callable(done, total) or None
    cdef public unsigned long long n_evaluations

    cdef double grow(self, Py_ssize_t start, Py_ssize_t end, Py_ssize_t depth,
                     int side, Py_ssize_t remaining, Py_ssize_t lookahead,
                     bint emit) noexcept nogil
    cdef void prepare_children(self, Py_ssize_t start, Py_ssize_t mid,
                               Py_ssize_t end, Py_ssize_t depth,
                               int side) noexcept nogil
    cdef bint _reserve(self, Py_ssize_t depth, Py_ssize_t n_cand,
                       Py_ssize_t n_saved) noexcept nogil
    cdef void emit_leaf_children(self, Py_ssize_t node, Py_ssize_t depth,
                                 Py_ssize_t m, const double* total,
                                 SplitRecord* record) noexcept nogil
    cdef Py_ssize_t push_node(self, Py_ssize_t depth, Py_ssize_t n_samples,
                              double loss, const double* acc) noexcept nogil
