"""The search memo: row-set keys, and fits that do not depend on it."""

import numpy as np
import pytest
from clarytree._builder import BuildContext, openmp_enabled
from clarytree._criterion import RidgeCriterion
from clarytree._memo import _row_set_key
from clarytree._splitter import Splitter

from clarytree._classes import _assemble_builder
from clarytree._thresholds import bin_features, threshold_pool
from clarytree.datasets import make_piecewise_linear


def test_row_set_keys_ignore_order_and_separate_sets():
    rng = np.random.default_rng(0)
    rows = rng.choice(10_000, size=500, replace=False)
    key = _row_set_key(rows)
    assert _row_set_key(rng.permutation(rows)) == key
    seen = {key}
    for _ in range(300):
        other = rows.copy()
        other[rng.integers(500)] = rng.integers(10_000, 20_000)   # swap one row
        k = _row_set_key(other)
        assert k[0] != key[0] and k[1] != key[1]   # both hashes see the change
        seen.add(k)
    assert len(seen) == 301


def test_row_set_keys_from_the_hash_table_are_the_hashed_keys():
    rng = np.random.default_rng(1)
    for size in (1, 7, 500):
        rows = rng.choice(10_000, size=size, replace=False)
        assert _row_set_key(rows, hashed=True) == _row_set_key(rows)


def build(X, y, lookahead, memo, n_thresholds=8, max_hist_bins=256, depth=3):
    n, k = X.shape
    W = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0), y - y.mean()])
    ridge = np.full(k + 1, 1e-4 * n)
    ridge[0] = 1e-12
    crit = RidgeCriterion(np.ascontiguousarray(W), ridge)
    pools = [threshold_pool(X[:, f], n_thresholds, "quantile") for f in range(k)]
    bins, order, n_bins = bin_features(X, pools)
    splitter = Splitter(bins, order, n_bins, 10, crit, max_hist_bins)
    leaf_cost = 1e-3 * float(W[:, -1] @ W[:, -1])
    ctx = BuildContext(splitter, crit, depth, leaf_cost, 10, memo=memo)
    objective, nodes = _assemble_builder(ctx, lookahead, depth).build()
    return objective, nodes, ctx.counters()


@pytest.mark.parametrize(("seed", "max_hist_bins", "depth"),
                         [(0, 256, 3), (1, 256, 4), (2, 4, 3)])
def test_memo_leaves_the_tree_bitwise_unchanged_and_saves_work(seed, max_hist_bins, depth):
    """Depth-2 lookahead with and without the memo: the same tree, bit for bit.

    The memo must be used (hits); with
    ``max_hist_bins=4`` the features are swept (partitioned orders, no
    carried sums).
    """
    X, y = make_piecewise_linear(n_samples=500, n_features=3, noise=0.3, random_state=seed)
    obj_on, nodes_on, on = build(X, y, 2, True, max_hist_bins=max_hist_bins, depth=depth)
    obj_off, nodes_off, off = build(X, y, 2, False, max_hist_bins=max_hist_bins, depth=depth)
    assert obj_on == obj_off
    for name in nodes_on:
        np.testing.assert_array_equal(nodes_on[name], nodes_off[name], err_msg=name)
    assert on["memo_hits"] > 0 and off["memo_hits"] == 0


def test_memo_is_cleared_between_builds_and_unused_at_depth_one():
    X, y = make_piecewise_linear(n_samples=400, n_features=3, noise=0.3, random_state=3)
    n, k = X.shape
    W = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0), y - y.mean()])
    ridge = np.full(k + 1, 1e-4 * n)
    ridge[0] = 1e-12
    crit = RidgeCriterion(np.ascontiguousarray(W), ridge)
    bins, order, n_bins = bin_features(
        X, [threshold_pool(X[:, f], 8, "quantile") for f in range(k)])
    ctx = BuildContext(Splitter(bins, order, n_bins, 10, crit), crit, 3, 1.0, 10)
    first = _assemble_builder(ctx, 2, 3).build()
    hits = ctx.counters()["memo_hits"]
    second = _assemble_builder(ctx, 2, 3).build()
    assert ctx.counters()["memo_hits"] == hits > 0     # a fresh memo: same hits
    assert first[0] == second[0]
    _assemble_builder(ctx, 1, 3).build()
    assert ctx.counters()["memo_hits"] == 0


@pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP")
@pytest.mark.parametrize("n_threads", [2, 3])
def test_memo_and_its_counters_do_not_depend_on_the_threads(n_threads):
    """Waves merge in candidate order: same tree, same hits, for any thread count."""
    X, y = make_piecewise_linear(n_samples=600, n_features=3, noise=0.3, random_state=4)
    runs = []
    for threads in (1, n_threads):
        n, k = X.shape
        W = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0), y - y.mean()])
        ridge = np.full(k + 1, 1e-4 * n)
        ridge[0] = 1e-12
        crit = RidgeCriterion(np.ascontiguousarray(W), ridge)
        bins, order, n_bins = bin_features(
            X, [threshold_pool(X[:, f], 8, "quantile") for f in range(k)])
        ctx = BuildContext(Splitter(bins, order, n_bins, 10, crit), crit, 4, 1.0, 10,
                           n_threads=threads)
        objective, nodes = _assemble_builder(ctx, 2, 4).build()
        runs.append((objective, nodes, ctx.counters()))
    (obj_a, nodes_a, count_a), (obj_b, nodes_b, count_b) = runs
    assert obj_a == obj_b
    for name in nodes_a:
        np.testing.assert_array_equal(nodes_a[name], nodes_b[name], err_msg=name)
    assert count_a["memo_hits"] == count_b["memo_hits"] > 0
    assert count_a["memo_stored"] == count_b["memo_stored"]
    assert count_a["n_evaluations"] == count_b["n_evaluations"]
