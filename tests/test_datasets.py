"""Tests for the synthetic generators in clarytree.datasets."""

import numpy as np
import pytest
from scipy.special import ndtri

from clarytree.datasets import make_greedy_trap, make_piecewise_linear


class TestPiecewiseLinear:
    def test_shapes_and_dtype(self):
        X, y, coef = make_piecewise_linear(
            n_samples=300, n_features=5, n_regimes=3, random_state=0, coef=True
        )
        assert X.shape == (300, 5)
        assert y.shape == (300,)
        assert coef.shape == (3, 5)
        assert X.dtype == y.dtype == np.float64

    def test_deterministic(self):
        a = make_piecewise_linear(n_samples=200, random_state=7)
        b = make_piecewise_linear(n_samples=200, random_state=7)
        c = make_piecewise_linear(n_samples=200, random_state=8)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert not np.array_equal(a[0], c[0])

    def test_correlation_structure(self):
        rho = 0.6
        X, _ = make_piecewise_linear(
            n_samples=200_000, n_features=4, rho=rho, random_state=0
        )
        expected = rho ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
        np.testing.assert_allclose(np.cov(X, rowvar=False), expected, atol=0.01)

    def test_exactly_linear_within_regimes(self):
        n_regimes = 4
        X, y, coef = make_piecewise_linear(
            n_samples=2000, n_features=3, n_regimes=n_regimes, noise=0.0,
            random_state=1, coef=True,
        )
        boundaries = ndtri(np.arange(1, n_regimes) / n_regimes)
        regime = np.searchsorted(boundaries, X[:, 0])
        # Regimes are equally likely by construction.
        counts = np.bincount(regime, minlength=n_regimes)
        assert np.all(np.abs(counts / 2000 - 1 / n_regimes) < 0.05)
        np.testing.assert_allclose(y, np.sum(X * coef[regime], axis=1), atol=1e-12)
        # Regimes really differ: one global linear model leaves a large residual.
        beta, *_ = np.linalg.lstsq(np.column_stack([np.ones(2000), X]), y, rcond=None)
        resid = y - np.column_stack([np.ones(2000), X]) @ beta
        assert resid.var() > 0.05 * y.var()

    def test_noise_level(self):
        X, y, coef = make_piecewise_linear(
            n_samples=50_000, n_features=2, noise=0.5, random_state=2, coef=True
        )
        regime = np.searchsorted(ndtri(np.arange(1, 4) / 4), X[:, 0])
        resid = y - np.sum(X * coef[regime], axis=1)
        assert resid.std() == pytest.approx(0.5, rel=0.02)

    @pytest.mark.parametrize(
        "kwargs, error",
        [
            ({"n_samples": 0}, ValueError),
            ({"n_features": 2.5}, TypeError),
            ({"n_regimes": 0}, ValueError),
            ({"rho": 1.0}, ValueError),
            ({"noise": -1.0}, ValueError),
            ({"noise": float("nan")}, ValueError),
            ({"coef": "no"}, TypeError),        # was truthy: three outputs
        ],
    )
    def test_bad_parameters(self, kwargs, error):
        with pytest.raises(error, match=next(iter(kwargs))):
            make_piecewise_linear(**kwargs)


class TestGreedyTrap:
    def test_shapes_and_layout(self):
        X, y = make_greedy_trap(n_samples=400, n_nuisance=5, depth=3, random_state=0)
        assert X.shape == (400, 2 * 5 + 3)
        assert y.shape == (400,)
        assert set(np.unique(X[:, :-1])) == {-1.0, 1.0}
        assert len(np.unique(X[:, -1])) == 400  # z is continuous

    def test_deterministic(self):
        a = make_greedy_trap(n_samples=100, random_state=3)
        b = make_greedy_trap(n_samples=100, random_state=3)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])

    def test_target_structure(self):
        eps, U = 0.1, 6
        X, y = make_greedy_trap(n_samples=20_000, epsilon=eps, n_nuisance=U,
                                depth=4, random_state=4)
        signal = X[:, 0] * X[:, 1] * X[:, -1]
        is_signal = np.isclose(y, signal)
        # Rows that are not the signal are a product of one nuisance pair.
        pair_products = X[:, 2:-1:2] * X[:, 3:-1:2]
        assert np.all(np.any(pair_products[~is_signal] == y[~is_signal, None], axis=1))
        assert np.mean(~is_signal) == pytest.approx(eps, abs=0.01)

    def test_no_linear_signal_for_one_split(self):
        # The trap: y is uncorrelated with every feature, also after splitting
        # on g, h or the sign of z, so greedy sees no gain from those splits.
        X, y = make_greedy_trap(n_samples=200_000, n_nuisance=5, depth=3, random_state=5)
        for mask in (X[:, 0] > 0, X[:, 1] > 0, X[:, -1] > 0):
            for part in (mask, ~mask):
                corr = [abs(np.corrcoef(X[part, j], y[part])[0, 1]) for j in range(X.shape[1])
                        if X[part, j].std() > 0]
                assert max(corr) < 0.02
        # ... while g and h together make it linear in z within each cell.
        for s in (-1, 1):
            for t in (-1, 1):
                cell = (X[:, 0] == s) & (X[:, 1] == t)
                assert s * t * np.corrcoef(X[cell, -1], y[cell])[0, 1] > 0.9

    @pytest.mark.parametrize(
        "kwargs, error",
        [
            ({"epsilon": 0.0}, ValueError),
            ({"epsilon": 0.5}, ValueError),
            ({"depth": 1}, ValueError),
            ({"n_nuisance": 4, "depth": 4}, ValueError),
            ({"n_samples": "10"}, TypeError),
        ],
    )
    def test_bad_parameters(self, kwargs, error):
        with pytest.raises(error):
            make_greedy_trap(**kwargs)

    def test_lookahead_beats_greedy(self):
        """The defining property: CLARITree's test MSE is several times lower."""
        clarytree = pytest.importorskip("clarytree")
        if not hasattr(clarytree, "CLARITreeRegressor"):
            pytest.skip("the estimators are not built yet")
        X, y = make_greedy_trap(n_samples=1000, epsilon=0.05, random_state=0)
        X_test, y_test = make_greedy_trap(n_samples=5000, epsilon=0.05, random_state=1)
        greedy = clarytree.CholeskyTreeRegressor(max_depth=4).fit(X, y)
        lookahead = clarytree.CLARITreeRegressor(max_depth=4).fit(X, y)
        mse_greedy = np.mean((greedy.predict(X_test) - y_test) ** 2)
        mse_lookahead = np.mean((lookahead.predict(X_test) - y_test) ** 2)
        # Population values are >= 0.95 and <= 0.1 (appendix B.2); demand 4x.
        assert mse_greedy > 4 * mse_lookahead
        assert mse_lookahead < 0.2
        assert lookahead.objective_ <= greedy.objective_
