"""sample_weight: integer weights are repeated rows, zero weights dropped rows."""

import numpy as np
import pandas as pd
import pytest
from clarytree._splitter import SearchRoute

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._classes import _fit_tree

ROUTES = {
    "histogram": (256, SearchRoute.AUTO),
    "bulk": (0, SearchRoute.BULK),
    "incremental": (0, SearchRoute.INCREMENTAL),
}


def weighted_data(seed, n=160):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] > 0.2, 2 * X[:, 1], -X[:, 2]) + (X[:, 1] > 0) \
        + 0.3 * rng.normal(size=n)
    w = rng.integers(0, 5, size=n)
    return X, y, w


def make(lookahead, leaf_model, **kw):
    kw = dict(max_depth=3, leaf_model=leaf_model, n_thresholds=8, min_samples_leaf=35,
              leaf_penalty=1e-4, ridge_alpha=1e-3, **kw)
    if lookahead == 0:
        return CholeskyTreeRegressor(**kw)
    return CLARITreeRegressor(lookahead_depth=lookahead, **kw)


def fit(model, X, y, w=None, route="histogram"):
    bins, how = ROUTES[route]
    return _fit_tree(model, X, y, w, route=how, max_hist_bins=bins)[0]


def assert_same_tree(a, b):
    ta, tb = a.tree_, b.tree_
    np.testing.assert_array_equal(ta.feature, tb.feature)
    np.testing.assert_array_equal(ta.children_left, tb.children_left)
    np.testing.assert_array_equal(ta.threshold, tb.threshold)
    np.testing.assert_array_equal(ta.missing_go_left, tb.missing_go_left)
    np.testing.assert_allclose(ta.weighted_n_node_samples, tb.weighted_n_node_samples)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(ta.node_objective, tb.node_objective, rtol=1e-8, atol=1e-10)


CASES = [(lookahead, leaf_model, route) for lookahead in (0, 1, 2)
         for leaf_model in ("linear", "constant") for route in ROUTES
         if not (route == "incremental" and leaf_model == "constant")]   # ridge only


@pytest.mark.parametrize("lookahead, leaf_model, route", CASES)
def test_integer_weights_equal_repeated_rows(lookahead, leaf_model, route):
    X, y, w = weighted_data(0)
    rep = np.repeat(np.arange(len(y)), w)
    repeated = fit(make(lookahead, leaf_model), X[rep], y[rep], route=route)
    weighted = fit(make(lookahead, leaf_model), X, y, w, route=route)
    assert repeated.get_n_leaves() >= 4
    assert_same_tree(repeated, weighted)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-9,
                               atol=1e-9)


def test_every_rule_binds_in_the_repetition_test():
    """min_samples_leaf and the quantile pool both change the tree here."""
    X, y, w = weighted_data(0)
    weighted = fit(make(1, "linear"), X, y, w)
    # min_samples_leaf binds: without it the tree differs, and some leaf of
    # the weighted tree holds fewer than 35 rows but at least 35 weight.
    loose = fit(make(1, "linear").set_params(min_samples_leaf=1), X, y, w)
    assert not np.array_equal(loose.tree_.threshold, weighted.tree_.threshold) \
        or loose.get_n_leaves() != weighted.get_n_leaves()
    tree = weighted.tree_
    leaves = tree.children_left < 0
    assert np.all(tree.weighted_n_node_samples[leaves] >= 35)
    assert tree.n_node_samples[leaves].min() < 35
    # The pool binds: the weighted quantiles differ from those of the distinct rows.
    unweighted = fit(make(1, "linear"), X[w > 0], y[w > 0])
    assert any(not np.array_equal(a, b) for a, b in
               zip(weighted.thresholds_, unweighted.thresholds_, strict=True))
    # And the weighted leaf sizes count weight, not rows.
    assert np.any(tree.n_node_samples[leaves] != tree.weighted_n_node_samples[leaves])


def test_weighted_pool_keeps_the_sign_of_zero_of_the_repeated_rows():
    # The median lands on a -0.0 of the data: the repeated rows' pool holds
    # +0.0, and so does the weighted one, so the exports print the same
    # "<= 0.0".
    from clarytree._thresholds import threshold_pool

    x = np.array([-3.0, -2.0, -1.0, -0.0, 1.0, 2.0, 3.0])
    w = np.full(x.shape, 2.0)
    repeated = threshold_pool(np.repeat(x, 2), 1)
    weighted = threshold_pool(x, 1, sample_weight=w)
    np.testing.assert_array_equal(weighted, [0.0])
    np.testing.assert_array_equal(np.signbit(weighted), np.signbit(repeated))


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
def test_zero_weights_equal_dropped_rows(leaf_model):
    X, y, _ = weighted_data(1)
    w = np.ones(len(y))
    w[::4] = 0.0
    dropped = make(1, leaf_model).fit(X[w > 0], y[w > 0])
    weighted = make(1, leaf_model).fit(X, y, sample_weight=w)
    for name in ("feature", "threshold", "children_left", "node_objective", "coef"):
        np.testing.assert_array_equal(getattr(weighted.tree_, name),
                                      getattr(dropped.tree_, name))
    assert weighted.objective_ == dropped.objective_


def test_weights_on_a_mixed_table_equal_repeated_rows():
    rng = np.random.default_rng(2)
    n = 200
    color = rng.choice(["red", "green", "blue"], size=n).astype(object)
    x = rng.normal(size=n)
    y = np.where(color == "red", 2 * x, -x) + 0.2 * rng.normal(size=n)
    x[rng.random(n) < 0.15] = np.nan
    color[rng.random(n) < 0.1] = None
    X = pd.DataFrame({"color": color, "x": x})
    w = rng.integers(0, 4, size=n)
    rep = np.repeat(np.arange(n), w)
    kw = dict(max_depth=2, min_samples_leaf=20, n_thresholds=6)
    repeated = CLARITreeRegressor(**kw).fit(X.iloc[rep].reset_index(drop=True), y[rep])
    weighted = CLARITreeRegressor(**kw).fit(X, y, sample_weight=w)
    assert_same_tree(repeated, weighted)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-9)


def test_weighted_objective_matches_its_definition():
    """sum_leaves [sum w (y - f)^2 + W kappa ||beta_std||^2] + lambda TSS_w leaves."""
    X, y, w = weighted_data(3)
    w = w + rng_uniform(len(y))          # non-integer weights
    model = make(1, "linear").fit(X, y, sample_weight=w)
    W = w.sum()
    mean = (w @ X) / W
    std = np.sqrt((w @ (X - mean) ** 2) / W)
    beta = model.leaf_coefs_ * std
    sse = float(w @ (y - model.predict(X)) ** 2)
    ybar = (w @ y) / W
    tss = float(w @ (y - ybar) ** 2)
    expected = sse + W * model.ridge_alpha * float((beta ** 2).sum()) \
        + model.leaf_penalty * tss * model.get_n_leaves()
    assert model.objective_ == pytest.approx(expected, rel=1e-9)


def rng_uniform(n):
    return np.random.default_rng(9).uniform(0.1, 0.9, size=n)


@pytest.mark.parametrize("weight, match", [
    (lambda n: np.r_[np.ones(n - 1), -1.0], "non-negative"),
    (lambda n: np.r_[np.ones(n - 1), np.nan], "finite"),
    (lambda n: np.ones(n - 1), "shape"),
    (lambda n: np.zeros(n), "zero"),
    (lambda n: np.full(n, 1e307), "more than float64 holds"),
    (lambda n: [1] * (n - 1) + [10**400], "beyond float64"),      # was an OverflowError
    (lambda n: 10**400, "beyond float64"),
])
def test_bad_sample_weight(weight, match):
    X, y, _ = weighted_data(4, n=40)
    with pytest.raises(ValueError, match=f"sample_weight.*{match}|{match}.*sample_weight"):
        CLARITreeRegressor().fit(X, y, sample_weight=weight(40))


def _coarse_problem(seed):
    # Small integer-valued tables with tied level means, exact fits and
    # missing cells: where rounding used to decide the tree.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    X = np.round(rng.normal(size=(n, 2)))
    X[:, 0] = rng.integers(0, int(rng.integers(2, 5)), size=n)
    if seed % 2:
        X[rng.random(n) < 0.2, 1] = np.nan
    y = np.where(X[:, 1] > 0, 2.0, X[:, 0] % 2) + (X[:, 0] == 1)
    if seed % 3 == 0:
        y = y + 0.1 * np.round(rng.normal(size=n), 1)
    w = rng.integers(0, 4, size=n).astype(float)
    w[0] = 1.0
    return X, y, w


@pytest.mark.parametrize("lookahead", [0, 1])
@pytest.mark.parametrize("leaf_penalty", [0.0, 1e-4, 5e-3])
def test_ties_decided_alike_for_weights_and_repeated_rows(lookahead, leaf_penalty):
    """Rounding must not decide the tree: weights and repeated rows sum differently.

    Three ties that the summation route used to break: two levels with the
    same mean target (their order decides the candidate level sets), a
    child's bin or missing bin left with rounding noise by the subtraction
    from its parent (taken as present), and a split of an exact fit at a zero
    leaf penalty (a gain of rounding noise).
    """
    for seed in range(120):
        X, y, w = _coarse_problem(seed)
        rep = np.repeat(np.arange(len(y)), w.astype(int))
        for categorical in ([0], []):
            kw = dict(max_depth=4, leaf_model="constant", leaf_penalty=leaf_penalty,
                      n_thresholds=None, min_samples_leaf=1 + seed % 4,
                      categorical_features=categorical)
            model = make(lookahead, "constant").set_params(**kw)
            weighted = model.fit(X, y, sample_weight=w)
            tree = weighted.tree_
            repeated = make(lookahead, "constant").set_params(**kw).fit(X[rep], y[rep])
            for name in ("feature", "children_left", "threshold", "missing_go_left"):
                np.testing.assert_array_equal(getattr(tree, name),
                                              getattr(repeated.tree_, name),
                                              err_msg=f"{name}, seed {seed}")
            X_new = np.array([[0.0, np.nan], [1.0, 0.5], [3.0, -0.5], [2.0, 9.0]])
            np.testing.assert_allclose(weighted.predict(X_new), repeated.predict(X_new),
                                       rtol=1e-9, atol=1e-9)
            if leaf_penalty == 0.0:
                # No node whose rows share one target value is split.
                leaf_of = weighted.apply(X)
                for node in np.flatnonzero(tree.children_left >= 0):
                    below = np.isin(leaf_of, _leaves_below(tree, node)) & (w > 0)
                    assert np.ptp(y[below]) > 0, f"pure node {node} split, seed {seed}"


def _leaves_below(tree, node):
    stack, leaves = [node], []
    while stack:
        k = stack.pop()
        if tree.children_left[k] < 0:
            leaves.append(k)
        else:
            stack += [tree.children_left[k], tree.children_right[k]]
    return leaves


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.15])
def test_fractional_min_samples_leaf(fraction):
    # A fraction is scikit-learn's ceil(fraction * n_samples) rows, and of
    # the total weight with sample_weight (so integer weights still equal
    # repeated rows).
    X, y, w = weighted_data(0)
    n = len(y)
    as_fraction = make(1, "linear").set_params(min_samples_leaf=fraction).fit(X, y)
    as_rows = make(1, "linear").set_params(
        min_samples_leaf=int(np.ceil(fraction * n))).fit(X, y)
    assert as_fraction.min_samples_leaf_ == np.ceil(fraction * n)
    assert_same_tree(as_fraction, as_rows)
    leaves = as_fraction.tree_.children_left < 0
    assert as_fraction.tree_.n_node_samples[leaves].min() >= fraction * n
    rep = np.repeat(np.arange(n), w)
    repeated = make(1, "linear").set_params(min_samples_leaf=fraction).fit(X[rep], y[rep])
    weighted = make(1, "linear").set_params(min_samples_leaf=fraction).fit(
        X, y, sample_weight=w)
    assert weighted.min_samples_leaf_ == np.ceil(fraction * w.sum())
    assert repeated.get_n_leaves() >= 3
    assert_same_tree(repeated, weighted)


@pytest.mark.parametrize("fraction", [0.07, 0.14, 0.28])
def test_fraction_rounding_just_above_an_integer_takes_the_ceiling(fraction):
    # 0.07 * 100 is 7.000000000000001 in floating point: scikit-learn's
    # ceil makes that 8 rows, and so must the fraction here (rows, and
    # integer weights as their repeated rows); no relative slack admits 7.
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(100, 1))
    y = X[:, 0] + 0.1 * rng.normal(size=100)
    need = int(np.ceil(fraction * 100))
    assert need > round(fraction * 100)
    params = dict(max_depth=6, leaf_model="constant", leaf_penalty=0.0, n_thresholds=None,
                  min_samples_leaf=fraction)
    ours = CholeskyTreeRegressor(**params).fit(X, y)
    theirs = DecisionTreeRegressor(max_depth=6, min_samples_leaf=fraction).fit(X, y)
    assert ours.min_samples_leaf_ == need
    leaves = ours.tree_.children_left < 0
    assert ours.tree_.n_node_samples[leaves].min() >= need
    assert theirs.tree_.n_node_samples[theirs.tree_.children_left < 0].min() >= need
    weighted = CholeskyTreeRegressor(**params).fit(X, y, sample_weight=np.ones(100))
    assert weighted.min_samples_leaf_ == need


def test_fractional_min_samples_leaf_below_the_lightest_row_is_one_row():
    # Weights of 0.5 and a tiny fraction: the least leaf weight is one row's,
    # so the tree is the unweighted one with min_samples_leaf=1 (every
    # midpoint a threshold, so the pools agree too).
    X, y, _ = weighted_data(3)
    w = np.full(len(y), 0.5)
    params = dict(n_thresholds=None, leaf_penalty=0.0, max_depth=10)
    fitted = make(0, "constant").set_params(min_samples_leaf=1e-6, **params).fit(
        X, y, sample_weight=w)
    assert fitted.min_samples_leaf_ == 0.5
    one_row = make(0, "constant").set_params(min_samples_leaf=1, **params).fit(X, y)
    assert one_row.tree_.n_node_samples[one_row.tree_.children_left < 0].min() == 1
    for name in ("feature", "threshold", "children_left", "children_right"):
        np.testing.assert_array_equal(getattr(fitted.tree_, name),
                                      getattr(one_row.tree_, name))
    np.testing.assert_allclose(fitted.predict(X), one_row.predict(X), rtol=1e-12)


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.5])
def test_fractional_min_samples_leaf_out_of_range(value):
    X, y, _ = weighted_data(0)
    with pytest.raises(ValueError, match="min_samples_leaf"):
        CholeskyTreeRegressor(min_samples_leaf=value).fit(X, y)


@pytest.mark.parametrize("lookahead", [0, 1])
def test_huge_weights_fit_constant_leaves(lookahead):
    """Weights of 2**600 square past float64 in the constant leaves' sums.

    The tree must be that of weights 2**400 (whose squares fit: scaling by a
    power of two scales every sum exactly, and at this size the quantile
    pools are the same), the objective 2**200 times as large; it used to come
    out -inf, the tree a stump.
    """
    X, y, _ = weighted_data(4, n=120)
    w = np.random.default_rng(3).integers(1, 4, size=y.shape[0]).astype(float)
    params = dict(max_depth=3, min_samples_leaf=2)
    fits = [make(lookahead, "constant").set_params(**params).fit(
        X, y, sample_weight=w * 2.0**k) for k in (400, 600)]
    fitted, big = fits
    assert fitted.get_n_leaves() > 2
    np.testing.assert_array_equal(big.tree_.feature, fitted.tree_.feature)
    np.testing.assert_array_equal(big.tree_.threshold, fitted.tree_.threshold)
    np.testing.assert_allclose(big.objective_, fitted.objective_ * 2.0**200, rtol=1e-12)
    np.testing.assert_allclose(big.predict(X), fitted.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", [1e-6, 1e-12])
def test_tiny_weights_leave_the_intercept_unpenalized(scale):
    # Every term of the objective scales with the weights, and so does the
    # intercept's tiny ridge: rows weighing 1e-12 each fit the same leaf
    # models as rows weighing 1 (a fixed 1e-12 ridge would outweigh them and
    # push the intercept into the slopes).
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 12, size=(60, 1))
    y = np.where(X[:, 0] < 6, 0.0, 100.0) + 0.5 * X[:, 0]
    params = dict(max_depth=1, min_samples_leaf=0.1, leaf_penalty=0.0, n_thresholds=None)
    unit = CholeskyTreeRegressor(**params).fit(X, y, sample_weight=np.ones(60))
    tiny = CholeskyTreeRegressor(**params).fit(X, y, sample_weight=np.full(60, scale))
    for name in ("feature", "threshold", "children_left", "n_node_samples"):
        np.testing.assert_array_equal(getattr(tiny.tree_, name), getattr(unit.tree_, name))
    np.testing.assert_allclose(tiny.predict(X), unit.predict(X), rtol=1e-9, atol=1e-9)
    assert tiny.objective_ / scale == pytest.approx(unit.objective_, rel=1e-6)
