"""Split search: threshold sweeps over presorted rows, partitioning."""

import numpy as np

from libc.math cimport INFINITY

from libc.stdlib cimport qsort
from libc.string cimport memcpy, memset

from ._criterion cimport Criterion
from ._splitter cimport SplitRecord, Candidate



cdef inline unsigned long long _row_key(Py_ssize_t row) noexcept nogil:
    # splitmix64 finalizer: a fixed pseudo-random 64-bit key per row, so the
    # sum of keys identifies a row set with negligible collision probability.
    cdef unsigned long long x = <unsigned long long>row + 0x9E3779B97F4A7C15ULL
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL
    return x ^ (x >> 31)


cdef int _cmp_candidates(const void* a, const void* b) noexcept nogil:
    cdef const Candidate* ca = <const Candidate*>a
    cdef const Candidate* cb = <const Candidate*>b
    if ca.n_left != cb.n_left:
        return -1 if ca.n_left < cb.n_left else 1
    if ca.key != cb.key:
        return -1 if ca.key < cb.key else 1
    if ca.position != cb.position:
        return -1 if ca.position < cb.position else 1
    return 0


cdef int _cmp_position(const void* a, const void* b) noexcept nogil:
    cdef Py_ssize_t pa = (<const Candidate*>a).position
    cdef Py_ssize_t pb = (<const Candidate*>b).position
    return -1 if pa < pb else (1 if pa > pb else 0)


cdef class Splitter:
    """Finds splits of a node and partitions its rows.

    Parameters
    ----------
    bins : ndarray of shape (n_samples, n_features), int32
        ``bins[i, f]`` is the number of pool thresholds of feature ``f``
        strictly below ``X[i, f]``; so ``X[i, f] <= t_j`` iff ``bins[i, f] <= j``.
    order : ndarray of shape (n_features, n_samples), int32
        Row indices sorted by each feature (modified in place while building).
    n_bins : ndarray of shape (n_features,), int32
        Number of bins of each feature (its thresholds + 1).
    min_samples_leaf : int
    criterion : Criterion
    """

    def __init__(self, const int[:, ::1] bins, int[:, ::1] order,
                 const int[::1] n_bins, Py_ssize_t min_samples_leaf,
                 Criterion criterion):
        self.n_samples = bins.shape[0]
        self.n_features = bins.shape[1]
        self.bins = bins
        self.order = order
        self.n_bins = n_bins
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.criterion = criterion
        self.route = 0
        self.tmp = np.empty(max(self.n_samples, 1), dtype=np.int32)
        self.goes_left = np.zeros(max(self.n_samples, 1), dtype=np.uint8)
        self.acc_left = np.empty(criterion.n_stats)
        self.acc_right = np.empty(criterion.n_stats)
        self.n_bulk_sweeps = 0
        self.n_incremental_sweeps = 0

    cdef void node_stats(self, Py_ssize_t start, Py_ssize_t end,
                         double* acc) noexcept nogil:
        memset(acc, 0, self.criterion.n_stats * sizeof(double))
        self.criterion.add_rows(acc, &self.order[0, start], end - start)

    cdef bint _use_incremental(self, Py_ssize_t m, Py_ssize_t f) noexcept nogil:
        # Flop model of appendix A.3: the bulk route pays one factorization
        # per distinct threshold (p^3 / 3 for both children), the incremental
        # route ~7 p^2 per row (update + downdate + carried rhs).
        cdef double p = self.criterion.p
        cdef double cands, bulk, incremental
        if self.route == 1 or not self.criterion.incremental_available():
            return False
        if self.route == 2:
            return True
        cands = min(<double>(self.n_bins[f] - 1), <double>(m - 1))
        bulk = cands * (p * p * p / 3.0 + 2.0 * p * p)
        incremental = 7.0 * m * p * p
        return incremental < bulk

    cdef bint best_split(self, Py_ssize_t start, Py_ssize_t end,
                         const double* total, SplitRecord* best) noexcept nogil:
        """Best admissible split by the sum of children's leaf losses.

        Features in order, thresholds ascending, strict improvement: ties go
        to the first candidate.  Returns False when no split is admissible.
        """
        cdef Py_ssize_t m = end - start, msl = self.min_samples_leaf
        cdef Py_ssize_t f, i, s, row, n_left, n_stats = self.criterion.n_stats
        cdef Py_ssize_t nf = self.n_features
        cdef int b, b_next
        cdef const int* rows
        cdef double* left = &self.acc_left[0]
        cdef double* right = &self.acc_right[0]
        cdef double loss_left, loss_right, score
        cdef bint incremental, found = False
        best.score = INFINITY
        if m < 2 * msl:
            return False
        for f in range(nf):
            rows = &self.order[f, start]
            if self.bins[rows[0], f] == self.bins[rows[m - 1], f]:
                continue        # constant on this node: no threshold separates
            incremental = self._use_incremental(m, f)
            if incremental:
                self.criterion.sweep_start(total)
                self.n_incremental_sweeps += 1
            else:
                memset(left, 0, n_stats * sizeof(double))
                self.n_bulk_sweeps += 1
            for i in range(m - 1):
                row = rows[i]
                if incremental:
                    self.criterion.sweep_move_left(row)
                else:
                    self.criterion.add_row(left, row, 1.0)
                b = self.bins[row, f]
                b_next = self.bins[rows[i + 1], f]
                if b == b_next:
                    continue    # tied bin: no threshold between these rows
                n_left = i + 1
                if n_left < msl:
                    continue
                if m - n_left < msl:
                    break
                if incremental:
                    loss_left = self.criterion.sweep_left_loss()
                    loss_right = self.criterion.sweep_right_loss()
                else:
                    for s in range(n_stats):
                        right[s] = total[s] - left[s]
                    loss_left = self.criterion.loss(left)
                    loss_right = self.criterion.loss(right)
                score = loss_left + loss_right
                if score < best.score:
                    best.score = score
                    best.feature = f
                    best.bin = b
                    best.n_left = n_left
                    found = True
        return found

    cdef Py_ssize_t max_candidates(self, Py_ssize_t n_rows) noexcept nogil:
        cdef Py_ssize_t f, total = 0
        for f in range(self.n_features):
            total += min(<Py_ssize_t>self.n_bins[f] - 1, n_rows - 1)
        return max(total, 1)

    cdef Py_ssize_t candidates(self, Py_ssize_t start, Py_ssize_t end,
                               Candidate* out) noexcept nogil:
        """All admissible splits in (feature, threshold) order.

        A threshold is admissible when it separates the node's rows and
        leaves at least ``min_samples_leaf`` rows on each side; among pool
        thresholds giving the same partition only the smallest is listed.
        Splits on different features that induce the same partition are
        flagged ``duplicate`` (all but the first), so they are scored once.
        """
        cdef Py_ssize_t m = end - start, msl = self.min_samples_leaf
        cdef Py_ssize_t f, i, n_left, count = 0, n_unique
        cdef const int* rows
        cdef int b
        cdef unsigned long long key
        if m < 2 * msl:
            return 0
        for f in range(self.n_features):
            rows = &self.order[f, start]
            if self.bins[rows[0], f] == self.bins[rows[m - 1], f]:
                continue
            key = 0
            for i in range(m - 1):
                key += _row_key(rows[i])
                b = self.bins[rows[i], f]
                if b == self.bins[rows[i + 1], f]:
                    continue
                n_left = i + 1
                if n_left < msl:
                    continue
                if m - n_left < msl:
                    break
                out[count].feature = f
                out[count].bin = b
                out[count].n_left = n_left
                out[count].key = key
                out[count].position = count
                out[count].duplicate = False
                count += 1
        if count > 1:
            qsort(out, count, sizeof(Candidate), _cmp_candidates)
            for i in range(1, count):
                if out[i].n_left == out[i - 1].n_left and out[i].key == out[i - 1].key:
                    out[i].duplicate = True
            qsort(out, count, sizeof(Candidate), _cmp_position)
        return count

    cdef Py_ssize_t partition(self, Py_ssize_t start, Py_ssize_t end,
                              Py_ssize_t feature, Py_ssize_t bin) noexcept nogil:
        """Stable partition of every feature's segment; returns the split index."""
        cdef Py_ssize_t g, i, row, write, n_right, m = end - start
        cdef Py_ssize_t nf = self.n_features
        cdef int* seg
        cdef int* tmp = &self.tmp[0]
        cdef unsigned char* mask = &self.goes_left[0]
        cdef const int* rows = &self.order[feature, start]
        for i in range(m):
            row = rows[i]
            mask[row] = self.bins[row, feature] <= bin
        write = 0
        for g in range(nf):
            seg = &self.order[g, start]
            write = 0
            n_right = 0
            for i in range(m):
                row = seg[i]
                if mask[row]:
                    seg[write] = <int>row
                    write += 1
                else:
                    tmp[n_right] = <int>row
                    n_right += 1
            memcpy(seg + write, tmp, n_right * sizeof(int))
        return start + write

    cdef void save(self, Py_ssize_t start, Py_ssize_t end,
                   int* buffer) noexcept nogil:
        cdef Py_ssize_t g, m = end - start
        for g in range(self.n_features):
            memcpy(buffer + g * m, &self.order[g, start], m * sizeof(int))

    cdef void restore(self, Py_ssize_t start, Py_ssize_t end,
                      const int* buffer) noexcept nogil:
        cdef Py_ssize_t g, m = end - start
        for g in range(self.n_features):
            memcpy(&self.order[g, start], buffer + g * m, m * sizeof(int))
