"""Leaf objectives for linear (ridge) and constant leaves."""

import numpy as np

from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, fabs, sqrt
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from ._linalg cimport (
    chol_update, chol_downdate, chol_factor, solve_r, solve_rt, sum_squares,
    packed_size, packed_add_outer, packed_ridge_loss, packed_ridge_coef,
    packed_pair_size, packed_ridge_loss_pair,
)

# A downdate whose result is this close to singular is replaced by a fresh
# factorization of the right child's sums: rounding in the rotations grows
# like 1 / (1 - ||R^{-T} x||^2).
cdef double DOWNDATE_TOL = 1e-8

# A ridge Gram matrix that does not factorize (regression features collinear
# within a leaf, the ridge below float64's resolution of its diagonal) is
# factorized again with each diagonal entry A_jj raised by s * A_jj, s from
# JITTER_START * (p + 1) * eps growing JITTER_GROWTH-fold: the loss and the
# coefficients of a ridge a few rounding units larger, instead of no leaf.
cdef double JITTER_START = 16.0
cdef double JITTER_GROWTH = 16.0
cdef int JITTER_TRIES = 10


cdef int factor_jittered(const double* acc, const double* minus, const double* ridge,
                         double* R, double* rhs, Py_ssize_t p, bint plain_first) noexcept nogil:
    """Factor the ridge system of ``acc - minus``, raising its diagonal if needed.

    ``minus`` may be NULL.  Fills ``R`` (p*p, upper triangle) and the
    right-hand side ``rhs`` (p).  With ``plain_first`` the system is tried
    as it is first.  Returns 0 when it factorized as it is, 1 when only with
    a raised diagonal, 2 when not even with the largest raise (about 1e-3 of
    the diagonal: non-finite sums).
    """
    cdef Py_ssize_t i, col, k, q = p + 1, _attempt
    cdef double first = JITTER_START * q * DBL_EPSILON
    cdef double s = 0.0 if plain_first else first, value
    for _attempt in range(JITTER_TRIES + (1 if plain_first else 0)):
        k = 0
        for i in range(p):
            for col in range(i, p + 1):
                value = acc[k + col - i]
                if minus != NULL:
                    value = value - minus[k + col - i]
                if col < p:
                    R[i * p + col] = value
                else:
                    rhs[i] = value
            if s == 0.0:
                R[i * p + i] += ridge[i]
            else:
                R[i * p + i] += ridge[i] + s * fabs(R[i * p + i])
            k += q - i
        if chol_factor(R, p) == 0:
            return 0 if s == 0.0 else 1
        s = first if s == 0.0 else s * JITTER_GROWTH
    return 2


cdef class Criterion:
    """Base class: packed statistics and the leaf objective of a row set.

    Parameters
    ----------
    W : ndarray of shape (n_samples, p + 1)
        Rows ``[z, y]``; ``z[0]`` must be 1 so that the packed (0, 0) entry
        counts rows.
    ridge : ndarray of shape (p,)
        Diagonal of the ridge matrix Lambda (ignored by constant leaves).
    """

    def __init__(self, const double[:, ::1] W, const double[::1] ridge):
        self.W = W
        self.q = W.shape[1]
        self.p = self.q - 1
        if ridge.shape[0] != self.p:
            raise ValueError("ridge must have one entry per coefficient")
        self.n_stats = packed_size(self.q)
        self.ridge = ridge

    cdef int init_work(self, CriterionWork* w) except -1:
        cdef Py_ssize_t p = self.p, n_stats = self.n_stats
        cdef Py_ssize_t size = 3 * p * p + 8 * p + 2 * n_stats
        cdef double* block = <double*>malloc(size * sizeof(double))
        if block == NULL:
            raise MemoryError("could not allocate the criterion's scratch")
        memset(w, 0, sizeof(CriterionWork))
        memset(block, 0, size * sizeof(double))
        w.block = block
        w.W = &self.W[0, 0]
        w.ridge = &self.ridge[0]
        w.p = p
        w.q = self.q
        w.n_stats = n_stats
        w.R = block
        w.left_R = block + p * p
        w.right_R = block + 2 * p * p
        w.v = block + 3 * p * p
        w.left_z = w.v + p
        w.right_z = w.v + 2 * p
        w.work = w.v + 3 * p            # 4 p
        w.left_acc = w.v + 7 * p
        w.total = w.left_acc + n_stats
        # Its own allocation: malloc aligns it for the paired kernel.
        w.pair = <double*>malloc(packed_pair_size(p) * sizeof(double))
        if w.pair == NULL:
            free(block)
            w.block = NULL
            raise MemoryError("could not allocate the criterion's scratch")
        return 0

    cdef void free_work(self, CriterionWork* w) noexcept nogil:
        free(w.block)
        free(w.pair)
        w.block = NULL
        w.pair = NULL

    cdef double loss(self, const double* acc, CriterionWork* w) noexcept nogil:
        return 0.0

    cdef void loss_pair(self, const double* acc0, const double* acc1, CriterionWork* w,
                        double* out) noexcept nogil:
        out[0] = self.loss(acc0, w)
        out[1] = self.loss(acc1, w)

    cdef void coef(self, const double* acc, double* beta,
                   CriterionWork* w) noexcept nogil:
        pass

    cdef bint incremental_available(self) noexcept nogil:
        return False

    cdef void sweep_start(self, CriterionWork* w, const double* total) noexcept nogil:
        pass


cdef void add_rows(const CriterionWork* w, double* acc, const int* rows,
                   Py_ssize_t n_rows) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n_rows):
        packed_add_outer(acc, w.W + rows[i] * w.q, 1.0, w.q)


cdef double _jittered_loss(const double* acc, CriterionWork* w) noexcept nogil:
    # The ridge loss of a system that did not factorize, with the raised
    # diagonal of ``factor_jittered``; infinite only when even that fails.
    cdef Py_ssize_t n = packed_size(w.q)
    if factor_jittered(acc, NULL, w.ridge, w.R, w.v, w.p, False) == 2:
        return INFINITY
    solve_rt(w.R, w.v, w.p)
    return acc[n - 1] - sum_squares(w.v, w.p)


cdef class RidgeCriterion(Criterion):
    """Ridge leaves: ``min ||y - Z beta||^2 + beta^T Lambda beta``.

    The bulk route factorizes packed sums once per candidate threshold; the
    incremental route keeps both children's factors current with rank-one
    updates (left) and downdates (right), refactoring the right child from
    its packed sums whenever a downdate reports loss of definiteness.
    """

    cdef double loss(self, const double* acc, CriterionWork* w) noexcept nogil:
        cdef int info = 0
        cdef double value = packed_ridge_loss(acc, w.ridge, w.R, w.v, w.p, &info)
        w.n_factorizations += 1
        if info != 0:
            w.n_singular += 1
            return _jittered_loss(acc, w)
        return value

    cdef void loss_pair(self, const double* acc0, const double* acc1, CriterionWork* w,
                        double* out) noexcept nogil:
        # Both eliminations side by side (see packed_ridge_loss_pair).
        cdef int info[2]
        packed_ridge_loss_pair(acc0, acc1, w.ridge, w.R, w.v, w.pair, w.p, out, info)
        w.n_factorizations += 2
        if info[0] != 0:
            w.n_singular += 1
            out[0] = _jittered_loss(acc0, w)
        if info[1] != 0:
            w.n_singular += 1
            out[1] = _jittered_loss(acc1, w)

    cdef void coef(self, const double* acc, double* beta,
                   CriterionWork* w) noexcept nogil:
        cdef int info = 0
        cdef Py_ssize_t j
        packed_ridge_coef(acc, w.ridge, w.R, beta, w.p, &info)
        if info == 0:
            return
        # The leaf's loss was that of the raised ridge (see ``loss``): so are
        # its coefficients.
        if factor_jittered(acc, NULL, w.ridge, w.R, beta, w.p, False) != 2:
            solve_rt(w.R, beta, w.p)
            solve_r(w.R, beta, w.p)
            return
        for j in range(w.p):
            beta[j] = 0.0
        if acc[0] > 0.0:
            beta[0] = acc[w.p] / acc[0]

    cdef bint incremental_available(self) noexcept nogil:
        return True

    def _sweep(self, rows):
        """Run the composed incremental sweep over ``rows`` (for tests).

        Starts from the packed sums of ``rows`` and moves them to the left
        child one at a time, as the splitter's rank-one route does: update
        the left factor, downdate the right one, refactor the right child
        from packed sums when the downdate is refused.

        Returns
        -------
        left_loss, right_loss : ndarray of shape (len(rows),)
            Both children's ridge losses after each move.
        refactored : ndarray of bool, shape (len(rows),)
            Whether that move's downdate fell back to a refactorization.
        """
        cdef int[::1] r = np.ascontiguousarray(rows, dtype=np.int32)
        cdef Py_ssize_t n = r.shape[0], i
        cdef CriterionWork w
        cdef unsigned long long before
        if n == 0 or np.min(rows) < 0 or np.max(rows) >= self.W.shape[0]:
            raise ValueError("rows must be a non-empty array of row indices")
        left = np.empty(n)
        right = np.empty(n)
        refactored = np.zeros(n, dtype=bool)
        total = np.zeros(self.n_stats)
        cdef double[::1] tv = total
        self.init_work(&w)
        try:
            add_rows(&w, &tv[0], &r[0], n)
            self.sweep_start(&w, &tv[0])
            for i in range(n):
                before = w.n_refactor
                sweep_move_left(&w, r[i])
                refactored[i] = w.n_refactor > before
                left[i] = sweep_left_loss(&w)
                right[i] = sweep_right_loss(&w)
        finally:
            self.free_work(&w)
        return left, right, refactored

    cdef void sweep_start(self, CriterionWork* w, const double* total) noexcept nogil:
        cdef Py_ssize_t i, p = w.p
        for i in range(p * p):
            w.left_R[i] = 0.0
        for i in range(p):
            w.left_R[i * p + i] = sqrt(w.ridge[i])
            w.left_z[i] = 0.0
        w.left_yy = 0.0
        for i in range(w.n_stats):
            w.left_acc[i] = 0.0
        memcpy(w.total, total, w.n_stats * sizeof(double))
        _refactor_right(w)


cdef void _refactor_right(CriterionWork* w) noexcept nogil:
    # right = total - left, rebuilt from the packed sums.  A ridge too small
    # for collinear columns gets ``loss``'s fallback, counted (the fit
    # warns); an infinite loss only when even that fails.
    cdef Py_ssize_t last = w.n_stats - 1
    cdef int status = factor_jittered(w.total, w.left_acc, w.ridge, w.right_R, w.right_z,
                                      w.p, True)
    w.right_yy = w.total[last] - w.left_acc[last]
    if status != 0:
        w.n_singular += 1
        if status == 2:
            w.right_yy = INFINITY
            return
    solve_rt(w.right_R, w.right_z, w.p)


cdef void sweep_move_left(CriterionWork* w, Py_ssize_t row) noexcept nogil:
    """Move one row from the right child to the left one (ridge leaves)."""
    cdef const double* x = w.W + row * w.q
    cdef double y = x[w.p]
    packed_add_outer(w.left_acc, x, 1.0, w.q)
    chol_update(w.left_R, w.left_z, x, y, w.work, w.p)
    w.left_yy += y * y
    if chol_downdate(w.right_R, w.right_z, x, y, w.work, w.p, DOWNDATE_TOL) != 0:
        w.n_refactor += 1
        _refactor_right(w)
    else:
        w.right_yy -= y * y


cdef double sweep_left_loss(const CriterionWork* w) noexcept nogil:
    return w.left_yy - sum_squares(w.left_z, w.p)


cdef double sweep_right_loss(const CriterionWork* w) noexcept nogil:
    return w.right_yy - sum_squares(w.right_z, w.p)


cdef void sweep_left_stats(const CriterionWork* w, double* out) noexcept nogil:
    memcpy(out, w.left_acc, w.n_stats * sizeof(double))


cdef class ConstantCriterion(Criterion):
    """Constant leaves: ``sum(y^2) - (sum y)^2 / n`` (no ridge term).

    Expects ``W = [1, y]``; the packed vector is ``[n, sum y, sum y^2]``.
    """

    cdef double loss(self, const double* acc, CriterionWork* w) noexcept nogil:
        cdef double square
        if acc[0] <= 0.0:
            return 0.0
        square = acc[1] * acc[1]
        if square == INFINITY:
            # Weights above ~1e150 overflow the square (their sums and the
            # loss do not): divide first there only, keeping every other
            # loss's bits.
            return acc[2] - acc[1] * (acc[1] / acc[0])
        return acc[2] - square / acc[0]

    cdef void coef(self, const double* acc, double* beta,
                   CriterionWork* w) noexcept nogil:
        beta[0] = acc[1] / acc[0] if acc[0] > 0.0 else 0.0
