"""Carried children: a candidate's child updates its children's sums from the previous candidate's.

Along one feature's thresholds a lookahead node's candidates differ by the
rows that cross; when a child with two levels left takes the same split as
at the previous candidate, its own children differ by those rows too.  The
search sums then differ from fresh ones only in rounding, so the fitted
tree is the same bits (its statistics are summed row by row either way).
"""

import numpy as np
import pytest
from clarytree._builder import BuildContext, openmp_enabled
from clarytree._criterion import ConstantCriterion, RidgeCriterion
from clarytree._splitter import Splitter

from clarytree._classes import _assemble_builder
from clarytree._thresholds import bin_features, threshold_pool
from clarytree.datasets import make_piecewise_linear


def build(X, y, leaf_model, depth, lookahead, carry, n_threads=1, n_thresholds=10):
    n, k = X.shape
    if leaf_model == "linear":
        W = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0), y - y.mean()])
        ridge = np.full(k + 1, 1e-4 * n)
        ridge[0] = 1e-12
        crit, msl = RidgeCriterion(np.ascontiguousarray(W), ridge), 10
    else:
        W = np.column_stack([np.ones(n), y - y.mean()])
        crit, msl = ConstantCriterion(np.ascontiguousarray(W), np.ones(1)), 1
    pools = [threshold_pool(X[:, f], n_thresholds, "quantile") for f in range(k)]
    bins, order, n_bins = bin_features(X, pools)
    splitter = Splitter(bins, order, n_bins, msl, crit)
    leaf_cost = 1e-3 * float(W[:, -1] @ W[:, -1])
    ctx = BuildContext(splitter, crit, depth, leaf_cost, msl, None, None, n_threads,
                       carry_children=carry)
    objective, nodes = _assemble_builder(ctx, lookahead, depth).build()
    return objective, nodes, ctx.counters()


@pytest.mark.parametrize(("leaf_model", "depth", "lookahead"),
                         [("linear", 3, 1), ("linear", 4, 2), ("constant", 4, 2),
                          ("linear", 4, 1)])
def test_carried_children_leave_the_tree_bitwise_unchanged(leaf_model, depth, lookahead):
    X, y = make_piecewise_linear(n_samples=1200, n_features=4, noise=0.3, random_state=3)
    obj_on, nodes_on, on = build(X, y, leaf_model, depth, lookahead, True)
    obj_off, nodes_off, off = build(X, y, leaf_model, depth, lookahead, False)
    assert nodes_on["feature"].size >= 7
    assert obj_on == obj_off
    for name in nodes_on:
        np.testing.assert_array_equal(nodes_on[name], nodes_off[name], err_msg=name)
    assert on["n_carried_children"] > 0 and off["n_carried_children"] == 0
    assert on["n_evaluations"] == off["n_evaluations"]


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP")
def test_carried_children_with_threads_give_the_same_tree():
    """Each thread carries along its own chunks of candidates."""
    X, y = make_piecewise_linear(n_samples=1500, n_features=4, noise=0.3, random_state=5)
    obj_1, nodes_1, _ = build(X, y, "linear", 3, 1, True)
    obj_3, nodes_3, counters = build(X, y, "linear", 3, 1, True, n_threads=3)
    assert counters["n_carried_children"] > 0
    assert obj_1 == obj_3
    for name in nodes_1:
        np.testing.assert_array_equal(nodes_1[name], nodes_3[name], err_msg=name)


@pytest.mark.parametrize(("depth", "lookahead"), [(3, 1), (4, 1), (4, 2)])
def test_carried_children_with_missing_bins(depth, lookahead):
    """Candidates and completion splits on features with a missing bin: the
    missing rows' side is part of the carried state (same bits as fresh sums)."""
    from clarytree import CLARITreeRegressor
    from clarytree._preparation import Preparation

    X, y = make_piecewise_linear(n_samples=1200, n_features=4, noise=0.3, random_state=6)
    rng = np.random.default_rng(6)
    for f, frac in enumerate((0.15, 0.3, 0.1, 0.0)):
        X[rng.random(X.shape[0]) < frac, f] = np.nan
    y = y + np.where(np.isnan(X[:, 1]), 2.0, 0.0)
    prep = Preparation(n_thresholds=10)
    data = prep.fit(CLARITreeRegressor(), X, y)
    assert prep.split_missing().tolist() == [1, 1, 1, 0]
    results = []
    for carry in (True, False):
        crit = RidgeCriterion(data.W, data.ridge)
        splitter = Splitter(data.bins, data.order.copy(), data.n_bins, 10, crit,
                            missing=prep.split_missing())
        ctx = BuildContext(splitter, crit, depth, 1e-4 * data.tss, 10, None, None, 1,
                           carry_children=carry)
        objective, nodes = _assemble_builder(ctx, lookahead, depth).build()
        results.append((objective, nodes, ctx.counters()))
    (obj_on, nodes_on, on), (obj_off, nodes_off, off) = results
    assert obj_on == obj_off
    for name in nodes_on:
        np.testing.assert_array_equal(nodes_on[name], nodes_off[name], err_msg=name)
    assert (nodes_on["bin"] >= 0).any() and on["n_carried_children"] > 0
    assert on["n_evaluations"] == off["n_evaluations"]


@pytest.mark.parametrize(("depth", "lookahead"), [(4, 1), (4, 2)])
def test_the_path_carries_children_and_equals_separate_fits(depth, lookahead):
    """The leaf-penalty path's candidates carry their children too."""
    from clarytree import CLARITreeRegressor
    from clarytree._classes import _fit_tree

    X, y = make_piecewise_linear(n_samples=1500, n_features=4, noise=0.3, random_state=11)
    penalties = [3e-2, 1e-2, 3e-3, 1e-3, 1e-4]
    est = CLARITreeRegressor(max_depth=depth, lookahead_depth=lookahead, n_thresholds=12,
                             min_samples_leaf=10)
    fits, counters = _fit_tree(est, X, y, leaf_penalties=penalties)
    assert counters["n_carried_children"] > 0
    for lam, fit in zip(penalties, fits, strict=True):
        single = CLARITreeRegressor(**{**est.get_params(), "leaf_penalty": lam}).fit(X, y)
        assert fit.objective_ == single.objective_
        for name in ("feature", "threshold", "children_left", "children_right"):
            np.testing.assert_array_equal(getattr(fit.tree_, name),
                                          getattr(single.tree_, name), err_msg=name)


def test_the_path_carries_as_a_single_fit_does_for_costs_that_agree():
    """Costs of one group share a completion's greedy split: its children are carried.

    Two leaf penalties a hair apart take every decision alike, so the path
    grows exactly the completions of a single fit and must carry as many
    children (a count that is zero where a group of several costs falls back
    to fresh sums).
    """
    from clarytree import CLARITreeRegressor
    from clarytree._classes import _fit_tree

    X, y = make_piecewise_linear(n_samples=1500, n_features=4, noise=0.3, random_state=3)
    est = CLARITreeRegressor(max_depth=4, lookahead_depth=1, n_thresholds=12,
                             min_samples_leaf=10, leaf_penalty=1e-3)
    fits, path = _fit_tree(est, X, y, leaf_penalties=[1e-3, 1e-3 * (1 + 1e-9)])
    single, counters = _fit_tree(est, X, y)
    assert counters["n_carried_children"] > 0
    assert path["n_carried_children"] == counters["n_carried_children"]
    assert path["n_evaluations"] == counters["n_evaluations"]
    for fit in fits:
        np.testing.assert_array_equal(fit.tree_.feature, single.tree_.feature)
        np.testing.assert_array_equal(fit.tree_.threshold, single.tree_.threshold)


@pytest.mark.parametrize(("depth", "lookahead", "n_wide_levels", "missing"),
                         [(3, 1, 0, False), (4, 1, 0, False), (4, 2, 0, False),
                          (4, 1, 90, False), (3, 1, 0, True), (4, 2, 0, True),
                          (4, 1, 90, True)])
def test_carried_children_with_level_set_splits(depth, lookahead, n_wide_levels, missing):
    """Completion splits on categorical features (level sets as bit masks)
    are carried too (a wide feature's sets follow the node's level order, so
    its splits are summed afresh).  The target depends on the categorical
    columns only, so nearly every completion splits on them, while the
    candidates sweep a numeric column's thresholds.  Same bits as fresh
    sums.  With missing values the missing rows go either side of every
    prefix (a wide feature's sets with them start from the missing bin)."""
    import pandas as pd

    from clarytree import CLARITreeRegressor
    from clarytree._preparation import Preparation

    rng = np.random.default_rng(8)
    n = 1500
    codes = rng.integers(0, 6, size=(n, 3))
    X = pd.DataFrame({f"c{j}": np.array(list("abcdef"))[codes[:, j]] for j in range(3)})
    X["noise"] = rng.normal(size=n)
    effect = rng.normal(size=(3, 6))
    y = sum(effect[j, codes[:, j]] * (1 + j * (codes[:, 0] > 2)) for j in range(3))
    y = y + 0.3 * rng.normal(size=n)
    if n_wide_levels:
        wide = rng.integers(0, n_wide_levels, n)
        X["wide"] = [f"w{v:02d}" for v in wide]
        y = y + 0.5 * (wide % 3)
    if missing:
        for name in X.columns.drop("noise"):
            X.loc[rng.random(n) < 0.1, name] = None
    prep = Preparation(n_thresholds=10)
    data = prep.fit(CLARITreeRegressor(), X, y)
    results = []
    for carry in (True, False):
        crit = RidgeCriterion(data.W, data.ridge)
        splitter = Splitter(data.bins, data.order.copy(), data.n_bins, 5, crit,
                            categorical=prep.split_categorical(),
                            level_missing=prep.split_level_missing())
        ctx = BuildContext(splitter, crit, depth, 1e-4 * data.tss, 5, None, None, 1,
                           carry_children=carry)
        objective, nodes = _assemble_builder(ctx, lookahead, depth).build()
        results.append((objective, nodes, ctx.counters()))
    assert prep.split_level_missing().any() == missing
    (obj_on, nodes_on, on), (obj_off, nodes_off, off) = results
    assert obj_on == obj_off
    for name in nodes_on:
        np.testing.assert_array_equal(nodes_on[name], nodes_off[name], err_msg=name)
    assert on["n_carried_children"] > 0 and off["n_carried_children"] == 0
    assert on["n_evaluations"] == off["n_evaluations"]
