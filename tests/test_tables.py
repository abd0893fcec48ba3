"""Real tables: missing values and categorical columns, fit to export."""

import itertools
import json
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from clarytree._tree import TREE_LEAF, bitset_codes  # noqa: E402

from clarytree import (  # noqa: E402
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    export_graphviz,
    export_text,
    from_dict,
    leaf_table,
    plot_tree,
    to_dict,
)
from clarytree._classes import _fit_tree  # noqa: E402


def sse(y):
    return float(((y - y.mean()) ** 2).sum()) if y.size else 0.0


def ridge_loss(Z, y, ridge):
    beta = np.linalg.solve(Z.T @ Z + np.diag(ridge), Z.T @ y)
    r = y - Z @ beta
    return float(r @ r + beta @ (ridge * beta))


def nan_data(seed, n=300, frac=0.2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    z = rng.normal(size=n)
    missing = rng.random(n) < frac
    # Missing rows behave like large x, so the better side is not arbitrary.
    y = np.where((x > 0.3) | missing, 2.0 + z, -z) + 0.3 * rng.normal(size=n)
    x[missing] = np.nan
    return np.column_stack([x, z]), y


# -- missing values ----------------------------------------------------------


@pytest.mark.parametrize("leaf_model", ["constant", "linear"])
@pytest.mark.parametrize("seed", range(3))
def test_missing_direction_is_the_better_of_both_refits(seed, leaf_model):
    X, y = nan_data(seed)
    x, z = X[:, 0], X[:, 1]
    n = len(y)
    kw = dict(max_depth=1, leaf_penalty=0.0, n_thresholds=None, leaf_model=leaf_model,
              ridge_alpha=1e-3, min_samples_leaf=1)
    if leaf_model == "linear":
        kw["regression_features"] = [1]
    model = CholeskyTreeRegressor(**kw).fit(X[:, :1] if leaf_model == "constant" else X, y)
    if leaf_model == "constant":
        loss = sse
    else:
        Zs = np.column_stack([np.ones(n), (z - z.mean()) / z.std()])
        ridge = np.array([1e-12, n * 1e-3])

        def loss(idx_mask):
            return ridge_loss(Zs[idx_mask], y[idx_mask], ridge)

    def score(left):
        if leaf_model == "constant":
            return sse(y[left]) + sse(y[~left])
        return loss(left) + loss(~left)

    missing = np.isnan(x)
    values = np.unique(x[~missing])
    # Every threshold with the missing rows on either side (right first: it
    # wins ties), then "missing versus present" (present rows left).
    candidates = []
    for t in (values[:-1] + values[1:]) / 2:
        below = ~missing & (x <= t)
        candidates.append((score(below), t, False))
        candidates.append((score(below | missing), t, True))
    candidates.append((score(~missing), np.inf, False))
    best = min(c[0] for c in candidates)
    assert model.objective_ == pytest.approx(best, rel=1e-9)
    tree = model.tree_
    assert tree.feature[0] == 0
    chosen = (tree.threshold[0], bool(tree.missing_go_left[0]))
    (winner,) = [c for c in candidates if c[0] <= best * (1 + 1e-12)][:1]
    assert chosen == (winner[1], winner[2])
    # Refitting the other side of the missing rows is worse.
    below = ~missing & (x <= tree.threshold[0])
    other = score(below) if chosen[1] else score(below | missing)
    assert score(below | missing if chosen[1] else below) < other


def improves(score, best):
    """The splitter's tie rule: better beyond 1e-10 relative."""
    return score < best if best == np.inf else score < best - 1e-10 * abs(best)


def weighted_sse(y, w):
    if y.size == 0:
        return 0.0
    return float(w @ (y - np.average(y, weights=w)) ** 2)


def pair_candidates(X, y, w, rows, msl=1.0):
    """The candidates of constant leaves at the node of ``rows``, by brute force.

    In the splitter's order: per feature, every threshold (midpoint) between
    present values with the missing rows on the side of the lower children's
    loss (right unless left improves on it), then "missing versus present".
    Yields ``(score, feature, threshold, missing_left, left)``, ``left`` a
    mask over all rows.
    """
    Xn, yn, wn = X[rows], y[rows], w[rows]
    index = np.flatnonzero(rows)

    def score(left):
        return weighted_sse(yn[left], wn[left]) + weighted_sse(yn[~left], wn[~left])

    def admissible(left):
        return wn[left].sum() >= msl and wn[~left].sum() >= msl

    def full(left):
        out = np.zeros(rows.shape[0], dtype=bool)
        out[index[left]] = True
        return out

    for f in range(X.shape[1]):
        missing = np.isnan(Xn[:, f])
        values = np.unique(Xn[~missing, f])
        for t in (values[:-1] + values[1:]) / 2:
            below = ~missing & (Xn[:, f] <= t)
            sides = [(score(left), left, side)
                     for left, side in ((below, False), (below | missing, True))
                     if admissible(left)]
            if len(sides) == 2 and not improves(sides[1][0], sides[0][0]):
                sides = sides[:1]
            if sides:
                value, left, side = sides[-1]
                yield value, f, t, side, full(left)
        if missing.any() and admissible(~missing):
            yield score(~missing), f, np.inf, False, full(~missing)


def first_best(candidates):
    best = None
    for c in candidates:
        if best is None or improves(c[0], best[0]):
            best = c
    return best


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("max_hist_bins", [256, 0])
@pytest.mark.parametrize("seed", range(4))
def test_greedy_split_is_the_best_threshold_and_missing_side(seed, max_hist_bins,
                                                             weighted):
    """The root split against (threshold, side) pairs and missing-vs-present."""
    rng = np.random.default_rng(seed)
    n = 90
    X = np.round(rng.normal(size=(n, 2)), 1)
    y = np.where((X[:, 0] > 0.2) | (X[:, 1] < -0.5), 1.0, -1.0) + rng.normal(size=n)
    X[rng.random(n) < 0.25, 0] = np.nan
    X[rng.random(n) < 0.1, 1] = np.nan
    y[np.isnan(X[:, 0])] += 1.5 * rng.random() - 0.75
    w = rng.integers(1, 4, size=n).astype(float) if weighted else np.ones(n)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant", leaf_penalty=0.0,
                                  n_thresholds=None, min_samples_leaf=1)
    model, _ = _fit_tree(model, X, y, w if weighted else None, max_hist_bins=max_hist_bins)
    best = first_best(pair_candidates(X, y, w, np.ones(n, dtype=bool)))
    assert model.objective_ == pytest.approx(best[0], rel=1e-9)
    tree = model.tree_
    assert (tree.feature[0], bool(tree.missing_go_left[0])) == (best[1], best[3])
    assert tree.threshold[0] == pytest.approx(best[2])


@pytest.mark.parametrize("max_hist_bins", [256, 0])
def test_lookahead_scores_one_candidate_per_threshold_of_a_feature_with_missing_values(
        max_hist_bins):
    """T thresholds and missing values: T + 1 candidates (not 2 T + 2)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=400)
    y = np.abs(x) + 0.1 * rng.normal(size=400)
    counts = {}
    for frac in (0.0, 0.2):
        xm = np.where(rng.random(400) < frac, np.nan, x)
        model = CLARITreeRegressor(max_depth=2, leaf_model="constant", n_thresholds=10,
                                   min_samples_leaf=1)
        model, counters = _fit_tree(model, xm[:, None], y, max_hist_bins=max_hist_bins)
        assert len(model.thresholds_[0]) == 10
        counts[frac] = counters["search"]["root_candidates"]
    assert counts == {0.0: 10, 0.2: 11}


@pytest.mark.parametrize("max_hist_bins", [256, 0])
@pytest.mark.parametrize("seed", range(3))
def test_lookahead_root_is_the_best_completion_of_the_threshold_side_candidates(
        seed, max_hist_bins):
    """Lookahead 1, depth 2, constant leaves: every root candidate (one side
    per threshold) is scored by the best greedy split of each child."""
    rng = np.random.default_rng(10 + seed)
    n = 70
    X = np.round(rng.normal(size=(n, 2)), 1)
    y = np.sign(X[:, 0]) * np.sign(X[:, 1]) + 0.3 * rng.normal(size=n)
    X[rng.random(n) < 0.2, 0] = np.nan
    X[rng.random(n) < 0.2, 1] = np.nan
    w = np.ones(n)
    model = CLARITreeRegressor(max_depth=2, leaf_model="constant", leaf_penalty=0.0,
                               n_thresholds=None, min_samples_leaf=1)
    model, _ = _fit_tree(model, X, y, max_hist_bins=max_hist_bins)

    def completion(rows):
        child = first_best(pair_candidates(X, y, w, rows))
        leaf = weighted_sse(y[rows], w[rows])
        return leaf if child is None else min(leaf, child[0])

    everything = np.ones(n, dtype=bool)
    scores = [(completion(left) + completion(~left), f, t, side)
              for _, f, t, side, left in pair_candidates(X, y, w, everything)]
    best = first_best(scores)
    assert model.objective_ == pytest.approx(best[0], rel=1e-9)
    others = sorted(s[0] for s in scores)
    if others[1] > best[0] * (1 + 1e-6):      # a clear winner: the same split
        tree = model.tree_
        assert (tree.feature[0], bool(tree.missing_go_left[0])) == (best[1], best[3])
        assert tree.threshold[0] == pytest.approx(best[2])


@pytest.mark.parametrize("max_hist_bins", [256, 0])
@pytest.mark.parametrize("lookahead", [1, 2])
def test_missing_bins_bit_identical_for_every_n_jobs(lookahead, max_hist_bins):
    rng = np.random.default_rng(3)
    n = 700 if lookahead == 1 else 300
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] > 0, X[:, 1], -X[:, 2]) + 0.3 * rng.normal(size=n)
    X[rng.random(n) < 0.15, 0] = np.nan
    X[rng.random(n) < 0.3, 2] = np.nan
    fits = []
    for n_jobs in (1, 2, 3):
        model = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_jobs=n_jobs,
                                   n_thresholds=8)
        fits.append(_fit_tree(model, X, y, max_hist_bins=max_hist_bins)[0])
    ref = fits[0]
    assert ref.tree_.missing_go_left.any()
    for model in fits[1:]:
        assert model.objective_ == ref.objective_
        for name in ("feature", "threshold", "missing_go_left", "children_left",
                     "node_objective", "intercept", "coef"):
            np.testing.assert_array_equal(getattr(model.tree_, name),
                                          getattr(ref.tree_, name), err_msg=name)


def route(tree, x):
    node = 0
    while tree.children_left[node] != TREE_LEAF:
        f = tree.feature[node]
        v = x[f]
        if np.isnan(v):
            left = bool(tree.missing_go_left[node])
        elif tree.is_categorical[node]:
            left = int(v) in set(bitset_codes(tree.categories_left[node]).tolist())
        else:
            left = v <= tree.threshold[node]
        node = tree.children_left[node] if left else tree.children_right[node]
    return node


def test_predictions_with_missing_values_follow_the_documented_rules():
    X, y = nan_data(4, n=400)
    X = np.column_stack([X, np.random.default_rng(4).normal(size=400)])
    X[::7, 2] = np.nan
    model = CLARITreeRegressor(max_depth=3).fit(X, y)
    tree = model.tree_
    np.testing.assert_array_equal(model.missing_features_, [0, 2])
    present = ~np.isnan(X)
    mean = np.array([X[present[:, j], j].mean() for j in range(3)])
    np.testing.assert_allclose(tree.fill_value[model.regression_features_],
                               mean[model.regression_features_], rtol=1e-12)
    leaves = model.apply(X)
    for i in range(0, 400, 3):
        assert route(tree, X[i]) == leaves[i]
        filled = np.where(np.isnan(X[i]), mean, X[i])
        expected = tree.intercept[leaves[i]] + filled @ tree.coef[leaves[i]]
        assert model.predict(X[i:i + 1])[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # The leaf model of a missing regression feature: it adds nothing.
    one = X[:1].copy()
    one[0, 2] = np.nan
    leaf = model.apply(one)[0]
    filled = np.where(np.isnan(one[0]), mean, one[0])
    assert model.predict(one)[0] == pytest.approx(
        tree.intercept[leaf] + filled @ tree.coef[leaf], rel=1e-12)


def test_splits_without_missing_rows_send_them_to_the_larger_child():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 3))
    y = np.where(X[:, 0] > 0.5, X[:, 1], -X[:, 2]) + 0.1 * rng.normal(size=500)
    model = CLARITreeRegressor(max_depth=3).fit(X, y)
    tree = model.tree_
    internal = np.flatnonzero(tree.children_left != TREE_LEAF)
    assert internal.size >= 3
    for node in internal:
        bigger_left = (tree.n_node_samples[tree.children_left[node]]
                       >= tree.n_node_samples[tree.children_right[node]])
        assert tree.missing_go_left[node] == bigger_left
    # With missing values in training, nodes their rows never reached do the same.
    Xn = X.copy()
    Xn[(X[:, 0] > 0.5) & (rng.random(500) < 0.3), 1] = np.nan
    model = CLARITreeRegressor(max_depth=3).fit(Xn, y)
    tree = model.tree_
    paths = model.decision_path(Xn).toarray().astype(bool)
    checked = 0
    for node in np.flatnonzero(tree.children_left != TREE_LEAF):
        f = tree.feature[node]
        if not np.isnan(Xn[paths[:, node], f]).any():
            left = tree.children_left[node]
            right = tree.children_right[node]
            assert tree.missing_go_left[node] == (
                tree.weighted_n_node_samples[left] >= tree.weighted_n_node_samples[right])
            checked += 1
    assert checked >= 1


def test_missing_values_do_not_change_the_other_columns_fit():
    """A column made of NaN only is never split on and changes nothing else."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2))
    y = np.abs(X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=300)
    base = CLARITreeRegressor(max_depth=3).fit(X, y)
    with_nan = CLARITreeRegressor(max_depth=3, regression_features=[0, 1]).fit(
        np.column_stack([X, np.full(300, np.nan)]), y)
    assert 2 not in with_nan.tree_.feature
    np.testing.assert_array_equal(with_nan.tree_.threshold, base.tree_.threshold)
    assert with_nan.objective_ == pytest.approx(base.objective_, rel=1e-12)


# -- categorical features ----------------------------------------------------


def level_data(seed, n=240, k=6, missing=0.0):
    rng = np.random.default_rng(seed)
    levels = np.array([f"c{i}" for i in range(k)], dtype=object)
    codes = rng.integers(0, k, size=n)
    effect = rng.normal(size=k) * 2
    y = effect[codes] + rng.normal(size=n)
    col = levels[codes].copy()
    if missing:
        col[rng.random(n) < missing] = None
    return pd.DataFrame({"cat": col}), y


@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("seed", range(4))
def test_root_categorical_split_equals_brute_force_subsets(seed, missing):
    X, y = level_data(seed, missing=missing)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant",
                                  leaf_penalty=0.0).fit(X, y)
    groups = X["cat"].fillna("<missing>").to_numpy()
    names = sorted(set(groups))
    best = np.inf
    for r in range(1, len(names)):
        for left in itertools.combinations(names, r):
            mask = np.isin(groups, left)
            best = min(best, sse(y[mask]) + sse(y[~mask]))
    assert model.tree_.is_categorical[0] == 1
    assert model.objective_ == pytest.approx(best, rel=1e-10)


@pytest.mark.parametrize("k", [5, 80])
@pytest.mark.parametrize("seed", range(3))
def test_categorical_missing_rows_are_tried_on_both_sides_of_every_prefix(seed, k):
    # Linear leaves: the node's present levels ordered by the mean residual
    # of its own leaf model, each prefix a candidate with the missing rows
    # right (up to every present level) and left, as a numeric feature's
    # missing rows at every threshold.  Missing rows that follow a slope of
    # their own belong with whichever side fits them, not where their mean
    # residual ranks them.  k = 80: a set beyond a bit mask.
    rng = np.random.default_rng(seed)
    n = 600
    codes = rng.integers(0, k, size=n)
    x = rng.normal(size=n)
    slope = np.where(codes % 2 == 0, 2.0, -2.0)
    missing = rng.random(n) < 0.2
    slope[missing] = -2.0
    y = slope * x + 0.2 * rng.normal(size=n)
    col = np.array([f"c{i:02d}" for i in range(k)], dtype=object)[codes]
    col[missing] = None
    X = pd.DataFrame({"cat": col, "x": x})
    model = CholeskyTreeRegressor(max_depth=1, leaf_penalty=0.0, ridge_alpha=1e-3,
                                  min_samples_leaf=1, n_thresholds=4).fit(X, y)
    Zs = np.column_stack([np.ones(n), (x - x.mean()) / x.std()])
    ridge = np.array([1e-12, n * 1e-3])
    beta = np.linalg.solve(Zs.T @ Zs + np.diag(ridge), Zs.T @ y)
    residual = y - Zs @ beta
    present = sorted(set(col[~missing]))
    keys = [residual[col == level].mean() for level in present]
    order = [present[i] for i in np.argsort(keys, kind="stable")]

    def score(left):
        return ridge_loss(Zs[left], y[left], ridge) + ridge_loss(Zs[~left], y[~left], ridge)

    candidates = []
    for r in range(1, len(order) + 1):
        prefix = np.isin(col, order[:r]) & ~missing
        candidates.append(score(prefix))
        if r < len(order):
            candidates.append(score(prefix | missing))
    tree = model.tree_
    assert tree.feature[0] == 0 and tree.is_categorical[0] == 1
    assert model.objective_ == pytest.approx(min(candidates), rel=1e-9)
    # The other side for the missing rows is worse.
    left = model.apply(X) == tree.children_left[0]
    assert score(left) < score(left ^ missing)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(2, 3),
       st.sampled_from(["linear", "constant"]))
def test_lookahead_never_worse_than_greedy_on_categorical_data(seed, depth, leaf_model):
    rng = np.random.default_rng(seed)
    n = 240
    a = rng.choice(list("pqrst"), size=n).astype(object)
    b = rng.choice(list("uvw"), size=n).astype(object)
    x = rng.normal(size=n)
    y = ((a == "p") ^ (b == "u")) * 2.0 + x * (a == "q") + 0.3 * rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    X = pd.DataFrame({"a": a, "b": b, "x": x})
    kw = dict(max_depth=depth, leaf_model=leaf_model, n_thresholds=8)
    greedy = CholeskyTreeRegressor(**kw).fit(X, y).objective_
    look = CLARITreeRegressor(lookahead_depth=1, **kw).fit(X, y).objective_
    deeper = CLARITreeRegressor(lookahead_depth=2, **kw).fit(X, y).objective_
    assert look <= greedy * (1 + 1e-9)
    assert deeper <= greedy * (1 + 1e-9)


def test_categorical_features_never_enter_leaf_models():
    X, y = level_data(7)
    X["x"] = np.random.default_rng(7).normal(size=len(y))
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    np.testing.assert_array_equal(model.regression_features_, [1])
    assert np.all(model.leaf_coefs_[:, 0] == 0)


def test_unseen_levels_follow_the_missing_direction():
    X, y = level_data(8)
    model = CholeskyTreeRegressor(max_depth=2, leaf_model="constant").fit(X, y)
    unseen = pd.DataFrame({"cat": ["zzz", None]})
    leaves = model.apply(unseen)
    assert leaves[0] == leaves[1]
    assert leaves[0] == route(model.tree_, np.array([np.nan]))


# -- a mixed table through every export ------------------------------------


def mixed_table(seed=0, n=500):
    rng = np.random.default_rng(seed)
    color = rng.choice(["red", "green", "blue", "black"], size=n).astype(object)
    size = pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"])
    flag = rng.random(n) < 0.5
    x = rng.normal(size=n)
    z = rng.normal(size=n)
    y = (np.where(np.isin(color, ["red", "blue"]), 2 * z, -z) + flag
         + x * (np.asarray(size) == "L") + 0.1 * rng.normal(size=n))
    x[rng.random(n) < 0.2] = np.nan
    color[rng.random(n) < 0.1] = None
    return pd.DataFrame({"color": color, "size": size, "flag": flag, "x": x, "z": z}), y


@pytest.fixture(scope="module")
def mixed_model():
    X, y = mixed_table()
    return CLARITreeRegressor(max_depth=3).fit(X, y), X, y


def split_top(text, sep):
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        depth += ch in "({"
        depth -= ch in ")}"
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def evaluate_clause(clause, frame, categorical):
    """Rows of ``frame`` that satisfy one clause of a leaf_table rule."""
    if clause.startswith("(") and clause.endswith(")"):
        options = split_top(clause[1:-1], " or ")
        return np.logical_or.reduce([evaluate_clause(o, frame, categorical) for o in options])
    if m := re.fullmatch(r"(\w+) is missing", clause):
        return missing_of(frame, m.group(1), categorical)
    if m := re.fullmatch(r"(\w+) is not missing", clause):
        return ~missing_of(frame, m.group(1), categorical)
    if m := re.fullmatch(r"(\w+) in \{(.*)\}", clause):
        levels = set(m.group(2).split(", "))
        return frame[m.group(1)].map(lambda v: str(v) in levels).to_numpy(dtype=bool) \
            & ~missing_of(frame, m.group(1), categorical)
    if m := re.fullmatch(r"(\S+) < (\w+) <= (\S+)", clause):
        x = frame[m.group(2)].to_numpy(dtype=float)
        return (x > float(m.group(1))) & (x <= float(m.group(3)))
    if m := re.fullmatch(r"(\w+) <= (\S+)", clause):
        return frame[m.group(1)].to_numpy(dtype=float) <= float(m.group(2))
    if m := re.fullmatch(r"(\w+) > (\S+)", clause):
        return frame[m.group(1)].to_numpy(dtype=float) > float(m.group(2))
    raise AssertionError(f"unparsed clause {clause!r}")


def missing_of(frame, name, categorical):
    col = frame[name]
    missing = col.isna().to_numpy().copy()
    if name in categorical:   # levels unseen in training count as missing
        missing |= ~col.map(lambda v: str(v) in categorical[name]).to_numpy(dtype=bool)
    return missing


def test_leaf_table_rules_select_exactly_the_leaf_rows(mixed_model):
    model, X, _ = mixed_model
    table = leaf_table(model)
    categorical = {name: {str(v) for v in model.categories_[j]}
                   for j, name in enumerate(X.columns) if model.is_categorical_[j]}
    leaves = model.apply(X)
    # Rows with missing values reach several leaves: the rules must say so.
    assert len(set(leaves[X["x"].isna().to_numpy()])) > 1
    seen = np.zeros(len(X), dtype=bool)
    for leaf, rule in zip(table["leaf"], table["rule"], strict=True):
        mask = np.logical_and.reduce([evaluate_clause(c, X, categorical)
                                      for c in split_top(rule, " and ")])
        np.testing.assert_array_equal(mask, leaves == leaf, err_msg=rule)
        seen |= mask
    assert seen.all()
    assert any("is missing" in r for r in table["rule"])
    assert any(" in {" in r for r in table["rule"])


def test_text_names_levels_and_missing_directions(mixed_model):
    model, X, _ = mixed_model
    text = export_text(model)
    assert re.search(r"color in \{[a-z, ]+\}", text)
    assert "or missing" in text or "is missing" in text
    assert "onehot" not in text
    # Every categorical split lists each level on exactly one side.
    tree = model.tree_
    for node in np.flatnonzero(tree.is_categorical):
        f = tree.feature[node]
        left = set(bitset_codes(tree.categories_left[node]).tolist())
        assert left <= set(range(len(model.categories_[f])))


def test_json_round_trip_is_bit_identical_on_mixed_tables(mixed_model):
    model, X, _ = mixed_model
    clone = from_dict(json.loads(json.dumps(to_dict(model), allow_nan=False)))
    new = X.copy()
    new.loc[new.index[:5], "color"] = "purple"        # unseen level
    new.loc[new.index[5:10], "x"] = np.nan
    for frame in (X, new):
        np.testing.assert_array_equal(clone.predict(frame), model.predict(frame))
        np.testing.assert_array_equal(clone.apply(frame), model.apply(frame))
    assert export_text(clone) == export_text(model)
    pd.testing.assert_frame_equal(leaf_table(clone), leaf_table(model))
    for j in range(X.shape[1]):
        if model.categories_[j] is None:
            assert clone.categories_[j] is None
        else:
            assert list(clone.categories_[j]) == list(model.categories_[j])


def test_graphviz_and_plot_carry_levels_and_missing(mixed_model):
    model, _, _ = mixed_model
    dot = export_graphviz(model)
    assert re.search(r'label="(in \{|color in \{)', dot) or "in {" in dot
    assert "missing" in dot
    fig, ax = plt.subplots(figsize=(14, 6))
    plot_tree(model, ax=ax)
    texts = [t.get_text() for t in ax.texts]
    assert any(" in {" in t for t in texts)
    assert any("missing" in t for t in texts)
    plt.close(fig)


def test_missing_versus_present_thresholds_round_trip_as_strict_json():
    # y depends only on whether x0 is missing: the root splits missing versus
    # present, threshold +inf (every present value left, missing right).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    gone = rng.random(400) < 0.3
    X[gone, 0] = np.nan
    y = np.where(gone, 5.0, -5.0) + 0.01 * rng.standard_normal(400)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant").fit(X, y)
    assert model.tree_.threshold[0] == np.inf and not model.tree_.missing_go_left[0]
    data = json.loads(json.dumps(to_dict(model), allow_nan=False))
    clone = from_dict(data)
    np.testing.assert_array_equal(clone.tree_.threshold, model.tree_.threshold)
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    # The other orientation (missing left, every present value right: -inf),
    # as older files may hold it, comes back from missing_go_left.
    data["tree"]["missing_go_left"][0] = 1
    flipped = from_dict(data)
    assert flipped.tree_.threshold[0] == -np.inf
    np.testing.assert_array_equal(flipped.apply(X), np.where(gone, 1, 2))


def test_old_json_without_missing_and_category_fields_still_loads():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 2))
    y = X[:, 0] * (X[:, 1] > 0) + 0.1 * rng.normal(size=200)
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    data = to_dict(model)
    for key in ("missing_go_left", "is_categorical", "categories_left",
                "weighted_n_node_samples", "fill_value"):
        del data["tree"][key]
    del data["preparation"]
    clone = from_dict(json.loads(json.dumps(data)))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))


@pytest.mark.parametrize("seed", range(3))
def test_every_categorical_split_is_the_best_level_subset_of_its_node(seed):
    """Constant leaves: each node's level set beats every subset of its levels.

    The node orders its own levels (by mean target there), so deeper nodes
    find their optimal subsets too, not only the root.
    """
    rng = np.random.default_rng(seed)
    n, k = 400, 7
    a = rng.integers(0, k, size=n)
    b = rng.integers(0, 3, size=n)
    effect = rng.normal(size=(k, 3)) * 2           # an interaction: orders differ by b
    y = effect[a, b] + 0.3 * rng.normal(size=n)
    cat = np.array([f"a{i}" for i in range(k)], dtype=object)[a]
    cat[rng.random(n) < 0.1] = None
    X = pd.DataFrame({"a": cat, "b": np.array(["u", "v", "w"], dtype=object)[b]})
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant", leaf_penalty=0.0,
                                  min_samples_leaf=1).fit(X, y)
    tree = model.tree_
    paths = model.decision_path(X).toarray().astype(bool)
    groups = X.fillna("<missing>").to_numpy()
    checked = 0
    for node in np.flatnonzero(tree.children_left != TREE_LEAF):
        rows = paths[:, node]
        left_rows = paths[:, tree.children_left[node]]
        got = sse(y[left_rows]) + sse(y[rows & ~left_rows])
        best = np.inf
        for f in range(2):
            names = sorted(set(groups[rows, f]))
            for r in range(1, len(names)):
                for left in itertools.combinations(names, r):
                    mask = np.isin(groups[rows, f], left)
                    best = min(best, sse(y[rows][mask]) + sse(y[rows][~mask]))
        assert got == pytest.approx(best, rel=1e-10, abs=1e-10)
        checked += node > 0
    assert checked >= 2


def test_many_levels_route_consistently():
    rng = np.random.default_rng(11)
    n, k = 2000, 100                     # more than 62 levels: sets beyond a bit mask
    codes = rng.integers(0, k, size=n)
    y = (codes % 7) + 0.1 * rng.normal(size=n)
    col = np.array([f"l{i:03d}" for i in range(k)], dtype=object)[codes]
    col[rng.random(n) < 0.05] = None
    X = pd.DataFrame({"c": col})
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant").fit(X, y)
    tree = model.tree_
    assert tree.is_categorical[0] == 1 and len(model.categories_[0]) == k
    enc = model._preparation.transform(model, X)
    leaves = model.apply(X)
    for i in range(0, n, 37):
        assert route(tree, enc[i]) == leaves[i]
    # Better than a constant: the level sets separate the target's values.
    assert np.mean((model.predict(X) - y) ** 2) < 0.5 * np.var(y)


# -- a column with no value in training ------------------------------------


@pytest.mark.parametrize("empty", [
    pd.Series([None] * 80, dtype=object),
    pd.Series([None] * 80, dtype="string"),
    pd.Series(pd.Categorical([None] * 80, categories=["u", "v"])),
], ids=["object", "string", "category"])
def test_categorical_column_without_a_level_in_training_predicts(empty):
    """Its values at predict are unseen levels (the missing direction), not a crash.

    A Parquet or pandas column that is entirely null in the training rows is a
    categorical column with no level; predict used to fail on it with an
    IndexError in the level lookup.
    """
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=80), "empty": empty,
                      "c": rng.choice(["p", "q"], size=80)})
    y = X["x"].to_numpy() * (X["c"] == "p") + 0.1 * rng.normal(size=80)
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    assert model.is_categorical_.tolist() == [False, True, True]
    assert len(model.categories_[1]) == 0
    expected = model.predict(X)
    filled = X.assign(empty=pd.Series(["u"] * 80, dtype=empty.dtype))
    np.testing.assert_array_equal(model.predict(filled), expected)
    np.testing.assert_array_equal(model.predict(X.assign(empty=["u", "v"] * 40)), expected)
    rebuilt = from_dict(json.loads(json.dumps(to_dict(model))))
    np.testing.assert_array_equal(rebuilt.predict(filled), expected)


def test_mbndt_types_text_and_category_columns_without_values_as_categorical():
    """Whatever the training rows hold, a pandas string or category column
    is categorical (an empty one used to be typed numeric, and predict then
    rejected its levels as 'not a number'), a category column of number
    levels too (as CLARITree's "from_dtype" reads it)."""
    from clarytree.mbndt._preprocess import infer_column_kinds

    X = pd.DataFrame({
        "num": [1.0, None, 3.0],
        "none": pd.Series([None] * 3, dtype=object),
        "string": pd.Series([None] * 3, dtype="string"),
        "text_levels": pd.Categorical([None] * 3, categories=["u", "v"]),
        "number_levels": pd.Categorical([None, 1.5, None], categories=[1.5, 2.5]),
        "numbers": pd.Series([1, None, 2.5], dtype=object),
        "text": pd.Series(["a", None, "b"], dtype=object),
    })
    assert infer_column_kinds(X) == ["num", "num", "cat", "cat", "cat", "num", "cat"]


def test_levels_that_would_misread_are_quoted_in_printed_rules():
    """The empty text printed bare read as an empty set ('x in {}'), 'a, b'
    as two levels and 'red ' as 'red': such levels are quoted as Python
    writes them, in export_text, leaf_table and the drawn tree; plain
    levels stay bare."""
    rng = np.random.default_rng(2)
    n = 400
    level = rng.choice(["", "a, b", "red ", "plain"], size=n)
    X = pd.DataFrame({"c": level, "x": rng.normal(size=n)})
    y = (np.select([level == "", level == "a, b", level == "red "], [3.0, -2.0, 1.0], 0.0)
         + 0.5 * X["x"] + 0.01 * rng.normal(size=n))
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant").fit(X, y)
    shown = {"''", "'a, b'", "'red '", "plain"}
    text = export_text(model)
    sets = re.findall(r"c in \{([^}]*)\}", text)
    assert sets
    members = {m for s in sets for m in re.findall(r"'[^']*'|[^,' ][^,]*", s)}
    assert members <= shown and "''" in members
    rules = " ".join(leaf_table(model)["rule"])
    assert "{}" not in rules and "''" in rules
    assert "''" in export_graphviz(model)


def test_text_levels_that_read_as_numbers_or_missing_are_quoted():
    """Text '1' beside the number 1 in one column, and text such as 'None'
    or 'missing', printed bare read as the number or as a missing value:
    they are quoted; numbers and plain text stay bare."""
    rng = np.random.default_rng(3)
    n = 400
    pool = np.array(["1", 1, "None", "missing", "plain", 2.5], dtype=object)
    level = pool[rng.integers(0, len(pool), size=n)]
    X = pd.DataFrame({"c": pd.Series(level, dtype=object), "x": rng.normal(size=n)})
    effect = {"1": 3.0, 1: -2.0, "None": 1.0, "missing": -1.0, "plain": 0.0, 2.5: 2.0}
    y = np.array([effect[v] for v in level]) + 0.01 * rng.normal(size=n)
    model = CholeskyTreeRegressor(max_depth=4, leaf_model="constant",
                                  categorical_features=["c"]).fit(X, y)
    sets = re.findall(r"c in \{([^}]*)\}", export_text(model))
    members = {m.strip() for s in sets for m in s.split(",")}
    assert {"'1'", "1"} <= members, members
    assert members <= {"'1'", "1", "'None'", "'missing'", "plain", "2.5"}, members


def test_pandas_na_in_an_object_column_of_numbers_is_missing():
    # pd.NA (a nullable column cast to object, or a cell set by hand) is a
    # missing value as None is, whether or not another column is
    # categorical (the all-numeric route converts the table at once), in fit
    # and in predict.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = X[:, 0] * (X[:, 1] > 0)
    with_na = pd.Series(X[:, 0], dtype=object)
    with_na[[0, 5]] = pd.NA
    with_none = with_na.copy()
    with_none[[0, 5]] = None
    params = dict(max_depth=2, n_thresholds=5, categorical_features=None)
    na_fit = CLARITreeRegressor(**params).fit(pd.DataFrame({"a": with_na, "b": X[:, 1]}), y)
    none_fit = CLARITreeRegressor(**params).fit(pd.DataFrame({"a": with_none, "b": X[:, 1]}), y)
    assert na_fit.objective_ == none_fit.objective_
    rows = pd.DataFrame({"a": pd.Series([pd.NA, 0.5], dtype=object), "b": [0.1, -0.2]})
    np.testing.assert_array_equal(na_fit.predict(rows),
                                  na_fit.predict(pd.DataFrame([[np.nan, 0.1], [0.5, -0.2]],
                                                              columns=["a", "b"])))
    # What is neither a number nor missing is still named.
    odd = pd.DataFrame({"a": pd.Series([[1.0]] + [0.0] * 119, dtype=object), "b": X[:, 1]})
    with pytest.raises(ValueError, match="column 'a'"):
        CLARITreeRegressor(**params).fit(odd, y)


@pytest.mark.parametrize("text_dtype", ["string", "str", "object"])
def test_numbers_as_text_with_pandas_na_read_as_numbers_with_missing_cells(text_dtype):
    """A numeric column given as a text column with pd.NA at predict: the NA
    cells are missing values, with or without a categorical column."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.integers(0, 5, 200).astype(float)})
    y = 2 * X["a"] + 3 * (X["b"] > 2)
    holes = X.index % 5 == 0
    for frame in (X, X.assign(c=rng.choice(["u", "v"], 200))):
        model = CholeskyTreeRegressor(max_depth=2, n_thresholds=8).fit(frame, y)
        text = frame["a"].astype(str).astype(text_dtype).mask(holes, pd.NA)
        expected = model.predict(frame.assign(a=frame["a"].mask(holes)))
        np.testing.assert_array_equal(model.predict(frame.assign(a=text)), expected)


def test_wrongly_shaped_input_gets_scikit_learns_messages_with_categorical_columns():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=80), "c": rng.choice(["u", "v"], 80)})
    y = X["a"] + (X["c"] == "u")
    for model in (CholeskyTreeRegressor(max_depth=1).fit(X, y),
                  CholeskyTreeRegressor(max_depth=1).fit(X[["a"]], y)):
        frame = X.iloc[:, :model.n_features_in_]
        with pytest.raises(ValueError, match="Expected a 2-dimensional container"):
            model.predict(frame.iloc[0])
        with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
            model.predict(X["a"].to_numpy())
        with pytest.raises(ValueError, match="Found array with dim 3"):
            model.predict(np.zeros((2, 2, 2)))
        with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\) .*"
                                             r"required by CholeskyTreeRegressor"):
            model.predict(frame.iloc[:0])
