"""RidgeCriterion's composed sweep against fresh factorizations.

The splitter's rank-one route moves a node's rows, in sorted order, from the
right child to the left one: the left factor takes a rank-one update, the
right one a downdate, and a downdate the kernel refuses (the right child is
numerically close to losing definiteness) is replaced by a fresh
factorization of the right child's packed sums, ``total - left``.  After
every move both children's losses are compared with references computed
from scratch for the same rows, within the error model of the kernel tests
(``test_linalg``): a state reached by ``s`` rotation sweeps from a fresh
start is the exact state of some ``M + dM`` with
``||dM|| <~ (p + 1) u s scale``, ``scale`` the largest ``trace(M)`` it passed
through, and the loss moves by at most ``||dM|| (1 + ||beta||^2)``.

For the right child the fresh start is a refactorization of packed sums
accumulated over the node's ``n`` rows, so its ``s`` counts those ``n``
additions plus the downdates since, and its scale is the node's trace.  That
refactorization may fail (the loss is then reported as infinite and the
threshold skipped, as on the bulk route, which forms the same difference)
only when a perturbation of that size can make the right child's Gram
matrix indefinite, i.e. when the ridge is below the rounding of
``total - left``.
"""

import numpy as np
from clarytree._criterion import RidgeCriterion
from clarytree._linalg import packed_ridge
from hypothesis import given
from hypothesis import strategies as st
from test_linalg import (
    C_LOSS,
    PROPERTY,
    U,
    augmented_trace,
    designs,
    lambda_min_lower,
    reference_ridge,
)


def check_sweep(design, rng, n):
    Z, y = design.rows(rng, n)
    ridge = design.ridge
    p = ridge.size
    criterion = RidgeCriterion(np.column_stack([Z, y]), ridge)
    left, right, refactored = criterion._sweep(np.arange(n))
    scale_total = augmented_trace(Z, y, ridge)
    last_fresh = -1         # the right child's last fresh factorization
    n_failed = [0]
    for i in range(n):
        if refactored[i]:
            last_fresh = i
        for side, loss, rows, sweeps, scale in (
                ("left", left[i], slice(0, i + 1), i + 2,
                 augmented_trace(Z[:i + 1], y[:i + 1], ridge)),
                ("right", right[i], slice(i + 1, n), n + (i - last_fresh) + 1,
                 scale_total)):
            beta_ref, loss_ref = reference_ridge(Z[rows], y[rows], ridge)
            dM = (p + 1) * U * sweeps * scale
            if side == "right" and loss == np.inf:
                # The refactorization of total - left failed: legitimate
                # only when that difference's rounding (dM) can make the
                # right child's Gram matrix indefinite.
                A = Z[rows].T @ Z[rows] + np.diag(ridge)
                assert lambda_min_lower(A, ridge) <= C_LOSS * dM, (i, dM)
                n_failed[0] += 1
                continue
            tol = C_LOSS * dM * (1.0 + beta_ref @ beta_ref)
            assert abs(loss - loss_ref) <= tol, (side, i, loss, loss_ref, tol)
            # The bulk route's fresh factorization of the same rows agrees.
            fresh, _, info = packed_ridge(Z[rows], y[rows], ridge)
            if info == 0:
                assert abs(loss - fresh) <= tol, (side, i, loss, fresh, tol)
    return int(refactored.sum()), n_failed[0]


def test_composed_sweep_matches_fresh_factorizations_and_refactors():
    """Property test; the refactor fallback must actually be exercised."""
    counts = []

    @PROPERTY
    @given(case=designs(max_p=12), n=st.integers(2, 40))
    def run(case, n):
        design, rng = case
        counts.append(check_sweep(design, rng, n))

    run()
    refactors = np.array([c[0] for c in counts])
    # Near the end of a sweep the right child has fewer rows than
    # coefficients and a weak ridge: downdates there are refused routinely.
    assert refactors.sum() > 0
    assert np.mean(refactors > 0) > 0.1, np.mean(refactors > 0)


def test_refactor_fallback_on_a_known_case():
    """Removing a row that dominates a nearly singular right child refactors."""
    rng = np.random.default_rng(0)
    n, p = 12, 6
    Z = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = rng.normal(size=n)
    ridge = np.full(p, 1e-9)
    ridge[0] = 1e-12
    left, right, refactored = RidgeCriterion(np.column_stack([Z, y]), ridge)._sweep(
        np.arange(n))
    # While the right child keeps more rows than coefficients its downdates
    # go through; once its Gram matrix is Lambda plus low rank they are
    # refused and the child is refactored.
    assert not refactored[:n - p - 1].any()
    assert refactored[n - p + 1:].all()
    assert right[-1] == 0.0 or abs(right[-1]) < 1e-8
    assert left[-1] >= 0.0
