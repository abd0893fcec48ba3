# Leaf objectives of a set of rows, from packed sufficient statistics.
#
# Every row contributes w w^T with w = [z, y] (z = [1, standardized
# regression features] for linear leaves, z = [1] for constant leaves) to a
# packed upper-triangular vector of length n_stats = (p + 1)(p + 2) / 2: it
# carries the row count, Z^T Z, Z^T y and sum(y^2).  Packed sums add and
# subtract, so children's statistics follow from the parent's.

cdef class Criterion:
    cdef readonly Py_ssize_t p           # coefficients per leaf (intercept first)
    cdef readonly Py_ssize_t q           # p + 1: width of w = [z, y]
    cdef readonly Py_ssize_t n_stats     # length of a packed statistics vector
    cdef const double[:, ::1] W          # (n_samples, q) rows [z, y]
    cdef double[::1] ridge               # diagonal of Lambda (length p)
    cdef double[::1] scratch_R           # p * p
    cdef double[::1] scratch_v           # p

    cdef inline void add_row(self, double* acc, Py_ssize_t row,
                             double scale) noexcept nogil
    cdef void add_rows(self, double* acc, const int* rows,
                       Py_ssize_t n_rows) noexcept nogil
    cdef double loss(self, const double* acc) noexcept nogil
    cdef void coef(self, const double* acc, double* beta) noexcept nogil
    cdef double count(self, const double* acc) noexcept nogil

    # Incremental route: rank-one factors of the left and right children,
    # kept current while rows cross a moving threshold.
    cdef bint incremental_available(self) noexcept nogil
    cdef void sweep_start(self, const double* total) noexcept nogil
    cdef void sweep_move_left(self, Py_ssize_t row) noexcept nogil
    cdef double sweep_left_loss(self) noexcept nogil
    cdef double sweep_right_loss(self) noexcept nogil
    cdef void sweep_left_stats(self, double* out) noexcept nogil


cdef class RidgeCriterion(Criterion):
    cdef double[::1] left_R, right_R     # factors, p * p each
    cdef double[::1] left_z, right_z     # R^{-T} Z^T y of each side
    cdef double left_yy, right_yy
    cdef double[::1] left_acc, total     # packed sums for refactoring
    cdef double[::1] work                # 4 p
    cdef readonly Py_ssize_t n_refactor  # downdates that fell back to a refactor

    cdef void _refactor_right(self) noexcept nogil


cdef class ConstantCriterion(Criterion):
    pass
