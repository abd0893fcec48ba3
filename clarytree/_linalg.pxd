# Dense kernels for small regularized Gram systems A = Z^T Z + Lambda.
#
# Storage convention used throughout the package: the Cholesky factor is kept
# as R = L^T, upper triangular, row-major (p x p), so that A = R^T R and every
# kernel below walks rows of R contiguously.  The right-hand side is carried
# as z = R^{-T} b (b = Z^T y), so that the ridge loss
#     min_beta ||y - Z beta||^2 + beta^T Lambda beta = sum(y^2) - ||z||^2
# is available in O(p) after each rotation sweep.

cdef int chol_update(double* R, double* z, const double* x, double y,
                     double* work, Py_ssize_t p) noexcept nogil

cdef int chol_downdate(double* R, double* z, const double* x, double y,
                       double* work, Py_ssize_t p, double tol) noexcept nogil

cdef int chol_factor(double* A, Py_ssize_t p) noexcept nogil

cdef void solve_rt(const double* R, double* v, Py_ssize_t p) noexcept nogil

cdef void solve_r(const double* R, double* v, Py_ssize_t p) noexcept nogil

cdef double sum_squares(const double* v, Py_ssize_t p) noexcept nogil

cdef Py_ssize_t packed_size(Py_ssize_t q) noexcept nogil

cdef void packed_add_outer(double* acc, const double* w, double scale,
                           Py_ssize_t q) noexcept nogil

cdef void packed_add_gram(double* acc, const double* X, Py_ssize_t n,
                          Py_ssize_t q, double* C) noexcept nogil

cdef double packed_chol_loss(double* work, Py_ssize_t p, int* info) noexcept nogil

cdef void packed_factor_coef(const double* work, double* beta, Py_ssize_t p) noexcept nogil

cdef double packed_coef_spread(const double* acc, const double* beta,
                               const double* ridge, Py_ssize_t p) noexcept nogil

cdef double packed_ridge_loss(const double* acc, const double* ridge,
                              double* R, double* z, Py_ssize_t p,
                              int* info) noexcept nogil

cdef Py_ssize_t packed_pair_size(Py_ssize_t p) noexcept nogil

cdef void packed_ridge_loss_pair(const double* acc0, const double* acc1,
                                 const double* ridge, double* R, double* z,
                                 double* pair, Py_ssize_t p, double* loss,
                                 int* info) noexcept nogil

cdef void packed_ridge_coef(const double* acc, const double* ridge,
                            double* R, double* beta, Py_ssize_t p,
                            int* info) noexcept nogil
