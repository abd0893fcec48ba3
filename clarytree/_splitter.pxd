# Split search.
#
# A node is a segment [start, end) of the row orders.  Features with few
# threshold bins ("histogram features") are searched from per-bin packed
# sums built in one pass over the node's rows (a sibling's histogram is the
# parent's minus the other child's).  Features with many bins are swept in
# sorted order: order[f] keeps every node's segment sorted by feature f, and
# partitioning is stable so children stay sorted without re-sorting.
#
# The Splitter object is read-only while a tree is built.  What a search
# writes (the row orders it partitions, its buffers, its counters) lives in
# a SplitterWork struct owned by one thread; statistics go to buffers the
# caller owns.

from libc.math cimport INFINITY, fabs
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from ._criterion cimport Criterion, CriterionWork


# Interrupts (Ctrl-C).  Signal handlers run in the main thread, which looks
# at pending signals at most every 5 ms: between nodes
# (BuildContext.check) and between the features of a slow node's search
# (Splitter.best_split), where a wide leaf model spends seconds per node.
cdef extern from "Python.h":
    # Declared without an exception value: the callers leave the error set
    # and return their own error code (a noexcept caller must not swallow it).
    int _check_signals "PyErr_CheckSignals" () noexcept


cdef inline double monotonic_now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


cdef inline int poll_signals(double* last_poll, double now) noexcept nogil:
    # Runs pending signal handlers when 5 ms have passed since the last
    # look: -1 when one raised (the error is set), else 0.
    if now - last_poll[0] < 0.005:
        return 0
    last_poll[0] = now
    with gil:
        return _check_signals()


cdef inline double tie_floor(const double* total, Py_ssize_t n_stats) noexcept nogil:
    # The absolute part of the tie tolerance (see ``improves``) at a node:
    # 1e-12 of its sum(w y^2), the last packed statistic.  Its losses are
    # computed from sums of that magnitude, so their rounding noise scales
    # with it, not with the (possibly tiny) losses themselves.
    return 1e-12 * fabs(total[n_stats - 1])


cdef inline bint improves(double score, double best, double floor) noexcept nogil:
    # Scores within 1e-10 (relative) of the incumbent, or within ``floor``
    # (``tie_floor`` of the node), count as ties, which go to the first
    # candidate in (feature, threshold) order: mathematically equal scores
    # (e.g. the same leaves reached through splits taken in another order,
    # or two exact fits whose losses are rounding noise) must not be decided
    # by rounding, which depends on the summation route and the platform.
    if best == INFINITY:
        return score < best
    return score < best - max(1e-10 * fabs(best), floor)


cdef inline bint enough_weight(double weight, double needed) noexcept nogil:
    # min_samples_leaf counts training weight: a row of weight w carries
    # sqrt(w) in its design row, so acc[0] (and the running sums of sweeps)
    # hold the weight up to rounding of the squares (~1e-16 relative per
    # row).  Unweighted rows sum to exact integers: the test is the row count.
    return weight >= needed * (1.0 - 1e-9)


# A categorical feature with at most this many bins (its levels and the
# missing bin) carries a split's level set as a bit mask in its ``bin`` (a
# non-negative Py_ssize_t).  A wider one (up to 64 * SET_WORDS bins) is
# searched the same way, by the prefixes of the node's level order, but its
# ``bin`` is the last rank of the prefix in that order: the set is recomputed
# from the node's histogram wherever it is needed (``level_set``), so
# candidates and split records keep their size.  The fitted tree's node
# records hold such a set as SET_WORDS 64-bit words (``set_words``).
cdef enum:
    MAX_SET_BINS = 63
    SET_WORDS = 5


# A numeric feature with missing values in training is one split column
# whose last bin holds the missing rows ("missing bin").  Each threshold of
# it is one candidate: the missing rows go to the side with the lower
# children's loss (right on a tie), and a split's ``bin`` carries this bit
# when they go left.  "Missing versus present" is one more candidate: every
# present row left (``bin`` = the last present bin), the missing rows right.
cdef enum:
    MISSING_LEFT_BIT = 1 << 30


# How sorted sweeps evaluate thresholds (the SearchRoute enum in Python).
cdef enum:
    ROUTE_AUTO = 0              # the cheaper of the two per node and feature
    ROUTE_BULK = 1              # one factorization per threshold
    ROUTE_INCREMENTAL = 2       # rank-one updates / downdates per row


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


cdef struct SplitterWork:
    int* order                  # (n_orders, n_samples) row orders, row-major
    bint owns_order             # False: the Splitter's own array (first thread)
    int* tmp                    # n_samples: partition buffer
    unsigned char* goes_left    # n_samples, indexed by row
    Py_ssize_t* bin_counts      # max bins: counting-sort buffer
    Py_ssize_t* row_bins        # n_features: one row's bins as element offsets (after bin_counts)
    double* acc_left            # n_stats
    double* acc_right           # n_stats
    double* row_stats           # n_stats
    double* acc_missing         # n_stats: the node's missing rows of one feature
    double* acc_alt             # n_stats: a threshold's left child with them
    double* floor_work          # 2 * n_stats: scratch of _missing_floor, _pair_child_losses
    # Search sums (see Splitter._add_stats_gram): a block's rows' packed
    # statistics, gram_block rows of urow_stride doubles (64-byte aligned,
    # zero beyond n_stats), and urow_stride doubles of scratch.
    void* urows_block           # the allocation behind urows
    double* urows
    double* urow_acc
    Py_ssize_t* gather_pos      # 4 * (max bins + 1): per-bin counts / positions
    int* gather_bins            # gram_block * n_features: the gathered rows' bins
    int* gather_perm            # gram_block: gathered row of each bin-sorted position
    unsigned long long* gather_keys     # gram_block: the gathered rows' keys
    # Wide blocks (Splitter.wide_min): every histogram feature's bin order
    # of the block at once, and each bin's end (indexed as the histogram).
    int* wide_perm              # gram_block * n_features
    Py_ssize_t* wide_ends       # hist_size
    # One feature's admissible thresholds for the bounded scan: each one's
    # bin (or level set), left row count and left packed sums, and both
    # children's losses once computed (NaN: not yet).
    Py_ssize_t* thr_bin         # max_thresholds
    Py_ssize_t* thr_n_left      # max_thresholds
    double* thr_left            # max_thresholds * n_stats
    double* thr_loss            # 2 * max_thresholds: left, right
    # ... and, for a feature with a missing bin, both children's losses
    # with the missing rows on the left (left + acc_missing, the rest).
    double* thr_alt_loss        # 2 * max_thresholds
    # A node's level order of one categorical feature (``_category_order``):
    # bins by rank, their sort keys, merge scratch for both, and for a wide
    # feature's split which bins go left (``level_set``); set_bins each.
    int* level_perm
    double* level_key
    int* level_tmp
    double* level_tmp_key
    unsigned char* level_left
    double cap                  # see Splitter.best_split_hinted (INFINITY: none)
    # Interrupts: the builder's flag that stops every thread (NULL: none),
    # and for the main thread its clock of looks at signals (NULL: this
    # thread does not look).  ``signalled``: a signal handler raised during
    # this work's search, which gave up (the error is set; the caller raises).
    bint* abort
    double* last_poll
    bint signalled
    double missing_floor        # _missing_floor of the feature being scanned
    CriterionWork crit
    unsigned long long n_bulk_sweeps
    unsigned long long n_incremental_sweeps
    unsigned long long n_sorts                  # carried sweeps (re)started
    unsigned long long n_thresholds_scanned     # thresholds of bounded scans
    unsigned long long n_thresholds_skipped     # ... proved unable to win


cdef struct CarryState:
    # The left child's statistics carried along one feature's thresholds.
    Py_ssize_t feature          # -1: nothing carried yet
    Py_ssize_t bin              # last threshold added
    Py_ssize_t pos              # rows of ``rows`` already added
    int* rows                   # node's rows sorted by bin of ``feature`` (m)
    Py_ssize_t n_rows           # m
    Py_ssize_t missing_start    # a feature with a missing bin: its first missing row
    unsigned long long gen      # which sort of ``rows`` (unique per SplitterWork)
    # Features with a missing bin (the builder points these at per-depth
    # slots of (n_stats, hist_size * n_stats, hist_size) values when the
    # splitter has such features): the node's missing rows' statistics,
    # and the left prefix while the output holds prefix + missing rows.
    bint with_missing
    double* missing_total
    double* missing_hist
    unsigned long long* missing_keys
    double* prefix_total
    double* prefix_hist
    unsigned long long* prefix_keys
    # A wide categorical feature (see MAX_SET_BINS): the node's histogram
    # (its level order is read off it) and that order (``set_bins`` ints),
    # of which the first ``pos`` levels are in the carried sums.
    const double* node_hist
    int* level_perm


cdef class Splitter:
    cdef readonly Py_ssize_t n_samples
    cdef readonly Py_ssize_t n_features
    # (n_samples, n_features) threshold bins, row-major, stored as uint8,
    # uint16 or int32 (bin_width bytes: the narrowest that holds every
    # feature's bins); read them with bin() / bins_row().
    cdef object bins_array
    cdef const void* bin_data
    cdef readonly int bin_width
    cdef int[:, ::1] order              # (n_features, n_samples) sorted rows
    cdef const int[::1] n_bins          # bins per feature (thresholds + 1)
    # 1 for a categorical feature searched by level sets: its bins are level
    # codes (missing values in a bin of their own), at most 64 * SET_WORDS
    # of them; with at most MAX_SET_BINS a split's ``bin`` is the set of bins
    # going left, as a bit mask (bit b <=> bin b), and ``x <= bin`` does not
    # apply.
    cdef const unsigned char[::1] categorical
    # 1 for a categorical feature with more than MAX_SET_BINS bins: its
    # split's ``bin`` is the last rank of the left prefix of the node's level
    # order, and the set is recomputed from the node's histogram.
    cdef unsigned char[::1] wide
    cdef readonly bint has_wide
    # Most bins of a categorical feature (0: none): the level-order buffers.
    cdef readonly Py_ssize_t set_bins
    # 1 for a categorical feature whose last bin holds its missing rows: the
    # level order is that of its present levels, and every prefix is a
    # candidate with the missing rows on either side (a wide feature's
    # ``bin`` carries MISSING_LEFT_BIT when they go left).
    cdef const unsigned char[::1] level_missing
    # 1 for a numeric feature whose last bin holds its missing rows (see
    # MISSING_LEFT_BIT); never set together with ``categorical``.
    cdef const unsigned char[::1] missing
    cdef readonly bint has_missing
    cdef Py_ssize_t max_bins
    cdef double min_samples_leaf        # training weight (rows when unweighted)
    cdef readonly Criterion criterion
    cdef readonly int route             # ROUTE_*
    cdef readonly Py_ssize_t n_stats

    # histogram layout: feature f owns bins [hist_offset[f], + n_bins[f])
    cdef Py_ssize_t[::1] hist_offset    # -1 for swept features
    cdef readonly Py_ssize_t hist_size  # total histogram bins
    cdef readonly Py_ssize_t n_swept    # features searched by sorted sweeps
    cdef readonly Py_ssize_t n_orders   # order rows kept current by partition
    cdef Py_ssize_t gram_block          # rows per block of the search sums
    cdef Py_ssize_t urow_stride         # n_stats rounded up to 8 (whole cache lines)
    cdef readonly Py_ssize_t wide_min   # blocks of this many statistics: column ranges
    # Exact sums by column ranges once the bins hold this many doubles.
    cdef readonly Py_ssize_t exact_ranges_min
    cdef const long long[::1] urow_index  # AVX-512 rows' products (q <= 16), else None
    cdef Py_ssize_t gram_min_rows       # fewer rows: search sums row by row
    # Threads for the exact sums (see set_stats_threads): each sums the bins
    # of its own contiguous range of features, so the bits never depend on
    # their number.  Per thread: one row's bin offsets.
    cdef readonly Py_ssize_t stats_threads
    cdef Py_ssize_t[:, ::1] thread_row_bins     # (stats_threads, n_features)
    cdef Py_ssize_t[::1] thread_first_feature   # stats_threads + 1 range bounds
    cdef readonly Py_ssize_t n_threaded_sums    # calls summed on several threads
    cdef readonly bint bounded_scan     # skip thresholds that provably lose
    cdef Py_ssize_t max_thresholds      # per histogram feature
    cdef bint missing_bound             # ridge leaves: bounds use _missing_floor
    cdef double[::1] share_ridge        # MISSING_SHARE times the ridge diagonal

    cdef inline Py_ssize_t bin(self, Py_ssize_t row, Py_ssize_t f) noexcept nogil:
        # One predictable branch per read: the width is fixed for a fit.
        cdef Py_ssize_t i = row * self.n_features + f
        if self.bin_width == 1:
            return (<const unsigned char*>self.bin_data)[i]
        if self.bin_width == 2:
            return (<const unsigned short*>self.bin_data)[i]
        return (<const int*>self.bin_data)[i]

    cdef inline const void* bin_address(self, Py_ssize_t row, Py_ssize_t f) noexcept nogil:
        # Where bin(row, f) is stored (for prefetching).
        return (<const char*>self.bin_data) + (row * self.n_features + f) * self.bin_width

    cdef inline void bins_row(self, Py_ssize_t row, int* out) noexcept nogil:
        # Every feature's bin of one row, as ints.
        cdef Py_ssize_t f, nf = self.n_features
        cdef const unsigned char* b8
        cdef const unsigned short* b16
        cdef const int* b32
        if self.bin_width == 1:
            b8 = <const unsigned char*>self.bin_data + row * nf
            for f in range(nf):
                out[f] = b8[f]
        elif self.bin_width == 2:
            b16 = <const unsigned short*>self.bin_data + row * nf
            for f in range(nf):
                out[f] = b16[f]
        else:
            b32 = <const int*>self.bin_data + row * nf
            for f in range(nf):
                out[f] = b32[f]

    # Per-thread scratch.  With own_order the struct gets its own copy of
    # the row orders (fill a node's segment with copy_segment); otherwise it
    # works on the Splitter's array.  MemoryError on allocation failure.
    cdef int init_work(self, SplitterWork* w, bint own_order) except -1
    cdef void free_work(self, SplitterWork* w) noexcept nogil
    cdef void copy_segment(self, SplitterWork* dst, const SplitterWork* src,
                           Py_ssize_t start, Py_ssize_t end) noexcept nogil

    cdef bint _use_incremental(self, Py_ssize_t m, Py_ssize_t f) noexcept nogil
    cdef void clear_stats(self, double* total, double* hist,
                          unsigned long long* keys) noexcept nogil
    # exact: sum row by row in the rows' order (the reference rounding; the
    # committed tree's statistics); otherwise the search's faster sums,
    # which differ only in rounding (each row's packed products computed once
    # per block, then summed bin by bin).
    cdef void add_stats(self, SplitterWork* w, const int* rows, Py_ssize_t n_rows,
                        double* total, double* hist,
                        unsigned long long* keys, bint exact) noexcept nogil
    cdef void _add_stats(self, SplitterWork* w, const int* rows, Py_ssize_t n_rows,
                         double* total, double* hist, unsigned long long* keys,
                         bint exact, Py_ssize_t skip) noexcept nogil
    cdef void _add_stats_by_ranges(self, SplitterWork* w, const int* rows,
                                   Py_ssize_t n_rows, double* total, double* hist,
                                   unsigned long long* keys, Py_ssize_t skip) noexcept nogil
    cdef void _gather_row(self, const SplitterWork* w, Py_ssize_t row,
                          Py_ssize_t i) noexcept nogil
    cdef bint _add_stats_threaded(self, SplitterWork* w, const int* rows,
                                  Py_ssize_t n_rows, double* total, double* hist,
                                  unsigned long long* keys, Py_ssize_t skip) noexcept nogil
    cdef void _add_feature_range(self, const SplitterWork* w, const int* rows,
                                 Py_ssize_t m, double* total, double* hist,
                                 unsigned long long* keys, Py_ssize_t first,
                                 Py_ssize_t last, Py_ssize_t skip, Py_ssize_t cols,
                                 Py_ssize_t* offs) noexcept nogil
    cdef void _add_stats_gram(self, SplitterWork* w, const int* rows,
                              Py_ssize_t n_rows, double* total, double* hist,
                              unsigned long long* keys, Py_ssize_t skip,
                              bint neg) noexcept nogil
    cdef void _block_bin_order(self, SplitterWork* w, Py_ssize_t m, Py_ssize_t f,
                               int* perm, Py_ssize_t* ends) noexcept nogil
    cdef void _block_bin_keys(self, SplitterWork* w, const int* perm,
                              const Py_ssize_t* ends, Py_ssize_t nb,
                              unsigned long long* keys, bint neg) noexcept nogil
    cdef void node_stats(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         double* total, double* hist,
                         unsigned long long* keys, bint exact) noexcept nogil
    cdef void sort_by_bin(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                          Py_ssize_t feature, int* out) noexcept nogil
    cdef void subtract_stats(self, const double* parent_total,
                             const double* parent_hist,
                             const unsigned long long* parent_keys,
                             const double* child_total, const double* child_hist,
                             const unsigned long long* child_keys,
                             double* out_total, double* out_hist,
                             unsigned long long* out_keys) noexcept nogil
    cdef void carry_left(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         const Candidate* cand, CarryState* state, double* total,
                         double* hist, unsigned long long* keys,
                         const double* node_hist,
                         const unsigned long long* node_keys) noexcept nogil
    cdef void _carry_wide(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                          const Candidate* cand, CarryState* state, double* total,
                          double* hist, unsigned long long* keys) noexcept nogil
    cdef void add_rows_going_left(self, SplitterWork* w, const int* rows,
                                  Py_ssize_t n_rows, Py_ssize_t feature, Py_ssize_t upto,
                                  double sign, double* total, double* hist,
                                  unsigned long long* keys) noexcept nogil
    cdef Py_ssize_t _bin_end(self, const int* rows, Py_ssize_t m, Py_ssize_t f,
                             Py_ssize_t b, Py_ssize_t lo) noexcept nogil
    cdef Py_ssize_t _level_missing_bin(self, Py_ssize_t f,
                                       const double* hist) noexcept nogil
    cdef Py_ssize_t _category_order(self, SplitterWork* w, Py_ssize_t f,
                                    const double* hist, int* perm,
                                    double* key) noexcept nogil
    cdef Py_ssize_t _level_keys(self, SplitterWork* w, Py_ssize_t f, const double* hist,
                                int* perm, double* key, double* tol) noexcept nogil
    cdef void _merge_sort_levels(self, SplitterWork* w, int* perm, double* key,
                                 Py_ssize_t count, double tol) noexcept nogil
    # Which bins split (feature, bin) of a wide categorical feature sends
    # left at a node with histogram ``hist``: left[b] for every bin b.
    cdef void level_set(self, SplitterWork* w, Py_ssize_t f, Py_ssize_t bin,
                        const double* hist, unsigned char* left) noexcept nogil
    # The same set as SET_WORDS words (bit b <=> bin b), for the tree.
    cdef void set_words(self, SplitterWork* w, Py_ssize_t f, Py_ssize_t bin,
                        const double* hist, unsigned long long* words) noexcept nogil
    cdef void _keep_threshold(self, SplitterWork* w, Py_ssize_t k, Py_ssize_t b,
                              Py_ssize_t n_left, const double* left) noexcept nogil
    cdef double _side_loss(self, SplitterWork* w, const double* total,
                           Py_ssize_t k, int side) noexcept nogil
    cdef double* _loss_slot(self, SplitterWork* w, Py_ssize_t k, int which) noexcept nogil
    cdef double _child_loss(self, SplitterWork* w, const double* total, Py_ssize_t k,
                            int which) noexcept nogil
    cdef double* _child_sums(self, SplitterWork* w, const double* total, Py_ssize_t k,
                             int which, double* buf) noexcept nogil
    cdef void _pair_child_losses(self, SplitterWork* w, const double* total,
                                 Py_ssize_t a, int which_a, Py_ssize_t b,
                                 int which_b) noexcept nogil
    cdef double _alt_loss(self, SplitterWork* w, const double* total,
                          Py_ssize_t k, int side) noexcept nogil
    cdef double _known_bound(self, SplitterWork* w, Py_ssize_t a, Py_ssize_t b,
                             Py_ssize_t count) noexcept nogil
    cdef double _known_bound_missing(self, SplitterWork* w, Py_ssize_t a, Py_ssize_t b,
                                     Py_ssize_t count, double shrink,
                                     double mfloor) noexcept nogil
    cdef bint _scan_bounded(self, SplitterWork* w, const double* total,
                            Py_ssize_t f, Py_ssize_t count, SplitRecord* best,
                            double* best_left, bint with_missing) noexcept nogil
    cdef bint _consider(self, SplitterWork* w, const double* total,
                        const double* left, Py_ssize_t f, Py_ssize_t b,
                        Py_ssize_t n_left, SplitRecord* best,
                        double* best_left) noexcept nogil
    cdef double _children_loss(self, SplitterWork* w, const double* total,
                               const double* left) noexcept nogil
    cdef int _missing_side(self, SplitterWork* w, const double* total,
                           const double* left, const double* miss, double msl,
                           double* score) noexcept nogil
    cdef int _best_missing(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                           Py_ssize_t f, const double* total, const double* hist,
                           SplitRecord* best, double* best_left) noexcept nogil
    cdef double _present_bound(self, SplitterWork* w, Py_ssize_t count) noexcept nogil
    cdef double _missing_floor(self, SplitterWork* w, const double* miss) noexcept nogil
    cdef void _record(self, SplitRecord* best, double* best_left, Py_ssize_t f,
                      Py_ssize_t b, Py_ssize_t n_left, double score,
                      const double* left) noexcept nogil
    cdef Py_ssize_t _missing_candidates(self, SplitterWork* w, Py_ssize_t start,
                                        Py_ssize_t end, Py_ssize_t f,
                                        const double* total, const double* hist,
                                        const unsigned long long* keys,
                                        Candidate* out, Py_ssize_t count) noexcept nogil
    cdef int _offer_prefix(self, SplitterWork* w, const double* total, Py_ssize_t f,
                           Py_ssize_t bin, const double* left, Py_ssize_t* n_thr,
                           SplitRecord* best, double* best_left) noexcept nogil
    cdef bint _level_prefixes(self, SplitterWork* w, const double* total, Py_ssize_t f,
                              const double* hist, Py_ssize_t n_prefixes, bint missing_left,
                              Py_ssize_t cset, double* left, SplitRecord* best,
                              double* best_left) noexcept nogil
    cdef bint best_split(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         const double* total, const double* hist,
                         SplitRecord* best, double* best_left) noexcept nogil
    cdef Py_ssize_t candidates(self, SplitterWork* w, Py_ssize_t start,
                               Py_ssize_t end, const double* total, const double* hist,
                               const unsigned long long* keys,
                               Candidate* out) noexcept nogil
    cdef bint best_split_hinted(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                                const double* total, const double* hist,
                                SplitRecord* best, double* best_left,
                                Py_ssize_t* hint) noexcept nogil
    cdef double _hint_cap(self, SplitterWork* w, const double* total, const double* hist,
                          Py_ssize_t f, Py_ssize_t b) noexcept nogil
    cdef bint _guess_prefix(self, const double* hist, Py_ssize_t off,
                            Py_ssize_t n_present, Py_ssize_t b,
                            double* left) noexcept nogil
    cdef double _missing_cap(self, SplitterWork* w, const double* total,
                             const double* hist, Py_ssize_t f, Py_ssize_t b) noexcept nogil
    cdef Py_ssize_t max_candidates(self, Py_ssize_t n_rows) noexcept nogil
    # ``hist``: the node's histogram (read for a wide categorical split only).
    cdef Py_ssize_t partition(self, SplitterWork* w, Py_ssize_t start,
                              Py_ssize_t end, Py_ssize_t feature,
                              Py_ssize_t bin, const double* hist) noexcept nogil
    cdef Py_ssize_t take_carried(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                                 const Candidate* cand,
                                 const CarryState* state) noexcept nogil
    cdef void save(self, const SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                   int* buffer) noexcept nogil
    cdef void restore(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                      const int* buffer) noexcept nogil
