"""Leaf objectives for linear (ridge) and constant leaves."""

import numpy as np

from libc.math cimport INFINITY, sqrt
from libc.string cimport memcpy

from ._linalg cimport (
    chol_update, chol_downdate, chol_factor, solve_rt, sum_squares,
    packed_size, packed_add_outer, packed_ridge_loss, packed_ridge_coef,
)

# A downdate whose result is this close to singular is replaced by a fresh
# factorization of the right child's sums: rounding in the rotations grows
# like 1 / (1 - ||R^{-T} x||^2).
cdef double DOWNDATE_TOL = 1e-8


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

    def __init__(self, const double[:, ::1] W, double[::1] ridge):
        self.W = W
        self.q = W.shape[1]
        self.p = self.q - 1
        if ridge.shape[0] != self.p:
            raise ValueError("ridge must have one entry per coefficient")
        self.n_stats = packed_size(self.q)
        self.ridge = ridge
        self.scratch_R = np.empty(self.p * self.p)
        self.scratch_v = np.empty(self.p)

    cdef inline void add_row(self, double* acc, Py_ssize_t row,
                             double scale) noexcept nogil:
        packed_add_outer(acc, &self.W[row, 0], scale, self.q)

    cdef void add_rows(self, double* acc, const int* rows,
                       Py_ssize_t n_rows) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(n_rows):
            packed_add_outer(acc, &self.W[rows[i], 0], 1.0, self.q)

    cdef double count(self, const double* acc) noexcept nogil:
        return acc[0]

    cdef double loss(self, const double* acc) noexcept nogil:
        return 0.0

    cdef void coef(self, const double* acc, double* beta) noexcept nogil:
        pass

    cdef bint incremental_available(self) noexcept nogil:
        return False

    cdef void sweep_start(self, const double* total) noexcept nogil:
        pass

    cdef void sweep_move_left(self, Py_ssize_t row) noexcept nogil:
        pass

    cdef double sweep_left_loss(self) noexcept nogil:
        return 0.0

    cdef double sweep_right_loss(self) noexcept nogil:
        return 0.0

    cdef void sweep_left_stats(self, double* out) noexcept nogil:
        pass


cdef class RidgeCriterion(Criterion):
    """Ridge leaves: ``min ||y - Z beta||^2 + beta^T Lambda beta``.

    The bulk route factorizes packed sums once per candidate threshold; the
    incremental route keeps both children's factors current with rank-one
    updates (left) and downdates (right), refactoring the right child from
    its packed sums whenever a downdate reports loss of definiteness.
    """

    def __init__(self, const double[:, ::1] W, double[::1] ridge):
        super().__init__(W, ridge)
        cdef Py_ssize_t p = self.p
        self.left_R = np.empty(p * p)
        self.right_R = np.empty(p * p)
        self.left_z = np.empty(p)
        self.right_z = np.empty(p)
        self.left_acc = np.empty(self.n_stats)
        self.total = np.empty(self.n_stats)
        self.work = np.empty(4 * p)
        self.n_refactor = 0

    cdef double loss(self, const double* acc) noexcept nogil:
        cdef int info = 0
        cdef double value = packed_ridge_loss(
            acc, &self.ridge[0], &self.scratch_R[0], &self.scratch_v[0],
            self.p, &info)
        if info != 0:
            return INFINITY
        return value

    cdef void coef(self, const double* acc, double* beta) noexcept nogil:
        cdef int info = 0
        packed_ridge_coef(acc, &self.ridge[0], &self.scratch_R[0], beta,
                          self.p, &info)

    cdef bint incremental_available(self) noexcept nogil:
        return True

    cdef void sweep_start(self, const double* total) noexcept nogil:
        cdef Py_ssize_t i, p = self.p
        for i in range(p * p):
            self.left_R[i] = 0.0
        for i in range(p):
            self.left_R[i * p + i] = sqrt(self.ridge[i])
            self.left_z[i] = 0.0
        self.left_yy = 0.0
        for i in range(self.n_stats):
            self.left_acc[i] = 0.0
        memcpy(&self.total[0], total, self.n_stats * sizeof(double))
        self._refactor_right()

    cdef void _refactor_right(self) noexcept nogil:
        # right = total - left, rebuilt from the packed sums.
        cdef Py_ssize_t i, col, k = 0, p = self.p, q = self.q
        cdef double* R = &self.right_R[0]
        for i in range(p):
            for col in range(i, p):
                R[i * p + col] = self.total[k + col - i] - self.left_acc[k + col - i]
            R[i * p + i] += self.ridge[i]
            self.right_z[i] = self.total[k + p - i] - self.left_acc[k + p - i]
            k += q - i
        self.right_yy = self.total[k] - self.left_acc[k]
        if chol_factor(R, p) != 0:
            # Only reachable with a non-positive ridge entry; report an
            # infinite loss rather than a wrong one.
            self.right_yy = INFINITY
            return
        solve_rt(R, &self.right_z[0], p)

    cdef void sweep_move_left(self, Py_ssize_t row) noexcept nogil:
        cdef const double* w = &self.W[row, 0]
        cdef double y = w[self.p]
        packed_add_outer(&self.left_acc[0], w, 1.0, self.q)
        chol_update(&self.left_R[0], &self.left_z[0], w, y, &self.work[0], self.p)
        self.left_yy += y * y
        if chol_downdate(&self.right_R[0], &self.right_z[0], w, y,
                         &self.work[0], self.p, DOWNDATE_TOL) != 0:
            self.n_refactor += 1
            self._refactor_right()
        else:
            self.right_yy -= y * y

    cdef double sweep_left_loss(self) noexcept nogil:
        return self.left_yy - sum_squares(&self.left_z[0], self.p)

    cdef double sweep_right_loss(self) noexcept nogil:
        return self.right_yy - sum_squares(&self.right_z[0], self.p)

    cdef void sweep_left_stats(self, double* out) noexcept nogil:
        memcpy(out, &self.left_acc[0], self.n_stats * sizeof(double))


cdef class ConstantCriterion(Criterion):
    """Constant leaves: ``sum(y^2) - (sum y)^2 / n`` (no ridge term).

    Expects ``W = [1, y]``; the packed vector is ``[n, sum y, sum y^2]``.
    """

    cdef double loss(self, const double* acc) noexcept nogil:
        if acc[0] <= 0.0:
            return 0.0
        return acc[2] - acc[1] * acc[1] / acc[0]

    cdef void coef(self, const double* acc, double* beta) noexcept nogil:
        beta[0] = acc[1] / acc[0] if acc[0] > 0.0 else 0.0
