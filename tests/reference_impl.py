"""An independent, slow numpy implementation of the CLARITree objective.

Used only by the tests: it recomputes leaf objectives by solving the ridge
normal equations with ``numpy.linalg.solve`` and searches splits by brute
force, with the stopping and pruning rules documented in the estimators.
"""

import numpy as np


class ReferenceProblem:
    """Data, standardization and penalties exactly as the estimators use them."""

    def __init__(self, X, y, *, leaf_model="linear", leaf_penalty=1e-3,
                 ridge_alpha=1e-5, n_thresholds=20, min_samples_leaf=None):
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        n, k = self.X.shape
        self.leaf_model = leaf_model
        binary = np.all((self.X == 0) | (self.X == 1), axis=0)
        self.reg = np.flatnonzero(~binary) if leaf_model == "linear" else np.array([], int)
        mean = self.X[:, self.reg].mean(axis=0)
        std = self.X[:, self.reg].std(axis=0)
        std[std < 1e-12] = 1.0
        self.Z = np.column_stack([np.ones(n), (self.X[:, self.reg] - mean) / std])
        self.ridge = np.r_[1e-12, np.full(len(self.reg), n * ridge_alpha)]
        self.tss = float(((self.y - self.y.mean()) ** 2).sum())
        self.cost = leaf_penalty * self.tss
        if min_samples_leaf is None:
            min_samples_leaf = max(1, 5 * len(self.reg)) if leaf_model == "linear" else 1
        self.msl = min_samples_leaf
        self.pools = [self._pool(self.X[:, f], n_thresholds) for f in range(k)]

    @staticmethod
    def _pool(x, T):
        u = np.unique(x)
        if len(u) < 2:
            return np.array([])
        if T is None or len(u) <= T + 1:
            return (u[:-1] + u[1:]) / 2
        return np.unique(np.quantile(x, np.arange(1, T + 1) / (T + 1)))

    def leaf_loss(self, idx):
        y = self.y[idx]
        if self.leaf_model == "constant":
            return float(((y - y.mean()) ** 2).sum())
        Z = self.Z[idx]
        beta = np.linalg.solve(Z.T @ Z + np.diag(self.ridge), Z.T @ y)
        r = y - Z @ beta
        return float(r @ r + beta @ (self.ridge * beta))

    def candidates(self, idx):
        """Admissible (feature, threshold, left, right) in search order."""
        out = []
        for f, pool in enumerate(self.pools):
            x = self.X[idx, f]
            seen = set()
            for t in pool:
                left = x <= t
                nl = int(left.sum())
                if nl in seen:
                    continue        # same partition as a smaller threshold
                seen.add(nl)
                if nl < self.msl or len(idx) - nl < self.msl:
                    continue
                out.append((f, t, idx[left], idx[~left]))
        return out

    def stops(self, idx, depth, loss):
        return depth == 0 or loss + self.cost <= 2 * self.cost or len(idx) < 2 * self.msl

    def greedy(self, idx, depth):
        loss = self.leaf_loss(idx)
        leaf = loss + self.cost
        if self.stops(idx, depth, loss):
            return leaf
        best, best_split = np.inf, None
        for _f, _t, left, right in self.candidates(idx):
            score = self.leaf_loss(left) + self.leaf_loss(right)
            if score < best:
                best, best_split = score, (left, right)
        if best_split is None:
            return leaf
        sub = self.greedy(best_split[0], depth - 1) + self.greedy(best_split[1], depth - 1)
        return sub if sub < leaf else leaf

    def optimal(self, idx, depth):
        loss = self.leaf_loss(idx)
        leaf = loss + self.cost
        if self.stops(idx, depth, loss):
            return leaf
        best = leaf
        for _f, _t, left, right in self.candidates(idx):
            best = min(best, self.optimal(left, depth - 1) + self.optimal(right, depth - 1))
        return best
