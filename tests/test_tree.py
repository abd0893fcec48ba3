"""CLARITree / CholeskyTree: objective values, search semantics, invariants."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from clarytree._splitter import SearchRoute
from clarytree._tree import TREE_LEAF
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_impl import ReferenceProblem

from clarytree import (
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    CLARITreeRegressorCV,
    export_text,
    leaf_penalty_path,
)
from clarytree._classes import _fit_tree


def make_data(seed, n=200, k=3, binary=1, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    if binary:
        X = np.column_stack([X, rng.integers(0, 2, size=(n, binary))])
    y = np.where(X[:, 0] > 0.3, 2 * X[:, 1], -X[:, 2 % k] + 1) + noise * rng.normal(size=n)
    if binary:
        y += 0.5 * X[:, -1]
    return X, y


def recomputed_objective(model, X, y):
    """Objective from the fitted tree's predictions and coefficients."""
    reg = model.regression_features_
    std = X[:, reg].std(axis=0)
    std[std < 1e-12] = 1.0
    sse = float(((y - model.predict(X)) ** 2).sum())
    beta_std = model.leaf_coefs_[:, reg] * std
    penalty = X.shape[0] * model.ridge_alpha * float((beta_std ** 2).sum())
    if model.leaf_model == "constant":
        penalty = 0.0
    tss = float(((y - y.mean()) ** 2).sum())
    return sse + penalty + model.leaf_penalty * tss * model.get_n_leaves()


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
@pytest.mark.parametrize("Estimator", [CholeskyTreeRegressor, CLARITreeRegressor])
def test_objective_matches_predictions(Estimator, leaf_model):
    X, y = make_data(0)
    model = Estimator(max_depth=3, leaf_model=leaf_model).fit(X, y)
    assert model.get_n_leaves() > 1
    assert model.objective_ == pytest.approx(recomputed_objective(model, X, y), rel=1e-9)


def test_node_objectives_equal_numpy_ridge_refits():
    """Every node's leaf objective equals an independent ridge refit of its rows."""
    X, y = make_data(1, n=300)
    model = CLARITreeRegressor(max_depth=3, leaf_penalty=1e-4).fit(X, y)
    ref = ReferenceProblem(X, y, leaf_penalty=1e-4)
    paths = model.decision_path(X).toarray().astype(bool)
    tree = model.tree_
    assert tree.node_count > 3
    for node in range(tree.node_count):
        rows = np.flatnonzero(paths[:, node])
        assert rows.shape[0] == tree.n_node_samples[node]
        assert tree.node_objective[node] == pytest.approx(ref.leaf_loss(rows), rel=1e-8)


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
def test_greedy_split_is_best_numpy_split(leaf_model):
    """The greedy root split minimizes the refit children losses over the pool."""
    X, y = make_data(2, n=150)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model=leaf_model,
                                  leaf_penalty=0.0).fit(X, y)
    ref = ReferenceProblem(X, y, leaf_model=leaf_model, leaf_penalty=0.0)
    scores = [(ref.leaf_loss(l) + ref.leaf_loss(r), f, t)
              for f, t, l, r in ref.candidates(np.arange(len(y)))]
    best = min(s[0] for s in scores)
    first = next(s for s in scores if s[0] <= best * (1 + 1e-12))
    assert model.tree_.feature[0] == first[1]
    assert model.tree_.threshold[0] == first[2]
    assert model.objective_ == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
@pytest.mark.parametrize("seed", range(3))
def test_greedy_matches_bruteforce_greedy(seed, leaf_model):
    X, y = make_data(seed, n=120)
    kwargs = dict(leaf_model=leaf_model, leaf_penalty=1e-3, ridge_alpha=1e-3,
                  n_thresholds=6)
    model = CholeskyTreeRegressor(max_depth=3, **kwargs).fit(X, y)
    ref = ReferenceProblem(X, y, **kwargs)
    assert model.objective_ == pytest.approx(ref.greedy(np.arange(len(y)), 3), rel=1e-9)


def test_constant_leaves_zero_penalty_sse_matches_bruteforce():
    """With lambda = 0, constant leaves reach the brute-force greedy SSE."""
    X, y = make_data(5, n=100, noise=1.0)
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant",
                                  leaf_penalty=0.0, n_thresholds=8).fit(X, y)
    ref = ReferenceProblem(X, y, leaf_model="constant", leaf_penalty=0.0, n_thresholds=8)
    sse = float(((y - model.predict(X)) ** 2).sum())
    assert sse == pytest.approx(ref.greedy(np.arange(len(y)), 3), rel=1e-9)


small_data = st.tuples(
    st.integers(0, 2**31 - 1), st.integers(25, 60), st.integers(1, 3),
    st.sampled_from(["linear", "constant"]),
    st.sampled_from([0.0, 1e-3, 1e-2]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_data, st.integers(1, 3))
def test_exhaustive_lookahead_equals_bruteforce(data, depth):
    seed, n, k, leaf_model, lam = data
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, k)), 1)
    y = np.sin(2 * X[:, 0]) + X[:, -1] * (X[:, 0] > 0) + 0.3 * rng.normal(size=n)
    kwargs = dict(leaf_model=leaf_model, leaf_penalty=lam, ridge_alpha=1e-2,
                  n_thresholds=4, min_samples_leaf=3)
    model = CLARITreeRegressor(max_depth=depth, lookahead_depth=depth, **kwargs).fit(X, y)
    ref = ReferenceProblem(X, y, **kwargs)
    assert model.objective_ == pytest.approx(ref.optimal(np.arange(n), depth), rel=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_data, st.integers(2, 4))
def test_lookahead_never_worse_than_greedy(data, depth):
    seed, n, k, leaf_model, lam = data
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * n, k))
    y = np.abs(X[:, 0]) * X[:, -1] + (X[:, 0] > 0.5) + 0.2 * rng.normal(size=3 * n)
    kwargs = dict(max_depth=depth, leaf_model=leaf_model, leaf_penalty=lam,
                  n_thresholds=8)
    greedy = CholeskyTreeRegressor(**kwargs).fit(X, y).objective_
    look = CLARITreeRegressor(lookahead_depth=1, **kwargs).fit(X, y).objective_
    deeper = CLARITreeRegressor(lookahead_depth=2, **kwargs).fit(X, y).objective_
    assert look <= greedy * (1 + 1e-9)
    # Objectives: greedy_completion is monotone in the search effort here
    # only through the first levels, so compare each against greedy.
    assert deeper <= greedy * (1 + 1e-9)


@pytest.mark.parametrize("n_thresholds", [5, None])
def test_search_routes_agree(n_thresholds):
    """Histogram, bulk-sweep and rank-one-sweep searches give one objective."""
    X, y = make_data(7, n=400, k=4)
    objectives, thresholds = [], []
    for max_hist_bins, route in [(256, SearchRoute.AUTO), (0, SearchRoute.BULK),
                                 (0, SearchRoute.INCREMENTAL), (0, SearchRoute.AUTO)]:
        model = CLARITreeRegressor(max_depth=3, n_thresholds=n_thresholds,
                                   leaf_penalty=1e-4)
        _fit_tree(model, X, y, route=route, max_hist_bins=max_hist_bins)
        objectives.append(model.objective_)
        thresholds.append(model.tree_.threshold)
    np.testing.assert_allclose(objectives, objectives[0], rtol=1e-10)
    # Deeper nodes may resolve genuine near-ties differently (last-bit
    # rounding of the two routes); the root split is clear-cut here.
    assert len({t[0] for t in thresholds}) == 1


def test_thresholds_route_rows_like_the_model():
    X, y = make_data(3)
    model = CLARITreeRegressor(max_depth=3).fit(X, y)
    tree = model.tree_
    leaves = model.apply(X)
    # Manual routing with the stored thresholds reproduces apply().
    for i in range(0, len(y), 7):
        node = 0
        while tree.children_left[node] != TREE_LEAF:
            go_left = X[i, tree.feature[node]] <= tree.threshold[node]
            node = tree.children_left[node] if go_left else tree.children_right[node]
        assert node == leaves[i]
    # A split threshold is the smallest pool value inducing its partition.
    for node in np.flatnonzero(tree.children_left != TREE_LEAF):
        f = tree.feature[node]
        pool = model.thresholds_[f]
        assert tree.threshold[node] in pool


def test_split_only_and_regression_features():
    X, y = make_data(4, binary=2)
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    np.testing.assert_array_equal(model.regression_features_, [0, 1, 2])
    np.testing.assert_array_equal(model.split_only_features_, [3, 4])
    assert np.all(model.leaf_coefs_[:, 3:] == 0)
    assert model.min_samples_leaf_ == 15
    only = CLARITreeRegressor(max_depth=2, regression_features=[1]).fit(X, y)
    np.testing.assert_array_equal(only.regression_features_, [1])
    assert np.all(only.leaf_coefs_[:, [0, 2, 3, 4]] == 0)
    none = CLARITreeRegressor(max_depth=2, regression_features=None).fit(X, y)
    assert np.all(none.leaf_coefs_ == 0)
    const = CLARITreeRegressor(max_depth=2, leaf_model="constant").fit(X, y)
    assert const.min_samples_leaf_ == 1 and np.all(const.leaf_coefs_ == 0)


def test_pandas_names_and_pickle():
    pd = pytest.importorskip("pandas")
    X, y = make_data(6, binary=1)
    df = pd.DataFrame(X, columns=["a", "b", "c", "flag"])
    model = CLARITreeRegressor(max_depth=3, regression_features=["a", "b"]).fit(df, y)
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c", "flag"])
    np.testing.assert_array_equal(model.regression_features_, [0, 1])
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(df), model.predict(df))
    with pytest.raises(ValueError, match="not in X"):
        CLARITreeRegressor(regression_features=["zzz"]).fit(df, y)
    # A set of names (or indices) selects the same columns.
    for chosen in ({"b", "a"}, {1, 0}):
        as_set = CLARITreeRegressor(max_depth=3, regression_features=chosen).fit(df, y)
        np.testing.assert_array_equal(as_set.regression_features_, [0, 1])


def test_exact_fit_of_piecewise_linear_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = np.where(X[:, 0] <= 0.1, 3 * X[:, 1] + 1, -2 * X[:, 1])
    model = CLARITreeRegressor(max_depth=2, ridge_alpha=1e-10, n_thresholds=None,
                               leaf_penalty=1e-3).fit(X, y)
    assert model.get_n_leaves() == 2
    assert model.tree_.feature[0] == 0
    np.testing.assert_allclose(model.predict(X), y, atol=1e-5)
    np.testing.assert_allclose(sorted(model.leaf_coefs_[:, 1]), [-2, 3], atol=1e-5)


# -- bad input -------------------------------------------------------------

@pytest.mark.parametrize("Estimator", [CholeskyTreeRegressor, CLARITreeRegressor])
def test_bad_input(Estimator):
    X, y = make_data(0, n=50)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Estimator().fit(Xi, y)
    yn = y.copy()
    yn[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Estimator().fit(X, yn)
    with pytest.raises(ValueError, match="0 sample"):
        Estimator().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        Estimator().fit(X, y[:-1])
    with pytest.raises(ValueError, match="ridge_alpha must be > 0"):
        Estimator(ridge_alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="max_depth"):
        Estimator(max_depth=-1).fit(X, y)
    with pytest.raises(ValueError, match="leaf_model"):
        Estimator(leaf_model="cubic").fit(X, y)
    with pytest.raises(ValueError, match="n_thresholds"):
        Estimator(n_thresholds=0).fit(X, y)
    model = Estimator(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError):
        Estimator().fit(np.array([["a", "b"], ["c", "d"]]), [1.0, 2.0])


@pytest.mark.parametrize("Estimator", [CholeskyTreeRegressor, CLARITreeRegressor])
def test_degenerate_data_gives_correct_models(Estimator):
    X, y = make_data(0, n=60)
    one = Estimator().fit(X[:1], y[:1])
    assert one.get_n_leaves() == 1
    assert one.predict(X[:1])[0] == pytest.approx(y[0])
    few = Estimator().fit(X[:20], y[:20])    # fewer than 2 * min_samples_leaf = 30
    assert few.get_n_leaves() == 1
    const_y = Estimator().fit(X, np.full(60, 3.5))
    assert const_y.get_n_leaves() == 1
    np.testing.assert_allclose(const_y.predict(X), 3.5)
    Xc = X.copy()
    Xc[:, 1] = 7.0
    model = Estimator(max_depth=2).fit(Xc, y)
    assert 1 not in model.tree_.feature
    assert np.all(np.isfinite(model.predict(Xc)))
    binary_only = (X > 0).astype(float)
    model = Estimator(max_depth=2).fit(binary_only, y)
    assert model.regression_features_.size == 0
    assert np.all(np.isfinite(model.predict(binary_only)))


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
@pytest.mark.parametrize("x_scale, y_scale", [
    (1e200, 1.0), (1e-200, 1.0), (1e-14, 1.0), (1.0, 1e160), (1.0, 1e-160),
    (1e-100, 1e100), (3.0, 0.1),
])
def test_fit_is_scale_equivariant_at_extreme_magnitudes(leaf_model, x_scale, y_scale):
    """Units must not matter: no overflowing squares, no tiny column taken as constant."""
    X, y = make_data(3, n=240)
    units = np.array([x_scale, x_scale, x_scale, 1.0])    # the 0/1 column stays binary
    base = CLARITreeRegressor(max_depth=3, leaf_model=leaf_model).fit(X, y)
    # Underflow is allowed: objectives of a 1e-160 target are below the normal range.
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        model = CLARITreeRegressor(max_depth=3, leaf_model=leaf_model).fit(
            X * units, y * y_scale)
        pred = model.predict(X * units)
    tree, ref = model.tree_, base.tree_
    np.testing.assert_array_equal(tree.feature, ref.feature)
    np.testing.assert_array_equal(tree.children_left, ref.children_left)
    internal = ref.feature >= 0
    np.testing.assert_allclose(tree.threshold[internal] / units[ref.feature[internal]],
                               ref.threshold[internal], rtol=1e-12)
    np.testing.assert_allclose(pred / y_scale, base.predict(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.leaf_coefs_ * units / y_scale, base.leaf_coefs_,
                               rtol=1e-9, atol=1e-12)
    expected = base.objective_ * y_scale * y_scale
    if 1e-290 < expected < 1e290:       # else not representable in y's units
        assert model.objective_ == pytest.approx(expected, rel=1e-10)


def test_power_of_two_target_scaling_is_exact():
    """The target is rescaled by powers of two inside: objectives scale exactly."""
    X, y = make_data(4, n=240)
    base = CLARITreeRegressor(max_depth=3).fit(X, y)
    model = CLARITreeRegressor(max_depth=3).fit(X, y * 2.0**40)
    assert model.objective_ == base.objective_ * 2.0**80
    np.testing.assert_array_equal(model.tree_.node_objective,
                                  base.tree_.node_objective * 2.0**80)


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
def test_exact_ties_go_to_the_first_feature(leaf_model):
    """Splitting x0 then x1 or x1 then x0 gives the same four leaves: a tie.

    The lookahead must resolve it by feature order, whatever the rounding of
    the two completions, so swapping the columns swaps the root feature.
    """
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, size=(400, 2))
    z = rng.normal(size=400)
    y = 2.0 * (a[:, 0] > 0) + 3.0 * (a[:, 1] > 0) + 0.5 * z
    for columns in ([0, 1], [1, 0]):
        X = np.column_stack([a[:, columns], z])
        model = CLARITreeRegressor(max_depth=2, leaf_model=leaf_model, n_thresholds=1,
                                   regression_features=[2]).fit(X, y)
        assert model.get_n_leaves() == 4
        assert model.tree_.feature[0] == 0


def test_warns_when_no_split_is_admissible():
    """1,000 rows x 100 features: min_samples_leaf='auto' is 500, the tree one leaf."""
    from clarytree._classes import UnsplittableWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 100))
    y = np.where(X[:, 0] > 0, X[:, 1], -X[:, 1])
    with pytest.warns(UnsplittableWarning, match=r"min_samples_leaf = 500.*regression_features"):
        model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    assert model.get_n_leaves() == 1
    # The remedy works, and a fit that can split stays silent.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsplittableWarning)
        model = CholeskyTreeRegressor(max_depth=2, regression_features=[1]).fit(X, y)
        assert model.get_n_leaves() > 1
        CholeskyTreeRegressor(max_depth=0).fit(X[:20], y[:20])  # no split asked for
    with pytest.warns(UnsplittableWarning, match="constant"):
        CholeskyTreeRegressor(max_depth=2).fit(np.ones((50, 2)), y[:50])
    # A column of only missing values has a missing bin but nothing to
    # split: "constant or missing", not min_samples_leaf (already 1 here).
    for nan_X in (np.full((50, 2), np.nan), np.c_[np.full(50, np.nan), np.ones(50)]):
        with pytest.warns(UnsplittableWarning, match="every column of X is constant or "
                          "entirely missing.*at least one varying column"):
            CholeskyTreeRegressor(max_depth=2, min_samples_leaf=1).fit(nan_X, y[:50])
    # Missing against present is a split: silent.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsplittableWarning)
        one_value = np.where(np.arange(50) % 2, 1.0, np.nan)[:, None]
        assert CholeskyTreeRegressor(max_depth=1, min_samples_leaf=1, leaf_penalty=0.0).fit(
            one_value, y[:50]).get_n_leaves() == 2
    with pytest.warns(UnsplittableWarning, match="X has 50 rows.*lower min_samples_leaf"):
        CholeskyTreeRegressor(max_depth=2, min_samples_leaf=30).fit(X[:50, :2], y[:50])
    # Enough rows in all, but every threshold leaves too few on one side
    # (a column that takes its rarer value 10 times out of 50).
    skewed = np.r_[np.zeros(40), np.ones(10)][:, None]
    with pytest.warns(UnsplittableWarning, match=r"no threshold leaves min_samples_leaf = 20 "
                      r"of the 50 rows on both sides"):
        CholeskyTreeRegressor(max_depth=2, min_samples_leaf=20).fit(skewed, y[:50])
    with pytest.warns(UnsplittableWarning, match=r"no threshold leaves min_samples_leaf = 20 "
                      r"of the total sample_weight of 50 on both sides"):
        CholeskyTreeRegressor(max_depth=2, min_samples_leaf=20).fit(
            skewed, y[:50], sample_weight=np.r_[np.full(25, 0.5), np.full(25, 1.5)])
    # A categorical column: the claim is about its candidates, the prefixes
    # of the node's order ({a, c} vs {b} would pass, but is not a prefix of
    # a, b, c by mean target); it said "no threshold leaves ...".
    levels = pd.DataFrame({"c": ["a"] + ["b"] * 10 + ["c"]})
    with pytest.warns(UnsplittableWarning, match=r"no candidate split \(a threshold, or a "
                      r"prefix of a categorical column's levels in the node's order\) leaves "
                      r"min_samples_leaf = 2 of the 12 rows"):
        CholeskyTreeRegressor(max_depth=1, leaf_model="constant", min_samples_leaf=2).fit(
            levels, np.r_[0.0, np.full(10, 5.0), 5.2])
    # Weights normalized to sum 1: the message says they count as rows.
    with pytest.warns(UnsplittableWarning, match=r"total sample_weight of 1\b.*"
                      r"threshold quantiles.*sums to 1 over 1000 rows; rescale it"):
        CholeskyTreeRegressor(max_depth=2, regression_features=[1]).fit(
            X, y, sample_weight=np.full(1000, 1e-3))
    # Also when min_samples_leaf is a fraction: the quantiles of a total
    # weight of 1 are all the smallest value.
    with pytest.warns(UnsplittableWarning, match=r"no threshold leaves min_samples_leaf = "
                      r"0.02 of the total sample_weight of 1 .*rescale it"):
        CholeskyTreeRegressor(max_depth=2, min_samples_leaf=0.02).fit(
            X, y, sample_weight=np.full(1000, 1e-3))
    # A total of at most 1 (rounding can leave w / w.sum() just below it, or
    # exactly at it) squeezes every quantile onto the smallest value, not
    # onto the largest, which would split nothing and blame constant columns.
    for total in (1.0, 0.5):
        w = np.random.default_rng(3).uniform(0.5, 1.5, 1000)
        w *= total / w.sum()
        with pytest.warns(UnsplittableWarning,
                          match=rf"no threshold leaves min_samples_leaf = {0.02 * total:g} "
                          rf"of the total sample_weight of {total:g} .*rescale it"):
            model = CholeskyTreeRegressor(max_depth=2, min_samples_leaf=0.02).fit(
                X, y, sample_weight=w)
        for f, pool in enumerate(model._preparation.thresholds_):
            smallest, second = np.unique(X[:, f])[:2]
            assert len(pool) and pool.min() >= smallest and pool.max() < second
    # Zero-weight rows are dropped: columns that vary only through them are
    # constant for the fit, and the message says why.
    with pytest.warns(UnsplittableWarning, match=r"constant over the 3 rows with positive "
                      r"sample_weight \(997 of weight 0 do not count\).*give positive weight"):
        CholeskyTreeRegressor(max_depth=2, min_samples_leaf=1).fit(
            np.r_[np.ones((3, 2)), X[3:, :2]], y, sample_weight=np.r_[np.ones(3), np.zeros(997)])


def test_unsplittable_warning_with_categorical_columns():
    """A categorical column splits by prefixes of the root's order of its
    levels, not of their codes: levels a, b, c of 2, 20 and 2 rows split
    {b} | {a, c} at min_samples_leaf = 4, and the fit stays silent; where the
    order's prefixes all fail it warns (levels of 30, 40, 30 rows with y
    0, 1, 2 at 35: {a} and {a, b} only), also with fractional weights."""
    pd = pytest.importorskip("pandas")
    from clarytree._classes import UnsplittableWarning

    y = np.r_[[10.0] * 2, [0.0] * 20, [10.0] * 2]
    for last in ("c", None):            # the missing rows are one more group
        X = pd.DataFrame({"c": pd.Series(["a"] * 2 + ["b"] * 20 + [last] * 2,
                                         dtype="category")})
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnsplittableWarning)
            model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant",
                                          min_samples_leaf=4).fit(X, y)
        assert model.get_n_leaves() == 2
        assert sorted(model.tree_.n_node_samples[1:]) == [4, 20]
    X = pd.DataFrame({"c": pd.Series(["a"] * 30 + ["b"] * 40 + ["c"] * 30, dtype="category")})
    y = np.r_[np.zeros(30), np.ones(40), np.full(30, 2.0)]
    with pytest.warns(UnsplittableWarning, match="min_samples_leaf = 35 of the 100 rows"):
        model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant",
                                      min_samples_leaf=35).fit(X, y)
    assert model.get_n_leaves() == 1
    X = pd.DataFrame({"c": pd.Series(["a", "b", "c"] * 10, dtype="category")})
    with pytest.warns(UnsplittableWarning, match="min_samples_leaf = 0.4"):
        model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant",
                                      min_samples_leaf=0.4).fit(
            X, np.arange(30.0), sample_weight=np.full(30, 1 / 30))
    assert model.get_n_leaves() == 1


def test_leaf_slopes_beyond_float64_are_an_error_naming_the_column():
    """Standardized columns keep the search finite; the slope per unit of a
    column in units of 1e-310 (or of 1e-200 against y in 1e120) is not."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1))
    y = 3 * x[:, 0] + 0.1 * rng.normal(size=200)
    small = CholeskyTreeRegressor(max_depth=1).fit(x * 2.0 ** -1000, y)   # still representable
    np.testing.assert_allclose(small.predict(x * 2.0 ** -1000),
                               CholeskyTreeRegressor(max_depth=1).fit(x, y).predict(x))
    for X, target in ((x * 1e-310, y), (x * 1e-200, y * 1e120)):
        frame = pd.DataFrame({"dose": X[:, 0], "flag": np.arange(200) % 2})
        with pytest.raises(ValueError, match=r"overflow float64 in the units of column\(s\) "
                                             r"'dose'.*regression_features"):
            CholeskyTreeRegressor(max_depth=1).fit(frame, target)
    # A representable slope of 1e299 on a column near 1e10: the intercept overflows.
    dev = rng.normal(size=200)
    with pytest.raises(ValueError, match=r"intercepts overflow.*centre those columns"):
        CholeskyTreeRegressor(max_depth=1).fit((1e10 + dev)[:, None], 1e299 * dev)


def test_uniform_pool_near_the_float64_maximum():
    """max - min overflows there: the pool is the scaled pool of the scaled data."""
    from clarytree._thresholds import threshold_pool

    x = np.random.default_rng(0).uniform(-1, 1, size=300)
    for scale in (2.0 ** 1023, 1.5e308, -1.7e308):
        pool = threshold_pool(x * scale, 7, "uniform")
        assert np.all(np.isfinite(pool)) and pool.shape == (7,)
        np.testing.assert_allclose(pool, np.sort(threshold_pool(x, 7, "uniform") * scale),
                                   rtol=0, atol=1e-14 * abs(scale))
    # Midpoints (few distinct values) of either sign.
    for pair in ([-1.79e308, -9e307], [9e307, 1.79e308], [-1.7e308, 1.7e308]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # the overflow is handled: no numpy warning
            pool = threshold_pool(np.repeat(pair, 5), 7, "quantile")
        assert pool.shape == (1,) and pair[0] < pool[0] < pair[1]
    # Ordinary magnitudes keep the bitwise pool.
    lo, hi = x.min(), x.max()
    edges = lo + (hi - lo) / 7 * np.arange(8)
    np.testing.assert_array_equal(threshold_pool(x, 7, "uniform"), (edges[:-1] + edges[1:]) / 2)
    y = np.where(x > 0.3, 5.0, 0.0)
    model = CholeskyTreeRegressor(max_depth=1, n_thresholds=7,
                                  threshold_strategy="uniform").fit(x[:, None] * 1.5e308, y)
    assert model.get_n_leaves() == 2


@pytest.mark.parametrize("lookahead", [0, 2])
def test_leaf_fits_that_do_not_factorize_are_solved_and_reported(lookahead):
    # A duplicated regression column and ridge_alpha far below float64's
    # resolution of the Gram diagonal: every leaf's ridge Gram matrix is
    # numerically singular.  Such leaves are solved with the diagonal raised
    # by a few rounding units, so each leaf predicts least squares on its
    # rows (not the raw right-hand side), the objective is finite and no
    # worse than a usable ridge's, and the fit says so.
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    X = np.c_[x, x, rng.normal(size=200)]
    y = np.abs(x) + 0.1 * rng.normal(size=200)
    params = dict(max_depth=2, lookahead_depth=lookahead, n_thresholds=7)
    with pytest.warns(UserWarning, match=r"could not be factorized at ridge_alpha=1e-30.*"
                                         r"ridge raised.*raise ridge_alpha"):
        tiny = CLARITreeRegressor(**params, ridge_alpha=1e-30).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        usable = CLARITreeRegressor(**params, ridge_alpha=1e-10).fit(X, y)
    assert np.isfinite(tiny.objective_)
    assert np.all(np.isfinite(tiny.tree_.node_objective))
    assert tiny.objective_ <= usable.objective_ * (1 + 1e-9)
    assert tiny.get_n_leaves() == usable.get_n_leaves() == 4
    leaves = tiny.apply(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        design = np.c_[np.ones(rows.sum()), X[rows]]
        beta = np.linalg.lstsq(design, y[rows], rcond=None)[0]
        np.testing.assert_allclose(tiny.predict(X[rows]), design @ beta, atol=1e-9)
    importances = tiny.feature_importances_
    assert np.all(np.isfinite(importances)) and importances.sum() == pytest.approx(1.0)
    with pytest.warns(UserWarning, match="could not be factorized"):
        path = leaf_penalty_path(CLARITreeRegressor(**params, ridge_alpha=1e-30), X, y,
                                 [0.0, 0.01])
    assert all(np.isfinite(est.objective_) for est in path)


def test_one_singular_leaf_is_least_squares_not_its_right_hand_side():
    # max_depth=0: the root's Gram matrix alone; before the fallback its
    # coefficients were the unsolved right-hand side (R^2 about -6e4).
    rng = np.random.default_rng(0)
    x0, x1 = rng.normal(size=(2, 240))
    X = np.c_[x0, x0, x1]
    y = np.sin(2 * x0) + x1 + 0.3 * rng.normal(size=240)
    with pytest.warns(UserWarning, match="could not be factorized"):
        model = CholeskyTreeRegressor(max_depth=0, ridge_alpha=1e-17).fit(X, y)
    design = np.c_[np.ones(240), X]
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(model.predict(X), design @ beta, atol=1e-9)
    loss = np.sum((y - design @ beta) ** 2)
    assert model.tree_.node_objective[0] == pytest.approx(loss, rel=1e-9)


def test_a_refit_that_fails_leaves_nothing_fitted():
    # Before, a refit that failed after the preparation kept the old tree
    # beside the new columns' encoding (check_is_fitted passed).
    import pandas as pd
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300),
                      "c": rng.choice(["a", "b"], size=300).astype(object)})
    y = X["x"].to_numpy() + (X["c"] == "a")
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    wide = X.assign(c=[f"l{i}" for i in range(300)])      # 300 levels > 256
    with pytest.raises(ValueError, match="levels"):
        model.fit(wide, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    assert not hasattr(model, "_preparation") and not hasattr(model, "categories_")
    assert model.fit(X, y).predict(X).shape == (300,)


@pytest.mark.parametrize("make, bad", [
    (lambda: CholeskyTreeRegressor(max_depth=2), {"max_depth": -1}),
    (lambda: CLARITreeRegressor(max_depth=2), {"leaf_model": "cubic"}),
    (lambda: CLARITreeRegressorCV(max_depth=2, cv=2, leaf_penalties=[1e-2],
                                  ridge_alphas=[1e-3]), {"n_thresholds": 0}),
])
def test_a_refit_refused_for_a_parameter_leaves_nothing_fitted(make, bad):
    # The parameter check ran before the fitted state was forgotten: the
    # previous tree stayed, and predicted, beside the invalid parameters.
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=100)
    model = make().fit(X, y)
    model.set_params(**bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        model.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_a_ridge_beyond_float64_is_refused():
    # ridge_alpha times the total weight overflowed to inf: the fit returned
    # one leaf with objective_ inf and a warning that advised a larger ridge.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = np.where(X[:, 0] > 0, 3.0, 0.0) + X[:, 1]
    with pytest.raises(ValueError, match=r"ridge_alpha=1e\+308 times the total sample "
                                         r"weight \(50\) overflows float64.*'constant'"):
        CholeskyTreeRegressor(max_depth=2, ridge_alpha=1e308).fit(X, y)
    # constant leaves have no ridge to overflow, and 1e305 is the constant tree
    constant = CholeskyTreeRegressor(max_depth=2, leaf_model="constant").fit(X, y)
    assert CholeskyTreeRegressor(max_depth=2, leaf_model="constant",
                                 ridge_alpha=1e308).fit(X, y).objective_ == constant.objective_
    strong = CholeskyTreeRegressor(max_depth=2, ridge_alpha=1e305).fit(X, y)
    np.testing.assert_allclose(strong.predict(X), constant.predict(X), atol=1e-9)


def test_a_column_constant_on_a_leaf_gets_no_coefficient():
    # doors takes one value in each leaf: with the unpenalized intercept of
    # the objective its coefficient is exactly 0 (the intercept's tiny ridge
    # entry used to leave 3.5e-08 * doors in the printed equations).
    rng = np.random.default_rng(0)
    n = 400
    doors = rng.choice([2.0, 4.0], size=n)
    x = rng.normal(size=n) * 10 + 50
    y = np.where(doors == 4, 3 * x, -2 * x + 100) + rng.normal(size=n)
    X = np.c_[doors, x]
    kappa = 1e-3
    model = CholeskyTreeRegressor(max_depth=1, ridge_alpha=kappa).fit(X, y)
    assert model.tree_.feature[0] == 0
    np.testing.assert_array_equal(model.leaf_coefs_[:, 0], 0.0)
    assert "x[0]" not in export_text(model).split("\n", 2)[1]
    # Each leaf: ridge on the standardized x with an unpenalized intercept.
    z = (x - x.mean()) / x.std()
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        zc = z[rows] - z[rows].mean()
        slope = zc @ (y[rows] - y[rows].mean()) / (zc @ zc + n * kappa)
        fitted = y[rows].mean() + slope * zc
        np.testing.assert_allclose(model.predict(X[rows]), fitted, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("Estimator", [CholeskyTreeRegressor, CLARITreeRegressor,
                                       CLARITreeRegressorCV])
def test_more_rows_than_the_builder_indexes_are_refused_before_any_copy(Estimator):
    # A view of 2**31 rows that takes no memory (row orders are 32-bit).
    from numpy.lib.stride_tricks import as_strided

    X = as_strided(np.zeros(1), shape=(2**31, 1), strides=(0, 0))
    y = as_strided(np.zeros(1), shape=(2**31,), strides=(0,))
    with pytest.raises(ValueError, match=r"X has 2147483648 rows; \w+ fits at most "
                                         r"2147483647 \(2\*\*31 - 1\) rows"):
        Estimator().fit(X, y)
