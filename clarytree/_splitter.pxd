# Split search over presorted row orders.
#
# A node is a segment [start, end) of ``order[f]`` for every feature f, each
# sorted by that feature's bin (then by row index).  Splitting partitions
# every feature's segment stably, so children stay sorted without re-sorting.

from ._criterion cimport Criterion


cdef struct SplitRecord:
    Py_ssize_t feature
    Py_ssize_t bin              # threshold index: rows with bin <= this go left
    Py_ssize_t n_left
    double score                # left leaf loss + right leaf loss


cdef struct Candidate:
    Py_ssize_t feature
    Py_ssize_t bin
    Py_ssize_t n_left
    unsigned long long key      # hash of the left row set (same partition -> same key)
    Py_ssize_t position         # enumeration order (feature, then threshold)
    bint duplicate              # an earlier candidate induces the same partition


cdef class Splitter:
    cdef readonly Py_ssize_t n_samples
    cdef readonly Py_ssize_t n_features
    cdef const int[:, ::1] bins         # (n_samples, n_features) threshold bins
    cdef int[:, ::1] order              # (n_features, n_samples) sorted rows
    cdef const int[::1] n_bins          # bins per feature (thresholds + 1)
    cdef Py_ssize_t min_samples_leaf
    cdef Criterion criterion
    cdef public int route               # 0 auto, 1 bulk, 2 incremental
    cdef int[::1] tmp                   # partition buffer
    cdef unsigned char[::1] goes_left
    cdef double[::1] acc_left, acc_right
    cdef public unsigned long long n_bulk_sweeps, n_incremental_sweeps

    cdef bint _use_incremental(self, Py_ssize_t m, Py_ssize_t f) noexcept nogil
    cdef void node_stats(self, Py_ssize_t start, Py_ssize_t end,
                         double* acc) noexcept nogil
    cdef bint best_split(self, Py_ssize_t start, Py_ssize_t end,
                         const double* total, SplitRecord* best) noexcept nogil
    cdef Py_ssize_t candidates(self, Py_ssize_t start, Py_ssize_t end,
                               Candidate* out) noexcept nogil
    cdef Py_ssize_t max_candidates(self, Py_ssize_t n_rows) noexcept nogil
    cdef Py_ssize_t partition(self, Py_ssize_t start, Py_ssize_t end,
                              Py_ssize_t feature, Py_ssize_t bin) noexcept nogil
    cdef void save(self, Py_ssize_t start, Py_ssize_t end,
                   int* buffer) noexcept nogil
    cdef void restore(self, Py_ssize_t start, Py_ssize_t end,
                      const int* buffer) noexcept nogil
