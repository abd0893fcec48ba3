"""The builder chain and the engine's private fit helper."""

import numpy as np
import pytest
from clarytree._builder import BuildContext, GreedyBuilder, LookaheadBuilder
from clarytree._criterion import ConstantCriterion, RidgeCriterion
from clarytree._splitter import SearchRoute, Splitter

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._classes import _assemble_builder, _fit_tree
from clarytree._thresholds import bin_features, threshold_pool
from clarytree.datasets import make_piecewise_linear


def parts(n=200, k=3, seed=0, n_thresholds=10):
    X, y = make_piecewise_linear(n_samples=n, n_features=k, noise=0.3, random_state=seed)
    W = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0), y - y.mean()])
    ridge = np.full(k + 1, 1e-3 * n)
    ridge[0] = 1e-12
    crit = RidgeCriterion(W, ridge)
    pools = [threshold_pool(X[:, f], n_thresholds, "quantile") for f in range(k)]
    bins, order, n_bins = bin_features(X, pools)
    return crit, bins, order, n_bins


def test_chain_shape():
    crit, bins, order, n_bins = parts()
    ctx = BuildContext(Splitter(bins, order, n_bins, 5, crit), crit, 4, 1e-3, 5)
    greedy = _assemble_builder(ctx, 0, 4)
    assert type(greedy) is GreedyBuilder
    chain = _assemble_builder(ctx, 2, 4)
    assert isinstance(chain, LookaheadBuilder) and chain.lookahead_depth == 2
    assert isinstance(chain.inner, LookaheadBuilder) and chain.inner.lookahead_depth == 1
    assert type(chain.inner.inner) is GreedyBuilder
    # Deeper lookahead than max_depth - 1 levels changes nothing: capped.
    assert _assemble_builder(ctx, 9, 3).lookahead_depth == 2


def test_chain_rejects_foreign_context_and_criterion():
    crit, bins, order, n_bins = parts()
    splitter = Splitter(bins, order, n_bins, 5, crit)
    ctx = BuildContext(splitter, crit, 3, 1e-3, 5)
    other = BuildContext(splitter, crit, 3, 1e-3, 5)
    with pytest.raises(ValueError, match="share the build context"):
        LookaheadBuilder(ctx, GreedyBuilder(other))
    const = ConstantCriterion(np.ones((bins.shape[0], 2)), np.ones(1))
    with pytest.raises(ValueError, match="same criterion"):
        BuildContext(splitter, const, 3, 1e-3, 5)
    with pytest.raises(ValueError, match="route"):
        Splitter(bins, order, n_bins, 5, crit, 256, 7)


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_manual_chain_equals_estimator(lookahead):
    """The estimator's tree is the chain's, built on the same prepared inputs."""
    X, y = make_piecewise_linear(n_samples=300, n_features=3, noise=0.3, random_state=2)
    model = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_thresholds=10,
                               ridge_alpha=1e-3, leaf_penalty=0.0, min_samples_leaf=5)
    model.fit(X, y)
    mean, std = X.mean(0), X.std(0)
    W = np.column_stack([np.ones(len(y)), (X - mean) / std, y - y.mean()])
    ridge = np.full(4, 1e-3 * len(y))
    ridge[0] = 1e-12
    crit = RidgeCriterion(W, ridge)
    bins, order, n_bins = bin_features(X, model.thresholds_)
    ctx = BuildContext(Splitter(bins, order, n_bins, 5, crit), crit, 3, 0.0, 5)
    objective, nodes = _assemble_builder(ctx, lookahead, 3).build()
    np.testing.assert_array_equal(nodes["feature"], model.tree_.feature)
    np.testing.assert_array_equal(nodes["children_left"], model.tree_.children_left)
    assert objective == pytest.approx(model.objective_, rel=1e-9)
    # A second build on the same context gives the same tree.
    again, nodes2 = _assemble_builder(ctx, lookahead, 3).build()
    assert again == objective
    np.testing.assert_array_equal(nodes2["feature"], nodes["feature"])


def test_fit_tree_routes_and_counters():
    X, y = make_piecewise_linear(n_samples=300, n_features=3, noise=0.3, random_state=1)
    est = CLARITreeRegressor(max_depth=3, n_thresholds=None)
    _, inc = _fit_tree(est, X, y, route=SearchRoute.INCREMENTAL, max_hist_bins=0)
    _, bulk = _fit_tree(CholeskyTreeRegressor(max_depth=3, n_thresholds=None), X, y,
                        route=SearchRoute.BULK, max_hist_bins=0)
    _, hist = _fit_tree(CholeskyTreeRegressor(max_depth=3, n_thresholds=8), X, y)
    assert inc["n_incremental_sweeps"] > 0 and inc["n_bulk_sweeps"] == 0
    assert inc["n_evaluations"] == est.n_candidate_evaluations_ > 0
    assert bulk["n_bulk_sweeps"] > 0 and bulk["n_incremental_sweeps"] == 0
    assert bulk["n_evaluations"] == 0
    assert hist["n_bulk_sweeps"] == hist["n_incremental_sweeps"] == 0
    with pytest.raises(ValueError):
        _fit_tree(est, X, y, route=5)


def test_lookahead_keeps_histograms_past_256_bins_on_enough_rows():
    # 300 thresholds on 4,000 rows: a lookahead search keeps the features on
    # histograms (up to an eighth of the rows in bins), where sweeping them
    # at every completion costs several times more; the tree is the same.
    X, y = make_piecewise_linear(n_samples=4000, n_features=3, noise=0.3, random_state=2)
    auto_est = CLARITreeRegressor(max_depth=3, n_thresholds=300)
    _, auto = _fit_tree(auto_est, X, y)
    swept_est = CLARITreeRegressor(max_depth=3, n_thresholds=300)
    _, swept = _fit_tree(swept_est, X, y, max_hist_bins=256)
    assert auto["n_bulk_sweeps"] == auto["n_incremental_sweeps"] == 0
    assert swept["n_bulk_sweeps"] + swept["n_incremental_sweeps"] > 0
    for name in ("feature", "threshold", "children_left"):
        np.testing.assert_array_equal(getattr(auto_est.tree_, name),
                                      getattr(swept_est.tree_, name))
    assert auto_est.objective_ == pytest.approx(swept_est.objective_, rel=1e-10)
    # A greedy fit sweeps past 256 bins, as before.
    _, greedy = _fit_tree(CholeskyTreeRegressor(max_depth=3, n_thresholds=300), X, y)
    assert greedy["n_bulk_sweeps"] + greedy["n_incremental_sweeps"] > 0
    with pytest.raises(ValueError, match="max_depth"):
        _fit_tree(CLARITreeRegressor(max_depth=-1), X, y)


@pytest.mark.parametrize("lookahead", [0, 1])
def test_histograms_past_the_memory_budget_become_sweeps(monkeypatch, lookahead):
    # Wide tables: the per-bin sums of histogram features (k^2 / 2 per bin
    # and node slot for k regression features) would not fit in memory, so
    # numeric features are swept instead; the tree is the same.
    import pandas as pd

    import clarytree._classes as classes

    rng = np.random.default_rng(5)
    X, y = make_piecewise_linear(n_samples=400, n_features=3, noise=0.3, random_state=2)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.loc[rng.random(400) < 0.1, "b"] = np.nan
    frame["k"] = rng.choice(["u", "v", "w"], 400)
    y = y + 2.0 * (frame["k"] == "v")
    est = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_thresholds=12)
    _, hist = _fit_tree(est, frame, y)
    ref = est.tree_
    assert hist["n_bulk_sweeps"] == hist["n_incremental_sweeps"] == 0
    assert est.get_n_leaves() >= 4 and est.tree_.is_categorical.any()
    monkeypatch.setattr(classes, "MAX_HISTOGRAM_BYTES", 1)
    swept = CLARITreeRegressor(**est.get_params())
    _, counters = _fit_tree(swept, frame, y)
    assert counters["n_bulk_sweeps"] + counters["n_incremental_sweeps"] > 0
    for field in ("feature", "children_left", "children_right", "missing_go_left"):
        np.testing.assert_array_equal(getattr(swept.tree_, field), getattr(ref, field))
    np.testing.assert_allclose(swept.tree_.threshold, ref.threshold)
    assert swept.objective_ == pytest.approx(est.objective_, rel=1e-9)
    np.testing.assert_allclose(swept.predict(frame), est.predict(frame), rtol=1e-9,
                               atol=1e-9)
