"""The bounded threshold scan: thresholds that provably lose are skipped, nothing else changes.

A child's ridge loss can only grow when rows are added, so the left loss at
a block's first threshold plus the right loss at its last one bounds every
score of the block.  ``best_split`` skips blocks whose bound cannot beat the
incumbent under the tie rule; the reference is the plain scan that scores
every threshold (``bounded_scan=False``).
"""

import numpy as np
import pandas as pd
import pytest

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._classes import _fit_tree


def _trees_equal(a, b):
    for name in ("feature", "threshold", "children_left", "children_right",
                 "node_objective", "n_node_samples"):
        np.testing.assert_array_equal(getattr(a.tree_, name), getattr(b.tree_, name),
                                      err_msg=name)
    np.testing.assert_array_equal(a.tree_.coef, b.tree_.coef)
    assert a.objective_ == b.objective_


def _problem(n, seed, exact=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 4] = X[:, 1]                   # a copy: every one of its scores ties
    y = np.where(X[:, 0] > 0.3, 2.0 * X[:, 1] - X[:, 2], 1.0 + X[:, 3])
    if not exact:
        y = y + 0.4 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("lookahead", [0, 1, 2])
@pytest.mark.parametrize("exact", [False, True])
def test_bounded_scan_leaves_every_tree_bitwise_unchanged(lookahead, exact):
    """Same trees and bits with and without skipping; skipping does happen.

    The exact problem (a noise-free piecewise-linear target) has leaf losses
    at rounding level, where a bound that ignored rounding would go wrong;
    the copied column makes exact ties, which go to the first feature.
    """
    X, y = _problem(1200, lookahead, exact)
    fits = []
    for bounded in (True, False):
        est = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_thresholds=12,
                                 leaf_penalty=1e-4, min_samples_leaf=10)
        fits.append(_fit_tree(est, X, y, bounded_scan=bounded))
    (a, count_a), (b, count_b) = fits
    _trees_equal(a, b)
    assert a.tree_.node_count >= 5
    assert 4 not in set(a.tree_.feature)        # ties go to the original column
    assert count_a["n_thresholds_skipped"] > 0
    assert count_a["n_thresholds_skipped"] < count_a["n_thresholds_scanned"]
    assert count_b["n_thresholds_scanned"] == count_b["n_thresholds_skipped"] == 0
    assert count_a["n_evaluations"] == count_b["n_evaluations"]


def test_bounded_scan_with_weights_and_level_sets():
    """Weighted rows and a categorical feature (nested level-order prefixes)."""
    rng = np.random.default_rng(7)
    n = 1500
    levels = np.array(list("abcdefg"))
    cat = levels[rng.integers(0, levels.size, size=n)]
    X = pd.DataFrame({"x0": rng.normal(size=n), "x1": rng.normal(size=n),
                      "x2": rng.normal(size=n), "c": pd.Categorical(cat)})
    shift = pd.Series(cat).map(dict(zip(levels, [0, 3, -1, 2, 0.5, -2, 1], strict=True))).to_numpy()
    y = shift + np.where(X["x0"] > 0, X["x1"], -X["x2"]) + 0.3 * rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, size=n)
    for lookahead in (0, 1):
        fits = []
        for bounded in (True, False):
            est = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead,
                                     n_thresholds=10, leaf_penalty=1e-4,
                                     categorical_features=["c"])
            fits.append(_fit_tree(est, X, y, w, bounded_scan=bounded))
        _trees_equal(fits[0][0], fits[1][0])
        assert fits[0][1]["n_thresholds_skipped"] > 0


def test_bounded_scan_only_runs_where_factorizations_are_dear():
    """Constant leaves and swept features are scanned plainly."""
    X, y = _problem(800, 3)
    _, counters = _fit_tree(CholeskyTreeRegressor(max_depth=3, leaf_model="constant"), X, y)
    assert counters["n_thresholds_scanned"] == 0
    _, counters = _fit_tree(CholeskyTreeRegressor(max_depth=3), X, y, max_hist_bins=0)
    assert counters["n_thresholds_scanned"] == 0


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lookahead", [0, 1])
def test_bounded_scan_with_missing_bins(lookahead, weighted, exact):
    """Every feature has missing values: the bounds of a block (present rows
    only, then with the missing rows on either side) hold whichever side each
    threshold sends the missing rows to."""
    X, y = _problem(1200, 5 + lookahead, exact)
    rng = np.random.default_rng(lookahead)
    for f, frac in enumerate((0.1, 0.3, 0.05, 0.2, 0.15)):
        X[rng.random(X.shape[0]) < frac, f] = np.nan
    y = y + np.where(np.isnan(X[:, 0]), 1.5, 0.0)
    w = rng.uniform(0.2, 3.0, size=X.shape[0]) if weighted else None
    fits = []
    for bounded in (True, False):
        est = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_thresholds=12,
                                 leaf_penalty=1e-4, min_samples_leaf=10)
        fits.append(_fit_tree(est, X, y, w, bounded_scan=bounded))
    (a, count_a), (b, count_b) = fits
    _trees_equal(a, b)
    np.testing.assert_array_equal(a.tree_.missing_go_left, b.tree_.missing_go_left)
    assert a.tree_.missing_go_left.any()
    assert count_a["n_thresholds_skipped"] > 0
    assert count_b["n_thresholds_scanned"] == 0


@pytest.mark.parametrize("exact", [False, True])
def test_a_hinted_split_search_finds_the_same_split_whatever_the_hint(exact):
    """A guessed split caps the bounded scan; the result never depends on it.

    Every threshold of every feature as the guess (the winner, near ties on
    the copied column, bad guesses), and guesses that are no threshold here
    (an empty bin, the last bin, out of range), on the full node and on a
    small one where min_samples_leaf rules thresholds out.
    """
    from clarytree._criterion import RidgeCriterion
    from clarytree._splitter import Splitter

    from clarytree._thresholds import bin_features, threshold_pool

    X, y = _problem(1500, 7, exact)
    n = X.shape[0]
    pools = [threshold_pool(X[:, f], 12, "quantile") for f in range(X.shape[1])]
    bins, order, n_bins = bin_features(X, pools)
    Z = (X - X.mean(0)) / X.std(0)
    W = np.ascontiguousarray(np.column_stack([np.ones(n), Z[:, :4], y - y.mean()]))
    ridge = np.full(W.shape[1] - 1, 1e-5 * n)
    splitter = Splitter(bins, order, n_bins, 20, RidgeCriterion(W, ridge))
    for start, end in ((0, n), (100, 260)):
        plain = splitter._best_split(start, end)
        assert plain is not None
        hints = [(f, b) for f in range(X.shape[1]) for b in range(-1, n_bins[f] + 1)]
        hints += [(X.shape[1], 0), (-1, 0)]
        for hint in hints:
            assert splitter._best_split(start, end, hint) == plain, hint


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("few", [False, True])
def test_split_search_with_missing_values_equals_the_plain_scan_whatever_the_hint(
        few, exact, weighted):
    """Missing bins: the bounded scan (its bounds with the missing rows' own
    loss as a floor, and a guessed split's cap) finds what scoring every
    threshold on both sides of the missing rows finds.

    Guesses: every threshold, with either side of the missing rows, "missing
    versus present" (the feature's second-to-last bin), and non-thresholds;
    nodes: the full data, random row subsets, a subset holding most of one
    feature's missing rows, and small nodes where min_samples_leaf binds.
    """
    from clarytree._criterion import RidgeCriterion
    from clarytree._splitter import MISSING_LEFT, Splitter

    from clarytree import CLARITreeRegressor
    from clarytree._preparation import Preparation

    X, y = _problem(1500, 11, exact)
    n = X.shape[0]
    rng = np.random.default_rng(3)
    # few: a few missing rows like the others on the decisive x0 (its
    # thresholds' bounds are then close to their scores); else many, which
    # differ from the rest (the missing rows' floor is large).  Those of x3
    # differ from the rest too: their side matters.
    for f, frac in enumerate((0.02 if few else 0.15, 0.3, 0.05, 0.2)):
        X[rng.random(n) < frac, f] = np.nan
    X[:, 4] = X[:, 1]               # missing rows too: its scores tie with x1's
    y = y + np.where(np.isnan(X[:, 0]), 0.0 if few else 1.5, 0.0)
    y = y - np.where(np.isnan(X[:, 3]), 0.7, 0.0)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else None
    prep = Preparation(n_thresholds=12)
    data = prep.fit(CLARITreeRegressor(), X, y, w)
    missing = prep.split_missing()
    assert missing.tolist() == [1, 1, 1, 1, 1]
    n_bins = data.n_bins
    order = np.empty((1, n), dtype=np.int32)
    nodes = [(0, n, np.arange(n))]
    for size in (900, 400, 120):
        nodes.append((0, size, rng.permutation(n)))
    nan_first = np.argsort(~np.isnan(X[:, 1]), kind="stable")    # x1's missing rows first
    nodes.append((0, 500, nan_first))
    nodes.append((0, 60, nan_first))
    hints = [(f, b) for f in range(X.shape[1]) for b in range(-1, n_bins[f] + 1)]
    hints += [(f, b | MISSING_LEFT) for f in range(X.shape[1]) for b in range(n_bins[f])]
    hints += [(X.shape[1], 0), (-1, 0)]
    n_left_side = 0
    for start, end, rows in nodes:
        order[0] = rows
        crit = RidgeCriterion(data.W, data.ridge)
        plain = Splitter(data.bins, order.copy(), n_bins, 20, crit, missing=missing,
                         bounded_scan=False)._best_split(start, end)
        bounded = Splitter(data.bins, order.copy(), n_bins, 20, crit, missing=missing)
        assert bounded._best_split(start, end) == plain
        if plain is None:
            continue
        n_left_side += plain[1] >= MISSING_LEFT
        for hint in hints:
            assert bounded._best_split(start, end, hint) == plain, hint
        assert plain[0] != 4        # ties go to the first feature
    assert n_left_side > 0          # some node sends its missing rows left
