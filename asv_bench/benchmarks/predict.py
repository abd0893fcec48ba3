"""Prediction throughput of a fitted depth-4 tree.

The tree (greedy, linear or constant leaves, lambda = 1e-4) is fitted once on
10,000 rows in ``setup``: constant leaves grow all 16 leaves, linear leaves
stop once they fit the data's linear pieces (8 leaves at k = 4, 7 at k = 16).
``predict`` then runs on ``n`` fresh rows. ``track_rows_per_second`` reports throughput.
"""

import time

import numpy as np

from clarytree import CholeskyTreeRegressor

from .fit import piecewise_linear


class Predict:
    params = (["linear", "constant"], [10_000, 100_000, 1_000_000], [4, 16])
    param_names = ["leaf_model", "n", "k"]
    timeout = 120

    def setup(self, leaf_model, n, k):
        X, y = piecewise_linear(10_000, k, seed=1)
        self.model = CholeskyTreeRegressor(max_depth=4, leaf_model=leaf_model,
                                           leaf_penalty=1e-4, ridge_alpha=1e-3).fit(X, y)
        self.X = np.random.default_rng(2).standard_normal((n, k))

    def time_predict(self, leaf_model, n, k):
        self.model.predict(self.X)

    def peakmem_predict(self, leaf_model, n, k):
        self.model.predict(self.X)

    def track_rows_per_second(self, leaf_model, n, k):
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            self.model.predict(self.X)
            best = min(best, time.perf_counter() - t0)
        return n / best

    track_rows_per_second.unit = "rows/s"
