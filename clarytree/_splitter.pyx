"""Split search: histogram scans and sorted threshold sweeps, partitioning."""

from enum import IntEnum

import numpy as np

from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, NAN, fabs, fmax, fmin, isnan, sqrt
from libc.stdlib cimport calloc, malloc, free, qsort
from libc.string cimport memcpy, memset
from cython.parallel cimport prange

from ._criterion cimport (
    Criterion, RidgeCriterion, add_row, add_rows, sweep_move_left,
    sweep_left_loss, sweep_right_loss, sweep_left_stats,
)
from ._linalg cimport (
    packed_add_outer, packed_chol_loss, packed_coef_spread, packed_factor_coef,
)
from ._splitter cimport (
    SplitRecord, Candidate, SplitterWork, CarryState, enough_weight, improves, tie_floor,
    MAX_SET_BINS, MISSING_LEFT_BIT, ROUTE_AUTO, ROUTE_BULK, ROUTE_INCREMENTAL, SET_WORDS,
)


# Search sums (add_stats with exact=False): rows are taken in blocks of at
# most GRAM_BLOCK; each row's packed statistics are computed once per block,
# and per histogram feature the block's rows are sorted by bin (their
# positions only) and each bin's sum is accumulated in registers and added
# to the bin once, instead of one update of the bin (n_stats doubles in
# memory) per row.  That pays once a bin averages a few rows and the rows
# are wide enough (q = p + 1 >= GRAM_MIN_Q); smaller calls go row by row.
# A block whose statistics outgrow the core's cache is summed by column
# ranges, each across all features while it stays cached (WIDE_MIN_DOUBLES):
# the same adds per element, so the same bits.
cdef Py_ssize_t GRAM_BLOCK = 2048
cdef Py_ssize_t GRAM_MIN_Q = 4
cdef Py_ssize_t GRAM_ROWS_PER_BIN = 4
cdef Py_ssize_t GRAM_MIN_ROWS = 32
# Blocks of at least WIDE_MIN_DOUBLES packed statistics (1 MB: half a
# 2 MB L2) are summed WIDE_COLS columns at a time across all features (see
# _add_stats_gram); smaller ones feature by feature.  Temperature max (276
# statistics per row) streamed each block from L3 once per feature.
cdef Py_ssize_t WIDE_MIN_DOUBLES = 131072
cdef Py_ssize_t WIDE_COLS = 64
# The exact (row by row) sums go by column ranges (_add_stats_by_ranges)
# once the histogram bins hold this many doubles (16 MB): beyond the last
# level cache each row's adds stream every feature's bins from memory.
# Measured (20,000 rows, 20 thresholds per feature, all features in the
# leaf models): 35 features 0.098 s by rows / 0.126 s by ranges, 50
# features 0.33 / 0.34 s, 70 features 1.75 / 1.03 s, 100 features 6.1 /
# 3.1 s (a 32 MB L3).
cdef Py_ssize_t EXACT_RANGES_MIN_DOUBLES = 2097152
cdef Py_ssize_t EXACT_COLS = 64

# Threaded exact sums (Splitter.set_stats_threads): a call is split across
# threads only when it adds at least this many doubles (about 0.1 ms on one
# core), so that starting the parallel region pays for itself.
cdef Py_ssize_t THREADED_STATS_MIN_ADDS = 262144


cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int ct_in_parallel(void) { return omp_in_parallel(); }
    #else
    static int ct_in_parallel(void) { return 1; }
    #endif
    """
    # Inside a parallel region (or built without OpenMP): sum on this thread.
    int ct_in_parallel() noexcept nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define ct_prefetch(p) __builtin_prefetch((const void*)(p), 0, 1)
    #else
    #define ct_prefetch(p) ((void)(p))
    #endif
    """
    # A hint that p will be read soon; no effect on any result.
    void ct_prefetch(const void* p) noexcept nogil

# How many rows ahead a sorted sweep prefetches its rows' statistics and
# bins: the rows come in value order, so each read is a cache miss on a
# large table, and the sweep's own work per row is too short to hide it.
cdef Py_ssize_t SWEEP_PREFETCH = 16

# A node's search looks for an interrupt between features when one feature
# costs at least this many row updates of q^2 flops (~0.1 ms and more; the
# look costs ~30 ns).  Smaller nodes are left to the builder's look between
# nodes.
cdef double INTERRUPT_MIN_WORK = 1e5


cdef inline bint _interrupted(SplitterWork* w) noexcept nogil:
    # The build is being abandoned: another thread stopped it, or this
    # (main) thread's look found a signal whose handler raised.
    if w.abort == NULL:
        return False
    if w.abort[0]:
        return True
    if w.last_poll != NULL and poll_signals(w.last_poll, monotonic_now()) != 0:
        w.signalled = True
        w.abort[0] = True
        return True
    return False


cdef inline void _prefetch_row(const double* x, Py_ssize_t q, const void* bins) noexcept nogil:
    # Hint the reads of a row soon to be summed or swept: its design row
    # ``x`` (q doubles, every cache line of it) and the bin at ``bins``.
    cdef const char* c = <const char*>x
    cdef Py_ssize_t b, size = q * sizeof(double)
    for b in range(0, size, 64):
        ct_prefetch(c + b)
    ct_prefetch(c + size - 1)
    ct_prefetch(bins)

# Bounded threshold scan: a child's ridge loss can only grow when rows are
# added (for every beta the penalized sum of squares grows; the ridge term
# does not depend on the rows), so along a feature's thresholds the left
# loss is nondecreasing and the right one nonincreasing, and the left loss
# at a block's first threshold plus the right loss at its last one bounds
# every score in the block.  The computed losses are monotone only up to
# rounding, of the order of the unit roundoff times the node's sum of
# squared targets: a block is skipped only when its bound exceeds what the
# tie rule needs by BOUND_SLACK times that sum.
cdef double BOUND_SLACK = 1e-9
# A feature with a missing bin: every child with the missing rows M holds
# them besides present rows S, and loss(S + M) >= (1 - MISSING_SHARE)
# loss(S) + (M's loss with MISSING_SHARE of the ridge); see _missing_floor.
cdef double MISSING_SHARE = 1.0 / 1024.0


cdef inline bint _beyond(double bound, double best, double cap, bint use_cap,
                         double floor) noexcept nogil:
    # Whether scores >= bound cannot matter: above the guess's cap, or not
    # improving on the incumbent under the tie rule.
    return (use_cap and bound > cap) or (best < INFINITY and not improves(bound, best, floor))


# Relative tie tolerance of two levels' mean residuals when a node orders a
# categorical feature's levels (see Splitter._category_order).
cdef double LEVEL_TIE = 1e-9


# Bit of a split's ``bin`` that sends the missing rows of a feature with a
# missing bin to the left child (see _splitter.pxd).
MISSING_LEFT = MISSING_LEFT_BIT


class SearchRoute(IntEnum):
    """How sorted threshold sweeps evaluate a feature's thresholds.

    ``AUTO`` picks the cheaper route per node and feature by a flop model;
    ``BULK`` factorizes accumulated packed sums once per threshold;
    ``INCREMENTAL`` keeps both children's Cholesky factors current with
    rank-one updates and downdates while rows cross the threshold.
    """

    AUTO = ROUTE_AUTO
    BULK = ROUTE_BULK
    INCREMENTAL = ROUTE_INCREMENTAL


cdef extern from *:
    """
    /* One row's packed statistics u (n entries) added to the node's total
       and to its bin of every histogram feature; offs are the bins' element
       offsets in hist (bin * n_stats).  On a column range [c0, c0 + n),
       hist, total and u start at column c0.  Element-wise adds only, so any
       vector width gives the same bits.  On x86-64 the widest available
       unit is picked at run time (the module itself is built for the
       baseline). */
    #define CT_ADD_ROW_BODY \
        Py_ssize_t s, f; \
        for (s = 0; s < n; s++) total[s] += u[s]; \
        for (f = 0; f < nf; f++) { \
            double* h = hist + offs[f]; \
            for (s = 0; s < n; s++) h[s] += u[s]; \
        }
    typedef void (*ct_add_row_fn)(double*, double*, const double*, Py_ssize_t,
                                  const Py_ssize_t*, Py_ssize_t);
    static void ct_add_row_base(double* restrict total, double* restrict hist,
                                const double* restrict u, Py_ssize_t n,
                                const Py_ssize_t* offs, Py_ssize_t nf) { CT_ADD_ROW_BODY }
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    __attribute__((target("avx2")))
    static void ct_add_row_avx2(double* restrict total, double* restrict hist,
                                const double* restrict u, Py_ssize_t n,
                                const Py_ssize_t* offs, Py_ssize_t nf) { CT_ADD_ROW_BODY }
    __attribute__((target("avx512f")))
    static void ct_add_row_avx512(double* restrict total, double* restrict hist,
                                  const double* restrict u, Py_ssize_t n,
                                  const Py_ssize_t* offs, Py_ssize_t nf) { CT_ADD_ROW_BODY }
    static ct_add_row_fn ct_pick_add_row(void) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return ct_add_row_avx512;
        if (__builtin_cpu_supports("avx2")) return ct_add_row_avx2;
        return ct_add_row_base;
    }
    #else
    static ct_add_row_fn ct_pick_add_row(void) { return ct_add_row_base; }
    #endif
    """
    ctypedef void (*ct_add_row_fn)(double*, double*, const double*, Py_ssize_t,
                                   const Py_ssize_t*, Py_ssize_t) noexcept nogil
    ct_add_row_fn ct_pick_add_row() noexcept nogil


cdef ct_add_row_fn _add_row_bins = ct_pick_add_row()


cdef extern from *:
    """
    /* Search sums of one block of rows, per bin, of the columns [c0, c1)
       (multiples of 8, c1 <= S): U holds each row's packed statistics
       (stride S, a multiple of 8 doubles, zero beyond ns); perm lists the
       block's rows bin by bin, bin b at positions [ends[b - 1], ends[b]).
       Each bin's rows are summed into an accumulator (element by element,
       in perm order, from zero), which is then added to the bin's
       statistics in h (bin stride ns; columns past ns are padding).  Every
       route below does exactly these adds per element, and the elements
       are independent, so all routes and every split of the columns into
       ranges give the same bits. */
    #define CT_BIN_SUMS_BODY \
        Py_ssize_t b, j, s, first = 0, last, e = c1 < ns ? c1 : ns; \
        for (b = 0; b < nb; b++) { \
            last = ends[b]; \
            if (last > first) { \
                for (s = c0; s < c1; s++) acc[s] = 0.0; \
                for (j = first; j < last; j++) { \
                    const double* u = U + (Py_ssize_t)perm[j] * S; \
                    for (s = c0; s < c1; s++) acc[s] += u[s]; \
                } \
                double* hb = h + b * ns; \
                for (s = c0; s < e; s++) hb[s] += acc[s]; \
            } \
            first = last; \
        }
    typedef void (*ct_bin_sums_fn)(double*, const double*, Py_ssize_t, Py_ssize_t,
                                   Py_ssize_t, const int*, const Py_ssize_t*,
                                   Py_ssize_t, Py_ssize_t, double*);
    static void ct_bin_sums_base(double* restrict h, const double* restrict U,
                                 Py_ssize_t S, Py_ssize_t c0, Py_ssize_t c1,
                                 const int* perm, const Py_ssize_t* ends,
                                 Py_ssize_t nb, Py_ssize_t ns, double* restrict acc)
    { CT_BIN_SUMS_BODY }
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    #include <immintrin.h>
    #define CT_SUMS_PREFETCH 8
    /* AVX2: up to 48 columns of a bin's sum held in twelve registers (the
       plain loop kept the accumulator in memory: a load and a store per
       element and row). */
    __attribute__((target("avx2"), always_inline))
    static inline void ct_flush256(double* hb, __m256d a, Py_ssize_t r) {
        if (r >= 4) {
            _mm256_storeu_pd(hb, _mm256_add_pd(_mm256_loadu_pd(hb), a));
        } else if (r > 0) {
            __m256i k = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)r),
                                           _mm256_setr_epi64x(0, 1, 2, 3));
            _mm256_maskstore_pd(hb, k, _mm256_add_pd(_mm256_maskload_pd(hb, k), a));
        }
    }
    __attribute__((target("avx2"), always_inline))
    static inline void ct_bin_chunk256(double* hb, const double* U, Py_ssize_t S,
                                       const int* perm, Py_ssize_t first,
                                       Py_ssize_t last, Py_ssize_t stop, Py_ssize_t r,
                                       const int nc) {
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
                a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
        Py_ssize_t j, k;
        for (j = first; j < last; j++) {
            const double* u = U + (Py_ssize_t)perm[j] * S;
            /* Rows come in bin order, scattered over a block larger than
               the core's cache: ask for a later row's columns early. */
            if (j + CT_SUMS_PREFETCH < stop) {
                const double* ahead = U + (Py_ssize_t)perm[j + CT_SUMS_PREFETCH] * S;
                for (k = 0; k < 4 * nc; k += 8)
                    _mm_prefetch((const char*)(ahead + k), _MM_HINT_T0);
            }
            a0 = _mm256_add_pd(a0, _mm256_loadu_pd(u));
            if (nc > 1) a1 = _mm256_add_pd(a1, _mm256_loadu_pd(u + 4));
            if (nc > 2) a2 = _mm256_add_pd(a2, _mm256_loadu_pd(u + 8));
            if (nc > 3) a3 = _mm256_add_pd(a3, _mm256_loadu_pd(u + 12));
            if (nc > 4) a4 = _mm256_add_pd(a4, _mm256_loadu_pd(u + 16));
            if (nc > 5) a5 = _mm256_add_pd(a5, _mm256_loadu_pd(u + 20));
            if (nc > 6) a6 = _mm256_add_pd(a6, _mm256_loadu_pd(u + 24));
            if (nc > 7) a7 = _mm256_add_pd(a7, _mm256_loadu_pd(u + 28));
            if (nc > 8) a8 = _mm256_add_pd(a8, _mm256_loadu_pd(u + 32));
            if (nc > 9) a9 = _mm256_add_pd(a9, _mm256_loadu_pd(u + 36));
            if (nc > 10) a10 = _mm256_add_pd(a10, _mm256_loadu_pd(u + 40));
            if (nc > 11) a11 = _mm256_add_pd(a11, _mm256_loadu_pd(u + 44));
        }
        ct_flush256(hb, a0, r);
        if (nc > 1) ct_flush256(hb + 4, a1, r - 4);
        if (nc > 2) ct_flush256(hb + 8, a2, r - 8);
        if (nc > 3) ct_flush256(hb + 12, a3, r - 12);
        if (nc > 4) ct_flush256(hb + 16, a4, r - 16);
        if (nc > 5) ct_flush256(hb + 20, a5, r - 20);
        if (nc > 6) ct_flush256(hb + 24, a6, r - 24);
        if (nc > 7) ct_flush256(hb + 28, a7, r - 28);
        if (nc > 8) ct_flush256(hb + 32, a8, r - 32);
        if (nc > 9) ct_flush256(hb + 36, a9, r - 36);
        if (nc > 10) ct_flush256(hb + 40, a10, r - 40);
        if (nc > 11) ct_flush256(hb + 44, a11, r - 44);
    }
    __attribute__((target("avx2")))
    static void ct_bin_sums_avx2(double* restrict h, const double* restrict U,
                                 Py_ssize_t S, Py_ssize_t c0, Py_ssize_t c1,
                                 const int* perm, const Py_ssize_t* ends,
                                 Py_ssize_t nb, Py_ssize_t ns, double* restrict acc)
    {
        Py_ssize_t b, c, first = 0, last, nc, stop = nb > 0 ? ends[nb - 1] : 0;
        (void)acc;
        for (b = 0; b < nb; b++) {
            last = ends[b];
            if (last > first) {
                for (c = c0; c < c1; c += 48) {
                    /* c0 and c1 are multiples of 8: an even count of vectors. */
                    nc = (c1 - c) >> 2;
                    double* hb = h + b * ns + c;
                    const double* Uc = U + c;
                    Py_ssize_t r = ns - c;
                    switch (nc >= 12 ? 12 : nc) {
                    case 2: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 2); break;
                    case 4: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 4); break;
                    case 6: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 6); break;
                    case 8: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 8); break;
                    case 10: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 10); break;
                    default: ct_bin_chunk256(hb, Uc, S, perm, first, last, stop, r, 12); break;
                    }
                }
            }
            first = last;
        }
    }
    /* AVX-512: up to 64 columns of a bin's sum held in eight registers. */
    __attribute__((target("avx512f"), always_inline))
    static inline void ct_flush512(double* hb, __m512d a, Py_ssize_t r) {
        if (r >= 8) {
            _mm512_storeu_pd(hb, _mm512_add_pd(_mm512_loadu_pd(hb), a));
        } else if (r > 0) {
            __mmask8 k = (__mmask8)((1u << r) - 1u);
            __m512d v = _mm512_maskz_loadu_pd(k, hb);
            _mm512_mask_storeu_pd(hb, k, _mm512_add_pd(v, a));
        }
    }
    __attribute__((target("avx512f"), always_inline))
    static inline void ct_bin_chunk512(double* hb, const double* U, Py_ssize_t S,
                                       const int* perm, Py_ssize_t first,
                                       Py_ssize_t last, Py_ssize_t r, const int nc) {
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0,
                a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        Py_ssize_t j;
        for (j = first; j < last; j++) {
            const double* u = U + (Py_ssize_t)perm[j] * S;
            a0 = _mm512_add_pd(a0, _mm512_loadu_pd(u));
            if (nc > 1) a1 = _mm512_add_pd(a1, _mm512_loadu_pd(u + 8));
            if (nc > 2) a2 = _mm512_add_pd(a2, _mm512_loadu_pd(u + 16));
            if (nc > 3) a3 = _mm512_add_pd(a3, _mm512_loadu_pd(u + 24));
            if (nc > 4) a4 = _mm512_add_pd(a4, _mm512_loadu_pd(u + 32));
            if (nc > 5) a5 = _mm512_add_pd(a5, _mm512_loadu_pd(u + 40));
            if (nc > 6) a6 = _mm512_add_pd(a6, _mm512_loadu_pd(u + 48));
            if (nc > 7) a7 = _mm512_add_pd(a7, _mm512_loadu_pd(u + 56));
        }
        ct_flush512(hb, a0, r);
        if (nc > 1) ct_flush512(hb + 8, a1, r - 8);
        if (nc > 2) ct_flush512(hb + 16, a2, r - 16);
        if (nc > 3) ct_flush512(hb + 24, a3, r - 24);
        if (nc > 4) ct_flush512(hb + 32, a4, r - 32);
        if (nc > 5) ct_flush512(hb + 40, a5, r - 40);
        if (nc > 6) ct_flush512(hb + 48, a6, r - 48);
        if (nc > 7) ct_flush512(hb + 56, a7, r - 56);
    }
    __attribute__((target("avx512f")))
    static void ct_bin_sums_avx512(double* restrict h, const double* restrict U,
                                   Py_ssize_t S, Py_ssize_t c0, Py_ssize_t c1,
                                   const int* perm, const Py_ssize_t* ends,
                                   Py_ssize_t nb, Py_ssize_t ns, double* restrict acc)
    {
        Py_ssize_t b, c, first = 0, last, nc;
        (void)acc;
        for (b = 0; b < nb; b++) {
            last = ends[b];
            if (last > first) {
                for (c = c0; c < c1; c += 64) {
                    nc = (c1 - c) >> 3;
                    double* hb = h + b * ns + c;
                    const double* Uc = U + c;
                    Py_ssize_t r = ns - c;
                    switch (nc >= 8 ? 8 : nc) {
                    case 1: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 1); break;
                    case 2: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 2); break;
                    case 3: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 3); break;
                    case 4: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 4); break;
                    case 5: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 5); break;
                    case 6: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 6); break;
                    case 7: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 7); break;
                    default: ct_bin_chunk512(hb, Uc, S, perm, first, last, r, 8); break;
                    }
                }
            }
            first = last;
        }
    }
    /* Each row's packed statistics (the products w[a] * w[j], j >= a, of
       packed_add_outer) for q <= 16: the row in two registers, each chunk
       of 8 products from two permutes (index pairs in idx, 16 per chunk)
       and one multiply; lanes past ns are zero. */
    __attribute__((target("avx512f")))
    static void ct_row_products_avx512(double* restrict U, Py_ssize_t S,
                                       const double* restrict W, Py_ssize_t q,
                                       const int* rows, Py_ssize_t m,
                                       const long long* idx, Py_ssize_t ns) {
        Py_ssize_t i, c, nc = S >> 3;
        __mmask8 m0 = q >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << q) - 1u);
        __mmask8 m1 = q > 8 ? (__mmask8)((1u << (q - 8)) - 1u) : (__mmask8)0;
        __mmask8 tail = (__mmask8)((1u << (ns - 8 * (nc - 1))) - 1u);
        for (i = 0; i < m; i++) {
            const double* src = W + (Py_ssize_t)rows[i] * q;
            double* u = U + i * S;
            __m512d w0 = _mm512_maskz_loadu_pd(m0, src);
            __m512d w1 = _mm512_maskz_loadu_pd(m1, src + 8);
            for (c = 0; c < nc; c++) {
                __m512i ia = _mm512_loadu_si512((const void*)(idx + 16 * c));
                __m512i ib = _mm512_loadu_si512((const void*)(idx + 16 * c + 8));
                __m512d va = _mm512_permutex2var_pd(w0, ia, w1);
                __m512d vb = _mm512_permutex2var_pd(w0, ib, w1);
                _mm512_storeu_pd(u + 8 * c, _mm512_maskz_mul_pd(
                    c + 1 < nc ? (__mmask8)0xFF : tail, va, vb));
            }
        }
    }
    /* The same products for any q: per a, w[a] times w[a..q-1], 8 lanes at
       a time (the last ones masked); the padding past ns is left as it is. */
    __attribute__((target("avx512f")))
    static void ct_row_products_any_avx512(double* restrict U, Py_ssize_t S,
                                           const double* restrict W, Py_ssize_t q,
                                           const int* rows, Py_ssize_t m) {
        Py_ssize_t i, a, j, k, len;
        for (i = 0; i < m; i++) {
            const double* src = W + (Py_ssize_t)rows[i] * q;
            double* u = U + i * S;
            k = 0;
            for (a = 0; a < q; a++) {
                __m512d wa = _mm512_set1_pd(src[a]);
                len = q - a;
                for (j = 0; j < len; j += 8) {
                    __mmask8 mk = len - j >= 8 ? (__mmask8)0xFF
                                               : (__mmask8)((1u << (len - j)) - 1u);
                    __m512d v = _mm512_maskz_loadu_pd(mk, src + a + j);
                    _mm512_mask_storeu_pd(u + k + j, mk, _mm512_mul_pd(wa, v));
                }
                k += len;
            }
        }
    }
    static int ct_have_avx512(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") ? 1 : 0;
    }
    static ct_bin_sums_fn ct_pick_bin_sums(void) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return ct_bin_sums_avx512;
        if (__builtin_cpu_supports("avx2")) return ct_bin_sums_avx2;
        return ct_bin_sums_base;
    }
    /* Kernel k (0 plain, 1 AVX2, 2 AVX-512), or NULL where this CPU lacks it. */
    static ct_bin_sums_fn ct_bin_sums_kernel(int k) {
        __builtin_cpu_init();
        if (k == 1 && __builtin_cpu_supports("avx2")) return ct_bin_sums_avx2;
        if (k == 2 && __builtin_cpu_supports("avx512f")) return ct_bin_sums_avx512;
        return k == 0 ? ct_bin_sums_base : NULL;
    }
    #else
    static ct_bin_sums_fn ct_pick_bin_sums(void) { return ct_bin_sums_base; }
    static ct_bin_sums_fn ct_bin_sums_kernel(int k) {
        return k == 0 ? ct_bin_sums_base : NULL;
    }
    static int ct_have_avx512(void) { return 0; }
    static void ct_row_products_avx512(double* U, Py_ssize_t S, const double* W,
                                       Py_ssize_t q, const int* rows, Py_ssize_t m,
                                       const long long* idx, Py_ssize_t ns) {}
    static void ct_row_products_any_avx512(double* U, Py_ssize_t S, const double* W,
                                           Py_ssize_t q, const int* rows, Py_ssize_t m) {}
    #endif
    """
    ctypedef void (*ct_bin_sums_fn)(double*, const double*, Py_ssize_t, Py_ssize_t,
                                    Py_ssize_t, const int*, const Py_ssize_t*,
                                    Py_ssize_t, Py_ssize_t, double*) noexcept nogil
    ct_bin_sums_fn ct_pick_bin_sums() noexcept nogil
    ct_bin_sums_fn ct_bin_sums_kernel(int k) noexcept nogil
    int ct_have_avx512() noexcept nogil
    void ct_row_products_avx512(double* U, Py_ssize_t S, const double* W, Py_ssize_t q,
                                const int* rows, Py_ssize_t m, const long long* idx,
                                Py_ssize_t ns) noexcept nogil
    void ct_row_products_any_avx512(double* U, Py_ssize_t S, const double* W,
                                    Py_ssize_t q, const int* rows,
                                    Py_ssize_t m) noexcept nogil


cdef ct_bin_sums_fn _bin_sums = ct_pick_bin_sums()
cdef bint _have_avx512 = ct_have_avx512()


def _bin_sums_kernels(double[:, ::1] hist, const double[:, ::1] U, const int[::1] perm,
                      const Py_ssize_t[::1] ends, Py_ssize_t c0, Py_ssize_t c1):
    """The bin sums of every kernel this CPU runs, for tests.

    Adds ``U``'s rows, bin by bin (``perm`` and ``ends`` as in the search
    sums), into copies of ``hist`` (bin stride ``hist.shape[1]``) over the
    columns ``[c0, c1)``, multiples of 8 up to ``U.shape[1]``.  Returns
    ``{name: array}`` for "plain", "avx2" and "avx512" where available.
    """
    cdef Py_ssize_t nb = ends.shape[0], ns = hist.shape[1], S = U.shape[1]
    cdef ct_bin_sums_fn kernel
    cdef double[:, ::1] out
    cdef double[::1] acc = np.zeros(S)
    if c0 % 8 or c1 % 8 or not 0 <= c0 < c1 <= S or S % 8 or ns > S:
        raise ValueError("columns must be multiples of 8 within U, which is at least hist wide")
    if hist.shape[0] != nb or (nb and ends[nb - 1] > perm.shape[0]):
        raise ValueError("hist needs one row per bin and ends must stay within perm")
    for i in range(perm.shape[0]):
        if not 0 <= perm[i] < U.shape[0]:
            raise ValueError("perm must index rows of U")
    results = {}
    for k, name in enumerate(("plain", "avx2", "avx512")):
        kernel = ct_bin_sums_kernel(k)
        if kernel == NULL:
            continue
        copy = np.array(hist, dtype=np.float64, order="C")
        out = copy
        kernel(&out[0, 0], &U[0, 0], S, c0, c1, &perm[0], &ends[0], nb, ns, &acc[0])
        results[name] = copy
    return results


cdef inline unsigned long long _row_key(Py_ssize_t row) noexcept nogil:
    # splitmix64 finalizer: a fixed pseudo-random 64-bit key per row, so the
    # sum of keys identifies a row set with negligible collision probability.
    cdef unsigned long long x = <unsigned long long>row + 0x9E3779B97F4A7C15ULL
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL
    return x ^ (x >> 31)


cdef inline void _set_candidate(Candidate* c, Py_ssize_t feature, Py_ssize_t bin,
                                Py_ssize_t n_left, unsigned long long key,
                                Py_ssize_t position) noexcept nogil:
    c.feature = feature
    c.bin = bin
    c.n_left = n_left
    c.key = key
    c.position = position
    c.duplicate = False


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


cdef inline bint _sends_left(Py_ssize_t b, Py_ssize_t upto, Py_ssize_t missing_bin,
                             bint level_set) noexcept nogil:
    # Whether bin b goes left: in the bit mask ``upto`` (a level set), else
    # at most ``upto`` or the missing bin (-1: none).
    if level_set:
        return (upto >> b) & 1
    return b <= upto or b == missing_bin


cdef class Splitter:
    """Finds splits of a node and partitions its rows.

    Parameters
    ----------
    bins : ndarray of shape (n_samples, n_features), uint8, uint16 or int32
        ``bins[i, f]`` is the number of pool thresholds of feature ``f``
        strictly below ``X[i, f]``; so ``X[i, f] <= t_j`` iff ``bins[i, f] <= j``.
        C-contiguous; it is read in place (kept alive, never written).
    order : ndarray of shape (n_features, n_samples), int32
        Row indices sorted by each feature (modified in place while building).
    n_bins : ndarray of shape (n_features,), int32
        Number of bins of each feature (its thresholds + 1).
    min_samples_leaf : float
        Least training weight of a child (its row count when unweighted); > 0.
    criterion : Criterion
    max_hist_bins : int, default=256
        Features with at most this many bins are searched from histograms;
        the others by sorted sweeps.  0 sweeps every feature.
    route : SearchRoute, default=SearchRoute.AUTO
        How sorted sweeps evaluate thresholds.
    grouped_sums : bool, default=True
        Whether the search (not the committed tree) may sum statistics by
        blocks (each row's packed products once per block, then summed bin
        by bin); False sums row by row everywhere.
        Either way the fitted tree's statistics are summed row by row.
    categorical : ndarray of shape (n_features,), uint8, optional
        1 for a feature searched by level sets (see ``_splitter.pxd``): the
        prefixes of each node's level order.  With more than MAX_SET_BINS
        (63) bins, up to 320, a split's ``bin`` is the last rank of its
        prefix in the node's order, and the builder asks ``set_words`` for
        the set when it records the split.
    missing : ndarray of shape (n_features,), uint8, optional
        1 for a numeric feature whose last bin holds its missing rows.  At
        a node with missing rows each threshold is one candidate, the
        missing rows on the side with the lower children's loss (right on
        a tie, as scikit-learn's trees do), and "missing versus present"
        one more; a split sending them left has ``MISSING_LEFT`` in its
        ``bin``.  A swept feature with missing rows at a node is evaluated
        by the bulk route there (both sides come from packed sums).
    level_missing : ndarray of shape (n_features,), uint8, optional
        1 for a categorical feature whose last bin holds its missing rows.
        The node's level order is that of its present levels; at a node
        with missing rows every prefix is a candidate with them on the right
        and on the left (``2K - 1`` candidates for ``K`` levels); a wide
        feature's split sending them left has ``MISSING_LEFT`` in its
        ``bin``, a narrow one's has the missing bin in its mask.  0
        everywhere (the default) orders a missing bin as one more level.
    bounded_scan : bool, default=True
        Whether ``best_split`` may skip the thresholds of a histogram
        feature that provably cannot win the tie rule (ridge leaves with at
        least two regression features; see BOUND_SLACK).  The chosen split
        is the same either way; False evaluates every threshold (tests).
    """

    def __init__(self, bins, int[:, ::1] order,
                 const int[::1] n_bins, double min_samples_leaf,
                 Criterion criterion, Py_ssize_t max_hist_bins=256,
                 route=SearchRoute.AUTO, *, bint grouped_sums=True, categorical=None,
                 missing=None, level_missing=None,
                 bint bounded_scan=True):
        cdef Py_ssize_t f, offset = 0
        try:
            route = SearchRoute(route)
        except ValueError:
            raise ValueError(f"route must be a SearchRoute, got {route!r}") from None
        cdef const unsigned char[:, ::1] bins8
        cdef const unsigned short[:, ::1] bins16
        cdef const int[:, ::1] bins32
        bins = np.asarray(bins)
        if bins.ndim != 2:
            raise ValueError(f"bins must be 2-D, got shape {bins.shape}")
        self.n_samples = bins.shape[0]
        self.n_features = bins.shape[1]
        if self.n_samples < 1 or self.n_features < 1:
            raise ValueError("need at least one row and one feature")
        if bins.dtype == np.uint8:
            bins8 = bins
            self.bin_data = &bins8[0, 0]
            self.bin_width = 1
        elif bins.dtype == np.uint16:
            bins16 = bins
            self.bin_data = &bins16[0, 0]
            self.bin_width = 2
        elif bins.dtype == np.int32:
            bins32 = bins
            self.bin_data = &bins32[0, 0]
            self.bin_width = 4
        else:
            raise TypeError(f"bins must be uint8, uint16 or int32, got {bins.dtype}")
        if self.bin_width < 4 and np.max(n_bins) > 1 << (8 * self.bin_width):
            raise ValueError(f"{bins.dtype} bins hold at most {1 << (8 * self.bin_width)} "
                             f"bins per feature, n_bins has {np.max(n_bins)}")
        self.bins_array = bins
        if order.shape[1] != self.n_samples or order.shape[0] not in (1, self.n_features):
            raise ValueError("order must have shape (n_features, n_samples), or "
                             "(1, n_samples) when every feature is a histogram feature")
        self.order = order
        self.n_bins = n_bins
        self.categorical = (np.zeros(self.n_features, dtype=np.uint8) if categorical is None
                            else np.ascontiguousarray(categorical, dtype=np.uint8))
        if self.categorical.shape[0] != self.n_features:
            raise ValueError("categorical must have one entry per feature")
        self.missing = (np.zeros(self.n_features, dtype=np.uint8) if missing is None
                        else np.ascontiguousarray(missing, dtype=np.uint8))
        if self.missing.shape[0] != self.n_features:
            raise ValueError("missing must have one entry per feature")
        self.level_missing = (np.zeros(self.n_features, dtype=np.uint8)
                              if level_missing is None
                              else np.ascontiguousarray(level_missing, dtype=np.uint8))
        if self.level_missing.shape[0] != self.n_features:
            raise ValueError("level_missing must have one entry per feature")
        self.has_missing = False
        for f in range(self.n_features):
            if self.level_missing[f] and (not self.categorical[f] or n_bins[f] < 1):
                raise ValueError(f"level_missing is set for feature {f}, which is not a "
                                 "categorical feature with a missing bin")
            if self.missing[f]:
                if self.categorical[f]:
                    raise ValueError(f"feature {f} is both categorical and has a missing "
                                     "bin: a level-set feature's missing rows are its last "
                                     "bin (level_missing)")
                if n_bins[f] < 2 or n_bins[f] >= MISSING_LEFT_BIT:
                    raise ValueError(f"feature {f} with a missing bin needs 2 to "
                                     f"{MISSING_LEFT_BIT - 1} bins, has {n_bins[f]}")
                self.has_missing = True
            if self.categorical[f] and n_bins[f] > 64 * SET_WORDS:
                raise ValueError(f"a categorical feature has at most {64 * SET_WORDS} "
                                 f"bins, feature {f} has {n_bins[f]}")
        self.wide = np.zeros(self.n_features, dtype=np.uint8)
        self.set_bins = 0
        for f in range(self.n_features):
            if self.categorical[f]:
                self.set_bins = max(self.set_bins, n_bins[f])
                self.wide[f] = n_bins[f] > MAX_SET_BINS
        self.has_wide = self.set_bins > MAX_SET_BINS
        self.max_bins = max(np.max(n_bins), 1)
        if not min_samples_leaf > 0:
            raise ValueError(f"min_samples_leaf must be > 0, got {min_samples_leaf}")
        self.min_samples_leaf = min_samples_leaf
        self.criterion = criterion
        self.route = int(route)
        self.n_stats = criterion.n_stats
        self.hist_offset = np.full(self.n_features, -1, dtype=np.intp)
        self.n_swept = 0
        for f in range(self.n_features):
            # Level-set features are always histogram features.
            if n_bins[f] <= max_hist_bins or self.categorical[f]:
                self.hist_offset[f] = offset
                offset += n_bins[f]
            else:
                self.n_swept += 1
        self.hist_size = max(offset, 1)
        # Factorizations must cost more than copying a threshold's sums.
        self.bounded_scan = bounded_scan and criterion.q >= GRAM_MIN_Q and offset > 0
        self.missing_bound = self.bounded_scan and isinstance(criterion, RidgeCriterion)
        self.share_ridge = np.asarray(criterion.ridge) * MISSING_SHARE
        self.max_thresholds = 1
        for f in range(self.n_features):
            if self.hist_offset[f] >= 0:
                self.max_thresholds = max(self.max_thresholds, n_bins[f])
        # Histogram features need only the node's row set, in any order; the
        # per-feature sorted orders are kept only when some feature is swept.
        self.n_orders = self.n_features if self.n_swept > 0 else 1
        if order.shape[0] < self.n_orders:
            raise ValueError("swept features need one row order per feature: order "
                             f"has {order.shape[0]} rows for {self.n_features} features")
        self.gram_block = min(self.n_samples, GRAM_BLOCK)
        self.urow_stride = (self.n_stats + 7) // 8 * 8
        self.exact_ranges_min = EXACT_RANGES_MIN_DOUBLES
        self.wide_min = WIDE_MIN_DOUBLES
        if self.gram_block * self.urow_stride < self.wide_min:
            self.wide_min = self.gram_block * self.urow_stride + 1     # never
        self.urow_index = None
        if _have_avx512 and criterion.q <= 16:
            # Per chunk of 8 packed entries: the indices a, then j, of its
            # products w[a] * w[j] (padding: 0, 0; masked to zero).
            pairs = [(a, j) for a in range(criterion.q) for j in range(a, criterion.q)]
            pairs += [(0, 0)] * (self.urow_stride - len(pairs))
            index = np.zeros(2 * self.urow_stride, dtype=np.int64)
            for k, (a, j) in enumerate(pairs):
                index[16 * (k // 8) + k % 8] = a
                index[16 * (k // 8) + 8 + k % 8] = j
            self.urow_index = index
        if criterion.q < GRAM_MIN_Q or not grouped_sums:
            self.gram_min_rows = self.n_samples + 1      # never
        elif self.n_swept == self.n_features:
            self.gram_min_rows = GRAM_MIN_ROWS
        else:
            self.gram_min_rows = max(
                GRAM_MIN_ROWS,
                GRAM_ROWS_PER_BIN * offset // (self.n_features - self.n_swept))
        self.set_stats_threads(1)

    def set_stats_threads(self, Py_ssize_t n_threads):
        """Use up to ``n_threads`` threads for the exact (row by row) sums.

        The committed tree's statistics of a node (its total and every
        histogram feature's bins) are then summed by several threads at
        once: they share out the rows' gathering, then each adds all the
        rows into the bins of its own contiguous range of features.  Every
        bin still receives the same adds in the same order, so the sums
        (and the tree) are the same bits for every thread count.  Calls
        made inside a parallel region and small calls stay on one thread.

        Parameters
        ----------
        n_threads : int
            At least 1; more than one needs the OpenMP build.
        """
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.stats_threads = n_threads
        self.thread_row_bins = np.zeros((n_threads, self.n_features), dtype=np.intp)
        self.thread_first_feature = np.zeros(n_threads + 1, dtype=np.intp)

    cdef int init_work(self, SplitterWork* w, bint own_order) except -1:
        cdef Py_ssize_t n = self.n_samples, n_stats = self.n_stats
        memset(w, 0, sizeof(SplitterWork))
        w.cap = INFINITY
        w.owns_order = own_order
        if own_order:
            w.order = <int*>malloc(self.n_orders * n * sizeof(int))
        else:
            w.order = &self.order[0, 0]
        w.tmp = <int*>malloc(n * sizeof(int))
        w.goes_left = <unsigned char*>malloc(n * sizeof(unsigned char))
        w.bin_counts = <Py_ssize_t*>malloc(
            (self.max_bins + self.n_features) * sizeof(Py_ssize_t))
        w.acc_left = <double*>malloc(7 * n_stats * sizeof(double))
        # 64 bytes of slack to align the rows' statistics to cache lines.
        w.urows_block = calloc((self.gram_block + 1) * self.urow_stride * sizeof(double)
                               + 64, 1)
        w.gather_pos = <Py_ssize_t*>malloc(5 * (self.max_bins + 1) * sizeof(Py_ssize_t))
        w.gather_bins = <int*>malloc(self.gram_block * (self.n_features + 1) * sizeof(int))
        w.gather_keys = <unsigned long long*>malloc(
            self.gram_block * sizeof(unsigned long long))
        if self.gram_block * self.urow_stride >= self.wide_min:
            w.wide_perm = <int*>malloc(self.gram_block * self.n_features * sizeof(int))
            w.wide_ends = <Py_ssize_t*>malloc(self.hist_size * sizeof(Py_ssize_t))
            if w.wide_perm == NULL or w.wide_ends == NULL:
                self.free_work(w)
                raise MemoryError("could not allocate the splitter's scratch")
        if self.bounded_scan:
            w.thr_bin = <Py_ssize_t*>malloc(2 * self.max_thresholds * sizeof(Py_ssize_t))
            w.thr_left = <double*>malloc(
                (n_stats + 4) * self.max_thresholds * sizeof(double))
        if self.set_bins > 0:
            w.level_perm = <int*>malloc(2 * self.set_bins * sizeof(int))
            w.level_key = <double*>malloc(2 * self.set_bins * sizeof(double))
            w.level_left = <unsigned char*>malloc(self.set_bins * sizeof(unsigned char))
            if w.level_perm == NULL or w.level_key == NULL or w.level_left == NULL:
                self.free_work(w)
                raise MemoryError("could not allocate the splitter's scratch")
            w.level_tmp = w.level_perm + self.set_bins
            w.level_tmp_key = w.level_key + self.set_bins
        if (w.order == NULL or w.tmp == NULL or w.goes_left == NULL
                or w.bin_counts == NULL or w.acc_left == NULL
                or w.urows_block == NULL or w.gather_pos == NULL or w.gather_bins == NULL
                or w.gather_keys == NULL
                or (self.bounded_scan and (w.thr_bin == NULL or w.thr_left == NULL))):
            self.free_work(w)
            raise MemoryError("could not allocate the splitter's scratch")
        w.acc_right = w.acc_left + n_stats
        w.row_bins = w.bin_counts + self.max_bins
        w.row_stats = w.acc_left + 2 * n_stats
        w.acc_missing = w.acc_left + 3 * n_stats
        w.acc_alt = w.acc_left + 4 * n_stats
        w.floor_work = w.acc_left + 5 * n_stats
        w.urows = <double*>((<size_t>w.urows_block + 63) & ~(<size_t>63))
        w.urow_acc = w.urows + self.gram_block * self.urow_stride
        w.gather_perm = w.gather_bins + self.gram_block * self.n_features
        if self.bounded_scan:
            w.thr_n_left = w.thr_bin + self.max_thresholds
            w.thr_loss = w.thr_left + n_stats * self.max_thresholds
            w.thr_alt_loss = w.thr_loss + 2 * self.max_thresholds
        try:
            self.criterion.init_work(&w.crit)
        except MemoryError:
            self.free_work(w)
            raise
        return 0

    def _node_stats(self, Py_ssize_t start, Py_ssize_t end, bint exact, wide_min=None,
                    exact_ranges_min=None):
        """Statistics of the rows ``order[0, start:end]`` (private; tests).

        Returns ``(total, hist, keys)`` as computed by ``node_stats`` with
        the given summation (``exact``: row by row; else the search's).
        ``wide_min``, if given, replaces the block size (packed statistics)
        from which the search's sums go by column ranges for this call, and
        ``exact_ranges_min`` the histogram size from which the exact ones do.
        """
        if not 0 <= start < end <= self.n_samples:
            raise ValueError("need 0 <= start < end <= n_samples")
        cdef SplitterWork w
        cdef Py_ssize_t own_wide_min = self.wide_min
        cdef Py_ssize_t own_exact_ranges_min = self.exact_ranges_min
        total = np.zeros(self.n_stats)
        hist = np.zeros(self.hist_size * self.n_stats)
        keys = np.zeros(self.hist_size, dtype=np.uint64)
        cdef double[::1] tv = total, hv = hist
        cdef unsigned long long[::1] kv = keys
        if wide_min is not None:
            self.wide_min = max(int(wide_min), 1)
        if exact_ranges_min is not None:
            self.exact_ranges_min = max(int(exact_ranges_min), 1)
        try:
            self.init_work(&w, False)
            try:
                with nogil:
                    self.node_stats(&w, start, end, &tv[0], &hv[0], &kv[0], exact)
            finally:
                self.free_work(&w)
        finally:
            self.wide_min = own_wide_min
            self.exact_ranges_min = own_exact_ranges_min
        return total, hist.reshape(self.hist_size, self.n_stats), keys

    def _best_split(self, Py_ssize_t start, Py_ssize_t end, hint=None):
        """``best_split`` of the rows ``order[0, start:end]`` (private; tests).

        With ``hint`` (feature, bin) through ``best_split_hinted``.  Returns
        ``(feature, bin, n_left, score)``, or None when no split is
        admissible.
        """
        if not 0 <= start < end <= self.n_samples:
            raise ValueError("need 0 <= start < end <= n_samples")
        cdef SplitterWork w
        cdef SplitRecord best
        cdef Py_ssize_t h[2]
        cdef bint found
        total = np.zeros(self.n_stats)
        hist = np.zeros(self.hist_size * self.n_stats)
        keys = np.zeros(self.hist_size, dtype=np.uint64)
        left = np.zeros(self.n_stats)
        cdef double[::1] tv = total, hv = hist, lv = left
        cdef unsigned long long[::1] kv = keys
        h[0] = -1 if hint is None else hint[0]
        h[1] = -1 if hint is None else hint[1]
        self.init_work(&w, False)
        try:
            with nogil:
                self.node_stats(&w, start, end, &tv[0], &hv[0], &kv[0], True)
                if hint is None:
                    found = self.best_split(&w, start, end, &tv[0], &hv[0], &best, &lv[0])
                else:
                    found = self.best_split_hinted(&w, start, end, &tv[0], &hv[0], &best,
                                                   &lv[0], h)
        finally:
            self.free_work(&w)
        if not found:
            return None
        return best.feature, best.bin, best.n_left, best.score

    cdef void free_work(self, SplitterWork* w) noexcept nogil:
        if w.owns_order:
            free(w.order)
        w.order = NULL
        free(w.tmp)
        free(w.goes_left)
        free(w.bin_counts)
        free(w.acc_left)
        free(w.urows_block)
        free(w.gather_pos)
        free(w.gather_bins)
        free(w.gather_keys)
        free(w.wide_perm)
        free(w.wide_ends)
        free(w.thr_bin)
        free(w.thr_left)
        free(w.level_perm)
        free(w.level_key)
        free(w.level_left)
        w.level_perm = NULL
        w.level_tmp = NULL
        w.level_key = NULL
        w.level_tmp_key = NULL
        w.level_left = NULL
        w.thr_bin = NULL
        w.thr_n_left = NULL
        w.thr_left = NULL
        w.thr_loss = NULL
        w.tmp = NULL
        w.goes_left = NULL
        w.bin_counts = NULL
        w.acc_left = NULL
        w.acc_right = NULL
        w.row_stats = NULL
        w.acc_missing = NULL
        w.acc_alt = NULL
        w.floor_work = NULL
        w.urows_block = NULL
        w.urows = NULL
        w.urow_acc = NULL
        w.gather_pos = NULL
        w.gather_bins = NULL
        w.gather_perm = NULL
        w.gather_keys = NULL
        w.wide_perm = NULL
        w.wide_ends = NULL
        self.criterion.free_work(&w.crit)

    cdef void copy_segment(self, SplitterWork* dst, const SplitterWork* src,
                           Py_ssize_t start, Py_ssize_t end) noexcept nogil:
        """Copy the node segment of every kept row order from ``src``."""
        cdef Py_ssize_t g, n = self.n_samples
        if dst.order == src.order:
            return
        for g in range(self.n_orders):
            memcpy(dst.order + g * n + start, src.order + g * n + start,
                   (end - start) * sizeof(int))

    cdef void clear_stats(self, double* total, double* hist,
                          unsigned long long* keys) noexcept nogil:
        memset(total, 0, self.n_stats * sizeof(double))
        if self.n_swept < self.n_features:
            memset(hist, 0, self.hist_size * self.n_stats * sizeof(double))
            memset(keys, 0, self.hist_size * sizeof(unsigned long long))

    cdef void add_stats(self, SplitterWork* w, const int* rows, Py_ssize_t n_rows,
                        double* total, double* hist,
                        unsigned long long* keys, bint exact) noexcept nogil:
        """Add rows to packed sums and, per histogram feature, to their bins.

        With ``exact`` every sum takes the rows one at a time in the given
        order (the reference rounding, used for the committed tree); the
        search's sums (``exact`` False) may group them (see GRAM_BLOCK).
        """
        self._add_stats(w, rows, n_rows, total, hist, keys, exact, -1)

    cdef void _add_stats(self, SplitterWork* w, const int* rows, Py_ssize_t n_rows,
                         double* total, double* hist, unsigned long long* keys,
                         bint exact, Py_ssize_t skip) noexcept nogil:
        # add_stats, leaving out the bins of feature ``skip`` (-1: none).
        cdef Py_ssize_t i, f, row, n_stats = self.n_stats, n_hist, ahead
        cdef Py_ssize_t nf = self.n_features, off
        cdef double* u = w.row_stats
        cdef Py_ssize_t* offs = w.row_bins
        cdef unsigned long long key
        if not exact and n_rows >= self.gram_min_rows:
            self._add_stats_gram(w, rows, n_rows, total, hist, keys, skip, False)
            return
        if self.n_swept == nf:
            add_rows(&w.crit, total, rows, n_rows)
            return
        if exact and self.stats_threads > 1 and self._add_stats_threaded(
                w, rows, n_rows, total, hist, keys, skip):
            return
        if exact and self.hist_size * n_stats >= self.exact_ranges_min:
            self._add_stats_by_ranges(w, rows, n_rows, total, hist, keys, skip)
            return
        for i in range(n_rows):
            row = rows[i]
            if i + SWEEP_PREFETCH < n_rows:
                ahead = rows[i + SWEEP_PREFETCH]
                _prefetch_row(w.crit.W + ahead * w.crit.q, w.crit.q, self.bin_address(ahead, 0))
            memset(u, 0, n_stats * sizeof(double))
            add_row(&w.crit, u, row)
            key = _row_key(row)
            n_hist = 0
            for f in range(nf):
                off = self.hist_offset[f]
                if off < 0 or f == skip:
                    continue
                off += self.bin(row, f)
                keys[off] += key
                offs[n_hist] = off * n_stats
                n_hist += 1
            _add_row_bins(total, hist, u, n_stats, offs, n_hist)

    cdef void _add_stats_by_ranges(self, SplitterWork* w, const int* rows,
                                   Py_ssize_t n_rows, double* total, double* hist,
                                   unsigned long long* keys, Py_ssize_t skip) noexcept nogil:
        # The row-by-row sums of _add_stats, EXACT_COLS columns at a time over
        # a block of rows: every element still adds the rows one at a time
        # in the given order (the same bits), but one column range of all
        # the bins stays in cache while the block's rows pass, where a row
        # added in full touches every feature's bin (MBs of them with many
        # regression features, so each row's adds went to memory).
        cdef Py_ssize_t i, start = 0, m
        while start < n_rows:
            m = min(self.gram_block, n_rows - start)
            for i in range(m):
                self._gather_row(w, rows[start + i], i)
            self._add_feature_range(w, rows + start, m, total, hist, keys, 0,
                                    self.n_features, skip, EXACT_COLS, w.row_bins)
            start += m

    cdef void _gather_row(self, const SplitterWork* w, Py_ssize_t row,
                          Py_ssize_t i) noexcept nogil:
        # Row ``row`` as the i-th of a gathered block: its packed products
        # (the row path's, bit for bit) in w.urows and its bins in
        # w.gather_bins.
        cdef double* u = w.urows + i * self.urow_stride
        memset(u, 0, self.n_stats * sizeof(double))
        add_row(&w.crit, u, row)
        self.bins_row(row, w.gather_bins + i * self.n_features)

    cdef bint _add_stats_threaded(self, SplitterWork* w, const int* rows,
                                  Py_ssize_t n_rows, double* total, double* hist,
                                  unsigned long long* keys, Py_ssize_t skip) noexcept nogil:
        # The exact sums of _add_stats on up to stats_threads threads.  Per
        # block of rows: the threads share out the rows to gather their
        # packed statistics and bins (random reads of the design and bins:
        # latency, which one thread cannot hide), then each adds the whole
        # block into the bins of its own range of histogram features
        # (thread 0 also into the total), in row order, by column ranges as
        # _add_stats_by_ranges where the bins outgrow the caches.  Every
        # element gets the rows one at a time in the given order: the bits of
        # the one-thread sums.  Returns False, having added nothing, where one
        # thread is better: inside a parallel region or for a small call.
        cdef Py_ssize_t f, c, i, m, start = 0, n_chunks, n_hist = 0, rank = 0, cols
        cdef Py_ssize_t n_stats = self.n_stats, nf = self.n_features
        cdef Py_ssize_t[::1] first = self.thread_first_feature
        for f in range(nf):
            if self.hist_offset[f] >= 0 and f != skip:
                n_hist += 1
        n_chunks = min(self.stats_threads, n_hist)
        if (n_chunks < 2 or n_rows * n_stats * (n_hist + 1) < THREADED_STATS_MIN_ADDS
                or ct_in_parallel()):
            return False
        # Chunk c holds the histogram features of ranks [c n_hist / n_chunks,
        # (c + 1) n_hist / n_chunks): first[c] is the first feature index.
        c = 0
        for f in range(nf):
            if self.hist_offset[f] < 0 or f == skip:
                continue
            while c < n_chunks and rank == c * n_hist // n_chunks:
                first[c] = f
                c += 1
            rank += 1
        first[n_chunks] = nf
        cols = n_stats
        if self.hist_size * n_stats >= self.exact_ranges_min * n_chunks:
            cols = EXACT_COLS
        while start < n_rows:
            m = min(self.gram_block, n_rows - start)
            for i in prange(m, schedule="static", num_threads=n_chunks):
                self._gather_row(w, rows[start + i], i)
            for c in prange(n_chunks, schedule="static", chunksize=1, num_threads=n_chunks):
                self._add_feature_range(w, rows + start, m, total if c == 0 else NULL, hist,
                                        keys, first[c], first[c + 1], skip, cols,
                                        &self.thread_row_bins[c, 0])
            start += m
        self.n_threaded_sums += 1
        return True

    cdef void _add_feature_range(self, const SplitterWork* w, const int* rows,
                                 Py_ssize_t m, double* total, double* hist,
                                 unsigned long long* keys, Py_ssize_t first,
                                 Py_ssize_t last, Py_ssize_t skip, Py_ssize_t cols,
                                 Py_ssize_t* offs) noexcept nogil:
        # A gathered block's rows (w.urows, w.gather_bins) added into the
        # bins of features [first, last) and, unless ``total`` is NULL, the
        # total, ``cols`` columns at a time: the same adds per element as
        # _add_stats's row loop.
        cdef Py_ssize_t i, f, g, c, c1, off, n_stats = self.n_stats, nf = self.n_features
        cdef Py_ssize_t S = self.urow_stride
        cdef const int* bb = w.gather_bins
        cdef unsigned long long key
        for i in range(m):
            key = _row_key(rows[i])
            for f in range(first, last):
                off = self.hist_offset[f]
                if off >= 0 and f != skip:
                    keys[off + bb[i * nf + f]] += key
        c = 0
        while c < n_stats:
            c1 = min(c + cols, n_stats)
            for i in range(m):
                g = 0
                for f in range(first, last):
                    off = self.hist_offset[f]
                    if off < 0 or f == skip:
                        continue
                    offs[g] = (off + bb[i * nf + f]) * n_stats
                    g += 1
                if total != NULL:
                    _add_row_bins(total + c, hist + c, w.urows + i * S + c, c1 - c, offs, g)
                elif g > 0:
                    # Without the total: the first bin takes the kernel's
                    # total slot (a different element from every other bin's).
                    _add_row_bins(hist + offs[0] + c, hist + c, w.urows + i * S + c, c1 - c,
                                  offs + 1, g - 1)
            c = c1

    cdef void _add_stats_gram(self, SplitterWork* w, const int* rows,
                              Py_ssize_t n_rows, double* total, double* hist,
                              unsigned long long* keys, Py_ssize_t skip,
                              bint neg) noexcept nogil:
        # Per block of rows: each row's packed statistics once (stride
        # urow_stride, zero-padded), then per histogram feature the rows'
        # positions in bin order (counting sort of ints; the statistics stay
        # in place) and one register-held sum per non-empty bin, added to
        # the bin once per block: the bins are written once per block and
        # bin instead of once per row (see _bin_sums).
        cdef Py_ssize_t i, j, a, k, f, g, c, c1, row, start = 0, m, nb, off, ahead
        cdef Py_ssize_t q = self.criterion.q, n_stats = self.n_stats
        cdef Py_ssize_t nf = self.n_features
        cdef Py_ssize_t S = self.urow_stride
        cdef const double* W = w.crit.W
        cdef double* U = w.urows
        cdef double* u
        cdef Py_ssize_t* ends = w.gather_pos + 4 * (self.max_bins + 1)
        cdef int* bb = w.gather_bins
        cdef int* perm = w.gather_perm
        cdef unsigned long long* rk = w.gather_keys
        cdef const double* src
        cdef double wa
        cdef bint with_hist = self.n_swept < nf
        while start < n_rows:
            m = min(self.gram_block, n_rows - start)
            # One pass over the block's rows: their packed statistics (the
            # products of packed_add_outer), keys and bins, all contiguous.
            if self.urow_index is not None:
                ct_row_products_avx512(U, S, W, q, rows + start, m, &self.urow_index[0],
                                       n_stats)
            elif _have_avx512:
                ct_row_products_any_avx512(U, S, W, q, rows + start, m)
            for i in range(m):
                row = rows[start + i]
                if start + i + SWEEP_PREFETCH < n_rows:
                    ahead = rows[start + i + SWEEP_PREFETCH]
                    _prefetch_row(W + ahead * q, q, self.bin_address(ahead, 0))
                if not _have_avx512:
                    src = W + row * q
                    u = U + i * S
                    k = 0
                    for a in range(q):
                        wa = src[a]
                        for j in range(a, q):
                            u[k + j - a] = wa * src[j]
                        k += q - a
                perm[i] = <int>i
                if with_hist:
                    rk[i] = _row_key(row)
                    self.bins_row(row, bb + i * nf)
            if neg:
                # Removing rows: their negated products (negation is exact
                # and commutes with the sums' rounding).
                for i in range(m * S):
                    U[i] = -U[i]
            ends[0] = m
            _bin_sums(total, U, S, 0, S, perm, ends, 1, n_stats, w.urow_acc)
            if with_hist and m * S >= self.wide_min:
                # A block larger than the core's cache: the bins of every
                # feature are summed one column range at a time (each range
                # of the block's rows stays in cache across the features).
                # The same adds per element as below, so the same bits.
                g = 0
                for f in range(nf):
                    off = self.hist_offset[f]
                    if off < 0 or f == skip:
                        continue
                    self._block_bin_order(w, m, f, w.wide_perm + g * m, w.wide_ends + off)
                    self._block_bin_keys(w, w.wide_perm + g * m, w.wide_ends + off,
                                         self.n_bins[f], keys + off, neg)
                    g += 1
                c = 0
                while c < S:
                    c1 = min(c + WIDE_COLS, S)
                    g = 0
                    for f in range(nf):
                        off = self.hist_offset[f]
                        if off < 0 or f == skip:
                            continue
                        _bin_sums(hist + off * n_stats, U, S, c, c1, w.wide_perm + g * m,
                                  w.wide_ends + off, self.n_bins[f], n_stats, w.urow_acc)
                        g += 1
                    c = c1
            elif with_hist:
                for f in range(nf):
                    off = self.hist_offset[f]
                    if off < 0 or f == skip:
                        continue
                    nb = self.n_bins[f]
                    self._block_bin_order(w, m, f, perm, ends)
                    _bin_sums(hist + off * n_stats, U, S, 0, S, perm, ends, nb, n_stats,
                              w.urow_acc)
                    self._block_bin_keys(w, perm, ends, nb, keys + off, neg)
            start += m

    cdef void _block_bin_order(self, SplitterWork* w, Py_ssize_t m, Py_ssize_t f,
                               int* perm, Py_ssize_t* ends) noexcept nogil:
        # The block's positions 0..m-1 (their bins in w.gather_bins) sorted
        # by (bin of f, position mod 4): four interleaved tallies and write
        # positions, as runs of one bin (rows arrive sorted by feature 0)
        # would otherwise serialize on one counter.  ends[b]: end of bin b.
        cdef Py_ssize_t i, b, t, cnt, first = 0, nb = self.n_bins[f]
        cdef Py_ssize_t nf = self.n_features, stride = self.max_bins + 1
        cdef Py_ssize_t* pos = w.gather_pos
        cdef const int* bb = w.gather_bins
        for b in range(4 * stride):
            pos[b] = 0
        for i in range(m):
            pos[(i & 3) * stride + bb[i * nf + f]] += 1
        for b in range(nb):
            for t in range(4):
                cnt = pos[t * stride + b]
                pos[t * stride + b] = first
                first += cnt
            ends[b] = first
        for i in range(m):
            b = (i & 3) * stride + bb[i * nf + f]
            perm[pos[b]] = <int>i
            pos[b] += 1

    cdef void _block_bin_keys(self, SplitterWork* w, const int* perm,
                              const Py_ssize_t* ends, Py_ssize_t nb,
                              unsigned long long* keys, bint neg) noexcept nogil:
        # Each non-empty bin's row keys, added to (or, removing, taken from)
        # its key sum.
        cdef Py_ssize_t b, i, first = 0
        cdef unsigned long long key
        cdef const unsigned long long* rk = w.gather_keys
        for b in range(nb):
            if ends[b] > first:
                key = 0
                for i in range(first, ends[b]):
                    key += rk[perm[i]]
                if neg:
                    keys[b] -= key
                else:
                    keys[b] += key
            first = ends[b]

    cdef void node_stats(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         double* total, double* hist,
                         unsigned long long* keys, bint exact) noexcept nogil:
        """Packed sums of the node and, per histogram feature, of each bin."""
        self.clear_stats(total, hist, keys)
        self.add_stats(w, w.order + start, end - start, total, hist, keys, exact)

    cdef void sort_by_bin(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                          Py_ssize_t feature, int* out) noexcept nogil:
        """Counting sort (stable) of the node's rows by their bin of ``feature``."""
        cdef Py_ssize_t i, b, acc = 0, nb = self.n_bins[feature], row
        cdef Py_ssize_t* counts = w.bin_counts
        cdef const int* rows = w.order + start
        for b in range(nb):
            counts[b] = 0
        for i in range(end - start):
            counts[self.bin(rows[i], feature)] += 1
        for b in range(nb):
            acc, counts[b] = acc + counts[b], acc
        for i in range(end - start):
            row = rows[i]
            b = self.bin(row, feature)
            out[counts[b]] = <int>row
            counts[b] += 1

    cdef void subtract_stats(self, const double* parent_total,
                             const double* parent_hist,
                             const unsigned long long* parent_keys,
                             const double* child_total, const double* child_hist,
                             const unsigned long long* child_keys,
                             double* out_total, double* out_hist,
                             unsigned long long* out_keys) noexcept nogil:
        """Sibling statistics: parent minus the child computed from rows.

        A bin that the sibling has no rows of is cleared to exact zeros.  Its
        difference is rounding noise (the two sums added the same rows in
        another order; a row of weight w adds sqrt(w)^2, not w), and a bin
        of noise would pass the scans' "empty bin" test (weight == 0): a
        threshold after it, a level of it or a missing bin of it would be
        taken as present.  The key sums are exact (integers modulo 2^64), so
        a zero key difference marks the empty bins.
        """
        cdef Py_ssize_t i, s, k, n_stats = self.n_stats
        for i in range(n_stats):
            out_total[i] = parent_total[i] - child_total[i]
        if self.n_swept == self.n_features:
            return
        for i in range(self.hist_size):
            out_keys[i] = parent_keys[i] - child_keys[i]
            k = i * n_stats
            if out_keys[i] == 0:
                memset(out_hist + k, 0, n_stats * sizeof(double))
            else:
                for s in range(k, k + n_stats):
                    out_hist[s] = parent_hist[s] - child_hist[s]

    cdef void carry_left(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         const Candidate* cand, CarryState* state, double* total,
                         double* hist, unsigned long long* keys,
                         const double* node_hist,
                         const unsigned long long* node_keys) noexcept nogil:
        """Left-child statistics of ``cand``, carried from the previous candidate.

        Along one feature's ascending thresholds only the rows that cross
        are added; a new feature (or a lower threshold) starts over from
        the node's rows sorted by bin.  The additions happen in the same
        order either way, so the sums do not depend on where a sweep was
        resumed.  ``state.rows`` holds ``end - start`` ints.  For a feature
        with a missing bin the missing rows' statistics are summed once per
        node (they sort last); a candidate sending them left gets the
        prefix plus them, and the prefix is kept aside for the next one.
        """
        cdef Py_ssize_t m = end - start, first, f = cand.feature, b, lo, hi, i
        cdef Py_ssize_t n_hist = self.hist_size * self.n_stats
        if self.wide[f]:
            self._carry_wide(w, start, end, cand, state, total, hist, keys)
            return
        if self.categorical[f]:
            # The level sets of one node are not nested in bin order: the
            # left child's sums start over for every candidate and add its
            # levels' rows bin by bin (the same sums whatever came before).
            if state.feature != f:
                self.sort_by_bin(w, start, end, f, state.rows)
                state.feature = f
            self.clear_stats(total, hist, keys)
            hi = 0
            for b in range(self.n_bins[f]):
                lo = hi
                hi = self._bin_end(state.rows, m, f, b, lo)
                if (cand.bin >> b) & 1:
                    self.add_stats(w, state.rows + lo, hi - lo, total, hist, keys, False)
            state.bin = cand.bin
            state.pos = 0
            return
        b = cand.bin & ~(<Py_ssize_t>MISSING_LEFT_BIT) if self.missing[f] else cand.bin
        if state.feature != f or b < state.bin:
            self.sort_by_bin(w, start, end, f, state.rows)
            self.clear_stats(total, hist, keys)
            state.feature = f
            state.pos = 0
            w.n_sorts += 1
            state.gen = w.n_sorts
            state.with_missing = False
            state.n_rows = m
            state.missing_start = m
            if self.missing[f]:
                lo = self._bin_end(state.rows, m, f, self.n_bins[f] - 2, 0)
                state.missing_start = lo
                self.clear_stats(state.missing_total, state.missing_hist,
                                 state.missing_keys)
                self.add_stats(w, state.rows + lo, m - lo, state.missing_total,
                               state.missing_hist, state.missing_keys, False)
        elif state.with_missing:
            memcpy(total, state.prefix_total, self.n_stats * sizeof(double))
            memcpy(hist, state.prefix_hist, n_hist * sizeof(double))
            memcpy(keys, state.prefix_keys, self.hist_size * sizeof(unsigned long long))
            state.with_missing = False
        first = state.pos
        while state.pos < m and self.bin(state.rows[state.pos], f) <= b:
            state.pos += 1
        if self.missing[f] or self.hist_offset[f] < 0:
            self.add_stats(w, state.rows + first, state.pos - first, total, hist, keys,
                           False)
        else:
            # The left child's bins of f itself are the node's up to b (and
            # empty above): copied, not summed.
            self._add_stats(w, state.rows + first, state.pos - first, total, hist, keys,
                            False, f)
            lo = self.hist_offset[f] + (state.bin + 1 if first > 0 else 0)
            hi = self.hist_offset[f] + b + 1
            if hi > lo:
                memcpy(hist + lo * self.n_stats, node_hist + lo * self.n_stats,
                       (hi - lo) * self.n_stats * sizeof(double))
                memcpy(keys + lo, node_keys + lo, (hi - lo) * sizeof(unsigned long long))
        state.bin = b
        if b != cand.bin:
            # Missing rows left: the prefix aside, then prefix + missing.
            memcpy(state.prefix_total, total, self.n_stats * sizeof(double))
            memcpy(state.prefix_hist, hist, n_hist * sizeof(double))
            memcpy(state.prefix_keys, keys, self.hist_size * sizeof(unsigned long long))
            for i in range(self.n_stats):
                total[i] += state.missing_total[i]
            for i in range(n_hist):
                hist[i] += state.missing_hist[i]
            for i in range(self.hist_size):
                keys[i] += state.missing_keys[i]
            state.with_missing = True

    cdef void _carry_wide(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                          const Candidate* cand, CarryState* state, double* total,
                          double* hist, unsigned long long* keys) noexcept nogil:
        # ``carry_left`` of a wide categorical feature.  Its candidates are
        # nested prefixes of the node's level order (computed once per node
        # from ``state.node_hist``, as ``candidates`` did), so along them only
        # the levels that join are added, one bin's rows per ``add_stats``
        # call: the same calls in the same order as from an empty prefix,
        # hence the same sums wherever a sweep was resumed.
        # With the missing rows left (MISSING_LEFT_BIT) the sets are nested
        # too, from the missing bin alone: they start over from it.
        cdef Py_ssize_t m = end - start, f = cand.feature, r, b, lo, hi
        cdef Py_ssize_t last = cand.bin & ~(<Py_ssize_t>MISSING_LEFT_BIT)
        cdef bint with_missing = (cand.bin & MISSING_LEFT_BIT) != 0
        if state.feature != f:
            self.sort_by_bin(w, start, end, f, state.rows)
            self._category_order(w, f, state.node_hist, state.level_perm, w.level_key)
            state.feature = f
            state.bin = last + 1            # start over below
        if last < state.bin or with_missing != state.with_missing:
            self.clear_stats(total, hist, keys)
            state.bin = -1
            state.with_missing = with_missing
            if with_missing:
                lo = self._bin_end(state.rows, m, f, self.n_bins[f] - 2, 0)
                self.add_stats(w, state.rows + lo, m - lo, total, hist, keys, False)
        for r in range(state.bin + 1, last + 1):
            b = state.level_perm[r]
            lo = self._bin_end(state.rows, m, f, b - 1, 0)
            hi = self._bin_end(state.rows, m, f, b, lo)
            self.add_stats(w, state.rows + lo, hi - lo, total, hist, keys, False)
        state.bin = last
        state.pos = 0

    cdef void add_rows_going_left(self, SplitterWork* w, const int* rows,
                                  Py_ssize_t n_rows, Py_ssize_t feature, Py_ssize_t upto,
                                  double sign, double* total, double* hist,
                                  unsigned long long* keys) noexcept nogil:
        """Add (``sign`` 1) or remove (-1) the rows that split ``(feature, upto)`` sends left.

        For a numeric feature: bin <= ``upto``, and with ``MISSING_LEFT`` in
        ``upto`` the missing bin too; for a categorical one that is not wide:
        the bins of the bit mask ``upto`` (as ``partition``).  The other rows
        are passed over.  Search sums: grouped (see ``_add_stats_gram``) when
        enough rows move, else row by row.  Uses ``w.tmp``.
        """
        cdef Py_ssize_t i, f, row, n_stats = self.n_stats, n_hist, off, b
        cdef Py_ssize_t nf = self.n_features, missing_bin = -1
        cdef double* u = w.row_stats
        cdef Py_ssize_t* offs = w.row_bins
        cdef unsigned long long key
        cdef int* moving = w.tmp
        cdef Py_ssize_t n_moving = 0
        cdef bint level_set = self.categorical[feature]
        if self.missing[feature] and upto & MISSING_LEFT_BIT:
            upto = upto & ~(<Py_ssize_t>MISSING_LEFT_BIT)
            missing_bin = self.n_bins[feature] - 1
        if n_rows >= self.gram_min_rows:
            # Enough rows for the grouped search sums: those that go left.
            for i in range(n_rows):
                b = self.bin(rows[i], feature)
                if _sends_left(b, upto, missing_bin, level_set):
                    moving[n_moving] = rows[i]
                    n_moving += 1
            if n_moving >= self.gram_min_rows:
                self._add_stats_gram(w, moving, n_moving, total, hist, keys, -1, sign < 0)
                return
        for i in range(n_rows):
            row = rows[i]
            b = self.bin(row, feature)
            if not _sends_left(b, upto, missing_bin, level_set):
                continue
            memset(u, 0, n_stats * sizeof(double))
            packed_add_outer(u, w.crit.W + row * w.crit.q, sign, w.crit.q)
            key = _row_key(row)
            n_hist = 0
            for f in range(nf):
                off = self.hist_offset[f]
                if off < 0:
                    continue
                off += self.bin(row, f)
                if sign > 0:
                    keys[off] += key
                else:
                    keys[off] -= key
                offs[n_hist] = off * n_stats
                n_hist += 1
            _add_row_bins(total, hist, u, n_stats, offs, n_hist)

    cdef Py_ssize_t _bin_end(self, const int* rows, Py_ssize_t m, Py_ssize_t f,
                             Py_ssize_t b, Py_ssize_t lo) noexcept nogil:
        # First position at or after ``lo`` of ``rows`` (sorted by bin of f)
        # whose bin exceeds b.
        cdef Py_ssize_t hi = m, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.bin(rows[mid], f) <= b:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t _level_missing_bin(self, Py_ssize_t f,
                                       const double* hist) noexcept nogil:
        # The missing bin of categorical f when the node has missing rows of
        # it, else -1 (then every candidate is a prefix of its level order).
        cdef Py_ssize_t b = self.n_bins[f] - 1
        if not self.level_missing[f]:
            return -1
        if hist[(self.hist_offset[f] + b) * self.n_stats] == 0.0:
            return -1
        return b

    cdef Py_ssize_t _category_order(self, SplitterWork* w, Py_ssize_t f,
                                    const double* hist, int* perm,
                                    double* key) noexcept nogil:
        """The node's non-empty bins of categorical ``f`` by mean residual.

        The residual is that of the node's own leaf model (for constant
        leaves: the target minus the node mean), so for constant leaves
        every optimal level set is a prefix of this order (Fisher 1958).
        The mean residual of a bin is read off its packed sums:
        ``(sum w y - sum_j (sum w z_j) beta_j) / sum w``.  Ties keep bin
        order, and mean residuals within ``LEVEL_TIE`` of the node's scale
        (see ``_level_keys``) are ties: levels whose means are mathematically
        equal (e.g. two levels whose rows all have the same target) must not
        be ordered by rounding, which depends on the summation route (integer
        weights against repeated rows, the order rows were added in), since
        the order decides which level sets are candidates.  The node's model
        is fitted to the sum of the feature's bins,
        so the search and the candidate list order the levels identically.
        A feature's missing bin (``level_missing``) is left out: its rows
        are tried on both sides of every prefix instead (as a numeric
        feature's are at every threshold).  Returns the number of non-empty
        bins ordered.  Uses ``acc_right`` and
        ``row_stats`` as scratch.  A wide feature's bins are sorted by a
        stable merge sort (``level_tmp``), the others by insertion.
        """
        cdef double tol = 0.0
        cdef Py_ssize_t i, j, count = self._level_keys(w, f, hist, perm, key, &tol)
        cdef double r
        cdef int b
        if self.wide[f]:
            self._merge_sort_levels(w, perm, key, count, tol)
            return count
        # Insertion sort: ties (within tol) keep bin order.
        for i in range(1, count):
            r = key[i]
            b = perm[i]
            j = i
            while j > 0 and key[j - 1] > r + tol:
                key[j] = key[j - 1]
                perm[j] = perm[j - 1]
                j -= 1
            key[j] = r
            perm[j] = b
        return count

    cdef Py_ssize_t _level_keys(self, SplitterWork* w, Py_ssize_t f, const double* hist,
                                int* perm, double* key, double* tol) noexcept nogil:
        # The present bins of feature f in bin order (perm) with their mean
        # residuals under the node's own leaf model (key); returns their count.
        # ``tol``: the tie tolerance of two keys, LEVEL_TIE times the node's
        # scale of a mean residual, rms(y) + sum_j |beta_j| rms(z_j) (the
        # sums a key is computed from are of that size per unit weight).
        cdef Py_ssize_t b, j, s, count = 0, p = self.criterion.p, n_stats = self.n_stats
        cdef Py_ssize_t off = self.hist_offset[f]
        cdef double* beta = w.row_stats
        cdef double* node = w.acc_right
        cdef const double* h
        cdef double r
        memset(node, 0, n_stats * sizeof(double))
        for b in range(self.n_bins[f]):
            h = hist + (off + b) * n_stats
            for s in range(n_stats):
                node[s] += h[s]
        self.criterion.coef(node, beta, &w.crit)
        tol[0] = 0.0
        if node[0] > 0.0:
            tol[0] = LEVEL_TIE * packed_coef_spread(node, beta, NULL, p) / sqrt(node[0])
        for b in range(self.n_bins[f] - (1 if self.level_missing[f] else 0)):
            h = hist + (off + b) * n_stats
            if h[0] == 0.0:
                continue
            r = h[p]
            for j in range(p):
                r -= h[j] * beta[j]
            key[count] = r / h[0]
            perm[count] = <int>b
            count += 1
        return count

    cdef void _merge_sort_levels(self, SplitterWork* w, int* perm, double* key,
                                 Py_ssize_t count, double tol) noexcept nogil:
        # A wide feature's level order: a bottom-up merge sort of (key, perm)
        # (ties within tol keep bin order, as insertion does).
        cdef Py_ssize_t j, width, lo, mid, hi, i, k
        cdef int* src_p = perm
        cdef double* src_k = key
        cdef int* dst_p = w.level_tmp
        cdef double* dst_k = w.level_tmp_key
        cdef int* tp
        cdef double* tk
        width = 1
        while width < count:
            lo = 0
            while lo < count:
                mid = min(lo + width, count)
                hi = min(lo + 2 * width, count)
                i = lo
                j = mid
                k = lo
                while k < hi:
                    # The right run's head goes first only when smaller beyond tol.
                    if j < hi and (i >= mid or src_k[j] < src_k[i] - tol):
                        dst_k[k] = src_k[j]
                        dst_p[k] = src_p[j]
                        j += 1
                    else:
                        dst_k[k] = src_k[i]
                        dst_p[k] = src_p[i]
                        i += 1
                    k += 1
                lo = hi
            tp = src_p
            src_p = dst_p
            dst_p = tp
            tk = src_k
            src_k = dst_k
            dst_k = tk
            width *= 2
        if src_p != perm:
            memcpy(perm, src_p, count * sizeof(int))
            memcpy(key, src_k, count * sizeof(double))

    cdef void level_set(self, SplitterWork* w, Py_ssize_t f, Py_ssize_t bin,
                        const double* hist, unsigned char* left) noexcept nogil:
        """Which bins split ``(f, bin)`` of a wide feature sends left (``left[b]``).

        The first ``bin + 1`` bins of the node's level order, recomputed
        from the node's histogram ``hist`` exactly as the search computed it,
        and the missing bin when ``bin`` carries MISSING_LEFT_BIT.
        """
        cdef Py_ssize_t r, last = bin & ~(<Py_ssize_t>MISSING_LEFT_BIT)
        self._category_order(w, f, hist, w.level_perm, w.level_key)
        memset(left, 0, self.n_bins[f] * sizeof(unsigned char))
        for r in range(last + 1):
            left[w.level_perm[r]] = 1
        if bin & MISSING_LEFT_BIT:
            left[self.n_bins[f] - 1] = 1

    cdef void set_words(self, SplitterWork* w, Py_ssize_t f, Py_ssize_t bin,
                        const double* hist, unsigned long long* words) noexcept nogil:
        """``level_set`` as SET_WORDS 64-bit words (bit b <=> bin b goes left)."""
        cdef Py_ssize_t b
        self.level_set(w, f, bin, hist, w.level_left)
        memset(words, 0, SET_WORDS * sizeof(unsigned long long))
        for b in range(self.n_bins[f]):
            if w.level_left[b]:
                words[b >> 6] |= (<unsigned long long>1) << (b & 63)

    cdef bint _use_incremental(self, Py_ssize_t m, Py_ssize_t f) noexcept nogil:
        # Flop model of appendix A.3: the bulk route pays one factorization
        # per distinct threshold (p^3 / 3 for both children), the incremental
        # route ~7 p^2 per row (update + downdate + carried rhs).
        cdef double p = self.criterion.p
        cdef double cands, bulk, incremental
        if self.route == ROUTE_BULK or not self.criterion.incremental_available():
            return False
        if self.route == ROUTE_INCREMENTAL:
            return True
        cands = min(<double>(self.n_bins[f] - 1), <double>(m - 1))
        bulk = cands * (p * p * p / 3.0 + 2.0 * p * p)
        incremental = 7.0 * m * p * p
        return incremental < bulk

    cdef void _keep_threshold(self, SplitterWork* w, Py_ssize_t k, Py_ssize_t b,
                              Py_ssize_t n_left, const double* left) noexcept nogil:
        w.thr_bin[k] = b
        w.thr_n_left[k] = n_left
        memcpy(w.thr_left + k * self.n_stats, left, self.n_stats * sizeof(double))
        w.thr_loss[2 * k] = NAN
        w.thr_loss[2 * k + 1] = NAN
        w.thr_alt_loss[2 * k] = NAN
        w.thr_alt_loss[2 * k + 1] = NAN

    cdef double _side_loss(self, SplitterWork* w, const double* total,
                           Py_ssize_t k, int side) noexcept nogil:
        # Threshold k's left (side 0) or right (1) child loss, computed once;
        # the very arithmetic of ``_consider``.
        return self._child_loss(w, total, k, side)

    cdef double* _loss_slot(self, SplitterWork* w, Py_ssize_t k, int which) noexcept nogil:
        # Where the loss of child ``which`` (see _child_sums) of kept
        # threshold k is kept once computed (NaN until then).
        return (w.thr_loss if which < 2 else w.thr_alt_loss) + 2 * k + (which & 1)

    cdef double _child_loss(self, SplitterWork* w, const double* total, Py_ssize_t k,
                            int which) noexcept nogil:
        # The loss of child ``which`` of kept threshold k, computed once.
        cdef double* slot = self._loss_slot(w, k, which)
        if isnan(slot[0]):
            slot[0] = self.criterion.loss(self._child_sums(w, total, k, which, w.acc_right),
                                          &w.crit)
        return slot[0]

    cdef double* _child_sums(self, SplitterWork* w, const double* total, Py_ssize_t k,
                             int which, double* buf) noexcept nogil:
        # Packed sums of one child of kept threshold k (which: 0 left, 1
        # right; with a missing bin, 2 left with the missing rows, 3 right
        # without them), in ``buf`` unless it is the kept sums themselves:
        # every child loss of the bounded scan is of these sums.
        cdef Py_ssize_t s, n = self.n_stats
        cdef const double* left = w.thr_left + k * n
        cdef const double* miss = w.acc_missing
        if which == 0:
            return <double*>left
        if which == 1:
            for s in range(n):
                buf[s] = total[s] - left[s]
        elif which == 2:
            for s in range(n):
                buf[s] = left[s] + miss[s]
        else:
            for s in range(n):
                buf[s] = total[s] - (left[s] + miss[s])
        return buf

    cdef void _pair_child_losses(self, SplitterWork* w, const double* total,
                                 Py_ssize_t a, int which_a, Py_ssize_t b,
                                 int which_b) noexcept nogil:
        # Two children's losses (see _child_sums), when neither is known, by
        # one side-by-side factorization of both (the bits of _side_loss and
        # _alt_loss, at about 0.7 times the time of two): the bounded scan
        # needs such pairs at each block and at each halving.
        cdef double* slot_a = self._loss_slot(w, a, which_a)
        cdef double* slot_b = self._loss_slot(w, b, which_b)
        cdef double out[2]
        if isnan(slot_a[0]) and isnan(slot_b[0]):
            self.criterion.loss_pair(
                self._child_sums(w, total, a, which_a, w.floor_work),
                self._child_sums(w, total, b, which_b, w.floor_work + self.n_stats),
                &w.crit, out)
            slot_a[0] = out[0]
            slot_b[0] = out[1]

    cdef double _alt_loss(self, SplitterWork* w, const double* total,
                          Py_ssize_t k, int side) noexcept nogil:
        # With a missing bin: threshold k's left (side 0: its present rows
        # and the missing rows, acc_missing) or right (1: the present rows
        # above it) child loss, computed once; _missing_side's arithmetic.
        return self._child_loss(w, total, k, 2 + side)

    cdef double _known_bound(self, SplitterWork* w, Py_ssize_t a, Py_ssize_t b,
                             Py_ssize_t count) noexcept nogil:
        # A lower bound on every score of the kept thresholds a..b from the
        # losses computed so far: left losses are nondecreasing along the
        # thresholds, right losses nonincreasing (see BOUND_SLACK), so the
        # nearest known left loss at or below a and the nearest known right
        # loss at or above b bound them; a failed factorization (INFINITY)
        # bounds nothing, a side without any known loss contributes 0.
        cdef Py_ssize_t k
        cdef double v, lower = 0.0, upper = 0.0
        if a >= count:
            a = -1                  # (the right side only)
        for k in range(a, -1, -1):
            v = w.thr_loss[2 * k]
            if v < INFINITY:        # (NaN: not computed)
                lower = v
                break
        for k in range(b, count):
            v = w.thr_loss[2 * k + 1]
            if v < INFINITY:
                upper = v
                break
        return lower + upper

    cdef double _known_bound_missing(self, SplitterWork* w, Py_ssize_t a, Py_ssize_t b,
                                     Py_ssize_t count, double shrink,
                                     double mfloor) noexcept nogil:
        # _known_bound for a feature with a missing bin: a lower bound on
        # both sides' scores of the thresholds a..b from the losses known so
        # far.  With the missing rows right, the left loss is at least the
        # nearest known one at or below a and the right loss at least the
        # nearest known one at or above b, or the present rows' right loss
        # there plus the missing rows' floor; likewise with them left.
        cdef Py_ssize_t k
        cdef double v, lo = NAN, lo_m = NAN, up = NAN, up_m = NAN
        # (NaN: none found yet; a known loss is finite.)
        for k in range(a, -1, -1):
            if isnan(lo):
                v = w.thr_loss[2 * k]
                if v < INFINITY:
                    lo = v
            if isnan(lo_m):
                v = w.thr_alt_loss[2 * k]
                if v < INFINITY:
                    lo_m = v
            if not (isnan(lo) or isnan(lo_m)):
                break
        for k in range(b, count):
            if isnan(up):
                v = w.thr_alt_loss[2 * k + 1]
                if v < INFINITY:
                    up = v
            if isnan(up_m):
                v = w.thr_loss[2 * k + 1]
                if v < INFINITY:
                    up_m = v
            if not (isnan(up) or isnan(up_m)):
                break
        if isnan(lo):
            lo = 0.0
        if isnan(lo_m):
            lo_m = 0.0
        if isnan(up):
            up = 0.0
        if isnan(up_m):
            up_m = 0.0
        lo_m = fmax(lo_m, fmax(lo, shrink * lo + mfloor))
        up_m = fmax(up_m, fmax(up, shrink * up + mfloor))
        return fmin(lo + up_m, lo_m + up)

    cdef bint _scan_bounded(self, SplitterWork* w, const double* total,
                            Py_ssize_t f, Py_ssize_t count, SplitRecord* best,
                            double* best_left, bint with_missing) noexcept nogil:
        """The kept thresholds of feature ``f`` (see ``_keep_threshold``), in order.

        Exactly what ``_consider`` on each threshold in turn would do, but a
        block of consecutive thresholds whose scores provably cannot improve
        the incumbent is skipped: the left loss at its first threshold plus
        the right loss at its last one bounds them all from below (see
        BOUND_SLACK).  Blocks are halved depth-first, left half first, so the
        thresholds that are evaluated are evaluated in ascending order, each
        against the incumbent it would meet in the plain scan, and the
        losses found for bounds are reused by the thresholds' own scores.

        ``with_missing``: feature ``f`` has a missing bin and the node's
        missing rows are in ``acc_missing``; each threshold then scores as
        in ``_missing_side``, and a block's bound is the left loss of its
        first threshold's present rows plus the loss of the present rows
        above its last one (every child in the block holds one of those,
        whichever side the missing rows take), raised by what the missing
        rows add to whichever child holds them (``missing_floor``, see
        ``_missing_floor``).  At a single threshold these bounds, one per
        side, come from those two losses; a side's own losses are computed
        only where that side can still matter, and the left side's not at
        all when its bound cannot beat the right side under the tie rule
        (nor the right side's when the left side beats its bound).
        """
        cdef Py_ssize_t a, b, mid, s, side, top = 0
        cdef Py_ssize_t stack[256]
        cdef double score, lower, upper, slack, score_left, bound
        cdef double msl = self.min_samples_leaf
        cdef const double* kept
        cdef double* alt = w.acc_alt
        cdef bint found = False
        cdef double floor = tie_floor(total, self.n_stats)
        # A cap from a hinted split (see best_split) prunes what exceeds it.
        cdef double cap = w.cap
        cdef bint use_cap = cap < INFINITY
        cdef bint adm_r, adm_l, bounded, dead_r, dead_l
        cdef double bound_r = 0.0, bound_l = 0.0
        cdef double mfloor = w.missing_floor if with_missing else 0.0
        cdef double shrink = 1.0 - MISSING_SHARE
        # The right child a block bound reads: present rows only, with a missing bin.
        cdef int upper_side = 3 if with_missing else 1
        slack = BOUND_SLACK * fabs(total[self.n_stats - 1])
        stack[0] = 0
        stack[1] = count - 1
        top = 2
        while top > 0:
            top -= 2
            a = stack[top]
            b = stack[top + 1]
            if a == b and with_missing:
                w.n_thresholds_scanned += 1
                kept = w.thr_left + a * self.n_stats
                adm_r = enough_weight(kept[0], msl) and enough_weight(total[0] - kept[0], msl)
                adm_l = (enough_weight(kept[0] + w.acc_missing[0], msl)
                         and enough_weight(total[0] - kept[0] - w.acc_missing[0], msl))
                bounded = best.score < INFINITY or use_cap
                dead_r = dead_l = False
                if bounded and _beyond(self._known_bound_missing(w, a, a, count, shrink, mfloor)
                                       - slack, best.score, cap, use_cap, floor):
                    w.n_thresholds_skipped += 1
                    continue
                if bounded:
                    # Both sides' scores hold its present rows on the left
                    # and the present rows above it on the right, and the
                    # missing rows on one side (see missing_floor): bounds
                    # from two of the four losses (reused when they pass).
                    self._pair_child_losses(w, total, a, 0, a, 3)
                    lower = self._side_loss(w, total, a, 0)
                    upper = self._alt_loss(w, total, a, 1)
                    if not lower < INFINITY:
                        lower = 0.0
                    if not upper < INFINITY:
                        upper = 0.0
                    bound_r = fmax(lower + upper, lower + shrink * upper + mfloor) - slack
                    bound_l = fmax(lower + upper, shrink * lower + upper + mfloor) - slack
                    dead_r = not adm_r or _beyond(bound_r, best.score, cap, use_cap, floor)
                    dead_l = not adm_l or _beyond(bound_l, best.score, cap, use_cap, floor)
                    if dead_r and dead_l:
                        w.n_thresholds_skipped += 1
                        continue
                score = INFINITY
                score_left = INFINITY
                if dead_r:
                    # Only the missing rows on the left can matter: when
                    # that side wins beyond the tie rule against the right
                    # side's bound, the right side's score is not needed
                    # (it nearly always is: both factorized side by side).
                    if adm_r:
                        self._pair_child_losses(w, total, a, 1, a, 2)
                    score_left = self._alt_loss(w, total, a, 0) + self._alt_loss(w, total, a, 1)
                    if adm_r and not (score_left < INFINITY
                                      and improves(score_left, bound_r, floor)):
                        score = self._side_loss(w, total, a, 0) + self._side_loss(w, total, a, 1)
                else:
                    if adm_r and adm_l and not dead_l:
                        # Both sides' own losses are (nearly always) needed.
                        self._pair_child_losses(w, total, a, 1, a, 2)
                    if adm_r:
                        score = self._side_loss(w, total, a, 0) + self._side_loss(w, total, a, 1)
                    if bounded and adm_l and (dead_l or (score < INFINITY and not improves(
                            bound_l, score, floor))):
                        # The missing rows on the left cannot win the tie
                        # rule against the right side (which then decides),
                        # or cannot matter at all.
                        if dead_l and (score == INFINITY
                                       or _beyond(score, best.score, cap, use_cap, floor)):
                            w.n_thresholds_skipped += 1
                            continue
                    elif adm_l:
                        score_left = (self._alt_loss(w, total, a, 0)
                                      + self._alt_loss(w, total, a, 1))
                side = 0
                if improves(score_left, score, floor):
                    score = score_left
                    side = 1
                if score < INFINITY and improves(score, best.score, floor):
                    if side:
                        for s in range(self.n_stats):
                            alt[s] = kept[s] + w.acc_missing[s]
                        self._record(best, best_left, f, w.thr_bin[a] | MISSING_LEFT_BIT,
                                     <Py_ssize_t>alt[0], score, alt)
                    else:
                        self._record(best, best_left, f, w.thr_bin[a], w.thr_n_left[a],
                                     score, kept)
                    found = True
                continue
            if a == b:
                w.n_thresholds_scanned += 1
                if best.score < INFINITY or use_cap:
                    # Known losses first, then its left loss with the
                    # nearest known right one: two chances to skip a
                    # factorization.
                    bound = self._known_bound(w, a, a, count) - slack
                    if (use_cap and bound > cap) or (best.score < INFINITY and not improves(
                            bound, best.score, floor)):
                        w.n_thresholds_skipped += 1
                        continue
                    lower = self._side_loss(w, total, a, 0)
                    if lower < INFINITY:
                        bound = lower + self._known_bound(w, count, a, count) - slack
                        if (use_cap and bound > cap) or (best.score < INFINITY and not improves(
                                bound, best.score, floor)):
                            w.n_thresholds_skipped += 1
                            continue
                score = self._side_loss(w, total, a, 0) + self._side_loss(w, total, a, 1)
                if improves(score, best.score, floor):
                    best.score = score
                    best.feature = f
                    best.bin = w.thr_bin[a]
                    best.n_left = w.thr_n_left[a]
                    memcpy(best_left, w.thr_left + a * self.n_stats,
                           self.n_stats * sizeof(double))
                    found = True
                continue
            if best.score < INFINITY or use_cap:
                # First from losses already known (no factorization): the
                # nearest left loss at or below a, the nearest right loss
                # at or above b bound those at a and b from below.
                if with_missing:
                    bound = self._known_bound_missing(w, a, b, count, shrink, mfloor) - slack
                else:
                    bound = self._known_bound(w, a, b, count) - slack
                if _beyond(bound, best.score, cap, use_cap, floor):
                    w.n_thresholds_scanned += b - a + 1
                    w.n_thresholds_skipped += b - a + 1
                    continue
                # A loss that failed to factorize (INFINITY) bounds nothing.
                self._pair_child_losses(w, total, a, 0, b, upper_side)
                lower = self._side_loss(w, total, a, 0)
                if with_missing:
                    upper = self._alt_loss(w, total, b, 1)
                else:
                    upper = self._side_loss(w, total, b, 1)
                if not lower < INFINITY:
                    lower = 0.0
                if not upper < INFINITY:
                    upper = 0.0
                bound = lower + upper - slack
                if with_missing:
                    bound = fmax(bound, fmin(lower + shrink * upper, shrink * lower + upper)
                                 + mfloor - slack)
                if (use_cap and bound > cap) or (best.score < INFINITY and not improves(
                        bound, best.score, floor)):
                    w.n_thresholds_scanned += b - a + 1
                    w.n_thresholds_skipped += b - a + 1
                    continue
            mid = (a + b) // 2
            # The halves' bounds need the left loss at mid + 1 and the
            # right one at mid (present rows only with a missing bin):
            # factorized together.
            self._pair_child_losses(w, total, mid + 1, 0, mid, upper_side)
            stack[top] = mid + 1
            stack[top + 1] = b
            stack[top + 2] = a
            stack[top + 3] = mid
            top += 4
        return found

    cdef bint _consider(self, SplitterWork* w, const double* total,
                        const double* left, Py_ssize_t f, Py_ssize_t b,
                        Py_ssize_t n_left, SplitRecord* best,
                        double* best_left) noexcept nogil:
        cdef double score = self._children_loss(w, total, left)
        if improves(score, best.score, tie_floor(total, self.n_stats)):
            best.score = score
            best.feature = f
            best.bin = b
            best.n_left = n_left
            memcpy(best_left, left, self.n_stats * sizeof(double))
            return True
        return False

    cdef double _children_loss(self, SplitterWork* w, const double* total,
                               const double* left) noexcept nogil:
        # A threshold's score: right = total - left, then both losses.
        cdef Py_ssize_t s
        cdef double* right = w.acc_right
        cdef double losses[2]
        for s in range(self.n_stats):
            right[s] = total[s] - left[s]
        self.criterion.loss_pair(left, right, &w.crit, losses)
        return losses[0] + losses[1]

    cdef int _missing_side(self, SplitterWork* w, const double* total,
                           const double* left, const double* miss, double msl,
                           double* score) noexcept nogil:
        """Where a threshold sends the node's missing rows of a feature.

        ``left`` holds the present rows up to the threshold, ``miss`` the
        missing rows.  Returns 0 (right: the left child is ``left``), 1
        (left: ``left + miss``, written to ``acc_alt``) or -1 when neither
        side is admissible; the chosen side's children's loss goes to
        ``score``.  The missing rows go left only when that is better
        beyond the tie tolerance (``improves``).  ``best_split`` and
        ``candidates`` both decide here, so they agree.
        """
        cdef Py_ssize_t s
        cdef double* alt = w.acc_alt
        cdef double score_right = INFINITY, score_left = INFINITY
        if enough_weight(left[0], msl) and enough_weight(total[0] - left[0], msl):
            score_right = self._children_loss(w, total, left)
        for s in range(self.n_stats):
            alt[s] = left[s] + miss[s]
        if enough_weight(alt[0], msl) and enough_weight(total[0] - alt[0], msl):
            score_left = self._children_loss(w, total, alt)
        if improves(score_left, score_right, tie_floor(total, self.n_stats)):
            score[0] = score_left
            return 1
        if score_right == INFINITY:
            return -1
        score[0] = score_right
        return 0

    cdef int _best_missing(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                           Py_ssize_t f, const double* total, const double* hist,
                           SplitRecord* best, double* best_left) noexcept nogil:
        """``best_split`` for feature ``f`` with a missing bin.

        Every threshold between present rows is one candidate with the
        missing rows on its better side (``_missing_side``; on histograms
        through the bounded scan when it is on), then "missing versus
        present" (present rows left).  Returns -1 when the node has
        no missing rows of ``f`` (then it is searched as a plain feature),
        else 1 when ``best`` improved, 0 when not.
        """
        cdef Py_ssize_t m = end - start, nb = self.n_bins[f], off = self.hist_offset[f]
        cdef Py_ssize_t n_stats = self.n_stats, b, s, i, mp = 0, last, side, n_left
        cdef Py_ssize_t n_thr = 0
        cdef double* left = w.acc_left
        cdef double* miss = w.acc_missing
        cdef double* alt = w.acc_alt
        cdef const double* h
        cdef const int* rows
        cdef double score, msl = self.min_samples_leaf
        cdef double floor = tie_floor(total, n_stats)
        cdef int found = 0
        memset(left, 0, n_stats * sizeof(double))
        if off >= 0:
            h = hist + (off + nb - 1) * n_stats
            if h[0] == 0.0:
                return -1
            memcpy(miss, h, n_stats * sizeof(double))
            last = nb - 2
            while last >= 0 and hist[(off + last) * n_stats] == 0.0:
                last -= 1
            for b in range(last):
                h = hist + (off + b) * n_stats
                if h[0] == 0.0:
                    continue
                for s in range(n_stats):
                    left[s] += h[s]
                if not enough_weight(total[0] - left[0], msl):
                    break       # the right child shrinks further on either side
                if self.bounded_scan:
                    self._keep_threshold(w, n_thr, b, <Py_ssize_t>left[0], left)
                    n_thr += 1
                    continue
                side = self._missing_side(w, total, left, miss, msl, &score)
                if side >= 0 and improves(score, best.score, floor):
                    n_left = <Py_ssize_t>(alt[0] if side else left[0])
                    self._record(best, best_left, f, b | (side * MISSING_LEFT_BIT),
                                 n_left, score, alt if side else left)
                    found = 1
            if n_thr > 0:
                w.missing_floor = self._missing_floor(w, miss)
                if self._scan_bounded(w, total, f, n_thr, best, best_left, True):
                    found = 1
        else:
            rows = w.order + f * self.n_samples + start
            if self.bin(rows[m - 1], f) != nb - 1:
                return -1
            # Rows sorted by bin: present rows [0, mp), missing rows after.
            mp = self._bin_end(rows, m, f, nb - 2, 0)
            memset(miss, 0, n_stats * sizeof(double))
            for i in range(mp, m):
                add_row(&w.crit, miss, rows[i])
            w.n_bulk_sweeps += 1
            for i in range(mp - 1):
                add_row(&w.crit, left, rows[i])
                b = self.bin(rows[i], f)
                if b == self.bin(rows[i + 1], f):
                    continue
                if not enough_weight(total[0] - left[0], msl):
                    break
                side = self._missing_side(w, total, left, miss, msl, &score)
                if side >= 0 and improves(score, best.score, floor):
                    self._record(best, best_left, f, b | (side * MISSING_LEFT_BIT),
                                 i + 1 + side * (m - mp), score, alt if side else left)
                    found = 1
        # Missing versus present: the present rows are the node minus the
        # missing bin.  After a bounded scan its score is at least any known
        # loss of present rows plus the missing rows' floor: skipped when
        # that cannot matter.
        for s in range(n_stats):
            alt[s] = total[s] - miss[s]
        if enough_weight(alt[0], msl) and enough_weight(miss[0], msl) and not (
                n_thr > 0 and _beyond(self._present_bound(w, n_thr) + w.missing_floor
                                      - BOUND_SLACK * fabs(total[n_stats - 1]),
                                      best.score, w.cap, w.cap < INFINITY, floor)):
            score = self._children_loss(w, total, alt)
            if improves(score, best.score, floor):
                n_left = <Py_ssize_t>alt[0] if off >= 0 else mp
                self._record(best, best_left, f, nb - 2, n_left, score, alt)
                found = 1
        return found

    cdef double _present_bound(self, SplitterWork* w, Py_ssize_t count) noexcept nogil:
        # The largest known loss of a set of present rows among the kept
        # thresholds' (left without, right without the missing rows): each
        # is at most the loss of all present rows.
        cdef Py_ssize_t k
        cdef double v, bound = 0.0
        for k in range(count):
            v = w.thr_loss[2 * k]
            if v < INFINITY and v > bound:
                bound = v
            v = w.thr_alt_loss[2 * k + 1]
            if v < INFINITY and v > bound:
                bound = v
        return bound

    cdef double _missing_floor(self, SplitterWork* w, const double* miss) noexcept nogil:
        """A lower bound on what a node's missing rows add to any child's loss.

        For row sets S and M and any 0 < e < 1, splitting the penalty gives
        loss(S + M) >= loss_{(1-e) ridge}(S) + loss_{e ridge}(M), and
        loss_{(1-e) ridge}(S) >= (1 - e) loss(S) (the loss is concave in the
        ridge and nonnegative).  With e = MISSING_SHARE this returns
        loss_{e ridge}(M) (``miss`` holds M's packed sums), less an
        allowance for its rounding: the computed loss is the exact one of a
        perturbed system (Cholesky's backward error), which differs by at
        most about (q + 1) u (sqrt(yy) + sum_j |beta_j| sqrt(A_jj))^2; 64
        times that is taken off.  0 when the criterion has no ridge leaves
        or the factorization fails.
        """
        cdef Py_ssize_t p = self.criterion.p, q = p + 1, n_stats = self.n_stats
        cdef Py_ssize_t i, k
        cdef double* K = w.floor_work
        cdef double* beta = w.floor_work + n_stats
        cdef double value, spread
        cdef int info = 0
        if not self.missing_bound:
            return 0.0
        memcpy(K, miss, n_stats * sizeof(double))
        k = 0
        for i in range(p):
            K[k] += self.share_ridge[i]
            k += q - i
        value = packed_chol_loss(K, p, &info)
        w.crit.n_factorizations += 1
        if info != 0 or not 0.0 < value < INFINITY:
            return 0.0
        packed_factor_coef(K, beta, p)
        spread = packed_coef_spread(miss, beta, &self.share_ridge[0], p)
        value -= 64.0 * q * DBL_EPSILON * spread * spread
        return value if value > 0.0 else 0.0

    cdef void _record(self, SplitRecord* best, double* best_left, Py_ssize_t f,
                      Py_ssize_t b, Py_ssize_t n_left, double score,
                      const double* left) noexcept nogil:
        best.score = score
        best.feature = f
        best.bin = b
        best.n_left = n_left
        memcpy(best_left, left, self.n_stats * sizeof(double))

    cdef Py_ssize_t _missing_candidates(self, SplitterWork* w, Py_ssize_t start,
                                        Py_ssize_t end, Py_ssize_t f,
                                        const double* total, const double* hist,
                                        const unsigned long long* keys,
                                        Candidate* out, Py_ssize_t count) noexcept nogil:
        """``candidates`` for feature ``f`` with a missing bin.

        The candidates of ``_best_missing``, in its order, appended at
        ``out[count]``: at most one per threshold (the missing rows on their
        better side) and "missing versus present".  Returns the new count,
        or -1 when the node has no missing rows of ``f``.
        """
        cdef Py_ssize_t m = end - start, nb = self.n_bins[f], off = self.hist_offset[f]
        cdef Py_ssize_t n_stats = self.n_stats, b, s, i, mp = 0, last, side
        cdef double* left = w.acc_left
        cdef double* miss = w.acc_missing
        cdef double* alt = w.acc_alt
        cdef const double* h
        cdef const int* rows
        cdef double score, msl = self.min_samples_leaf
        cdef unsigned long long key = 0, key_missing = 0, key_present = 0
        memset(left, 0, n_stats * sizeof(double))
        if off >= 0:
            h = hist + (off + nb - 1) * n_stats
            if h[0] == 0.0:
                return -1
            memcpy(miss, h, n_stats * sizeof(double))
            key_missing = keys[off + nb - 1]
            for b in range(nb - 1):
                key_present += keys[off + b]
            last = nb - 2
            while last >= 0 and hist[(off + last) * n_stats] == 0.0:
                last -= 1
            for b in range(last):
                h = hist + (off + b) * n_stats
                if h[0] == 0.0:
                    continue
                for s in range(n_stats):
                    left[s] += h[s]
                key += keys[off + b]
                if not enough_weight(total[0] - left[0], msl):
                    break
                side = self._missing_side(w, total, left, miss, msl, &score)
                if side == 1:
                    _set_candidate(&out[count], f, b | MISSING_LEFT_BIT,
                                   <Py_ssize_t>alt[0], key + key_missing, count)
                    count += 1
                elif side == 0:
                    _set_candidate(&out[count], f, b, <Py_ssize_t>left[0], key, count)
                    count += 1
        else:
            rows = w.order + f * self.n_samples + start
            if self.bin(rows[m - 1], f) != nb - 1:
                return -1
            mp = self._bin_end(rows, m, f, nb - 2, 0)
            memset(miss, 0, n_stats * sizeof(double))
            for i in range(mp, m):
                add_row(&w.crit, miss, rows[i])
                key_missing += _row_key(rows[i])
            for i in range(mp):
                key_present += _row_key(rows[i])
            for i in range(mp - 1):
                add_row(&w.crit, left, rows[i])
                key += _row_key(rows[i])
                b = self.bin(rows[i], f)
                if b == self.bin(rows[i + 1], f):
                    continue
                if not enough_weight(total[0] - left[0], msl):
                    break
                side = self._missing_side(w, total, left, miss, msl, &score)
                if side == 1:
                    _set_candidate(&out[count], f, b | MISSING_LEFT_BIT, i + 1 + m - mp,
                                   key + key_missing, count)
                    count += 1
                elif side == 0:
                    _set_candidate(&out[count], f, b, i + 1, key, count)
                    count += 1
        for s in range(n_stats):
            alt[s] = total[s] - miss[s]
        if enough_weight(alt[0], msl) and enough_weight(miss[0], msl):
            _set_candidate(&out[count], f, nb - 2,
                           <Py_ssize_t>alt[0] if off >= 0 else mp, key_present, count)
            count += 1
        return count

    cdef bint _level_prefixes(self, SplitterWork* w, const double* total, Py_ssize_t f,
                              const double* hist, Py_ssize_t n_prefixes, bint missing_left,
                              Py_ssize_t cset, double* left, SplitRecord* best,
                              double* best_left) noexcept nogil:
        # best_split's candidates of categorical f: the first ``n_prefixes``
        # prefixes of the node's level order (``w.level_perm``), each joined
        # to what ``left``/``cset`` hold (nothing, or the missing bin when
        # ``missing_left``).  Nested, so the bounded scan applies.
        cdef Py_ssize_t r, b, s, n_thr = 0, n_stats = self.n_stats
        cdef Py_ssize_t off = self.hist_offset[f]
        cdef const double* h
        cdef int offered
        cdef bint found = False
        for r in range(n_prefixes):
            b = w.level_perm[r]
            h = hist + (off + b) * n_stats
            for s in range(n_stats):
                left[s] += h[s]
            if self.wide[f]:
                cset = r | (MISSING_LEFT_BIT if missing_left else 0)
            else:
                cset |= (<Py_ssize_t>1) << b
            offered = self._offer_prefix(w, total, f, cset, left, &n_thr, best, best_left)
            if offered < 0:
                break
            found = found or offered == 1
        if n_thr > 0 and self._scan_bounded(w, total, f, n_thr, best, best_left, False):
            found = True
        return found

    cdef inline int _offer_prefix(self, SplitterWork* w, const double* total, Py_ssize_t f,
                                  Py_ssize_t bin, const double* left, Py_ssize_t* n_thr,
                                  SplitRecord* best, double* best_left) noexcept nogil:
        # One candidate of a histogram scan whose left children grow
        # (``left``: its packed sums): kept for the bounded scan, or scored.
        # -1 when the right child is already too light (the scan ends),
        # 1 when it improved ``best``, else 0.
        cdef double msl = self.min_samples_leaf
        cdef Py_ssize_t n_left = <Py_ssize_t>left[0]
        if not enough_weight(left[0], msl):
            return 0
        if not enough_weight(total[0] - left[0], msl):
            return -1
        if self.bounded_scan:
            self._keep_threshold(w, n_thr[0], bin, n_left, left)
            n_thr[0] += 1
            return 0
        return 1 if self._consider(w, total, left, f, bin, n_left, best, best_left) else 0

    cdef bint best_split(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                         const double* total, const double* hist,
                         SplitRecord* best, double* best_left) noexcept nogil:
        """Best admissible split by the sum of children's leaf losses.

        Features in order, thresholds ascending, strict improvement: ties go
        to the first candidate.  Returns False when no split is admissible.
        The best split's left packed sums are written to ``best_left``
        (``n_stats`` doubles owned by the caller).
        """
        cdef Py_ssize_t m = end - start
        cdef Py_ssize_t f, i, s, b, row, n_left, n_stats = self.n_stats
        cdef Py_ssize_t nf = self.n_features, off, nb, last, n = self.n_samples
        cdef Py_ssize_t q = w.crit.q
        cdef int bin_i, bin_next
        cdef const int* rows
        cdef const double* h
        cdef const double* W = w.crit.W
        cdef double* left = w.acc_left
        cdef double score, msl = self.min_samples_leaf
        cdef double weight = total[0], w_left, root
        cdef bint incremental, found = False
        cdef int* perm = w.level_perm
        cdef Py_ssize_t count, r, cset, n_thr, ahead, mb, side
        cdef int offered
        cdef bint slow = <double>m * q * q >= INTERRUPT_MIN_WORK
        best.score = INFINITY
        # min_samples_leaf counts training weight (rows when unweighted).
        if not enough_weight(weight, 2.0 * msl):
            return False
        for f in range(nf):
            if slow and f > 0 and _interrupted(w):
                return False    # the caller raises or stops (see SplitterWork)
            off = self.hist_offset[f]
            if self.categorical[f]:
                # Prefixes of the node's level order: K levels, K - 1 sets,
                # each a bit mask (a wide feature: the prefix's last rank).
                # With missing rows in the node: K prefixes of the present
                # levels (the last: every present row left) with the missing
                # rows right, then K - 1 with them left.
                count = self._category_order(w, f, hist, perm, w.level_key)
                mb = self._level_missing_bin(f, hist)
                for side in range(2 if mb >= 0 else 1):
                    memset(left, 0, n_stats * sizeof(double))
                    cset = 0
                    if side:
                        h = hist + (off + mb) * n_stats
                        for s in range(n_stats):
                            left[s] += h[s]
                        if not self.wide[f]:
                            cset = (<Py_ssize_t>1) << mb
                    r = count if mb >= 0 and side == 0 else count - 1
                    if self._level_prefixes(w, total, f, hist, r, side == 1, cset, left,
                                            best, best_left):
                        found = True
                continue
            if self.missing[f]:
                r = self._best_missing(w, start, end, f, total, hist, best, best_left)
                if r >= 0:
                    found = found or r == 1
                    continue
            if off >= 0:
                # Scan bins; a threshold after bin b is a candidate when a
                # later bin is non-empty.  Empty bins add nothing.
                nb = self.n_bins[f]
                last = nb - 1
                while last >= 0 and hist[(off + last) * n_stats] == 0.0:
                    last -= 1
                memset(left, 0, n_stats * sizeof(double))
                n_left = 0
                n_thr = 0
                for b in range(last):
                    h = hist + (off + b) * n_stats
                    if h[0] == 0.0:
                        continue
                    for s in range(n_stats):
                        left[s] += h[s]
                    offered = self._offer_prefix(w, total, f, b, left, &n_thr, best,
                                                 best_left)
                    if offered < 0:
                        break
                    found = found or offered == 1
                if n_thr > 0 and self._scan_bounded(w, total, f, n_thr, best, best_left,
                                                    False):
                    found = True
                continue

            rows = w.order + f * n + start
            if self.bin(rows[0], f) == self.bin(rows[m - 1], f):
                continue        # constant on this node: no threshold separates
            incremental = self._use_incremental(m, f)
            if incremental:
                self.criterion.sweep_start(&w.crit, total)
                w.n_incremental_sweeps += 1
            else:
                memset(left, 0, n_stats * sizeof(double))
                w.n_bulk_sweeps += 1
            w_left = 0.0
            for i in range(m - 1):
                row = rows[i]
                if i + SWEEP_PREFETCH < m:
                    ahead = rows[i + SWEEP_PREFETCH]
                    _prefetch_row(W + ahead * q, q, self.bin_address(ahead, f))
                if incremental:
                    sweep_move_left(&w.crit, row)
                else:
                    add_row(&w.crit, left, row)
                root = W[row * q]
                w_left += root * root
                bin_i = self.bin(row, f)
                bin_next = self.bin(rows[i + 1], f)
                if bin_i == bin_next:
                    continue    # tied bin: no threshold between these rows
                n_left = i + 1
                if not enough_weight(w_left, msl):
                    continue
                if not enough_weight(weight - w_left, msl):
                    break
                if incremental:
                    score = sweep_left_loss(&w.crit) + sweep_right_loss(&w.crit)
                    if improves(score, best.score, tie_floor(total, n_stats)):
                        best.score = score
                        best.feature = f
                        best.bin = bin_i
                        best.n_left = n_left
                        sweep_left_stats(&w.crit, best_left)
                        found = True
                elif self._consider(w, total, left, f, bin_i, n_left, best, best_left):
                    found = True
        return found

    cdef bint best_split_hinted(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                                const double* total, const double* hist,
                                SplitRecord* best, double* best_left,
                                Py_ssize_t* hint) noexcept nogil:
        """``best_split``, sped up by a guess of the winner; the same result.

        ``hint`` holds a split (feature, bin), e.g. the one a similar node
        took, or feature -1; it is replaced by the split found.  When it is
        an admissible threshold of a histogram feature here, its score S >= 0
        gives a cap: a threshold scoring above S + 3e-10 S + 3 tie_floor
        never matters to the tie rule (every score up to S plus the
        tolerance beats it, so the first such candidate in the order
        becomes the incumbent whatever came before, and nothing above the
        cap displaces it later), and the bounded scan skips blocks whose
        bound exceeds the cap.  On a feature with missing rows here, S is
        the score of the candidate its threshold makes (the missing rows on
        their better side, whichever side the guess sent them), or of
        "missing versus present" (see ``_missing_cap``).
        """
        cdef bint found
        w.cap = INFINITY
        if self.bounded_scan and hint[0] >= 0:
            w.cap = self._hint_cap(w, total, hist, hint[0], hint[1])
        found = self.best_split(w, start, end, total, hist, best, best_left)
        w.cap = INFINITY
        if found:
            hint[0] = best.feature
            hint[1] = best.bin
        return found

    cdef double _hint_cap(self, SplitterWork* w, const double* total, const double* hist,
                          Py_ssize_t f, Py_ssize_t b) noexcept nogil:
        # The cap of best_split_hinted, or INFINITY when (f, b) is not one
        # of the candidates best_split scores for histogram feature f here
        # (the conditions of its bin scan).
        cdef Py_ssize_t off, nb, n_stats = self.n_stats
        cdef double* left = w.acc_alt
        cdef double score, msl = self.min_samples_leaf
        if f < 0 or f >= self.n_features or self.categorical[f]:
            return INFINITY
        off = self.hist_offset[f]
        nb = self.n_bins[f]
        if off < 0 or not enough_weight(total[0], 2.0 * msl):
            return INFINITY
        if self.missing[f] and hist[(off + nb - 1) * n_stats] != 0.0:
            return self._missing_cap(w, total, hist, f, b)
        if not self._guess_prefix(hist, off, nb, b, left):
            return INFINITY
        if not (enough_weight(left[0], msl) and enough_weight(total[0] - left[0], msl)):
            return INFINITY
        score = self._children_loss(w, total, left)
        if not (0.0 <= score < INFINITY):
            return INFINITY
        return score + 3e-10 * score + 3.0 * tie_floor(total, n_stats)

    cdef bint _guess_prefix(self, const double* hist, Py_ssize_t off,
                            Py_ssize_t n_present, Py_ssize_t b,
                            double* left) noexcept nogil:
        # A guessed threshold b of the histogram feature at bin offset off
        # (its first n_present bins hold present values): False unless the
        # bin scan considers b (bin b non-empty, below the last non-empty
        # bin), else the sums of bins 0..b in ``left``, added as the scan does.
        cdef Py_ssize_t last = n_present - 1, k, s, n_stats = self.n_stats
        cdef const double* h
        while last >= 0 and hist[(off + last) * n_stats] == 0.0:
            last -= 1
        if b < 0 or b >= last or hist[(off + b) * n_stats] == 0.0:
            return False
        memset(left, 0, n_stats * sizeof(double))
        for k in range(b + 1):
            h = hist + (off + k) * n_stats
            if h[0] == 0.0:
                continue
            for s in range(n_stats):
                left[s] += h[s]
        return True

    cdef double _missing_cap(self, SplitterWork* w, const double* total,
                             const double* hist, Py_ssize_t f,
                             Py_ssize_t b) noexcept nogil:
        # _hint_cap for a histogram feature f with missing rows at the node:
        # the score of the candidate that _best_missing's bounded scan would
        # make at the guessed threshold (the missing rows on its better side,
        # whichever side the guess sent them), or of "missing versus
        # present", with the scan's very arithmetic and admissibility tests.
        cdef Py_ssize_t off = self.hist_offset[f], nb = self.n_bins[f], s
        cdef Py_ssize_t n_stats = self.n_stats
        cdef double* left = w.acc_left
        cdef double* alt = w.acc_alt
        cdef const double* miss = hist + (off + nb - 1) * n_stats
        cdef double score, score_left, floor = tie_floor(total, n_stats)
        cdef double msl = self.min_samples_leaf
        if b == nb - 2:
            # Missing versus present (no threshold of the scan has this bin).
            for s in range(n_stats):
                alt[s] = total[s] - miss[s]
            if not (enough_weight(alt[0], msl) and enough_weight(miss[0], msl)):
                return INFINITY
            score = self._children_loss(w, total, alt)
        else:
            b = b & ~(<Py_ssize_t>MISSING_LEFT_BIT)
            if not self._guess_prefix(hist, off, nb - 1, b, left):
                return INFINITY
            if not enough_weight(total[0] - left[0], msl):
                return INFINITY     # past the scan's last kept threshold
            score = INFINITY
            score_left = INFINITY
            if enough_weight(left[0], msl) and enough_weight(total[0] - left[0], msl):
                score = self._children_loss(w, total, left)
            if (enough_weight(left[0] + miss[0], msl)
                    and enough_weight(total[0] - left[0] - miss[0], msl)):
                for s in range(n_stats):
                    alt[s] = left[s] + miss[s]
                score_left = self._children_loss(w, total, alt)
            if improves(score_left, score, floor):
                score = score_left
        if not (0.0 <= score < INFINITY):
            return INFINITY
        return score + 3e-10 * score + 3.0 * floor

    cdef Py_ssize_t max_candidates(self, Py_ssize_t n_rows) noexcept nogil:
        cdef Py_ssize_t f, total = 0
        for f in range(self.n_features):
            if self.level_missing[f]:
                # K present levels: K prefixes with the missing rows right,
                # K - 1 with them left.
                total += max(min(2 * <Py_ssize_t>self.n_bins[f] - 3, 2 * n_rows - 1), 0)
            else:
                total += min(<Py_ssize_t>self.n_bins[f] - 1, n_rows - 1)
        return max(total, 1)

    cdef Py_ssize_t candidates(self, SplitterWork* w, Py_ssize_t start,
                               Py_ssize_t end, const double* total, const double* hist,
                               const unsigned long long* keys,
                               Candidate* out) noexcept nogil:
        """All admissible splits in (feature, threshold) order.

        A threshold is admissible when it separates the node's rows and
        leaves at least ``min_samples_leaf`` rows on each side; among pool
        thresholds giving the same partition only the smallest is listed.
        Splits on different features that induce the same partition are
        flagged ``duplicate`` (all but the first), so they are scored once.
        """
        cdef Py_ssize_t m = end - start
        cdef Py_ssize_t f, i, b, n_left, count = 0, off, last, n_stats = self.n_stats
        cdef Py_ssize_t n = self.n_samples, q = w.crit.q
        cdef const int* rows
        cdef const double* W = w.crit.W
        cdef int bin_i
        cdef unsigned long long key
        cdef double msl = self.min_samples_leaf, weight = 0.0, w_left, root
        cdef int* perm = w.level_perm
        cdef Py_ssize_t n_levels, r, cset, mb, side
        cdef bint wide
        # min_samples_leaf counts training weight (rows when unweighted): the
        # node's weight is the sum of its rows' squared design intercepts.
        rows = w.order + start
        for i in range(m):
            root = W[rows[i] * q]
            weight += root * root
        if not enough_weight(weight, 2.0 * msl):
            return 0
        for f in range(self.n_features):
            off = self.hist_offset[f]
            key = 0
            n_left = 0
            w_left = 0.0
            if self.categorical[f]:
                # Prefixes of the node's level order, as in best_split (with
                # the missing rows right, then left).
                n_levels = self._category_order(w, f, hist, perm, w.level_key)
                wide = self.wide[f]
                mb = self._level_missing_bin(f, hist)
                for side in range(2 if mb >= 0 else 1):
                    cset = 0
                    key = 0
                    w_left = 0.0
                    if side:
                        key = keys[off + mb]
                        w_left = hist[(off + mb) * n_stats]
                        if not wide:
                            cset = (<Py_ssize_t>1) << mb
                    for r in range(n_levels if mb >= 0 and side == 0 else n_levels - 1):
                        b = perm[r]
                        w_left += hist[(off + b) * n_stats]
                        n_left = <Py_ssize_t>w_left
                        key += keys[off + b]
                        if wide:
                            cset = r | (MISSING_LEFT_BIT if side else 0)
                        else:
                            cset |= (<Py_ssize_t>1) << b
                        if not enough_weight(w_left, msl):
                            continue
                        if not enough_weight(weight - w_left, msl):
                            break
                        _set_candidate(&out[count], f, cset, n_left, key, count)
                        count += 1
                continue
            if self.missing[f]:
                r = self._missing_candidates(w, start, end, f, total, hist, keys, out, count)
                if r >= 0:
                    count = r
                    continue
            if off >= 0:
                last = self.n_bins[f] - 1
                while last >= 0 and hist[(off + last) * n_stats] == 0.0:
                    last -= 1
                for b in range(last):
                    if hist[(off + b) * n_stats] == 0.0:
                        continue
                    w_left += hist[(off + b) * n_stats]
                    n_left = <Py_ssize_t>w_left
                    key += keys[off + b]
                    if not enough_weight(w_left, msl):
                        continue
                    if not enough_weight(weight - w_left, msl):
                        break
                    _set_candidate(&out[count], f, b, n_left, key, count)
                    count += 1
                continue
            rows = w.order + f * n + start
            if self.bin(rows[0], f) == self.bin(rows[m - 1], f):
                continue
            for i in range(m - 1):
                key += _row_key(rows[i])
                root = W[rows[i] * q]
                w_left += root * root
                bin_i = self.bin(rows[i], f)
                if bin_i == self.bin(rows[i + 1], f):
                    continue
                n_left = i + 1
                if not enough_weight(w_left, msl):
                    continue
                if not enough_weight(weight - w_left, msl):
                    break
                _set_candidate(&out[count], f, bin_i, n_left, key, count)
                count += 1
        if count > 1:
            qsort(out, count, sizeof(Candidate), _cmp_candidates)
            for i in range(1, count):
                if out[i].n_left == out[i - 1].n_left and out[i].key == out[i - 1].key:
                    out[i].duplicate = True
            qsort(out, count, sizeof(Candidate), _cmp_position)
        return count

    cdef Py_ssize_t partition(self, SplitterWork* w, Py_ssize_t start,
                              Py_ssize_t end, Py_ssize_t feature,
                              Py_ssize_t bin, const double* hist) noexcept nogil:
        """Stable partition of the kept orders; returns the split index.

        ``hist`` is the node's histogram, read only when ``feature`` is a
        wide categorical feature (its level order gives the set).
        """
        cdef Py_ssize_t g, i, write = 0, n_right, m = end - start, left, b, last
        cdef Py_ssize_t n = self.n_samples
        cdef int row
        cdef int* seg
        cdef int* tmp = w.tmp
        cdef unsigned char* mask = w.goes_left
        cdef const int* rows = w.order + start
        cdef unsigned char* in_set = w.level_left
        if self.wide[feature]:
            self.level_set(w, feature, bin, hist, in_set)
            for i in range(m):
                row = rows[i]
                mask[row] = in_set[self.bin(row, feature)]
        elif self.categorical[feature]:
            for i in range(m):
                row = rows[i]
                mask[row] = (bin >> self.bin(row, feature)) & 1
        elif self.missing[feature] and bin & MISSING_LEFT_BIT:
            # Present rows up to the threshold, and the missing bin.
            b = bin & ~(<Py_ssize_t>MISSING_LEFT_BIT)
            last = self.n_bins[feature] - 1
            for i in range(m):
                row = rows[i]
                mask[row] = (self.bin(row, feature) <= b) | (self.bin(row, feature) == last)
        else:
            for i in range(m):
                row = rows[i]
                mask[row] = self.bin(row, feature) <= bin
        for g in range(self.n_orders):
            seg = w.order + g * n + start
            write = 0
            n_right = 0
            # Branch-free: both destinations are written and only one index
            # advances (write <= i, so seg[write] never overtakes the read).
            # A node's rows come in no particular order, so a branch on the
            # side would be mispredicted half the time.
            for i in range(m):
                row = seg[i]
                left = mask[row]
                seg[write] = row
                tmp[n_right] = row
                write += left
                n_right += 1 - left
            memcpy(seg + write, tmp, n_right * sizeof(int))
        return start + write

    cdef Py_ssize_t take_carried(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                                 const Candidate* cand,
                                 const CarryState* state) noexcept nogil:
        """``partition`` by ``cand`` from its carried sweep (``carry_left`` just ran).

        The carried rows are the node's sorted by bin of the candidate's
        feature, the left child's first: with one kept row order (every
        feature searched by histograms, where a node's rows may come in any
        order) copying them is the partition, without reading the bins.
        The children's rows then come in that order, which only the
        search's sums see (rounding).  A feature with a missing bin has its
        missing rows last: a candidate sending them left takes the prefix,
        then them, then the rest.  Returns the split index, or -1 where
        this does not apply (level sets, swept features): then
        ``partition`` does the work.
        """
        cdef Py_ssize_t f = cand.feature, b = cand.bin, m = end - start, mp
        if self.missing[f]:
            b = b & ~(<Py_ssize_t>MISSING_LEFT_BIT)
        if (self.n_orders != 1 or self.categorical[f]
                or state.feature != f or state.bin != b):
            return -1
        if b == cand.bin:
            memcpy(w.order + start, state.rows, m * sizeof(int))
            return start + state.pos
        mp = self._bin_end(state.rows, m, f, self.n_bins[f] - 2, state.pos)
        memcpy(w.order + start, state.rows, state.pos * sizeof(int))
        memcpy(w.order + start + state.pos, state.rows + mp, (m - mp) * sizeof(int))
        memcpy(w.order + start + state.pos + m - mp, state.rows + state.pos,
               (mp - state.pos) * sizeof(int))
        return start + state.pos + m - mp

    cdef void save(self, const SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                   int* buffer) noexcept nogil:
        cdef Py_ssize_t g, m = end - start, n = self.n_samples
        for g in range(self.n_orders):
            memcpy(buffer + g * m, w.order + g * n + start, m * sizeof(int))

    cdef void restore(self, SplitterWork* w, Py_ssize_t start, Py_ssize_t end,
                      const int* buffer) noexcept nogil:
        cdef Py_ssize_t g, m = end - start, n = self.n_samples
        for g in range(self.n_orders):
            memcpy(w.order + g * n + start, buffer + g * m, m * sizeof(int))
