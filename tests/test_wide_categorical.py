"""Categorical columns with more than 62 levels: every node orders its own levels.

A column with at most 62 levels (plus missing) carries a split's level set
as a bit mask; a wider one (up to 256 levels and missing) refers to the
prefix of its node's level order and the set is recomputed from the node's
statistics.  Both must search the same candidates: the prefixes of the
node's order by the mean residual of its own leaf model.
"""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from clarytree._builder import BuildContext, PathState, openmp_enabled
from clarytree._criterion import ConstantCriterion, RidgeCriterion
from clarytree._splitter import Splitter
from clarytree._tree import TREE_LEAF, bitset_codes
from test_tables import evaluate_clause, route, split_top

from clarytree import (
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    export_graphviz,
    export_text,
    from_dict,
    leaf_table,
    to_dict,
)
from clarytree._classes import _assemble_builder, _fit_tree


def wide_frame(seed, n=1500, k_a=100, k_b=200, interaction=True):
    """A numeric column and two wide categorical ones, with missing values.

    With ``interaction`` the effect of ``a``'s levels flips with ``b``'s
    sign, so a node below a split on ``b`` orders ``a``'s levels unlike the
    whole training set does.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k_a, size=n)
    b = rng.integers(0, k_b, size=n)
    x = rng.normal(size=n)
    effect_a = rng.normal(size=k_a)
    sign_b = np.where(rng.random(k_b) < 0.5, -1.0, 1.0)
    effect_b = rng.normal(size=k_b)
    y = (effect_a[a] * (sign_b[b] if interaction else 1.0) + 0.5 * effect_b[b] + 0.8 * x
         + 0.2 * rng.normal(size=n))
    col_a = np.array([f"a{i:03d}" for i in range(k_a)], dtype=object)[a]
    col_b = np.array([f"b{i:03d}" for i in range(k_b)], dtype=object)[b]
    miss_a = rng.random(n) < 0.06
    miss_b = rng.random(n) < 0.04
    col_a[miss_a] = None
    col_b[miss_b] = None
    y[miss_a] += 1.5                  # missing is a level with its own mean
    X = pd.DataFrame({"x": x, "a": col_a, "b": col_b})
    w = rng.integers(1, 4, size=n).astype(float)
    w[rng.random(n) < 0.05] = 0.0     # zero weight drops a row
    return X, y, w


def level_codes(model, X, j):
    """Codes of column ``j`` in training's terms; missing is the last code K."""
    enc = model._preparation.transform(model, X)[:, j]
    k = len(model.categories_[j])
    return np.where(np.isnan(enc), k, np.nan_to_num(enc)).astype(np.intp), k


def left_levels(tree, node, k):
    """The node's left set as codes 0..K (K: missing) of its feature."""
    left = set(bitset_codes(tree.categories_left[node]).tolist())
    if tree.missing_go_left[node]:
        left.add(k)
    return left


def wsse(y, w):
    if w.sum() == 0:
        return 0.0
    m = np.dot(w, y) / w.sum()
    return float(np.dot(w, (y - m) ** 2))


def ridge_fit(Z, y, w, ridge):
    A = Z.T @ (w[:, None] * Z) + np.diag(ridge)
    beta = np.linalg.solve(A, Z.T @ (w * y))
    return beta


def ridge_loss(Z, y, w, ridge):
    beta = ridge_fit(Z, y, w, ridge)
    r = y - Z @ beta
    return float(np.dot(w, r * r) + beta @ (ridge * beta))


def improves(score, best, floor):
    """The documented tie rule: only a strict improvement beyond the tolerance."""
    if best == np.inf:
        return score < best
    return score < best - max(1e-10 * abs(best), floor)


def prefix_sets(codes, key_of_level):
    """Left sets of the prefixes of the node's level order (ties by code)."""
    present = np.unique(codes)
    order = present[np.argsort(key_of_level[present], kind="stable")]
    return [set(order[:r].tolist()) for r in range(1, len(order))]


def tree_arrays(model):
    t = model.tree_
    return [t.children_left, t.children_right, t.feature, t.threshold, t.missing_go_left,
            t.is_categorical, t.categories_left, t.intercept, t.coef, t.n_node_samples]


def assert_same_tree(a, b):
    assert a.objective_ == b.objective_
    for u, v in zip(tree_arrays(a), tree_arrays(b), strict=True):
        np.testing.assert_array_equal(u, v)


# -- constant leaves: the node's order is the optimal one --------------------


@pytest.mark.parametrize("seed, k_b, merge", [(0, 200, None), (1, 200, None), (2, 300, 0.0)])
def test_root_split_equals_numpy_prefix_reference(seed, k_b, merge):
    """Greedy root, constant leaves, weights and missing values: the prefixes of
    the levels (missing one more) ordered by weighted mean target, best SSE.
    With 300 levels merged to the 255 heaviest and "<other>", the column has
    257 bins (the missing one last)."""
    X, y, w = wide_frame(seed, n=2500, k_b=k_b, interaction=False)
    X = X[["a", "b"]]
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant", leaf_penalty=0.0,
                                  min_samples_leaf=1, min_category_weight=merge)
    model.fit(X, y, sample_weight=w)
    if merge is not None:
        assert len(model.categories_[1]) == 256 and model.merged_categories_[1]
    tree = model.tree_
    assert tree.node_count == 3 and tree.is_categorical[0]
    keep = w > 0
    yk, wk = y[keep], w[keep]
    floor = 1e-12 * wsse(yk, wk)
    best, choice = np.inf, None
    for j in range(2):
        codes, k = level_codes(model, X[keep], j)
        assert k in (100, 200, 256)
        total = np.bincount(codes, weights=wk, minlength=k + 1)
        sums = np.bincount(codes, weights=wk * yk, minlength=k + 1)
        means = sums / np.where(total > 0, total, 1.0)
        for left in prefix_sets(codes, means):
            mask = np.isin(codes, list(left))
            score = wsse(yk[mask], wk[mask]) + wsse(yk[~mask], wk[~mask])
            if improves(score, best, floor):
                best, choice = score, (j, left)
    j, left = choice
    assert tree.feature[0] == j
    assert left_levels(tree, 0, len(model.categories_[j])) == left
    assert model.objective_ == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_every_node_takes_its_own_best_prefix(seed):
    """Deeper nodes order the levels by their own mean target (which differs
    from the whole training set's here), so each split's SSE is the best
    over every prefix of every feature at that node."""
    X, y, w = wide_frame(seed)
    X = X[["a", "b"]]
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant", leaf_penalty=0.0,
                                  min_samples_leaf=1).fit(X, y, sample_weight=w)
    tree = model.tree_
    keep = w > 0
    Xk, yk, wk = X[keep], y[keep], w[keep]
    paths = model.decision_path(Xk).toarray().astype(bool)
    coded = [level_codes(model, Xk, j) for j in range(2)]
    internal = np.flatnonzero(tree.children_left != TREE_LEAF)
    assert len(internal) >= 5
    for node in internal:
        rows = paths[:, node]
        lrows = paths[:, tree.children_left[node]]
        got = wsse(yk[lrows], wk[lrows]) + wsse(yk[rows & ~lrows], wk[rows & ~lrows])
        best = np.inf
        for codes, k in coded:
            c, yy, ww = codes[rows], yk[rows], wk[rows]
            total = np.bincount(c, weights=ww, minlength=k + 1)
            means = np.bincount(c, weights=ww * yy, minlength=k + 1) / np.where(
                total > 0, total, 1.0)
            for left in prefix_sets(c, means):
                mask = np.isin(c, list(left))
                best = min(best, wsse(yy[mask], ww[mask]) + wsse(yy[~mask], ww[~mask]))
        assert got == pytest.approx(best, rel=1e-9, abs=1e-9), node


def test_few_levels_at_a_node_of_a_wide_column_equal_brute_force():
    """A 120-level column whose levels 0..7 (and missing) only occur where
    x > 0: below the split on x, its best level set is the best of all
    2^8 subsets of the node's 9 levels."""
    rng = np.random.default_rng(5)
    n = 2000
    x = rng.normal(size=n)
    c = np.where(x > 0, rng.integers(0, 8, size=n), rng.integers(8, 120, size=n))
    effect = rng.normal(size=120) * 2
    y = 20.0 * (x > 0) + effect[c] + 0.1 * rng.normal(size=n)
    col = np.array([f"c{i:03d}" for i in range(120)], dtype=object)[c]
    gone = rng.random(n) < 0.05
    col[gone] = None
    y[gone & (x > 0)] += 3.0
    X = pd.DataFrame({"x": x, "c": col})
    model = CholeskyTreeRegressor(max_depth=2, leaf_model="constant", leaf_penalty=0.0,
                                  min_samples_leaf=1, n_thresholds=None).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 0
    node = tree.children_right[0]                  # x > 0
    assert tree.feature[node] == 1 and tree.is_categorical[node]
    paths = model.decision_path(X).toarray().astype(bool)
    rows = paths[:, node]
    lrows = paths[:, tree.children_left[node]]
    codes, k = level_codes(model, X, 1)
    assert k == 120
    got = ((y[lrows] - y[lrows].mean()) ** 2).sum() + \
        ((y[rows & ~lrows] - y[rows & ~lrows].mean()) ** 2).sum()
    levels = sorted(set(codes[rows].tolist()))
    assert len(levels) == 9 and k in levels
    best = np.inf
    for r in range(1, len(levels)):
        for left in itertools.combinations(levels, r):
            mask = np.isin(codes[rows], left)
            yl, yr = y[rows][mask], y[rows][~mask]
            best = min(best, ((yl - yl.mean()) ** 2).sum() + ((yr - yr.mean()) ** 2).sum())
    assert got == pytest.approx(best, rel=1e-10)


# -- linear leaves: ordered by the node model's mean residual ----------------


@pytest.mark.parametrize("seed", range(2))
def test_linear_root_equals_ridge_residual_reference(seed):
    """Ridge leaves on x: the levels are ordered by the mean residual of the
    root's own ridge model, each prefix and each threshold of x is refitted
    on both sides, and the best by the tie rule is the root split."""
    X, y, w = wide_frame(seed, n=1200)
    alpha = 1e-3
    model = CholeskyTreeRegressor(max_depth=1, leaf_penalty=0.0, ridge_alpha=alpha,
                                  regression_features=[0], min_samples_leaf=5)
    model.fit(X, y, sample_weight=w)
    tree = model.tree_
    keep = w > 0
    Xk, yk, wk = X[keep], y[keep], w[keep]
    x = Xk["x"].to_numpy()
    mean = np.dot(wk, x) / wk.sum()
    std = np.sqrt(np.dot(wk, (x - mean) ** 2) / wk.sum())
    Z = np.column_stack([np.ones(len(x)), (x - mean) / std])
    yc = yk - np.dot(wk, yk) / wk.sum()
    ridge = np.array([1e-12, wk.sum() * alpha])
    beta = ridge_fit(Z, yc, wk, ridge)
    resid = yc - Z @ beta
    floor = 1e-12 * float(np.dot(wk, yc * yc))

    def score(mask):
        if wk[mask].sum() < 5 * (1 - 1e-9) or wk[~mask].sum() < 5 * (1 - 1e-9):
            return np.inf
        return (ridge_loss(Z[mask], yc[mask], wk[mask], ridge)
                + ridge_loss(Z[~mask], yc[~mask], wk[~mask], ridge))

    best, choice = np.inf, None
    for t in model.thresholds_[0]:
        mask = x <= t
        if mask.all() or not mask.any():
            continue
        s = score(mask)
        if improves(s, best, floor):
            best, choice = s, (0, t)
    prefix_scores = []
    for j in (1, 2):
        codes, k = level_codes(model, Xk, j)
        total = np.bincount(codes, weights=wk, minlength=k + 1)
        key = np.bincount(codes, weights=wk * resid, minlength=k + 1) / np.where(
            total > 0, total, 1.0)
        for left in prefix_sets(codes, key):
            s = score(np.isin(codes, list(left)))
            prefix_scores.append(s)
            if improves(s, best, floor):
                best, choice = s, (j, left)
    j, chosen = choice
    assert j > 0, "the data should make a categorical root split win"
    assert tree.feature[0] == j
    assert left_levels(tree, 0, len(model.categories_[j])) == chosen
    # The root's children refitted on the chosen partition: the objective.
    paths = model.decision_path(Xk).toarray().astype(bool)
    left_rows = paths[:, tree.children_left[0]]
    refit = (ridge_loss(Z[left_rows], yc[left_rows], wk[left_rows], ridge)
             + ridge_loss(Z[~left_rows], yc[~left_rows], wk[~left_rows], ridge))
    unit = model._preparation.y_scale_ ** 2
    assert model.objective_ == pytest.approx(refit, rel=1e-8)
    assert model.objective_ / unit <= min(prefix_scores) / unit * (1 + 1e-9)
    assert model.objective_ == pytest.approx(best, rel=1e-8)


# -- the wide route equals the bit-mask route --------------------------------


def narrow_and_wide(seed, leaf_model):
    """One table searched twice: its 12-level column declared with 12 bins
    (bit masks) and with 100 (the wide route; the extra bins stay empty)."""
    rng = np.random.default_rng(seed)
    n = 600
    a = rng.integers(0, 12, size=n)
    x = rng.normal(size=n)
    s = np.where(x > 0, 1.0, -1.0)
    effect = rng.normal(size=12) * 2
    y = effect[a] * s + x + 0.3 * rng.normal(size=n)
    thr = np.quantile(x, np.linspace(0.1, 0.9, 9))
    xb = np.searchsorted(thr, x, side="left")
    bins = np.ascontiguousarray(np.column_stack([xb, a]).astype(np.uint8))
    order = np.zeros((1, n), dtype=np.int32)
    order[0] = np.arange(n)
    W = np.column_stack([np.ones(n), (x - x.mean()) / x.std(), y - y.mean()])
    if leaf_model == "linear":
        ridge = np.array([1e-12, 1e-3 * n])
        crit = RidgeCriterion(W, ridge)
    else:
        crit = ConstantCriterion(np.ascontiguousarray(W[:, [0, 2]]), np.array([1e-12]))
    categorical = np.array([0, 1], dtype=np.uint8)
    splitters = []
    for k in (12, 100):
        n_bins = np.array([10, k], dtype=np.int32)
        splitters.append(Splitter(bins, order.copy(), n_bins, 3, crit,
                                  categorical=categorical))
    tss = float(((y - y.mean()) ** 2).sum())
    return splitters, crit, tss


def masks_of(nodes, wide):
    """Each categorical split's left bins as a set (from its bit mask or words)."""
    out = []
    for i in np.flatnonzero(nodes["feature"] == 1):
        if wide:
            words = nodes["set_words"][i].astype("<u8").view(np.uint8)
            out.append(set(np.flatnonzero(np.unpackbits(words, bitorder="little")).tolist()))
        else:
            b = int(nodes["bin"][i])
            out.append({c for c in range(12) if (b >> c) & 1})
    return out


@pytest.mark.parametrize("leaf_model", ["constant", "linear"])
@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_wide_route_builds_the_bit_mask_route_tree(lookahead, leaf_model):
    """Greedy, lookahead 1 and 2 and the leaf-penalty path: the same tree."""
    splitters, crit, tss = narrow_and_wide(lookahead, leaf_model)
    results = []
    for splitter in splitters:
        ctx = BuildContext(splitter, crit, 4, 1e-3 * tss, 3)
        objective, nodes = _assemble_builder(ctx, lookahead, 4).build()
        path_ctx = BuildContext(splitter, crit, 4, 0.0, 3)
        path = _assemble_builder(path_ctx, lookahead, 4).build_path(
            PathState(np.array([1e-2, 1e-3]) * tss, 4))
        results.append((objective, nodes, path))
    (o1, n1, p1), (o2, n2, p2) = results
    assert (n1["feature"] == 1).any()
    np.testing.assert_array_equal(n1["feature"], n2["feature"])
    np.testing.assert_array_equal(n1["children_left"], n2["children_left"])
    assert masks_of(n1, False) == masks_of(n2, True)
    assert o1 == pytest.approx(o2, rel=1e-12)
    for (a_obj, a_nodes), (b_obj, b_nodes) in zip(p1, p2, strict=True):
        np.testing.assert_array_equal(a_nodes["feature"], b_nodes["feature"])
        assert masks_of(a_nodes, False) == masks_of(b_nodes, True)
        assert a_obj == pytest.approx(b_obj, rel=1e-12)


# -- threads, path, export ---------------------------------------------------


@pytest.mark.parametrize("leaf_model", ["constant", "linear"])
@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_threads_give_the_same_tree(lookahead, leaf_model):
    X, y, w = wide_frame(7, n=400, k_a=70, k_b=90 if lookahead == 2 else 150)
    kw = dict(max_depth=3, lookahead_depth=lookahead, leaf_model=leaf_model,
              leaf_penalty=1e-3, regression_features=[0], min_samples_leaf=5)
    one, c1 = _fit_tree(CLARITreeRegressor(n_jobs=1, **kw), X, y, sample_weight=w)
    two, c2 = _fit_tree(CLARITreeRegressor(n_jobs=2, **kw), X, y, sample_weight=w)
    if lookahead and openmp_enabled():
        assert c2["n_threads"] == 2 and min(c2["n_evaluations_per_thread"]) > 0
    assert one.tree_.is_categorical.any()
    assert_same_tree(one, two)


@pytest.mark.parametrize("lookahead", [1, 2])
def test_anytime_search_takes_the_same_splits(lookahead):
    """With a time limit the greedy split is scored first (found among the
    candidates by its bin): an unhurried search still gives the same tree."""
    X, y, w = wide_frame(4, n=400, k_a=70, k_b=90 if lookahead == 2 else 150)
    kw = dict(max_depth=3, lookahead_depth=lookahead, regression_features=[0],
              min_samples_leaf=5, leaf_penalty=1e-3)
    plain = CLARITreeRegressor(**kw).fit(X, y, sample_weight=w)
    timed = CLARITreeRegressor(time_limit=600.0, **kw).fit(X, y, sample_weight=w)
    assert timed.search_complete_
    assert plain.tree_.is_categorical.any()
    assert_same_tree(plain, timed)


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_path_equals_separate_fits(lookahead):
    X, y, w = wide_frame(3, n=400, k_a=70, k_b=90 if lookahead == 2 else 120)
    kw = dict(max_depth=3, lookahead_depth=lookahead, regression_features=[0],
              min_samples_leaf=5)
    lams = [3e-2, 3e-3, 1e-4]
    fitted, _ = _fit_tree(CLARITreeRegressor(**kw), X, y, sample_weight=w,
                          leaf_penalties=lams)
    assert any(f.tree_.is_categorical.any() for f in fitted)
    for lam, est in zip(lams, fitted, strict=True):
        alone = CLARITreeRegressor(leaf_penalty=lam, **kw).fit(X, y, sample_weight=w)
        assert_same_tree(est, alone)


@pytest.fixture(scope="module")
def wide_model():
    X, y, w = wide_frame(11, n=1200)
    model = CLARITreeRegressor(max_depth=3, lookahead_depth=1, regression_features=[0],
                               leaf_penalty=1e-3).fit(X, y, sample_weight=w)
    assert model.tree_.is_categorical.sum() >= 2
    return model, X


def test_round_trip_and_unseen_levels(wide_model):
    model, X = wide_model
    clone = from_dict(json.loads(json.dumps(to_dict(model), allow_nan=False)))
    new = X.copy()
    new.loc[new.index[:40], "a"] = "never seen"
    new.loc[new.index[40:80], "b"] = "not a level"
    for frame in (X, new):
        np.testing.assert_array_equal(clone.predict(frame), model.predict(frame))
        np.testing.assert_array_equal(clone.apply(frame), model.apply(frame))
    np.testing.assert_array_equal(clone.tree_.categories_left, model.tree_.categories_left)
    # An unseen level goes where a missing value goes, at every node.
    gone = X.copy()
    gone.loc[gone.index[:40], "a"] = None
    gone.loc[gone.index[40:80], "b"] = None
    np.testing.assert_array_equal(model.apply(new), model.apply(gone))
    np.testing.assert_array_equal(model.predict(new), model.predict(gone))
    # The tree's own routing rule gives the same leaves.
    enc = model._preparation.transform(model, new)
    leaves = model.apply(new)
    for i in range(0, len(new), 7):
        assert route(model.tree_, enc[i]) == leaves[i]


def test_exports_name_the_node_sets(wide_model):
    model, X = wide_model
    tree = model.tree_
    text = export_text(model)
    dot = export_graphviz(model)
    # The levels of each feature that can reach each node (ancestors' sets).
    reach = {0: {f: set(range(len(model.categories_[f])))
                 for f in np.flatnonzero(model.is_categorical_)}}
    for node in range(tree.node_count):
        if tree.children_left[node] == TREE_LEAF:
            continue
        f = tree.feature[node]
        left = set(bitset_codes(tree.categories_left[node]).tolist())
        for child, side in ((tree.children_left[node], True),
                            (tree.children_right[node], False)):
            reach[child] = {g: set(v) for g, v in reach[node].items()}
            if tree.is_categorical[node]:
                reach[child][f] &= left if side else reach[node][f] - left
            if tree.is_categorical[node]:
                codes = sorted(reach[node][f] & left if side else reach[node][f] - left)
                listed = "{" + ", ".join(str(model.categories_[f][c]) for c in codes) + "}"
                assert listed in text and listed in dot
    table = leaf_table(model)
    categorical = {name: {str(v) for v in model.categories_[j]}
                   for j, name in enumerate(X.columns) if model.is_categorical_[j]}
    leaves = model.apply(X)
    for leaf, rule in zip(table["leaf"], table["rule"], strict=True):
        mask = np.logical_and.reduce([evaluate_clause(c, X, categorical)
                                      for c in split_top(rule, " and ")])
        np.testing.assert_array_equal(mask, leaves == leaf, err_msg=rule)
