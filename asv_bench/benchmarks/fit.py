"""Time and peak memory of fitting CholeskyTree (greedy) and CLARITree.

Data: the paper's piecewise-linear design (appendix D.3), generated in
``setup``; depth 4, lambda = 1e-3, kappa = 1e-3 unless a class says
otherwise (``FitWide``: depth 2; ``FitThreads``: depth 6; ``FitEveryMidpoint``:
depth 6, lambda = 0).

- ``FitSize``: greedy or lookahead (one-step, the paper's CLARITree), linear
  or constant leaves, ``n`` in {1e3, 1e4, 1e5} rows, ``k`` in {4, 8, 16}
  features, 20 thresholds; time and peak memory.
- ``FitWide``: greedy fits with 50 or 100 regression features.
- ``FitThreads``: a greedy fit on 2e5 rows and 20 features with ``n_jobs``
  in {1, 2, 4} (the committed nodes' sums and the preparation threaded).
- ``FitMemory``: peak memory of a greedy fit at ``n = 1e6``, ``k = 8``.
- ``FitEveryMidpoint``: a constant-leaf greedy tree over every midpoint at
  ``n = 2e5``, ``k = 20``, depth 6, beside scikit-learn's
  ``DecisionTreeRegressor`` growing the same tree (sorted sweeps, bound by
  the latency of reading rows in value order).
- ``FitTables``: a table with missing values and a categorical column
  against its imputed, one-hot-encoded twin (``n = 1e4``, ``k = 8``).
- ``FitThresholds``: the threshold budget, ``n_thresholds`` in {5, 20, None
  (every midpoint)}, at ``n = 1000`` and ``k = 8``; plus 5 and 20 at
  ``n = 1e4`` (every midpoint only for small n).

``FitSize`` and ``FitThresholds`` are separate classes rather than one full product so that
``asv run --python=same --quick`` stays within a few minutes on two cores;
heavy combinations are skipped (``NotImplementedError`` in ``setup``,
shown as n/a): every midpoint only with the greedy tree, and lookahead only
where ``n * k * n_thresholds <= 1e7``.
"""

import numpy as np

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor

LOOKAHEAD_WORK = 1e7


def piecewise_linear(n, k, seed=0):
    """Appendix D.3 data: AR(1) features (rho = 0.5), 4 regimes on feature 0."""
    try:
        from clarytree.datasets import make_piecewise_linear
    except ImportError:
        make_piecewise_linear = None
    if make_piecewise_linear is not None:
        return make_piecewise_linear(n_samples=n, n_features=k, noise=0.5, random_state=seed)
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((n, k))
    X = np.empty((n, k))
    X[:, 0] = e[:, 0]
    for j in range(1, k):
        X[:, j] = 0.5 * X[:, j - 1] + np.sqrt(0.75) * e[:, j]
    regime = np.searchsorted([-0.6745, 0.0, 0.6745], X[:, 0])
    betas = (1.0 + np.arange(4))[:, None] / np.arange(1, k + 1) * rng.standard_normal((4, k))
    y = np.einsum("ij,ij->i", X, betas[regime]) + 0.5 * rng.standard_normal(n)
    return X, y


def make_estimator(method, leaf_model, n_thresholds):
    params = dict(max_depth=4, leaf_model=leaf_model, leaf_penalty=1e-3, ridge_alpha=1e-3,
                  n_thresholds=n_thresholds)
    if method == "greedy":
        return CholeskyTreeRegressor(**params)
    return CLARITreeRegressor(lookahead_depth=1, **params)


def _skip(method, n, k, n_thresholds):
    if n_thresholds is None and n > 1_000:
        raise NotImplementedError("every midpoint only for n = 1000")
    if method == "lookahead":
        if n_thresholds is None:
            raise NotImplementedError("lookahead over every midpoint is too heavy for the suite")
        if n * k * n_thresholds > LOOKAHEAD_WORK:
            raise NotImplementedError("lookahead combination too heavy for the suite")


class FitSize:
    """``fit`` of a depth-4 tree against the data size (20 thresholds)."""

    params = (
        ["greedy", "lookahead"],
        ["linear", "constant"],
        [1_000, 10_000, 100_000],
        [4, 8, 16],
    )
    param_names = ["method", "leaf_model", "n", "k"]
    timeout = 120

    def setup(self, method, leaf_model, n, k):
        _skip(method, n, k, 20)
        self.X, self.y = piecewise_linear(n, k)
        self.model = make_estimator(method, leaf_model, 20)

    def time_fit(self, method, leaf_model, n, k):
        self.model.fit(self.X, self.y)

    def peakmem_fit(self, method, leaf_model, n, k):
        self.model.fit(self.X, self.y)


class FitThresholds:
    """``fit`` against the threshold budget (k = 8)."""

    params = (
        ["greedy", "lookahead"],
        ["linear", "constant"],
        [1_000, 10_000],
        [5, 20, None],
    )
    param_names = ["method", "leaf_model", "n", "n_thresholds"]
    timeout = 120

    def setup(self, method, leaf_model, n, n_thresholds):
        _skip(method, n, 8, n_thresholds)
        self.X, self.y = piecewise_linear(n, 8)
        self.model = make_estimator(method, leaf_model, n_thresholds)

    def time_fit(self, method, leaf_model, n, n_thresholds):
        self.model.fit(self.X, self.y)


class FitWide:
    """Greedy ``fit`` with many regression features (``k`` in {50, 100}, n = 1e4).

    The committed nodes' statistics (every bin of every feature holds a
    ``k x k`` Gram matrix) dominate such fits.
    """

    params = ([50, 100],)
    param_names = ["k"]
    timeout = 120

    def setup(self, k):
        self.X, self.y = piecewise_linear(10_000, k)
        self.model = make_estimator("greedy", "linear", 20).set_params(max_depth=2)

    def time_fit(self, k):
        self.model.fit(self.X, self.y)


class FitThreads:
    """Greedy ``fit`` against ``n_jobs`` (n = 2e5, k = 20, depth 6).

    The committed nodes' statistics are summed by ``n_jobs`` threads (each
    its own features' bins) and the columns are prepared on as many; the
    tree is the same bits for every ``n_jobs``.
    """

    params = ([1, 2, 4],)
    param_names = ["n_jobs"]
    timeout = 120

    def setup(self, n_jobs):
        self.X, self.y = piecewise_linear(200_000, 20)
        self.model = make_estimator("greedy", "linear", 20).set_params(
            max_depth=6, n_jobs=n_jobs)

    def time_fit(self, n_jobs):
        self.model.fit(self.X, self.y)


class FitEveryMidpoint:
    """Every midpoint a threshold, constant leaves (n = 2e5, k = 20, depth 6).

    The same tree as scikit-learn's ``DecisionTreeRegressor(max_depth=6)``
    (squared error, no penalty), timed beside it: the preparation bins each
    column from one sort of its values, and the sorted sweeps prefetch the
    rows ahead.
    """

    params = (["clarytree", "scikit-learn"],)
    param_names = ["library"]
    timeout = 180

    def setup(self, library):
        self.X, self.y = piecewise_linear(200_000, 20)
        if library == "clarytree":
            self.model = CholeskyTreeRegressor(max_depth=6, leaf_model="constant",
                                               leaf_penalty=0.0, n_thresholds=None,
                                               min_samples_leaf=1, n_jobs=1)
        else:
            from sklearn.tree import DecisionTreeRegressor
            self.model = DecisionTreeRegressor(max_depth=6)

    def time_fit(self, library):
        self.model.fit(self.X, self.y)


class FitMemory:
    """Peak memory of a greedy depth-4 fit on 10^6 rows x 8 features.

    The prepared arrays (design matrix, bins, row orders) dominate a large
    fit's footprint; asv's figure is the whole process's peak, the input
    (61 MiB of float64) and the imports included.
    """

    params = (["linear", "constant"],)
    param_names = ["leaf_model"]
    timeout = 300

    def setup(self, leaf_model):
        self.X, self.y = piecewise_linear(1_000_000, 8)
        self.model = make_estimator("greedy", leaf_model, 20)

    def peakmem_fit(self, leaf_model):
        self.model.fit(self.X, self.y)


def mixed_table(n, k, missing=0.1, seed=0):
    """A table with missing values and a categorical column, and its twin.

    ``k`` numeric columns of the piecewise-linear design with a fraction
    ``missing`` of NaN each, plus a 5-level string column derived from a
    hidden feature; the twin has the NaN imputed by the column medians and
    the string column one-hot encoded (what a user would feed otherwise).
    """
    import pandas as pd

    X, y = piecewise_linear(n, k + 1, seed)
    rng = np.random.default_rng(seed)
    levels = np.array(["a", "b", "c", "d", "e"], dtype=object)
    code = np.searchsorted([-0.84, -0.25, 0.25, 0.84], X[:, k])
    raw = pd.DataFrame(X[:, :k], columns=[f"x{j}" for j in range(k)])
    for column in raw.columns:
        raw.loc[rng.random(n) < missing, column] = np.nan
    twin = raw.fillna(raw.median())
    raw["level"] = levels[code]
    for i, level in enumerate(levels):
        twin[f"level_{level}"] = (code == i).astype(float)
    return raw, twin, y


class FitTables:
    """``fit`` on a table with 10% missing values and a categorical column,
    against its median-imputed, one-hot-encoded twin (their ratio is the
    cost of taking the table as it is; 10^4 rows, 8 numeric columns)."""

    params = (["greedy", "lookahead"], ["table", "twin"])
    param_names = ["method", "table"]
    timeout = 120

    def setup(self, method, table):
        raw, twin, self.y = mixed_table(10_000, 8)
        self.X = raw if table == "table" else twin
        self.model = make_estimator(method, "linear", 20)

    def time_fit(self, method, table):
        self.model.fit(self.X, self.y)
