"""Benchmarks of the rank-one Cholesky kernels against refactoring.

Every benchmark moves the same ``N_ROWS`` rows of a ``p``-column design
(intercept plus ``p - 1`` features) through a factorized ridge system, so the
timings compare directly: divide by ``2 * N_ROWS`` for the cost per row change.
"""

import numpy as np
from clarytree._linalg import CholeskyState, packed_ridge

N_ROWS = 256


def _design(p, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((N_ROWS, p))
    Z[:, 0] = 1.0
    y = Z @ rng.standard_normal(p) + rng.standard_normal(N_ROWS)
    ridge = np.full(p, 1e-2)
    ridge[0] = 1e-12  # unpenalized intercept
    return Z, y, ridge


class RankOneKernels:
    """Add then remove each row: O(p^2) sweeps versus O(p^3) refactoring."""

    params = [5, 10, 20, 40]
    param_names = ["p"]

    def setup(self, p):
        self.Z, self.y, self.ridge = _design(p)
        # Rows as separate contiguous arrays so the loops time the kernels,
        # not fancy indexing.
        self.rows = [np.ascontiguousarray(z) for z in self.Z]
        self.targets = [float(t) for t in self.y]
        self.state = CholeskyState(self.ridge)
        for z, t in zip(self.rows, self.targets, strict=True):
            self.state.update(z, t)
        self.A = self.Z.T @ self.Z + np.diag(self.ridge)

    def time_update_downdate(self, p):
        """Fold each row in and out again: ``2 * N_ROWS`` rotation sweeps."""
        state = self.state
        for z, t in zip(self.rows, self.targets, strict=True):
            state.update(z, t)
            state.downdate(z, t)

    def time_numpy_refactor(self, p):
        """Same row traffic, refactoring with ``np.linalg.cholesky`` each time."""
        A = self.A.copy()
        for z in self.rows:
            outer = np.outer(z, z)
            A += outer
            np.linalg.cholesky(A)
            A -= outer
            np.linalg.cholesky(A)

    def time_state_refactor(self, p):
        """Rebuild the full state (factor and ``z``) from all rows once."""
        self.state.refactor(self.Z, self.y, self.ridge)

    def time_packed_ridge(self, p):
        """Bulk route: accumulate all rows into packed sums, factor once."""
        packed_ridge(self.Z, self.y, self.ridge)

    def track_loss_drift(self, p):
        """Relative loss drift after ``N_ROWS`` update/downdate pairs."""
        state = CholeskyState(self.ridge)
        for z, t in zip(self.rows, self.targets, strict=True):
            state.update(z, t)
        before = state.loss()
        for z, t in zip(self.rows[::-1], self.targets[::-1], strict=True):
            state.downdate(z, t)
            state.update(z, t)
        return abs(state.loss() - before) / before

    track_loss_drift.unit = "relative"
