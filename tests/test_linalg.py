"""Tests for the rank-one Cholesky kernels in :mod:`clarytree._linalg`.

The system under test is ``A = Z^T Z + Lambda`` with ``Lambda = diag(eps,
kappa, ..., kappa)``, factorized as ``A = R^T R`` and carried together with
``z = R^{-T} Z^T y`` and ``sum(y^2)``.

Error model
-----------
Every rotation sweep is backward stable with respect to the *augmented* Gram
matrix it operates on,

    M = [[A, b], [b^T, sum(y^2)]],   b = Z^T y,

so after ``s`` sweeps the computed state is the exact state of some ``M + dM``
with ``||dM|| <~ c * p * u * s * max_k trace(M_k)``, where the maximum runs over
all states the factor has passed through.  The historical maximum (not the
current ``||A||``) is the right scale: a downdate removes a row of norm up to
``||A_old||`` but cannot remove the rounding errors committed while that row
was in the factor, so after downdating a large row the error relative to the
*new* ``||A||`` may legitimately be huge.  From ``dM`` follow:

* backward error ``||R^T R - A||_F / max_k trace(M_k) <= C p u s``;
* loss error ``<= ||dM|| (1 + ||beta||^2)`` (the loss is a Schur complement of
  ``M``; the factor ``||beta||^2`` is where the conditioning enters);
* coefficient error ``<= ||A^{-1}|| ||dM|| (1 + ||beta||)``.

Tests assert these bounds, never closeness of factor entries, whose forward
error is legitimately large when ``A`` is ill conditioned.  References are
computed independently by ``numpy.linalg.lstsq`` on the augmented least
squares problem ``[Z; sqrt(Lambda)] beta ~ [y; 0]`` and by a fresh
factorization of the same ``A``.
"""

import math
import os
from dataclasses import dataclass

import numpy as np
import pytest
from clarytree._linalg import (
    CholeskyState,
    cholesky_factor,
    packed_gram,
    packed_loss,
    packed_loss_pair,
    packed_ridge,
    solve_triangular_rt,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

U = np.finfo(np.float64).eps / 2  # unit roundoff
EPS_INTERCEPT = 1e-12  # floor of the unpenalized intercept entry of Lambda

# Multipliers of (p + 1) u sweeps scale in the error bounds.  The largest
# ratios observed over about 10^4 random cases are about 1 (p = 1,
# where sqrt rounding dominates) and below 0.6 otherwise; 4 leaves headroom
# while staying a small multiple.
C_BACKWARD = 4.0
C_LOSS = 4.0
C_COEF = 4.0

N_EXAMPLES = int(os.environ.get("CLARYTREE_HYPOTHESIS_EXAMPLES", "300"))
PROPERTY = settings(
    max_examples=N_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ---------------------------------------------------------------------------
# Random designs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Design:
    """Distribution of rows ``(z, y)`` for one test case.

    Columns get scales spread over 1e-3..1e3, some columns are near copies of
    others (relative perturbation ``delta``), and column 0 is optionally an
    intercept whose ridge entry is the tiny floor ``EPS_INTERCEPT``.
    """

    p: int
    intercept: bool
    kappa: float
    col_scale: np.ndarray
    pairs: tuple
    delta: float
    weights: np.ndarray
    noise: float
    y_scale: float

    @property
    def ridge(self):
        ridge = np.full(self.p, self.kappa)
        if self.intercept:
            ridge[0] = EPS_INTERCEPT
        return ridge

    def rows(self, rng, n):
        """Draw ``n`` rows ``(Z, y)``."""
        G = rng.standard_normal((n, self.p))
        for j, k in self.pairs:
            G[:, j] = G[:, k] + self.delta * G[:, j]
        signal = G @ self.weights
        Z = G * self.col_scale
        if self.intercept:
            Z[:, 0] = 1.0
        y = self.y_scale * (signal + self.noise * rng.standard_normal(n))
        return Z, y


@st.composite
def designs(draw, min_p=1, max_p=40):
    """Hypothesis strategy for a :class:`Design` and a seeded generator."""
    p = draw(st.integers(min_p, max_p))
    intercept = draw(st.booleans())
    log_kappa = draw(st.floats(-10.0, 3.0))
    seed = draw(st.integers(0, 2**32 - 1))
    n_pairs = draw(st.integers(0, p // 2))
    log_delta = draw(st.floats(-10.0, -1.0))
    log_noise = draw(st.floats(-8.0, 0.0))
    log_y_scale = draw(st.floats(-3.0, 3.0))
    rng = np.random.default_rng(seed)
    first = 1 if intercept else 0
    free = np.arange(first, p)
    pairs = []
    if free.size >= 2:
        for _ in range(n_pairs):
            j, k = sorted(rng.choice(free, size=2, replace=False))
            pairs.append((int(k), int(j)))  # column k becomes a near copy of j
    design = Design(
        p=p,
        intercept=intercept,
        kappa=10.0**log_kappa,
        col_scale=10.0 ** rng.uniform(-3.0, 3.0, size=p),
        pairs=tuple(pairs),
        delta=10.0**log_delta,
        weights=rng.standard_normal(p),
        noise=10.0**log_noise,
        y_scale=10.0**log_y_scale,
    )
    return design, rng


# ---------------------------------------------------------------------------
# References and error measures
# ---------------------------------------------------------------------------


def augmented_trace(Z, y, ridge):
    """``trace(M)`` of the augmented Gram matrix: the natural error scale."""
    return float(np.sum(Z * Z) + np.sum(ridge) + y @ y)


def reference_ridge(Z, y, ridge):
    """Ridge coefficients and loss from the augmented least squares problem.

    Solves ``min ||[Z; sqrt(Lambda)] beta - [y; 0]||`` with an SVD-based
    solver, so the reference never forms ``Z^T Z``.
    """
    p = ridge.size
    A_aug = np.vstack([Z, np.diag(np.sqrt(ridge))])
    y_aug = np.concatenate([y, np.zeros(p)])
    beta = np.linalg.lstsq(A_aug, y_aug, rcond=None)[0]
    resid = y_aug - A_aug @ beta
    return beta, float(resid @ resid)


def lambda_min_lower(A, ridge):
    """Guaranteed lower bound on the smallest eigenvalue of SPD ``A``.

    ``eigvalsh`` is backward stable, so the true value is at least the
    computed one minus a few ``p u ||A||``; ``A >= Lambda`` gives a floor.
    """
    p = A.shape[0]
    computed = np.linalg.eigvalsh(A)[0] - 10 * p * U * np.linalg.norm(A)
    return max(float(np.min(ridge)), float(computed))


def backward_ratio(R, A, scale, sweeps):
    """``||R^T R - A||_F / ((p + 1) u sweeps scale)``: a small constant."""
    p = A.shape[0]
    return np.linalg.norm(R.T @ R - A) / ((p + 1) * U * sweeps * scale)


def snapshot(state):
    """Bitwise copy of everything a failed downdate must leave untouched."""
    return (state.factor.copy(), state.z.copy(), state.sum_y2, state.n_rows)


def assert_unchanged(state, snap):
    R, z, sum_y2, n_rows = snap
    assert state.factor.tobytes() == R.tobytes()
    assert state.z.tobytes() == z.tobytes()
    assert state.sum_y2 == sum_y2
    assert state.n_rows == n_rows


def assert_cholesky_failure_legitimate(A):
    """A Cholesky factorization may fail only on a numerically singular ``A``.

    Success is guaranteed when ``20 p^{3/2} u kappa_2(H) < 1`` for the
    diagonally scaled ``H = D^{-1/2} A D^{-1/2}`` (Higham, *Accuracy and
    Stability of Numerical Algorithms*, Thm 10.7); ``lambda_max(H) <= p``.
    """
    p = A.shape[0]
    d = np.sqrt(np.diag(A))
    assert np.linalg.eigvalsh(A / d / d[:, None])[0] <= 20 * p**2.5 * U


def check_state(state, Z, y, ridge, scale, sweeps):
    """Compare a streamed state with fresh references for the same rows.

    Parameters
    ----------
    state : CholeskyState
        State after ``sweeps - 1`` rotation sweeps from a fresh start.
    Z, y : ndarray
        Rows currently in the system.
    ridge : ndarray
        Diagonal of Lambda.
    scale : float
        Largest ``trace(M)`` the state has passed through.
    sweeps : int
        Rotation sweeps since the last fresh factorization, plus one.
    """
    p = ridge.size
    A = Z.T @ Z + np.diag(ridge)
    b = Z.T @ y
    R = state.factor
    assert state.n_rows == Z.shape[0]
    assert np.all(np.tril(R, -1) == 0.0), "factor lost its triangular structure"
    assert np.all(np.isfinite(R)) and np.all(np.isfinite(state.z))

    ratio = backward_ratio(R, A, scale, sweeps)
    assert ratio <= C_BACKWARD, f"backward error {ratio:.3g} p u sweeps scale"

    # A perturbation dM of the augmented Gram matrix moves the loss by at
    # most ||dM|| (1 + ||beta||^2) and the coefficients by
    # ||A^{-1}|| ||dM|| (1 + ||beta||); the reference carries errors of the
    # same form, hence one constant for both.
    beta_ref, loss_ref = reference_ridge(Z, y, ridge)
    dM = (p + 1) * U * sweeps * scale
    loss = state.loss()
    tol_loss = C_LOSS * dM * (1.0 + beta_ref @ beta_ref)
    assert abs(loss - loss_ref) <= tol_loss, (loss, loss_ref, tol_loss)

    beta = state.coef()
    lam = lambda_min_lower(A, ridge)
    tol_beta = C_COEF * dM * (1.0 + np.linalg.norm(beta_ref)) / lam
    assert np.linalg.norm(beta - beta_ref) <= tol_beta
    # Residual of the normal equations: independent of the conditioning.
    resid = np.linalg.norm(A @ beta - b)
    assert resid <= C_COEF * dM * (1.0 + np.linalg.norm(beta))

    # A fresh factorization of the same A must agree on the loss.  It may
    # legitimately fail only if A is numerically singular after diagonal
    # scaling (the quantity Cholesky's success depends on).
    R_fresh, info = cholesky_factor(A)
    if info == 0:
        assert backward_ratio(R_fresh, A, np.trace(A), 1) <= C_BACKWARD
        z_fresh = solve_triangular_rt(R_fresh, b)
        loss_fresh = float(y @ y - z_fresh @ z_fresh)
        assert abs(loss - loss_fresh) <= tol_loss
    else:
        assert_cholesky_failure_legitimate(A)


# ---------------------------------------------------------------------------
# Property tests: random update / downdate sequences
# ---------------------------------------------------------------------------


def downdate_failure_is_legitimate(A_after, x, ridge, scale, sweeps):
    """Whether rounding can make a valid downdate look indefinite.

    Removing a row that is in the system leaves ``A_after >= Lambda > 0``, so
    ``1 - ||R^{-T} x||^2 = 1 / (1 + x^T A_after^{-1} x)`` is positive.  The
    computed value is off by up to ``||dA|| / lambda_min(A)``; a failure is
    only acceptable when the true value is below that noise level.
    """
    A_before = A_after + np.outer(x, x)
    alpha2 = 1.0 / (1.0 + x @ np.linalg.solve(A_after, x))
    noise = (x.size + 1) * U * sweeps * scale / lambda_min_lower(A_before, ridge)
    return alpha2 <= 10 * noise


@PROPERTY
@given(
    case=designs(),
    n_steps=st.integers(1, 30),
    p_remove=st.floats(0.0, 0.6),
)
def test_update_downdate_sequences(case, n_steps, p_remove):
    """Random interleavings of row insertions and removals.

    After every sweep the state is checked against fresh references (see
    :func:`check_state`).  A refused downdate of a row that is in the system
    is only acceptable at rounding level, must leave the state untouched,
    and is followed by what a caller does: a rebuild from the raw rows.
    """
    design, rng = case
    ridge = design.ridge
    state = CholeskyState(ridge)
    Z_pool, y_pool = design.rows(rng, n_steps)
    Z = np.empty((0, design.p))
    y = np.empty(0)
    scale = augmented_trace(Z, y, ridge)
    sweeps = 1
    next_row = 0
    for _ in range(n_steps):
        if Z.shape[0] > 0 and rng.random() < p_remove:
            i = int(rng.integers(Z.shape[0]))
            x, yi = Z[i], y[i]
            Z_new, y_new = np.delete(Z, i, axis=0), np.delete(y, i)
            snap = snapshot(state)
            ok = state.downdate(x, yi)
            if not ok:
                assert_unchanged(state, snap)
                A_new = Z_new.T @ Z_new + np.diag(ridge)
                assert downdate_failure_is_legitimate(A_new, x, ridge, scale, sweeps)
                state = CholeskyState(ridge)
                for zr, yr in zip(Z_new, y_new, strict=True):
                    state.update(zr, yr)
                scale = augmented_trace(Z_new, y_new, ridge)
                sweeps = Z_new.shape[0] + 1
            else:
                sweeps += 1
            Z, y = Z_new, y_new
        else:
            x, yi = Z_pool[next_row], y_pool[next_row]
            next_row += 1
            state.update(x, yi)
            Z, y = np.vstack([Z, x]), np.append(y, yi)
            sweeps += 1
            scale = max(scale, augmented_trace(Z, y, ridge))
        check_state(state, Z, y, ridge, scale, sweeps)


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 25), rho=st.floats(1.0, 1e6))
def test_indefinite_downdate_detected_and_state_untouched(case, n_rows, rho):
    """A downdate with ``||R^{-T} x||^2 = rho >= 1`` fails and changes nothing."""
    design, rng = case
    state = CholeskyState(design.ridge)
    Z, y = design.rows(rng, n_rows)
    for zr, yr in zip(Z, y, strict=True):
        state.update(zr, yr)
    # x = R^T a with ||a||^2 = rho: A - x x^T has the direction
    # R^{-1} a with Rayleigh quotient 1 - rho <= 0.  Nudge rho up so that
    # rounding in forming x cannot bring it back below one.
    a = rng.standard_normal(design.p)
    a *= np.sqrt(rho * (1.0 + 1e-8)) / np.linalg.norm(a)
    x = state.factor.T @ a
    snap = snapshot(state)
    assert state.downdate(x, float(rng.standard_normal())) is False
    assert_unchanged(state, snap)


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 25), shrink=st.floats(0.0, 0.99))
def test_downdate_of_arbitrary_vector(case, n_rows, shrink):
    """Downdates need not remove an existing row: any ``x`` with
    ``||R^{-T} x|| < 1`` leaves a definite matrix and must succeed."""
    design, rng = case
    ridge = design.ridge
    state = CholeskyState(ridge)
    Z, y = design.rows(rng, n_rows)
    for zr, yr in zip(Z, y, strict=True):
        state.update(zr, yr)
    a = rng.standard_normal(design.p)
    a *= shrink / np.linalg.norm(a)
    x = state.factor.T @ a
    A = Z.T @ Z + np.diag(ridge)
    scale = np.trace(A) + x @ x
    assert state.downdate(x, 0.0)
    ratio = backward_ratio(state.factor, A - np.outer(x, x), scale, n_rows + 2)
    assert ratio <= C_BACKWARD


def test_downdate_tol_threshold():
    """``tol`` refuses downdates with ``1 - ||R^{-T} x||^2 <= tol``."""
    state = CholeskyState(np.ones(3))
    x = np.array([0.6, 0.0, 0.0])  # ||a||^2 = 0.36 for R = I
    snap = snapshot(state)
    assert state.downdate(x, 1.0, tol=0.7) is False
    assert_unchanged(state, snap)
    assert state.downdate(x, 1.0, tol=0.5) is True
    np.testing.assert_allclose(state.factor.T @ state.factor, np.diag([0.64, 1, 1]))


# ---------------------------------------------------------------------------
# Degenerate inputs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 5, 40])
def test_zero_row_is_exact_no_op_on_factor(p):
    """``x = 0`` gives identity rotations (c = 1, s = 0 exactly): ``R`` and
    ``z`` are untouched bit for bit and only ``sum(y^2)`` moves."""
    rng = np.random.default_rng(p)
    ridge = np.r_[EPS_INTERCEPT, np.full(p - 1, 0.1)]
    state = CholeskyState(ridge)
    for _ in range(3):
        state.update(np.r_[1.0, rng.standard_normal(p - 1)], rng.standard_normal())
    loss0 = state.loss()
    snap = snapshot(state)
    state.update(np.zeros(p), 3.0)
    assert state.factor.tobytes() == snap[0].tobytes()
    assert state.z.tobytes() == snap[1].tobytes()
    assert state.n_rows == snap[3] + 1
    assert state.loss() == pytest.approx(loss0 + 9.0, rel=1e-14, abs=1e-14)
    assert state.downdate(np.zeros(p), 3.0)
    assert state.factor.tobytes() == snap[0].tobytes()
    assert state.z.tobytes() == snap[1].tobytes()
    assert state.n_rows == snap[3]
    assert state.loss() == pytest.approx(loss0, rel=1e-14, abs=1e-14)


@PROPERTY
@given(
    x=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20),
    log_kappa=st.floats(-10.0, 3.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_p1_closed_form(x, log_kappa, seed):
    """Scalar case: ``loss = sum y^2 - (sum x y)^2 / (kappa + sum x^2)``."""
    kappa = 10.0**log_kappa
    x = np.asarray(x)
    y = np.random.default_rng(seed).standard_normal(x.size)
    state = CholeskyState([kappa])
    for xi, yi in zip(x, y, strict=True):
        state.update([xi], yi)
    a = kappa + x @ x
    assert state.factor.shape == (1, 1)
    assert state.factor[0, 0] == pytest.approx(np.sqrt(a), rel=1e-13)
    loss = y @ y - (x @ y) ** 2 / a
    tol = 4 * x.size * U * (a + y @ y) * (1.0 + ((x @ y) / a) ** 2)
    assert abs(state.loss() - loss) <= tol
    beta = (x @ y) / a
    tol_beta = C_COEF * 2 * x.size * U * (a + y @ y) * (1.0 + abs(beta)) / a
    assert abs(state.coef()[0] - beta) <= tol_beta


@PROPERTY
@given(case=designs(max_p=20), copies=st.integers(2, 30))
def test_repeated_identical_rows(case, copies):
    """Stacking one row many times makes ``A`` nearly rank one plus Lambda;
    removing all copies again must return to Lambda within the error model."""
    design, rng = case
    ridge = design.ridge
    Z1, y1 = design.rows(rng, 1)
    x, yi = Z1[0], y1[0]
    state = CholeskyState(ridge)
    for _ in range(copies):
        state.update(x, yi)
    Z, y = np.tile(x, (copies, 1)), np.full(copies, yi)
    scale = augmented_trace(Z, y, ridge)
    check_state(state, Z, y, ridge, scale, copies + 1)
    sweeps = copies + 1
    for k in range(copies - 1, -1, -1):
        snap = snapshot(state)
        ok = state.downdate(x, yi)
        if not ok:
            assert_unchanged(state, snap)
            A_new = k * np.outer(x, x) + np.diag(ridge)
            assert downdate_failure_is_legitimate(A_new, x, ridge, scale, sweeps)
            return
        sweeps += 1
        check_state(state, Z[:k], y[:k], ridge, scale, sweeps)


@PROPERTY
@given(case=designs(), log_x_scale=st.floats(-3.0, 3.0))
def test_downdate_of_last_row(case, log_x_scale):
    """Remove the only row: ``A = Lambda + x x^T`` back to ``Lambda``.

    With ``s = x^T Lambda^{-1} x`` we have ``1 - ||R^{-T} x||^2 = 1 / (1 + s)
    > 0``: the target Lambda is positive definite thanks to the floor, so the
    downdate is mathematically valid and must not be refused when ``1 / (1 +
    s)`` is resolvable.  With an intercept, ``s >= 1 / eps = 1e12`` and the
    margin is ~1e-12, far above rounding (the rotation arithmetic is
    componentwise accurate here, so no condition number enters).  Only when
    ``s u`` approaches one (tiny kappa and large features) is the margin at
    rounding level; then refusing is acceptable, but the state must be
    untouched, and a success must still meet the backward error bound
    relative to the pre-downdate ``A``.
    """
    design, rng = case
    ridge = design.ridge
    Z, y = design.rows(rng, 1)
    Z *= 10.0**log_x_scale
    if design.intercept:
        Z[0, 0] = 1.0
    x, yi = Z[0], y[0]
    state = CholeskyState(ridge)
    state.update(x, yi)
    scale = augmented_trace(Z, y, ridge)
    s = float(x @ (x / ridge))
    snap = snapshot(state)
    ok = state.downdate(x, yi)
    if s * U > 1e-6:
        if not ok:
            assert_unchanged(state, snap)
            return
    else:
        assert ok, f"valid downdate refused (s = {s:.3g})"
    assert state.n_rows == 0
    assert state.sum_y2 == 0.0  # y*y - y*y is exact
    ratio = backward_ratio(state.factor, np.diag(ridge), scale, 2)
    assert ratio <= C_BACKWARD
    # Loss of the empty system is zero: here ||z||^2 must be tiny.
    assert abs(state.loss()) <= C_LOSS * (design.p + 1) * U * 2 * scale


# ---------------------------------------------------------------------------
# Fresh factorization, packed route, refactor
# ---------------------------------------------------------------------------


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 60))
def test_packed_ridge_matches_reference(case, n_rows):
    design, rng = case
    ridge = design.ridge
    Z, y = design.rows(rng, n_rows)
    loss, beta, info = packed_ridge(Z, y, ridge)
    A = Z.T @ Z + np.diag(ridge)
    scale = augmented_trace(Z, y, ridge)
    if info != 0:
        assert_cholesky_failure_legitimate(A)
        return
    beta_ref, loss_ref = reference_ridge(Z, y, ridge)
    dM = (design.p + 1) * U * max(n_rows, 1) * scale
    assert abs(loss - loss_ref) <= C_LOSS * dM * (1.0 + beta_ref @ beta_ref)
    lam = lambda_min_lower(A, ridge)
    tol_beta = C_COEF * dM * (1.0 + np.linalg.norm(beta_ref)) / lam
    assert np.linalg.norm(beta - beta_ref) <= tol_beta


def pack_upper(M):
    """Row-major packed upper triangle of a square matrix."""
    return np.concatenate([M[i, i:] for i in range(M.shape[0])])


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 60))
def test_packed_loss_is_bitwise_the_unpacked_route(case, n_rows):
    """The packed elimination does exactly the unpacked route's arithmetic.

    The unpacked route factors ``A + Lambda`` (``cholesky_factor``), solves
    ``R^T z = b`` and subtracts the sequentially summed ``||z||^2``; the
    packed kernel must give the same bits (and the same failure index), for
    small ``p`` (unpacked fallback) and large ``p`` (packed elimination).
    """
    design, rng = case
    ridge = design.ridge
    Z, y = design.rows(rng, n_rows)
    Wz = np.column_stack([Z, y])
    acc = pack_upper(Wz.T @ Wz)
    p = design.p
    loss, info = packed_loss(acc, ridge)
    A = Wz.T @ Wz
    system = A[:p, :p] + np.diag(ridge)
    R, info_ref = cholesky_factor(system)
    assert info == info_ref
    if info != 0:
        assert_cholesky_failure_legitimate(system)
        return
    z = solve_triangular_rt(R, A[:p, p])
    total = 0.0
    for v in z:
        total += v * v
    assert loss == A[p, p] - total
    beta_ref, loss_ref = reference_ridge(Z, y, ridge)
    scale = augmented_trace(Z, y, ridge)
    dM = (p + 1) * U * max(n_rows, 1) * scale
    assert abs(loss - loss_ref) <= C_LOSS * dM * (1.0 + beta_ref @ beta_ref)


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 60), other_rows=st.integers(0, 60),
       fail=st.sampled_from([None, 0, 1]))
def test_paired_losses_are_bitwise_those_of_one_at_a_time(case, n_rows, other_rows, fail):
    """Two systems factorized side by side give each one's loss and failure alone.

    The splitter scores a threshold block's two children through the paired
    kernel; every loss must be exactly ``packed_loss``'s, also when one of
    the two systems has a non-positive pivot (``fail``: which one).
    """
    design, rng = case
    accs = []
    for n in (n_rows, other_rows):
        Z, y = design.rows(rng, n)
        Wz = np.column_stack([Z, y])
        accs.append(pack_upper(Wz.T @ Wz))
    if fail is not None:
        accs[fail][0] = -1.0 - 2.0 * design.ridge[0]     # its first pivot
    pair = packed_loss_pair(accs[0], accs[1], design.ridge)
    assert pair == (packed_loss(accs[0], design.ridge), packed_loss(accs[1], design.ridge))
    if fail is not None:
        assert pair[fail] == (0.0, 1)


@pytest.mark.parametrize("p", [1, 3, 4, 7])
def test_packed_loss_reports_the_failing_pivot(p):
    """A non-positive pivot gives its 1-based index, as ``cholesky_factor``."""
    M = np.eye(p + 1)
    bad = p - 1
    M[bad, bad] = -1.0
    loss, info = packed_loss(pack_upper(M), np.full(p, 1e-300))
    assert info == bad + 1
    assert loss == 0.0


def test_packed_loss_rejects_inconsistent_shapes():
    with pytest.raises(ValueError, match="entries"):
        packed_loss(np.zeros(5), np.ones(2))
    with pytest.raises(ValueError, match="1-d"):
        packed_loss(np.zeros((3, 2)), np.ones(1))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 700), q=st.integers(1, 24), seed=st.integers(0, 2**32 - 1),
       log_scale=st.floats(0.0, 3.0))
def test_packed_gram_is_the_gram_matrix(n, q, seed, log_scale):
    """``acc + X^T X`` (packed) within the summation error bound.

    Any order of summing ``n`` products is within ``(n + 1) u`` of the sum of
    their magnitudes (plus one addition into ``acc``); the exact sums come
    from ``math.fsum``.  Row counts cross the dgemm block (256) and the
    rank-one cutoff.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, q)) * 10.0 ** rng.uniform(-log_scale, log_scale, size=q)
    acc0 = rng.standard_normal(q * (q + 1) // 2)
    got = packed_gram(X, acc0)
    k = 0
    for i in range(q):
        for j in range(i, q):
            prod = X[:, i] * X[:, j]
            exact = math.fsum([acc0[k], *prod])
            bound = (n + 2) * U * (abs(acc0[k]) + float(np.abs(prod).sum()))
            assert abs(got[k] - exact) <= bound, (i, j, got[k], exact)
            k += 1


def test_packed_gram_rejects_inconsistent_shapes():
    with pytest.raises(ValueError, match="2-d"):
        packed_gram(np.zeros(3))
    with pytest.raises(ValueError, match="entries"):
        packed_gram(np.zeros((2, 3)), np.zeros(5))


@PROPERTY
@given(case=designs(), n_rows=st.integers(0, 40))
def test_refactor_matches_streaming(case, n_rows):
    design, rng = case
    ridge = design.ridge
    Z, y = design.rows(rng, n_rows)
    A = Z.T @ Z + np.diag(ridge)
    state = CholeskyState(ridge)
    try:
        state.refactor(Z, y, ridge)
    except np.linalg.LinAlgError:
        assert_cholesky_failure_legitimate(A)
        return
    check_state(state, Z, y, ridge, augmented_trace(Z, y, ridge), max(n_rows, 1))


@pytest.mark.parametrize(
    ("A", "info"),
    [
        (np.diag([1.0, -1.0, 1.0]), 2),
        (np.diag([0.0, 1.0]), 1),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), 2),  # eigenvalues 3 and -1
        (np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), 2),  # singular
        (np.diag([1.0, np.nan]), 2),
        (-np.eye(4), 1),
    ],
)
def test_cholesky_factor_info_on_non_definite(A, info):
    """``info`` is the 1-based index of the first non-positive pivot."""
    assert cholesky_factor(A)[1] == info


def test_cholesky_factor_reads_upper_triangle_only():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((6, 6))
    A = B @ B.T + np.eye(6)
    junk = np.triu(A) + np.tril(np.full((6, 6), 1e300), -1)
    R, info = cholesky_factor(junk)
    assert info == 0
    assert np.all(np.tril(R, -1) == 0.0)
    assert backward_ratio(R, A, np.trace(A), 1) <= C_BACKWARD


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ridge",
    [[], [1.0, 0.0], [1.0, -1e-12], [np.nan], [np.inf], [[1.0, 1.0]]],
)
def test_state_rejects_bad_ridge(ridge):
    with pytest.raises(ValueError):
        CholeskyState(ridge)


@pytest.mark.parametrize("method", ["update", "downdate"])
@pytest.mark.parametrize("x", [np.ones(2), np.ones(4), np.ones((3, 1)), np.ones((1, 3))])
def test_state_rejects_wrong_row_shape(method, x):
    state = CholeskyState(np.ones(3))
    snap = snapshot(state)
    with pytest.raises(ValueError):
        getattr(state, method)(x, 1.0)
    assert_unchanged(state, snap)


@pytest.mark.parametrize("A", [np.ones(3), np.ones((2, 3)), np.empty((0, 0)), np.ones((2, 2, 2))])
def test_cholesky_factor_rejects_non_square(A):
    with pytest.raises(ValueError):
        cholesky_factor(A)


@pytest.mark.parametrize(
    ("n_y", "p_ridge"),
    [(4, 3), (5, 2), (5, 4)],
)
def test_packed_ridge_rejects_inconsistent_shapes(n_y, p_ridge):
    Z = np.ones((5, 3))
    with pytest.raises(ValueError):
        packed_ridge(Z, np.ones(n_y), np.ones(p_ridge))


@pytest.mark.parametrize(
    ("Z", "y", "ridge"),
    [
        (np.ones(5), np.ones(5), np.ones(1)),  # 1-d Z
        (np.ones((5, 1, 1)), np.ones(5), np.ones(1)),
        (np.ones((5, 2)), np.ones((5, 1)), np.ones(2)),
        (np.ones((5, 2)), np.ones(5), np.ones((2, 1))),
    ],
)
def test_packed_ridge_rejects_wrong_ndim(Z, y, ridge):
    with pytest.raises(ValueError):
        packed_ridge(Z, y, ridge)


@pytest.mark.parametrize(("shape_R", "n_b"), [((3, 3), 2), ((3, 3), 4), ((2, 3), 3)])
def test_solve_triangular_rt_rejects_inconsistent_shapes(shape_R, n_b):
    R = np.eye(*shape_R)
    with pytest.raises(ValueError):
        solve_triangular_rt(R, np.ones(n_b))


def test_non_finite_rows_are_rejected_before_touching_the_state():
    state = CholeskyState(np.array([1e-12, 1.0]))
    state.update(np.array([1.0, 2.0]), 3.0)
    before = (state.factor.copy(), state.z.copy(), state.sum_y2, state.n_rows)
    for x, y in [([1.0, np.nan], 0.0), ([1.0, 0.5], np.inf), ([np.inf, 0.0], 1.0)]:
        with pytest.raises(ValueError, match="finite"):
            state.update(np.array(x), y)
        with pytest.raises(ValueError, match="finite"):
            state.downdate(np.array(x), y)
    np.testing.assert_array_equal(state.factor, before[0])
    np.testing.assert_array_equal(state.z, before[1])
    assert (state.sum_y2, state.n_rows) == before[2:]


@pytest.mark.parametrize("ridge", [[0.0, 1.0], [1.0, -0.5], [1.0, np.nan], [1.0]])
def test_refactor_and_packed_route_reject_bad_ridge(ridge):
    Z = np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 2.0]])
    y = np.array([1.0, 2.0, 0.0])
    state = CholeskyState(np.array([1e-12, 1.0]))
    with pytest.raises(ValueError, match="ridge"):
        state.refactor(Z, y, ridge)
    with pytest.raises(ValueError, match="ridge"):
        packed_ridge(Z, y, ridge)
