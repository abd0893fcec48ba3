"""Rank-one Cholesky kernels for ridge regression on streaming rows.

The hot routines are ``cdef ... noexcept nogil`` functions on raw pointers
(declared in ``_linalg.pxd``); the ``CholeskyState`` class and the small
functions at the bottom are thin Python wrappers used by the tests and the
benchmarks.

Conventions
-----------
``R`` is the upper-triangular Cholesky factor of ``A = R^T R`` stored
row-major, ``z = R^{-T} b`` is the transformed right-hand side.  Updates follow
LINPACK ``dchud`` (Givens rotations that fold the new row into ``R``) and
downdates follow LINPACK ``dchdd`` (hyperbolic-free rotations generated from
``a = R^{-T} x``), both in O(p^2).
"""

import numpy as np

from libc.math cimport sqrt, fabs, hypot, isfinite
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm

cimport numpy as cnp

cnp.import_array()


cdef int chol_update(double* R, double* z, const double* x, double y,
                     double* work, Py_ssize_t p) noexcept nogil:
    """Fold the row ``(x, y)`` into ``R`` and ``z``: A <- A + x x^T.

    ``work`` holds ``p`` doubles.  Returns 0, or 1 if the result is not
    finite (the caller then refactors from the raw sums).
    """
    cdef Py_ssize_t j, col
    cdef double r, c, s, t, rjj
    cdef double* v = work
    cdef double* row
    memcpy(v, x, p * sizeof(double))
    for j in range(p):
        row = R + j * p
        rjj = row[j]
        r = hypot(rjj, v[j])
        if r == 0.0:
            # Both entries vanish: nothing to rotate in this column.
            continue
        c = rjj / r
        s = v[j] / r
        row[j] = r
        for col in range(j + 1, p):
            t = c * row[col] + s * v[col]
            v[col] = c * v[col] - s * row[col]
            row[col] = t
        t = c * z[j] + s * y
        y = c * y - s * z[j]
        z[j] = t
    if not isfinite(R[p * p - 1]):
        return 1
    return 0


cdef int chol_downdate(double* R, double* z, const double* x, double y,
                       double* work, Py_ssize_t p, double tol) noexcept nogil:
    """Remove the row ``(x, y)`` from ``R`` and ``z``: A <- A - x x^T.

    First solves ``R^T a = x``; the result stays positive definite iff
    ``||a|| < 1``.  When ``1 - ||a||^2 <= tol`` (or is not finite) the factor
    is left untouched and 1 is returned, so the caller can refactor from
    scratch.  ``work`` holds ``4 p`` doubles.
    """
    cdef Py_ssize_t i, col
    cdef double* a = work
    cdef double* c = work + p
    cdef double* s = work + 2 * p
    cdef double* v = work + 3 * p
    cdef double alpha, alpha0, scale, aa, bb, nrm, t, zeta, atz
    cdef double* row

    memcpy(a, x, p * sizeof(double))
    solve_rt(R, a, p)
    alpha = 1.0 - sum_squares(a, p)
    if not (alpha > tol) or not isfinite(alpha):
        return 1
    alpha = sqrt(alpha)
    alpha0 = alpha

    # The last row of the rotation product Q is [a; alpha0], so the extra
    # right-hand side entry zeta is chosen to reproduce y after rotation.
    atz = 0.0
    for i in range(p):
        atz += a[i] * z[i]
    zeta = (y - atz) / alpha0

    for i in range(p - 1, -1, -1):
        scale = alpha + fabs(a[i])
        aa = alpha / scale
        bb = a[i] / scale
        nrm = sqrt(aa * aa + bb * bb)
        c[i] = aa / nrm
        s[i] = bb / nrm
        alpha = scale * nrm

    for col in range(p):
        v[col] = 0.0
    for i in range(p - 1, -1, -1):
        row = R + i * p
        for col in range(i, p):
            t = c[i] * row[col] - s[i] * v[col]
            v[col] = c[i] * v[col] + s[i] * row[col]
            row[col] = t
        t = c[i] * z[i] - s[i] * zeta
        zeta = c[i] * zeta + s[i] * z[i]
        z[i] = t
    return 0


cdef int chol_factor(double* A, Py_ssize_t p) noexcept nogil:
    """Overwrite the upper triangle of row-major ``A`` with ``R``, A = R^T R.

    Right-looking so the inner loop runs along contiguous rows.  The strict
    lower triangle is zeroed.  Returns 0, or ``j + 1`` when the ``j``-th pivot
    is not positive (A not numerically positive definite).
    """
    cdef Py_ssize_t i, j, col
    cdef double d, rij
    cdef double* rowi
    cdef double* rowj
    for i in range(p):
        rowi = A + i * p
        d = rowi[i]
        if not (d > 0.0) or not isfinite(d):
            return <int>(i + 1)
        d = sqrt(d)
        rowi[i] = d
        for col in range(i + 1, p):
            rowi[col] /= d
        for j in range(i + 1, p):
            rij = rowi[j]
            rowj = A + j * p
            for col in range(j, p):
                rowj[col] -= rij * rowi[col]
        for col in range(i):
            rowi[col] = 0.0
    return 0


cdef void solve_rt(const double* R, double* v, Py_ssize_t p) noexcept nogil:
    """In place ``v <- R^{-T} v`` (forward substitution, row sweeps)."""
    cdef Py_ssize_t i, col
    cdef double vi
    cdef const double* row
    for i in range(p):
        row = R + i * p
        vi = v[i] / row[i]
        v[i] = vi
        for col in range(i + 1, p):
            v[col] -= row[col] * vi


cdef void solve_r(const double* R, double* v, Py_ssize_t p) noexcept nogil:
    """In place ``v <- R^{-1} v`` (back substitution)."""
    cdef Py_ssize_t i, col
    cdef double acc
    cdef const double* row
    for i in range(p - 1, -1, -1):
        row = R + i * p
        acc = v[i]
        for col in range(i + 1, p):
            acc -= row[col] * v[col]
        v[i] = acc / row[i]


cdef double sum_squares(const double* v, Py_ssize_t p) noexcept nogil:
    cdef Py_ssize_t i
    cdef double acc = 0.0
    for i in range(p):
        acc += v[i] * v[i]
    return acc


cdef Py_ssize_t packed_size(Py_ssize_t q) noexcept nogil:
    """Entries of a packed (row-major upper) symmetric q x q matrix."""
    return q * (q + 1) // 2


cdef void packed_add_outer(double* acc, const double* w, double scale,
                           Py_ssize_t q) noexcept nogil:
    """``acc += scale * w w^T`` on the packed upper triangle.

    With ``w = [z, y]`` (q = p + 1) one packed vector carries the Gram matrix
    Z^T Z (its (0, 0) entry is the row count, as z_0 = 1), the moments Z^T y
    in the last column and sum(y^2) in the last entry.
    """
    cdef Py_ssize_t i, col, k = 0
    cdef double wi
    for i in range(q):
        wi = scale * w[i]
        for col in range(i, q):
            acc[k + col - i] += wi * w[col]
        k += q - i


# Row blocks handed to one dgemm call: small enough that OpenBLAS never
# threads the call (it would oversubscribe a parallel fit), large enough
# that the call overhead is amortized.
cdef Py_ssize_t GRAM_CHUNK = 256
# Below this many rows per call, rank-one updates are cheaper than dgemm.
cdef Py_ssize_t GRAM_MIN_ROWS = 4


cdef void packed_add_gram(double* acc, const double* X, Py_ssize_t n,
                          Py_ssize_t q, double* C) noexcept nogil:
    """``acc += X^T X`` on the packed upper triangle (see ``packed_add_outer``).

    ``X`` is row-major ``n x q`` (contiguous rows ``w = [z, y]``); ``C`` is
    ``q * q`` scratch.  The sum runs through level-3 BLAS (dgemm, whose
    small-matrix kernels use the machine's vector units) in blocks of
    ``GRAM_CHUNK`` rows, then the upper triangle is added into ``acc``.  The
    rounding differs from row-by-row accumulation only in the summation
    order.
    """
    cdef Py_ssize_t i, col, k, start = 0
    cdef int qi = <int>q, rows
    cdef double one = 1.0, beta = 0.0
    cdef double* ci
    if n < GRAM_MIN_ROWS:
        for i in range(n):
            packed_add_outer(acc, X + i * q, 1.0, q)
        return
    while start < n:
        rows = <int>min(GRAM_CHUNK, n - start)
        # Column-major, X is the q x rows matrix X^T, so C = X^T X is
        # dgemm(N, T); C is symmetric and its column i holds row i.
        dgemm(b"N", b"T", &qi, &qi, &rows, &one, <double*>(X + start * q), &qi,
              <double*>(X + start * q), &qi, &beta, C, &qi)
        beta = 1.0
        start += rows
    k = 0
    for i in range(q):
        ci = C + i * q
        for col in range(i, q):
            acc[k + col - i] += ci[col]
        k += q - i


cdef inline void _unpack_system(const double* acc, const double* ridge,
                                double* R, double* rhs,
                                Py_ssize_t p) noexcept nogil:
    # Rows of the packed (p + 1) x (p + 1) matrix: the first p entries of
    # row i (from column i) go to A, the last one to the right-hand side.
    cdef Py_ssize_t i, col, k = 0, q = p + 1
    for i in range(p):
        for col in range(i, p):
            R[i * p + col] = acc[k + col - i]
        R[i * p + i] += ridge[i]
        rhs[i] = acc[k + p - i]
        k += q - i


cdef extern from *:
    """
    /* Two ridge losses at once: the elimination of packed_chol_loss on two
       systems side by side, system 0 in lane 0 and system 1 in lane 1 of
       each two-double vector.  Each lane gets exactly the scalar route's
       operations in its order (a multiply, then a subtract, never fused:
       the module is compiled with -ffp-contract=off; correctly rounded
       divides and square roots), so each loss has the scalar route's bits,
       while the two dependency chains (square root, divides, updates of
       the next pivot row) overlap.  Returns 0 when a pivot of either system
       is not positive or not finite: the caller then takes the scalar route
       for both, which also reports the failing pivot. */
    #if defined(__GNUC__) || defined(__clang__)
    #define CT_HAVE_PAIR 1
    typedef double ct_v2d __attribute__((vector_size(16)));
    static inline int ct_pivot_pair(ct_v2d* row, Py_ssize_t length) {
        ct_v2d d = row[0];
        Py_ssize_t c;
        if (!(d[0] > 0.0) || !isfinite(d[0]) || !(d[1] > 0.0) || !isfinite(d[1]))
            return 0;
        d[0] = sqrt(d[0]);
        d[1] = sqrt(d[1]);
        row[0] = d;
        for (c = 1; c < length; c++) row[c] = row[c] / d;
        return 1;
    }
    static int ct_chol_loss_pair(ct_v2d* work, Py_ssize_t p, double* loss) {
        Py_ssize_t q = p + 1, i = 0, j, col, ki = 0, kj, length;
        ct_v2d a, b, zi, s = {0.0, 0.0};
        ct_v2d *r0, *r1, *rowj;
        while (i < p) {
            r0 = work + ki;
            length = q - i;
            if (!ct_pivot_pair(r0, length)) return 0;
            if (i + 1 == p) { ki += length; i += 1; continue; }
            r1 = r0 + length;
            a = r0[1];
            for (col = 1; col < length; col++) r1[col - 1] = r1[col - 1] - a * r0[col];
            if (!ct_pivot_pair(r1, length - 1)) return 0;
            kj = ki + 2 * length - 1;
            for (j = 2; j < length - 1; j++) {
                a = r0[j];
                b = r1[j - 1];
                rowj = work + kj;
                for (col = j; col < length; col++)
                    rowj[col - j] = (rowj[col - j] - a * r0[col]) - b * r1[col - 1];
                kj += length - j;
            }
            ki += 2 * length - 1;
            i += 2;
        }
        ki = 0;
        for (i = 0; i < p; i++) {
            zi = work[ki + q - i - 1];
            s = s + zi * zi;
            ki += q - i;
        }
        loss[0] = work[ki][0] - s[0];
        loss[1] = work[ki][1] - s[1];
        return 1;
    }
    /* Interleave two packed systems into work (2 n doubles, 16-byte
       aligned), the ridge added to the diagonal as packed_ridge_loss does,
       and eliminate. */
    static int ct_ridge_loss_pair(double* work, const double* acc0, const double* acc1,
                                  const double* ridge, Py_ssize_t p, double* loss) {
        Py_ssize_t q = p + 1, n = q * (q + 1) / 2, i, k = 0;
        ct_v2d* w = (ct_v2d*)work;
        for (i = 0; i < n; i++) {
            w[i][0] = acc0[i];
            w[i][1] = acc1[i];
        }
        for (i = 0; i < p; i++) {
            w[k][0] += ridge[i];
            w[k][1] += ridge[i];
            k += q - i;
        }
        return ct_chol_loss_pair(w, p, loss);
    }
    #else
    #define CT_HAVE_PAIR 0
    static int ct_ridge_loss_pair(double* work, const double* acc0, const double* acc1,
                                  const double* ridge, Py_ssize_t p, double* loss) {
        return 0;
    }
    #endif
    """
    int CT_HAVE_PAIR
    int ct_ridge_loss_pair(double* work, const double* acc0, const double* acc1,
                           const double* ridge, Py_ssize_t p, double* loss) noexcept nogil


cdef Py_ssize_t packed_pair_size(Py_ssize_t p) noexcept nogil:
    """Doubles of scratch ``packed_ridge_loss_pair`` needs (16-byte aligned)."""
    return (p + 1) * (p + 2)


cdef void packed_ridge_loss_pair(const double* acc0, const double* acc1,
                                 const double* ridge, double* R, double* z,
                                 double* pair, Py_ssize_t p, double* loss,
                                 int* info) noexcept nogil:
    """``packed_ridge_loss`` of two systems: ``loss[k]``, ``info[k]`` for ``acc_k``.

    ``pair`` is scratch of ``packed_pair_size(p)`` doubles, 16-byte aligned
    (as ``malloc`` returns); ``R`` and ``z`` are ``packed_ridge_loss``'s.
    The two eliminations run side by side (same bits as one at a time);
    small systems, and any pair with a failing pivot, go one at a time.
    """
    info[0] = 0
    info[1] = 0
    if CT_HAVE_PAIR and p >= 4 and ct_ridge_loss_pair(pair, acc0, acc1, ridge, p, loss):
        return
    loss[0] = packed_ridge_loss(acc0, ridge, R, z, p, &info[0])
    loss[1] = packed_ridge_loss(acc1, ridge, R, z, p, &info[1])


cdef inline bint _pivot(double* row, Py_ssize_t length, int* info,
                        Py_ssize_t i) noexcept nogil:
    # Square-root pivot of a packed row (its diagonal first) and division of
    # the rest of the row by it, exactly as ``chol_factor`` does.
    cdef Py_ssize_t col
    cdef double d = row[0]
    if not (d > 0.0) or not isfinite(d):
        info[0] = <int>(i + 1)
        return False
    d = sqrt(d)
    row[0] = d
    for col in range(1, length):
        row[col] /= d
    return True


cdef double packed_chol_loss(double* work, Py_ssize_t p, int* info) noexcept nogil:
    """Ridge loss from the packed augmented matrix ``[[A, b], [b^T, yy]]``.

    ``work`` holds the (p + 1) x (p + 1) matrix packed like the statistics
    (ridge already on the diagonal) and is overwritten by its factor.  The
    right-looking elimination runs directly on the packed rows, so ``b``
    turns into ``z = R^{-T} b`` as the last entry of each row with no unpack
    and no separate triangular solve; pivots are eliminated two at a time
    (rank-2 updates), which halves the passes over the trailing rows.  Every
    entry still receives exactly the operations, in the same order, of
    ``chol_factor`` followed by ``solve_rt``, so the loss
    ``yy - ||z||^2`` is bitwise that of the unpacked route.  ``info`` is 0,
    or ``j + 1`` when pivot ``j`` is not positive (the loss is then 0).
    """
    cdef Py_ssize_t q = p + 1, i = 0, j, col, ki = 0, kj, length
    cdef double a, b, zi, s = 0.0
    cdef double* r0
    cdef double* r1
    cdef double* rowj
    info[0] = 0
    while i < p:
        r0 = work + ki
        length = q - i                  # row i: columns i .. p (p is b)
        if not _pivot(r0, length, info, i):
            return 0.0
        if i + 1 == p:
            ki += length
            i += 1
            continue
        # Row i + 1 takes pivot i's update first, then becomes a pivot.
        r1 = r0 + length
        a = r0[1]
        for col in range(1, length):
            r1[col - 1] -= a * r0[col]
        if not _pivot(r1, length - 1, info, i + 1):
            return 0.0
        # Rows i + 2 .. p - 1 take both updates in one pass (the yy row is
        # never formed: the loss is summed from z below).
        kj = ki + 2 * length - 1
        for j in range(2, length - 1):
            a = r0[j]
            b = r1[j - 1]
            rowj = work + kj
            for col in range(j, length):
                rowj[col - j] = (rowj[col - j] - a * r0[col]) - b * r1[col - 1]
            kj += length - j
        ki += 2 * length - 1
        i += 2
    ki = 0
    for i in range(p):
        zi = work[ki + q - i - 1]
        s += zi * zi
        ki += q - i
    return work[ki] - s


cdef void packed_factor_coef(const double* work, double* beta, Py_ssize_t p) noexcept nogil:
    """``beta = R^{-1} z`` from the factor that ``packed_chol_loss`` left in ``work``.

    Row i of the packed factor holds ``R[i, i:p]`` and then ``z[i]``: the
    ridge coefficients by back substitution, with no second factorization.
    """
    cdef Py_ssize_t q = p + 1, i, j, ki
    cdef double t
    for i in range(p - 1, -1, -1):
        ki = i * q - i * (i - 1) // 2
        t = work[ki + p - i]
        for j in range(i + 1, p):
            t -= work[ki + j - i] * beta[j]
        beta[i] = t / work[ki]


cdef double packed_coef_spread(const double* acc, const double* beta,
                               const double* ridge, Py_ssize_t p) noexcept nogil:
    """``sqrt(yy) + sum_j |beta_j| sqrt(A_jj)`` of packed sums and coefficients.

    The size of the terms a ridge solution's loss and fitted values are
    computed from (``A``'s diagonal plus ``ridge`` when given, else as
    summed), hence the scale of their rounding errors.
    """
    cdef Py_ssize_t q = p + 1, j, k = 0
    cdef double spread = sqrt(fabs(acc[packed_size(q) - 1]))
    for j in range(p):
        spread += fabs(beta[j]) * sqrt(fabs(acc[k] + (ridge[j] if ridge != NULL else 0.0)))
        k += q - j
    return spread


cdef double packed_ridge_loss(const double* acc, const double* ridge,
                              double* R, double* z, Py_ssize_t p,
                              int* info) noexcept nogil:
    """Ridge loss ``sum(y^2) - ||R^{-T} Z^T y||^2`` from packed sums.

    ``ridge`` is the diagonal of Lambda; ``R`` (p*p) and ``z`` (p) are
    scratch.  ``info`` is set to the factorization status.  For p >= 4 the
    packed augmented matrix fits into ``R`` and ``packed_chol_loss`` runs
    on it; smaller systems unpack (both give bitwise the same loss).
    """
    cdef Py_ssize_t q = p + 1, i, k = 0, n = packed_size(q)
    if p * p >= n:
        memcpy(R, acc, n * sizeof(double))
        for i in range(p):
            R[k] += ridge[i]
            k += q - i
        # The yy entry is read from acc: packed_chol_loss returns
        # work[last] - ||z||^2 and leaves that entry untouched.
        return packed_chol_loss(R, p, info)
    _unpack_system(acc, ridge, R, z, p)
    info[0] = chol_factor(R, p)
    if info[0] != 0:
        return 0.0
    solve_rt(R, z, p)
    return acc[n - 1] - sum_squares(z, p)


cdef void packed_ridge_coef(const double* acc, const double* ridge,
                            double* R, double* beta, Py_ssize_t p,
                            int* info) noexcept nogil:
    """Ridge coefficients ``A^{-1} b`` from packed sums (see above)."""
    _unpack_system(acc, ridge, R, beta, p)
    info[0] = chol_factor(R, p)
    if info[0] != 0:
        return
    solve_rt(R, beta, p)
    solve_r(R, beta, p)


# ---------------------------------------------------------------------------
# Python wrappers (private): used by tests, benchmarks and the demo.
# ---------------------------------------------------------------------------

cdef class CholeskyState:
    """Factorized ridge system ``A = Z^T Z + diag(ridge)`` fed row by row.

    Parameters
    ----------
    ridge : array-like of shape (p,)
        Diagonal of Lambda; all entries must be positive (use a tiny floor
        such as 1e-12 for an unpenalized intercept).

    Attributes
    ----------
    factor : ndarray of shape (p, p)
        Upper-triangular ``R`` with ``A = R^T R``.
    z : ndarray of shape (p,)
        ``R^{-T} Z^T y``.
    sum_y2 : float
        Running sum of squared targets.
    n_rows : int
        Rows currently in the system.
    """

    cdef public cnp.ndarray factor
    cdef public cnp.ndarray z
    cdef public double sum_y2
    cdef public Py_ssize_t n_rows
    cdef cnp.ndarray _work
    cdef readonly Py_ssize_t p

    def __init__(self, ridge):
        ridge = np.ascontiguousarray(ridge, dtype=np.float64)
        ridge = _check_ridge(ridge, None)
        self.p = ridge.shape[0]
        self.factor = np.diag(np.sqrt(ridge))
        self.z = np.zeros(self.p)
        self.sum_y2 = 0.0
        self.n_rows = 0
        self._work = np.empty(4 * self.p)

    def _check_row(self, x, y):
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (self.p,):
            raise ValueError(f"x must have shape ({self.p},), got {x.shape}")
        # Checked before touching the factor: a NaN would corrupt it for good.
        if not (np.all(np.isfinite(x)) and np.isfinite(y)):
            raise ValueError("x and y must be finite")
        return x

    def _rank_one(self, x, double y, bint remove, double tol):
        x = self._check_row(x, y)
        cdef double[:, ::1] R = self.factor
        cdef double[::1] z = self.z
        cdef double[::1] xv = x
        cdef double[::1] work = self._work
        cdef int info
        with nogil:
            if remove:
                info = chol_downdate(&R[0, 0], &z[0], &xv[0], y, &work[0],
                                     self.p, tol)
            else:
                info = chol_update(&R[0, 0], &z[0], &xv[0], y, &work[0], self.p)
        if info == 0:
            self.sum_y2 += -y * y if remove else y * y
            self.n_rows += -1 if remove else 1
        return info

    def update(self, x, double y):
        """Add the row ``(x, y)``; O(p^2)."""
        if self._rank_one(x, y, False, 0.0) != 0:
            raise FloatingPointError("rank-one update produced non-finite values")

    def downdate(self, x, double y, double tol=0.0):
        """Remove the row ``(x, y)``; O(p^2).

        Returns
        -------
        ok : bool
            False when the downdated matrix would not be positive definite
            (``||R^{-T} x||^2 >= 1 - tol``); the state is then unchanged.
        """
        return self._rank_one(x, y, True, tol) == 0

    def refactor(self, Z, y, ridge):
        """Replace the state by a fresh factorization of ``Z^T Z + diag(ridge)``."""
        Z = np.ascontiguousarray(Z, dtype=np.float64).reshape(-1, self.p)
        y = np.ascontiguousarray(y, dtype=np.float64)
        ridge = _check_ridge(ridge, self.p)
        R, info = cholesky_factor(Z.T @ Z + np.diag(ridge))
        if info != 0:
            raise np.linalg.LinAlgError(f"matrix is not positive definite (pivot {info})")
        self.factor = R
        self.z = solve_triangular_rt(R, Z.T @ y)
        self.sum_y2 = float(y @ y)
        self.n_rows = Z.shape[0]

    def loss(self):
        """Minimum of ``||y - Z beta||^2 + beta^T Lambda beta`` over beta."""
        return self.sum_y2 - float(self.z @ self.z)

    def coef(self):
        """Ridge coefficients ``A^{-1} Z^T y``."""
        beta = self.z.copy()
        cdef double[:, ::1] R = self.factor
        cdef double[::1] b = beta
        solve_r(&R[0, 0], &b[0], self.p)
        return beta


def _check_ridge(ridge, p):
    ridge = np.ascontiguousarray(ridge, dtype=np.float64)
    if ridge.ndim != 1 or ridge.shape[0] < 1 or (p is not None and ridge.shape[0] != p):
        raise ValueError("ridge must be a non-empty 1-d array with one entry per column")
    if not np.all(np.isfinite(ridge)) or np.any(ridge <= 0):
        raise ValueError("ridge entries must be finite and positive")
    return ridge


def cholesky_factor(A):
    """Upper-triangular ``R`` with ``A = R^T R`` (fresh factorization).

    Returns
    -------
    R : ndarray of shape (p, p)
    info : int
        0 on success, ``j + 1`` if pivot ``j`` was not positive.
    """
    R = np.array(A, dtype=np.float64, order="C", copy=True)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ValueError("A must be a non-empty square matrix")
    cdef double[:, ::1] Rv = R
    cdef int info
    with nogil:
        info = chol_factor(&Rv[0, 0], Rv.shape[0])
    return R, int(info)


def solve_triangular_rt(R, b):
    """Solve ``R^T v = b`` for upper-triangular ``R``."""
    R = np.ascontiguousarray(R, dtype=np.float64)
    v = np.array(b, dtype=np.float64, copy=True)
    # The kernel runs without bounds checks: a mismatch would read and write
    # out of bounds.
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0 or v.shape != (R.shape[0],):
        raise ValueError(f"need square R (p, p) and b (p,), got {R.shape} and {v.shape}")
    cdef double[:, ::1] Rv = R
    cdef double[::1] vv = v
    solve_rt(&Rv[0, 0], &vv[0], Rv.shape[0])
    return v


def packed_ridge(Z, y, ridge):
    """Ridge loss and coefficients through the packed-sum (bulk) route.

    Accumulates ``[z, y] [z, y]^T`` row by row into one packed vector, then
    factorizes once.  Returns ``(loss, beta, info)``.
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    ridge = np.ascontiguousarray(ridge, dtype=np.float64)
    # Checked first: with boundscheck off, Z.shape[1] on a 1-d array reads
    # past the end of the shape tuple.
    if Z.ndim != 2 or y.ndim != 1 or ridge.ndim != 1:
        raise ValueError("Z must be 2-d, y and ridge 1-d")
    cdef Py_ssize_t n = Z.shape[0], p = Z.shape[1], q = p + 1, i
    ridge = _check_ridge(ridge, p)
    if y.shape[0] != n:
        raise ValueError("inconsistent shapes")
    W = np.empty((n, q))
    W[:, :p] = Z
    W[:, p] = y
    acc = np.zeros(packed_size(q))
    R = np.empty((p, p))
    beta = np.empty(p)
    zbuf = np.empty(p)
    cdef double[:, ::1] Wv = W
    cdef double[::1] accv = acc, rv = ridge, bv = beta, zv = zbuf
    cdef double[:, ::1] Rv = R
    cdef int info = 0
    cdef double loss
    with nogil:
        for i in range(n):
            packed_add_outer(&accv[0], &Wv[i, 0], 1.0, q)
        loss = packed_ridge_loss(&accv[0], &rv[0], &Rv[0, 0], &zv[0], p, &info)
        if info == 0:
            packed_ridge_coef(&accv[0], &rv[0], &Rv[0, 0], &bv[0], p, &info)
    return loss, beta, int(info)


def packed_loss(acc, ridge):
    """Ridge loss of packed statistics through the packed kernel.

    ``acc`` is the packed upper triangle of ``[[Z^T Z, Z^T y], [y^T Z,
    y^T y]]`` (row-major, see ``packed_add_outer``) and ``ridge`` the
    diagonal of Lambda.  Returns ``(loss, info)``; ``info`` is the 1-based
    index of the first non-positive pivot, or 0.
    """
    acc = np.ascontiguousarray(acc, dtype=np.float64)
    ridge = np.ascontiguousarray(ridge, dtype=np.float64)
    if acc.ndim != 1 or ridge.ndim != 1 or ridge.shape[0] < 1:
        raise ValueError("acc and ridge must be 1-d, ridge non-empty")
    cdef Py_ssize_t p = ridge.shape[0]
    if acc.shape[0] != packed_size(p + 1):
        raise ValueError(f"acc must have (p + 1)(p + 2) / 2 = {packed_size(p + 1)} "
                         f"entries for p = {p}, got {acc.shape[0]}")
    cdef double[::1] accv = acc, rv = ridge
    cdef double[::1] R = np.empty(p * p), z = np.empty(p)
    cdef int info = 0
    cdef double loss
    with nogil:
        loss = packed_ridge_loss(&accv[0], &rv[0], &R[0], &z[0], p, &info)
    return loss, int(info)


def packed_loss_pair(acc0, acc1, ridge):
    """``packed_loss`` of two systems through the side-by-side kernel.

    Returns ``((loss0, info0), (loss1, info1))``, which must be bitwise what
    ``packed_loss`` gives for each system alone.
    """
    acc0 = np.ascontiguousarray(acc0, dtype=np.float64)
    acc1 = np.ascontiguousarray(acc1, dtype=np.float64)
    ridge = np.ascontiguousarray(ridge, dtype=np.float64)
    if acc0.ndim != 1 or acc1.ndim != 1 or ridge.ndim != 1 or ridge.shape[0] < 1:
        raise ValueError("acc0, acc1 and ridge must be 1-d, ridge non-empty")
    cdef Py_ssize_t p = ridge.shape[0]
    if acc0.shape[0] != packed_size(p + 1) or acc1.shape[0] != packed_size(p + 1):
        raise ValueError(f"acc0 and acc1 must have (p + 1)(p + 2) / 2 = "
                         f"{packed_size(p + 1)} entries for p = {p}")
    cdef double[::1] a0 = acc0, a1 = acc1, rv = ridge
    cdef double[::1] R = np.empty(p * p), z = np.empty(p)
    # float64 arrays from numpy are 16-byte aligned.
    cdef double[::1] pair = np.empty(packed_pair_size(p))
    cdef double loss[2]
    cdef int info[2]
    with nogil:
        packed_ridge_loss_pair(&a0[0], &a1[0], &rv[0], &R[0], &z[0], &pair[0], p,
                               loss, info)
    return (loss[0], int(info[0])), (loss[1], int(info[1]))


def packed_gram(X, acc=None):
    """``acc + X^T X`` as packed upper triangle through the dgemm kernel.

    ``X`` is ``(n, q)``; ``acc`` (default zeros) has ``q (q + 1) / 2``
    entries.  Returns a new array.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 1:
        raise ValueError("X must be 2-d with at least one column")
    cdef Py_ssize_t n = X.shape[0], q = X.shape[1]
    out = np.zeros(packed_size(q)) if acc is None else np.array(acc, dtype=np.float64)
    if out.shape != (packed_size(q),):
        raise ValueError(f"acc must have {packed_size(q)} entries for q = {q}")
    if n == 0:
        return out
    cdef double[:, ::1] Xv = X
    cdef double[::1] ov = out
    cdef double[::1] C = np.empty(q * q)
    with nogil:
        packed_add_gram(&ov[0], &Xv[0, 0], n, q, &C[0])
    return out
