"""Time of the leaf-penalty path and of the CV estimator.

Data: the paper's piecewise-linear design (appendix D.3), 8 features, depth
4, 20 thresholds, kappa = 1e-3.

- ``LeafPenaltyPath``: ``leaf_penalty_path`` over the paper's 11 leaf
  penalties against the 11 separate fits it replaces, greedy or one-step
  lookahead, ``n`` in {1e3, 1e4} (lookahead only at 1e3).
- ``CVFit``: ``CLARITreeRegressorCV.fit`` (3 folds, 11 x 2 grid, one job).
"""

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor, CLARITreeRegressorCV

from .fit import piecewise_linear

LAMBDAS = [1e-1, 8e-2, 5e-2, 3e-2, 1e-2, 8e-3, 5e-3, 3e-3, 1e-3, 5e-4, 1e-4]


def _estimator(method):
    params = dict(max_depth=4, ridge_alpha=1e-3, n_thresholds=20)
    if method == "greedy":
        return CholeskyTreeRegressor(**params)
    return CLARITreeRegressor(lookahead_depth=1, **params)


class LeafPenaltyPath:
    params = (["greedy", "lookahead"], [1_000, 10_000])
    param_names = ["method", "n"]
    timeout = 300

    def setup(self, method, n):
        if method == "lookahead" and n > 1_000:
            raise NotImplementedError("11 lookahead fits at n = 1e4 are too heavy for the suite")
        self.X, self.y = piecewise_linear(n, 8)
        self.model = _estimator(method)

    def time_path(self, method, n):
        from clarytree import leaf_penalty_path

        leaf_penalty_path(self.model, self.X, self.y, LAMBDAS)

    def time_separate_fits(self, method, n):
        for lam in LAMBDAS:
            self.model.set_params(leaf_penalty=lam).fit(self.X, self.y)


class CVFit:
    params = (["greedy", "lookahead"],)
    param_names = ["method"]
    timeout = 600

    def setup(self, method):
        self.X, self.y = piecewise_linear(1_000, 8)
        self.model = CLARITreeRegressorCV(
            leaf_penalties=LAMBDAS, ridge_alphas=[1e-2, 1e-4], cv=3, max_depth=4,
            lookahead_depth=0 if method == "greedy" else 1)

    def time_fit(self, method):
        self.model.fit(self.X, self.y)
