# Leaf objectives of a set of rows, from packed sufficient statistics.
#
# Every row contributes w w^T with w = [z, y] (z = [1, standardized
# regression features] for linear leaves, z = [1] for constant leaves) to a
# packed upper-triangular vector of length n_stats = (p + 1)(p + 2) / 2: it
# carries the row count, Z^T Z, Z^T y and sum(y^2).  Packed sums add and
# subtract, so children's statistics follow from the parent's.
#
# A Criterion object is read-only while a tree is built; everything it
# writes lives in a CriterionWork struct owned by one thread.

from ._linalg cimport packed_add_outer


cdef struct CriterionWork:
    # Read-only views of the criterion's data (shared by all threads).
    const double* W              # (n_samples, q) rows [z, y], row-major
    const double* ridge          # p
    Py_ssize_t p
    Py_ssize_t q
    Py_ssize_t n_stats
    # Scratch of loss / coef.
    double* R                    # p * p
    double* v                    # p
    double* pair                 # packed_pair_size(p), 16-byte aligned: loss_pair
    # Incremental sweep: rank-one factors of the left and right children,
    # kept current while rows cross a moving threshold.
    double* left_R               # p * p
    double* right_R              # p * p
    double* left_z               # p: R^{-T} Z^T y of each side
    double* right_z              # p
    double* left_acc             # n_stats: packed sums, for refactoring
    double* total                # n_stats
    double* work                 # 4 p
    double left_yy
    double right_yy
    unsigned long long n_refactor    # downdates that fell back to a refactor
    unsigned long long n_factorizations  # ridge losses from packed sums (loss)
    unsigned long long n_singular    # leaf Gram matrices that did not factorize
    void* block                  # the one allocation behind the buffers


cdef class Criterion:
    cdef readonly Py_ssize_t p           # coefficients per leaf (intercept first)
    cdef readonly Py_ssize_t q           # p + 1: width of w = [z, y]
    cdef readonly Py_ssize_t n_stats     # length of a packed statistics vector
    cdef const double[:, ::1] W          # (n_samples, q) rows [z, y]
    cdef const double[::1] ridge         # diagonal of Lambda (length p)

    # Per-thread scratch: init_work allocates (MemoryError on failure),
    # free_work releases; a zero-initialized struct may be freed.
    cdef int init_work(self, CriterionWork* w) except -1
    cdef void free_work(self, CriterionWork* w) noexcept nogil

    cdef double loss(self, const double* acc, CriterionWork* w) noexcept nogil
    # loss of two statistics vectors (out[0], out[1]), bitwise as two calls.
    cdef void loss_pair(self, const double* acc0, const double* acc1, CriterionWork* w,
                        double* out) noexcept nogil
    cdef void coef(self, const double* acc, double* beta,
                   CriterionWork* w) noexcept nogil

    # Incremental route (rank-one updates of the left child, downdates of
    # the right one): available for ridge leaves only.  sweep_start is
    # called once per node and feature; the per-row steps are the plain
    # functions below (no virtual call per row).
    cdef bint incremental_available(self) noexcept nogil
    cdef void sweep_start(self, CriterionWork* w, const double* total) noexcept nogil


cdef class RidgeCriterion(Criterion):
    pass


cdef class ConstantCriterion(Criterion):
    pass


cdef inline void add_row(const CriterionWork* w, double* acc,
                         Py_ssize_t row) noexcept nogil:
    packed_add_outer(acc, w.W + row * w.q, 1.0, w.q)


cdef void add_rows(const CriterionWork* w, double* acc, const int* rows,
                   Py_ssize_t n_rows) noexcept nogil
cdef void sweep_move_left(CriterionWork* w, Py_ssize_t row) noexcept nogil
cdef double sweep_left_loss(const CriterionWork* w) noexcept nogil
cdef double sweep_right_loss(const CriterionWork* w) noexcept nogil
cdef void sweep_left_stats(const CriterionWork* w, double* out) noexcept nogil
