"""The preparation room: roles, encoding, weights, pools and bins."""

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._preparation import (
    MISSING_BIN,
    OTHER,
    PLAIN,
    Preparation,
    TooManyLevelsError,
    _column_moments,
)
from clarytree._thresholds import threshold_pool


def prepare(X, y, sample_weight=None, **params):
    est = CLARITreeRegressor()
    prep = Preparation(**params)
    return prep, prep.fit(est, X, y, sample_weight), est


def packed_gram(W):
    return W.T @ W


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 12),
       st.sampled_from([0, 1, 3]))
def test_weighted_pool_is_the_pool_of_the_repeated_data(seed, n, T, decimals):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n), decimals)
    w = rng.integers(0, 5, size=n)
    if w.sum() == 0:
        w[0] = 1
    keep = w > 0
    expected = threshold_pool(np.repeat(x, w), T)
    got = threshold_pool(x[keep], T, sample_weight=w[keep].astype(float))
    np.testing.assert_array_equal(got, expected)     # bitwise


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.sampled_from([1, 2, 5, 20, 63]),
       st.sampled_from(["normal", "coarse", "zeros", "huge", "skewed"]))
def test_pool_is_numpys_quantiles_of_the_data(seed, n, T, kind):
    # The pool comes from one sort (distinct values and their counts); it
    # must be numpy.quantile of the data, bit for bit, and all midpoints
    # when there are at most T + 1 distinct values.
    rng = np.random.default_rng(seed)
    x = {"normal": lambda: rng.normal(size=n),
         "coarse": lambda: np.round(rng.normal(size=n), 1),
         "zeros": lambda: rng.choice([-0.0, 0.0, 1.0, 2.5], size=n),
         "huge": lambda: rng.normal(size=n) * 1e300,
         "skewed": lambda: rng.exponential(size=n) ** 3}[kind]()
    got = threshold_pool(x, T, "quantile")
    values = np.unique(x)
    if values.size < 2:
        expected = np.empty(0)
    elif values.size <= T + 1:
        mid = (values[:-1] + values[1:]) / 2.0
        expected = np.unique(np.where(mid < values[1:], mid, values[:-1]))
    else:
        expected = np.unique(np.quantile(x, np.arange(1, T + 1) / (T + 1), method="linear"))
        assert not np.signbit(got[got == 0]).any()      # zero thresholds are +0
    np.testing.assert_array_equal(got, expected)     # bitwise (up to the sign of 0)


@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
def test_integer_weights_prepare_the_repeated_data(leaf_model):
    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3)) * [1.0, 1e6, 1e-6]
    X[rng.random(n) < 0.1, 1] = np.nan
    y = rng.normal(size=n) * 1e3 + 5e3
    w = rng.integers(0, 4, size=n)
    rep = np.repeat(np.arange(n), w)
    a, da, _ = prepare(X[rep], y[rep], leaf_model=leaf_model, n_thresholds=7)
    b, db, _ = prepare(X, y, w, leaf_model=leaf_model, n_thresholds=7)
    for pa, pb in zip(a.thresholds_, b.thresholds_, strict=True):
        np.testing.assert_array_equal(pa, pb)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-12)
    np.testing.assert_allclose(a.std_, b.std_, rtol=1e-12)
    assert a.y_scale_ == b.y_scale_
    assert a.y_mean_ == pytest.approx(b.y_mean_, rel=1e-12)
    np.testing.assert_allclose(packed_gram(da.W), packed_gram(db.W), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(da.ridge, db.ridge, rtol=1e-12)
    assert da.tss == pytest.approx(db.tss, rel=1e-10)
    # The weighted rows' bins are the repeated rows' bins.
    kept = w[w > 0]
    np.testing.assert_array_equal(da.bins, db.bins[np.repeat(np.arange(kept.size), kept)])


def test_zero_weights_drop_rows_exactly():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3))
    y = rng.normal(size=80)
    w = np.ones(80)
    w[::3] = 0.0
    a, da, _ = prepare(X[w > 0], y[w > 0])
    b, db, _ = prepare(X, y, w)
    assert db.sample_weight is None          # the remaining weights are all 1
    np.testing.assert_array_equal(da.W, db.W)
    np.testing.assert_array_equal(da.bins, db.bins)


@pytest.mark.parametrize("weight, match", [
    (np.r_[np.ones(19), -1.0], "non-negative"),
    (np.r_[np.ones(19), np.nan], "finite"),
    (np.r_[np.ones(19), np.inf], "finite"),
    (np.ones(19), "shape"),
    (np.zeros(20), "zero"),
])
def test_bad_weights(weight, match):
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20.0)
    with pytest.raises(ValueError, match=rf"sample_weight.*{match}|{match}.*sample_weight"):
        prepare(X, y, weight)


def test_unweighted_design_is_standardized_columns():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3)) * [2.0, 3.0, 1.0] + [1.0, -4.0, 0.0]
    X[:, 2] = rng.integers(0, 2, size=50)          # 0/1: split-only
    y = rng.normal(size=50)
    prep, data, _ = prepare(X, y)
    np.testing.assert_array_equal(prep.regression_features_, [0, 1])
    z = (X[:, :2] - X[:, :2].mean(axis=0)) / X[:, :2].std(axis=0)
    np.testing.assert_allclose(data.W[:, 1:3], z, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(data.W[:, 0], 1.0)
    assert data.ridge[1] == 50 * 1e-5


def test_missing_regression_feature_counts_as_its_mean():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    X[[3, 7, 20], 0] = np.nan
    prep, data, _ = prepare(X, rng.normal(size=60))
    present = ~np.isnan(X[:, 0])
    assert prep.mean_[0] == pytest.approx(X[present, 0].mean())
    assert prep.std_[0] == pytest.approx(X[present, 0].std())
    np.testing.assert_array_equal(data.W[~present, 1], 0.0)
    np.testing.assert_array_equal(prep.missing_features_, [0])
    # One split column for the feature with missing values: its present
    # values binned by the pool, the missing rows in one more bin after them.
    assert prep.split_columns() == [(0, MISSING_BIN), (1, PLAIN)]
    np.testing.assert_array_equal(prep.split_missing(), [1, 0])
    pool = prep.thresholds_[0]
    assert data.n_bins[0] == len(pool) + 2
    assert np.all(data.bins[~present, 0] == len(pool) + 1)
    np.testing.assert_array_equal(data.bins[present, 0],
                                  np.searchsorted(pool, X[present, 0], side="left"))


def mixed_frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "color": rng.choice(["red", "green", "blue"], size=n).astype(object),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], size=n),
                               categories=["S", "M", "L", "XL"]),
        "flag": rng.random(n) < 0.5,
        "text": pd.array(rng.choice(["u", "v"], size=n), dtype="string"),
        "x": rng.normal(size=n),
        "code": rng.integers(0, 3, size=n),
    }), rng.normal(size=n)


def test_categorical_columns_from_dtype_and_level_order():
    X, y = mixed_frame()
    prep, data, est = prepare(X, y)
    np.testing.assert_array_equal(prep.is_categorical_, [1, 1, 1, 1, 0, 0])
    assert list(prep.categories_[0]) == ["blue", "green", "red"]      # sorted
    assert list(prep.categories_[1]) == ["S", "M", "L"]               # dtype order, seen only
    assert list(prep.categories_[2]) == [False, True]
    assert prep.categories_[4] is None
    np.testing.assert_array_equal(prep.regression_features_, [4, 5])
    # The encoded matrix holds level codes.
    codes = {"blue": 0.0, "green": 1.0, "red": 2.0}
    np.testing.assert_array_equal(data.X[:, 0], X["color"].map(codes).to_numpy())
    np.testing.assert_array_equal(data.X[:, 1], X["size"].cat.codes.to_numpy())
    np.testing.assert_array_equal(data.X[:, 4], X["x"].to_numpy())


@pytest.mark.parametrize("spec", [[1], ["code"], [False, True]])
def test_numeric_codes_declared_categorical(spec):
    X, y = mixed_frame()
    X = X[["x", "code"]]
    prep, data, _ = prepare(X, y, categorical_features=spec)
    np.testing.assert_array_equal(prep.is_categorical_, [False, True])
    assert list(prep.categories_[1]) == [0, 1, 2]
    np.testing.assert_array_equal(data.X[:, 1], X["code"].to_numpy())
    np.testing.assert_array_equal(prep.regression_features_, [0])



@pytest.mark.parametrize("make", [
    lambda v: pd.Series(v, dtype="string"),
    lambda v: pd.Series(v, dtype="category"),
    lambda v: pd.Series(v, dtype=pd.CategoricalDtype(["z", "c", "a", "b"])),
    lambda v: pd.Series([None if s is None else s == "a" for s in v], dtype="boolean"),
    lambda v: pd.Series([s == "a" for s in v]),
    lambda v: pd.Series([None if s is None else float(ord(s) - 98) for s in v]),
    lambda v: pd.Series([-0.0 if s == "b" else 0.0 if s == "c" else 1.5 for s in v]),
    lambda v: pd.Series([-1 if s is None else ord(s) for s in v], dtype="Int64")
    .replace(-1, pd.NA),
], ids=["string", "category", "category-declared", "boolean", "bool", "float-nan",
        "signed-zero", "Int64"])
def test_typed_columns_give_the_levels_and_codes_of_their_objects(make):
    # Typed columns are factorized as their own arrays (faster); as plain
    # Python objects the same values must give the same levels and codes.
    rng = np.random.default_rng(3)
    values = list(rng.choice(np.array(["a", "b", "c", None], dtype=object), 300))
    typed = make(values)
    y = rng.normal(size=300)
    as_objects = pd.Series(typed.astype(object).where(typed.notna(), None), dtype=object)
    prep_t, data_t, _ = prepare(pd.DataFrame({"c": typed, "x": y}), y,
                                categorical_features=[0])
    if isinstance(typed.dtype, pd.CategoricalDtype):
        # Levels in the dtype's order (those seen), codes their positions.
        seen = set(typed.dropna())
        levels = [c for c in typed.cat.categories if c in seen]
        assert list(prep_t.categories_[0]) == levels
        expected = typed.map({c: float(i) for i, c in enumerate(levels)}).astype(float)
        np.testing.assert_array_equal(data_t.X[:, 0], expected.to_numpy())
        return
    prep_o, data_o, _ = prepare(pd.DataFrame({"c": as_objects, "x": y}), y,
                                categorical_features=[0])
    assert list(prep_t.categories_[0]) == list(prep_o.categories_[0])
    assert [type(v) for v in prep_t.categories_[0]] == \
        [type(v) for v in prep_o.categories_[0]]
    np.testing.assert_array_equal(data_t.X[:, 0], data_o.X[:, 0])
    assert np.isnan(data_t.X[:, 0]).sum() == typed.isna().sum()


@pytest.mark.parametrize("kind", ["object", "string", "float-codes", "Int64", "bool"])
def test_long_and_short_columns_encode_alike_at_predict(kind, monkeypatch):
    # Long columns are factorized before their levels are looked up, short
    # ones are looked up value by value: the codes must not depend on it.
    import clarytree._preparation as preparation

    rng = np.random.default_rng(5)
    n = 400
    if kind in ("object", "string"):
        fit_values = rng.choice(np.array(["a", "b", "c", "d"], dtype=object), n)
        new_values = rng.choice(np.array(["a", "c", "d", "zz", None, np.nan], dtype=object), n)
        fit_col = pd.Series(fit_values, dtype=object if kind == "object" else "string")
        new_col = pd.Series(new_values, dtype=object if kind == "object" else "string")
    elif kind == "float-codes":
        fit_col = pd.Series(rng.integers(0, 4, n).astype(float))
        new_col = pd.Series(rng.choice([0.0, 2.0, 3.0, 7.0, np.nan, -0.0], n))
    elif kind == "Int64":
        fit_col = pd.Series(rng.integers(0, 4, n), dtype="Int64")
        new_col = pd.Series(rng.choice([0, 1, 3, 9], n), dtype="Int64")
        new_col[rng.random(n) < 0.2] = pd.NA
    else:
        fit_col = pd.Series(rng.random(n) < 0.5)
        new_col = pd.Series(rng.random(n) < 0.3)
    y = rng.normal(size=n)
    X = pd.DataFrame({"c": fit_col, "x": y})
    prep, _, est = prepare(X, y, categorical_features=[0])
    new = pd.DataFrame({"c": new_col, "x": y})
    monkeypatch.setattr(preparation, "FACTORIZE_MIN_ROWS", 0)
    by_distinct = prep.transform(est, new)[:, 0]
    monkeypatch.setattr(preparation, "FACTORIZE_MIN_ROWS", 10**9)
    by_value = prep.transform(est, new)[:, 0]
    np.testing.assert_array_equal(by_distinct, by_value)
    # Both are the position among categories_, NaN for unseen or missing.
    position = {v: float(i) for i, v in enumerate(prep.categories_[0])}
    expected = [np.nan if pd.isna(v) else position.get(v, np.nan)
                for v in new_col.astype(object)]
    np.testing.assert_array_equal(by_value, expected)

def test_explicit_categorical_features_reject_undeclared_text():
    X, y = mixed_frame()
    with pytest.raises(ValueError, match="'color' is not numeric"):
        prepare(X, y, categorical_features=["size", "flag", "text"])


def test_unseen_and_missing_levels_encode_as_nan():
    X, y = mixed_frame()
    prep, _, est = prepare(X, y)
    new = X.iloc[:4].copy()
    new.loc[new.index[0], "color"] = "purple"
    new.loc[new.index[1], "color"] = None
    new["size"] = pd.Categorical(["XL", None, "S", "M"], categories=["XL", "S", "M"])
    enc = prep.transform(est, new)
    assert np.isnan(enc[0, 0]) and np.isnan(enc[1, 0])
    assert np.isnan(enc[0, 1]) and np.isnan(enc[1, 1])
    assert enc[2, 1] == 0.0 and enc[3, 1] == 1.0


def test_level_cap_and_merging():
    rng = np.random.default_rng(4)
    levels = np.array([f"l{i:03d}" for i in range(300)], dtype=object)
    col = levels[np.r_[np.arange(300), rng.integers(0, 20, size=700)]]
    X = pd.DataFrame({"many": col, "x": rng.normal(size=1000)})
    y = rng.normal(size=1000)
    with pytest.raises(ValueError, match="'many' has 300 levels.*256.*min_category_weight"
                                         ".*0 merges only those beyond the 255 heaviest"):
        prepare(X, y)
    prep, data, est = prepare(X, y, min_category_weight=2)
    cats = list(prep.categories_[0])
    # Levels l000..l019 appear often, the others once: merged into OTHER.
    assert cats[-1] == OTHER and cats[:-1] == [f"l{i:03d}" for i in range(20)]
    assert set(prep.merged_categories_[0]) == {f"l{i:03d}" for i in range(20, 300)}
    assert np.all(data.X[20:300, 0] == 20)
    # Merging only the excess: the 255 heaviest levels are kept.
    prep, data, est = prepare(X, y, min_category_weight=0)
    assert len(prep.categories_[0]) == 256 and prep.categories_[0][-1] == OTHER
    assert data.X[:, 0].max() == 255


def test_all_levels_merged_warns():
    """min_category_weight above every level's weight (an identifier column)
    merges the whole column into '<other>': a warning says so, with what
    the column looks like; a column that keeps a level stays silent."""
    rng = np.random.default_rng(6)
    n = 300
    X = pd.DataFrame({"id": [f"r{i:04d}" for i in range(n)], "x": rng.normal(size=n),
                      "c": rng.choice(["a", "b"], size=n)})
    y = X["x"].to_numpy()
    with pytest.warns(UserWarning, match=r"each of the 300 levels of categorical column 'id' "
                      r"has less than min_category_weight=5 training weight, so all are "
                      r"merged into one '<other>' level and the column cannot split\. "
                      r"Almost every row has its own level \(an identifier\?\)") as record:
        model = CLARITreeRegressor(max_depth=2, min_category_weight=5).fit(X, y)
    assert len(record) == 1 and record[0].filename == __file__
    assert list(model.categories_[0]) == [OTHER]
    X.loc[::7, "id"] = None
    with pytest.warns(UserWarning, match="only separates missing values from the others"):
        CLARITreeRegressor(max_depth=2, min_category_weight=5).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CLARITreeRegressor(max_depth=2, min_category_weight=5).fit(X.drop(columns="id"), y)


@pytest.mark.parametrize("column, hint", [
    ([f"id{i:04d}" for i in range(600)],
     r"'c' has 600 levels; min_category_weight=0 merged 345 of them into one '<other>' "
     r"level and kept 255\. Almost every row has its own level \(an identifier\?\): "
     r"leave the column out of X, as it cannot generalize$"),
    (pd.date_range("2021-01-01", periods=600, freq="D").astype(str),
     r"\. Its values look like dates or times: convert them to numbers"),
    ([f"{v:.4f}" for v in np.linspace(0, 1, 600)], r"holds numbers stored as text"),
])
def test_merging_a_column_that_looks_wrong_warns(column, hint):
    """Past the level cap, merging keeps the heaviest levels: for identifiers
    single rows, which level-set splits group to fit noise, and dates lose
    their order.  A warning says what the column looks like (numbers stored
    as text: only their own warning, once); a column of ordinary levels
    merged the same way stays silent."""
    X = pd.DataFrame({"c": column, "x": np.arange(600.0)})
    y = np.sin(np.arange(600.0))
    with pytest.warns(UserWarning, match=hint) as record:
        CLARITreeRegressor(max_depth=1, min_category_weight=0).fit(X, y)
    assert len(record) == 1 and record[0].filename == __file__
    ordinary = X.assign(c=[f"l{i % 300:03d}" for i in range(600)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CLARITreeRegressor(max_depth=1, min_category_weight=0).fit(ordinary, y)


@pytest.mark.parametrize("column, hint", [
    (pd.date_range("2021-01-01", periods=400, freq="D").astype(str),
     r"\. Its values look like dates or times: convert them to numbers .* or leave the "
     r"column out of X$"),
    ([f"id{i:04d}" for i in range(400)],
     r"\. Almost every row has its own level \(an identifier\?\): leave the column out "
     r"of X, as it cannot generalize$"),
    ([f"{v:.3f}" for v in np.linspace(0, 1, 400)],
     r"\. Its values are numbers stored as text: convert them to numbers"),
    ([f"l{i % 300:03d}" for i in range(400)], r"heaviest\)$"),
    # Levels that are not text had no hint at all.
    (pd.Series(np.arange(400) + 1000).astype("category"), r"an identifier\?\)"),
    (pd.Series(pd.date_range("2020", periods=400).date).astype("category"),
     r"Its values look like dates or times"),
    (pd.Series(pd.date_range("2020", periods=400)).astype("category"),
     r"Its values look like dates or times"),
    (pd.Series(pd.to_timedelta(np.arange(400), unit="s").to_pytimedelta(), dtype=object),
     r"Its values look like dates or times"),
    (pd.Series(np.arange(400) % 300 / 7).astype("category"),
     r"\. Its levels are numbers: to split on their values, pass it as a numeric column"),
])
def test_too_many_levels_says_what_the_column_looks_like(column, hint):
    """Merging rare levels is the wrong advice for dates, identifiers and
    numbers stored as text: the error says what the column looks like (a
    column of ordinary levels gets no hint); the error survives pickling (a
    CV task in another process raises it)."""
    X = pd.DataFrame({"c": column, "x": np.arange(400.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (the numbers-as-text warning)
        with pytest.raises(TooManyLevelsError, match="'c' has .* levels.*" + hint) as info:
            CLARITreeRegressor().fit(X, np.arange(400.0))
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is TooManyLevelsError and str(again) == str(info.value)
    assert (again.column, again.n_levels, again.hint) == (
        info.value.column, info.value.n_levels, info.value.hint)


@pytest.mark.parametrize("make, match", [
    (lambda X, y: (X.assign(x=np.r_[np.inf, X["x"].to_numpy()[1:]]), y), "infinity.*'x'"),
    (lambda X, y: (X, np.r_[np.nan, y[1:]]), "y contains NaN"),
])
def test_bad_values(make, match):
    X, y = make(*mixed_frame())
    with pytest.raises(ValueError, match=match):
        prepare(X, y)


def test_inf_in_a_numeric_array_names_the_column():
    X = np.random.default_rng(0).normal(size=(20, 3))
    X[4, 2] = -np.inf
    with pytest.raises(ValueError, match=r"infinity in column\(s\) x\[2\]"):
        CLARITreeRegressor().fit(X, np.arange(20.0))


def test_categorical_column_in_regression_features():
    X, y = mixed_frame()
    with pytest.raises(ValueError, match="regression_features.*'color'.*split-only"):
        CLARITreeRegressor(regression_features=["color", "x"]).fit(X, y)
    with pytest.raises(ValueError, match="categorical_features names not in X"):
        CLARITreeRegressor(categorical_features=["nope"]).fit(X, y)


@pytest.mark.parametrize("parameter", ["regression_features", "categorical_features"])
def test_column_indices_count_from_the_end_and_are_range_checked(parameter):
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(80, 3)))
    y = rng.normal(size=80)
    attribute = {"regression_features": "regression_features_",
                 "categorical_features": "is_categorical_"}[parameter]
    last = getattr(CholeskyTreeRegressor(**{parameter: [-1]}).fit(X, y), attribute)
    first = getattr(CholeskyTreeRegressor(**{parameter: [2]}).fit(X, y), attribute)
    np.testing.assert_array_equal(last, first)
    for bad in (3, -4):
        with pytest.raises(ValueError, match=rf"{parameter} indices must lie in \[-3, 3\)"):
            CholeskyTreeRegressor(**{parameter: [bad]}).fit(X, y)


def test_row_orders_only_when_a_column_is_swept():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = rng.normal(size=400)
    prep, data, _ = prepare(X, y, n_thresholds=20)
    assert data.order.shape == (1, 400)          # every column by histogram
    np.testing.assert_array_equal(data.order[0], np.argsort(data.bins[:, 0], kind="stable"))
    prep, data, _ = prepare(X, y, n_thresholds=None)  # 400 bins > 256: swept
    assert data.order.shape == (3, 400)
    for c in range(3):
        assert np.all(np.diff(data.bins[data.order[c], c]) >= 0)


@pytest.mark.parametrize(("n_thresholds", "dtype"),
                         [(20, np.uint8), (254, np.uint8), (255, np.uint16), (None, np.uint16)])
def test_bins_are_the_narrowest_type_the_pools_allow(n_thresholds, dtype):
    """At most 256 bins per column: uint8; more: uint16 (int32 past 65536).

    The column with missing values has its pool and two more bins (254
    thresholds: 256 bins)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1200, 3))
    X[rng.random(1200) < 0.1, 1] = np.nan       # a missing bin on top of the pool
    y = rng.normal(size=1200)
    prep, data, _ = prepare(X, y, n_thresholds=n_thresholds)
    assert data.bins.dtype == dtype
    assert data.n_bins.max() <= np.iinfo(dtype).max + 1
    for c, (f, _) in enumerate(prep.split_columns()):
        present = ~np.isnan(X[:, f])
        expected = np.where(present, np.searchsorted(prep.thresholds_[f], X[:, f]),
                            len(prep.thresholds_[f]) + 1)
        np.testing.assert_array_equal(data.bins[:, c], expected)


def _reference_bins_and_order(prep, X, column_kinds):
    """Each value's number of thresholds below it, then the stable argsort."""
    bins, order = [], []
    for f, _ in column_kinds:
        pool = prep.thresholds_[f]
        b = np.where(np.isnan(X[:, f]), len(pool) + 1, np.searchsorted(pool, X[:, f]))
        bins.append(b)
        order.append(np.argsort(b, kind="stable"))
    return np.array(bins).T, np.array(order)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_swept_columns_bin_and_order_as_searchsorted_and_stable_argsort(n_jobs):
    """Every-midpoint pools bin from one sort of the values: the same bins
    and the same (bin, row) order as a search per row and a stable sort of
    the bins, with ties, signed zeros, NaN, and more rows than a block."""
    rng = np.random.default_rng(8)
    n = 70_000
    X = np.column_stack([
        rng.normal(size=n),
        np.round(rng.normal(size=n), 2),             # many ties
        rng.choice([-0.0, 0.0, 1.5, -2.0], size=n),  # signed zeros are one value
        rng.exponential(size=n),
    ])
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.02, 3] = np.nan
    y = rng.normal(size=n)
    est = CholeskyTreeRegressor(n_thresholds=None, n_jobs=n_jobs)
    prep = Preparation(n_thresholds=None)
    data = prep.fit(est, X, y)
    assert [kind for _, kind in prep.split_columns()] == [PLAIN, MISSING_BIN, PLAIN, MISSING_BIN]
    bins, order = _reference_bins_and_order(prep, X, prep.split_columns())
    np.testing.assert_array_equal(data.bins, bins)
    # Every column is ordered (column 2 has only 4 bins, but some column is swept).
    np.testing.assert_array_equal(data.order, order)


def test_swept_column_with_several_values_per_bin_sorts_its_bins():
    """A pool coarser than the values (not reachable from n_thresholds=None,
    where every bin holds one value) still gives the (bin, row) order."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=5000)
    x[::7] = np.nan
    prep = Preparation(n_thresholds=None)
    prep.fit(CholeskyTreeRegressor(), x[:, None], rng.normal(size=5000))
    prep.thresholds_[0] = np.array([-1.0, 0.0, 0.5])
    out = np.empty(5000, dtype=np.int32)
    order = np.empty(5000, dtype=np.int32)
    prep._swept_column_bins(x, 0, MISSING_BIN, out, order)
    expected = np.where(np.isnan(x), 4, np.searchsorted([-1.0, 0.0, 0.5], x))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(order, np.argsort(expected, kind="stable"))


@pytest.mark.parametrize("columns", [[2], [0, 2], [0, 1, 2, 3]])
@pytest.mark.parametrize("n", [5, 1000, 65539])
def test_column_moments_are_numpys_without_a_copy(n, columns):
    """Bitwise numpy's mean and std of the power-of-two-scaled columns
    (``X[:, columns]`` is a Fortran-ordered copy: pairwise sums per column)."""
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 4)) * [1e-3, 7.0, 1e5, 1.0] + [0.0, -3.0, 2e5, 0.5]
    X[:, 3] = 0.25                                  # constant: std 1
    Xc = X[:, columns]
    scale = np.exp2(np.floor(np.log2(np.abs(Xc).max(axis=0))))
    mean, std = _column_moments(X, columns)
    np.testing.assert_array_equal(mean, (Xc / scale).mean(axis=0) * scale)
    expected = (Xc / scale).std(axis=0) * scale
    np.testing.assert_array_equal(std, np.where(expected < 1e-12, 1.0, expected))


@pytest.mark.parametrize("with_text", [False, True])
def test_datetime_column_is_a_clear_error(with_text):
    """A datetime or timedelta column is named in the error, with what to do,
    whether or not the table also has categorical columns."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=30),
                      "when": pd.date_range("2024-01-01", periods=30, tz="UTC"),
                      "gap": pd.to_timedelta(np.arange(30), unit="h")})
    if with_text:
        X["color"] = rng.choice(["r", "g"], size=30)
    y = rng.normal(size=30)
    with pytest.raises(ValueError, match="'when'.* not numeric"):
        CLARITreeRegressor().fit(X, y)
    with pytest.raises(ValueError, match="'gap'.* not numeric"):
        CholeskyTreeRegressor().fit(X.drop(columns="when"), y)
    # Declared categorical, the timestamps are levels like any other.
    est = CholeskyTreeRegressor(max_depth=1, categorical_features=["when", "gap"]
                                + (["color"] if with_text else [])).fit(X, y)
    assert est.is_categorical_[1] and est.is_categorical_[2]



@pytest.mark.parametrize("make, what", [
    (lambda days: pd.Series(pd.PeriodIndex(days, freq="D")), "has dtype period"),
    (lambda days: pd.Series(list(days.date), dtype=object), "holds date objects"),
    (lambda days: pd.Series(list(days), dtype=object), "holds datetime objects"),
])
def test_periods_and_object_dates_are_rejected_as_datetimes_are(make, what):
    # A period column, or an object column of dates (as databases return
    # them), would otherwise be a categorical column with a level per date.
    import datetime

    rng = np.random.default_rng(0)
    days = pd.DatetimeIndex([datetime.datetime(2020, 1, 1) + datetime.timedelta(days=int(d))
                             for d in rng.integers(0, 40, 60)])
    column = make(days)
    column[3] = None
    X = pd.DataFrame({"x": rng.normal(size=60), "when": column})
    y = rng.normal(size=60)
    with pytest.raises(ValueError, match=f"column 'when' {what}.*encode it as numbers"):
        CholeskyTreeRegressor(max_depth=1).fit(X, y)
    # Declared categorical, the dates are levels like any other.
    est = CholeskyTreeRegressor(max_depth=1, categorical_features=["when"]).fit(X, y)
    assert est.is_categorical_[1] and len(est.categories_[1]) == column.nunique()
    # A text column that only starts with dates stays categorical.
    mixed = column.astype(object)
    mixed[40:] = "later"
    est = CholeskyTreeRegressor(max_depth=1).fit(X.assign(when=mixed), y)
    assert "later" in list(est.categories_[1])

def test_text_in_an_undeclared_array_column_is_named():
    rng = np.random.default_rng(0)
    X = np.empty((20, 3), dtype=object)
    X[:, 0] = rng.normal(size=20)
    X[:, 1] = rng.choice(["r", "g"], size=20)
    X[:, 2] = rng.normal(size=20)
    y = rng.normal(size=20)
    with pytest.raises(ValueError, match=r"column x\[1\] is not numeric; declare it"):
        CLARITreeRegressor().fit(X, y)
    est = CholeskyTreeRegressor(max_depth=1, categorical_features=[1]).fit(X, y)
    assert list(est.categories_[1]) == ["g", "r"]
    # Numbers stored as objects are numbers.
    est = CholeskyTreeRegressor(max_depth=1).fit(X[:, [0, 2]], y)
    assert not est.is_categorical_.any()


def test_text_in_a_numeric_column_names_the_value():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=30), "b": rng.choice(["u", "v"], 30)})
    y = rng.normal(size=30)
    typo = frame.astype({"a": object})
    typo.loc[[4, 7], "a"] = [None, "1,5"]
    with pytest.raises(ValueError, match=r"column 'a' is not numeric \('1,5' in row 7\); "
                                         "declare it"):
        CLARITreeRegressor(categorical_features=["b"]).fit(typo, y)
    est = CLARITreeRegressor(max_depth=1).fit(frame, y)
    with pytest.raises(ValueError, match=r"column 'a' was numeric in fit but holds a value "
                                         r"that is not a number \('1,5' in row 7\)"):
        est.predict(typo)


@pytest.mark.parametrize("categorical_features", [None, []])
def test_text_column_of_a_frame_without_categorical_columns_is_named(categorical_features):
    # With no categorical column the frame converts as a whole, where
    # pandas' message names only the value.
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=30), "b": rng.choice(["u", "v"], 30)})
    y = rng.normal(size=30)
    with pytest.raises(ValueError, match=r"column 'b' is not numeric \('\w' in row 0\); "
                                         "declare it in categorical_features"):
        CLARITreeRegressor(categorical_features=categorical_features).fit(frame, y)
    est = CholeskyTreeRegressor(max_depth=1).fit(frame.assign(b=1.0), y)
    with pytest.raises(ValueError, match=r"column 'b' was numeric in fit but holds a value "
                                         r"that is not a number \('\w' in row 0\)"):
        est.predict(frame)


@pytest.mark.parametrize("parameter", ["regression_features", "categorical_features"])
@pytest.mark.parametrize("spec, named", [([0, 0], "[0]"), ([1, -2], "[1]"),
                                         (["x", "x"], "['x']")])
def test_a_column_listed_twice_is_an_error(parameter, spec, named):
    """[0, 0] (or 1 and -2 of 3 columns) is a slip in the list: it is named."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(np.round(rng.normal(size=(60, 3))), columns=["x", "u", "v"])
    if not isinstance(spec[0], str):
        X = X.to_numpy()
    y = rng.normal(size=60)
    with pytest.raises(ValueError, match=rf"{parameter} lists column\(s\) "
                                         rf"{re.escape(named)} more than once"):
        CLARITreeRegressor(**{parameter: spec}).fit(X, y)


def test_numbers_stored_as_text_warn_when_inferred_categorical():
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(size=n)
    frame = pd.DataFrame({
        "typo": pd.Series(np.round(x, 3).astype(str), dtype=object),
        "coded": pd.Series([f"{v:05d}" for v in rng.integers(0, 99999, n)], dtype="string"),
        "words": rng.choice(["a", "b", "c"], n),
        "cat": pd.Categorical(rng.integers(0, 3, n).astype(str)),
    })
    frame.loc[[3, 9], "typo"] = ["?", "n/a"]
    y = x + (frame["words"] == "a")
    with pytest.warns(UserWarning) as record:
        CLARITreeRegressor(max_depth=1).fit(frame, y)
    messages = [str(w.message) for w in record if "holds" in str(w.message)]
    assert len(messages) == 2, messages
    assert messages[0].startswith(
        f"CLARITreeRegressor: column 'typo' holds text, yet {n - 2} of its {n} present "
        "values are numbers (the others: '?', 'n/a')")
    assert "pd.to_numeric(X['typo'], errors='coerce')" in messages[0]
    assert messages[1].startswith("CLARITreeRegressor: column 'coded' holds numbers "
                                  "stored as text")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CLARITreeRegressor(max_depth=1, categorical_features=["typo", "coded", "words",
                                                              "cat"]).fit(frame, y)
        CLARITreeRegressor(max_depth=1).fit(frame[["words", "cat"]], y)


def test_a_marker_used_often_still_reads_as_a_numeric_column():
    # A lab value with "?" in 30% of the rows (the UCI files' marker): under
    # 90% numbers, but many distinct numbers and one repeated marker; the
    # head of the column starts with markers too.  A column of a few number
    # codes and words ("1", "2", "none", "many") is categorical and silent.
    rng = np.random.default_rng(0)
    n = 300
    lab = np.round(rng.normal(50, 10, n), 1).astype(str).astype(object)
    lab[rng.random(n) < 0.3] = "?"
    lab[:5] = "?"
    codes = rng.choice(["1", "2", "3", "none", "many", "few"], n)
    frame = pd.DataFrame({"lab": lab, "codes": codes, "x": rng.normal(size=n)})
    y = frame["x"].to_numpy()
    with pytest.warns(UserWarning, match=r"column 'lab' holds text, yet \d+ of its 300 present "
                      r"values are numbers \(the others: '\?'\)") as record:
        CLARITreeRegressor(max_depth=1).fit(frame, y)
    assert not [w for w in record if "'codes'" in str(w.message)]
    # Markers of three kinds, or fewer than half numbers: text, silent.
    three_markers = np.where(lab == "?", rng.choice(["?", "n/a", "-"], n), lab)
    mostly_markers = np.where(rng.random(n) < 0.6, "?", lab)
    for other in (three_markers, mostly_markers):
        mixed = frame.assign(lab=other)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            CLARITreeRegressor(max_depth=1).fit(mixed[["lab", "x"]], y)


@pytest.mark.parametrize("family", ["clari", "mbndt"])
def test_object_columns_of_flags_or_numbers(family):
    """True/False with missing values are levels (no numbers-as-text warning);
    Python numbers in an object column made categorical warn in their own words."""
    rng = np.random.default_rng(1)
    n = 120
    x = rng.normal(size=n)
    flags = pd.Series(np.where(x > 0, True, False), dtype=object)
    flags[::7] = None
    numbers = pd.Series(np.round(x, 2), dtype=object)
    numbers[::5] = None
    y = x + rng.normal(scale=0.1, size=n)
    if family == "clari":
        def fit(frame):
            return CLARITreeRegressor(max_depth=1).fit(frame, y)
    else:
        pytest.importorskip("torch")
        from clarytree.mbndt import MBNDTRegressor

        def fit(frame):
            return MBNDTRegressor(max_depth=1, max_epochs=2, n_restarts=1).fit(frame, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit(pd.DataFrame({"flag": flags, "x": x}))
    if family == "clari":
        with pytest.warns(UserWarning, match="column 'number' holds numbers in a column of "
                                             "dtype object"):
            fit(pd.DataFrame({"number": numbers, "x": x}))
    # (MBNDT reads an object column of numbers as numeric, without a warning)


@pytest.mark.parametrize("family", ["clari", "mbndt"])
def test_complex_column_is_an_error_naming_it(family):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=60), "z": rng.normal(size=60) + 1j,
                          "c": rng.choice(["u", "v"], 60)})
    y = rng.normal(size=60)
    if family == "clari":
        est = CLARITreeRegressor(max_depth=1)
    else:
        pytest.importorskip("torch")
        from clarytree.mbndt import MBNDTRegressor

        est = MBNDTRegressor(max_depth=1, max_epochs=2, n_restarts=1)
    for X in (frame, frame.drop(columns="c")):
        with pytest.raises(ValueError, match="column 'z' has dtype complex128: complex data "
                                             "is not supported"):
            est.fit(X, y)
    fitted = est.fit(frame.assign(z=frame["z"].to_numpy().real), y)
    with pytest.raises(ValueError, match="column 'z' (has dtype complex128|was numeric in "
                                         "fit but holds a value that is not a number)"):
        fitted.predict(frame)


def test_levels_given_as_another_type_at_predict_warn():
    """Fit saw '1', '2', '3' (text) and predict gets 1, 2, 3: every value is
    unseen, so the column would be lost without a word; the warning names
    the column, a value and the level it was meant to be, at the user's line."""
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({"a": rng.normal(size=n),
                          "c": rng.integers(1, 4, n).astype(str)})
    y = frame["a"] + 3.0 * (frame["c"] == "1")
    model = CLARITreeRegressor(max_depth=2, categorical_features=["c"]).fit(frame, y)
    assert model.tree_.is_categorical[0]            # the root splits on the levels
    as_numbers = frame.assign(c=frame["c"].astype(int))
    with pytest.warns(UserWarning, match=r"column 'c' holds none of the levels seen in fit: "
                      r"fit saw text, this column holds numbers \(.*1 for '1'.*\).*"
                      r"X\['c'\]\.astype\(str\)") as record:
        model.predict(as_numbers)
    assert record[0].filename == __file__
    # the rows do take the missing-value direction (what the warning says)
    with pytest.warns(UserWarning, match="none of the levels"):
        lost = model.predict(as_numbers)
    np.testing.assert_array_equal(lost, model.predict(frame.assign(c=None)))
    # numeric codes declared categorical, then given as text; a numpy array
    # has no column names to suggest
    codes = CLARITreeRegressor(max_depth=2, categorical_features=[1]).fit(
        as_numbers.to_numpy(), y)
    with pytest.warns(UserWarning, match=r"column x\[1\] holds none of the levels seen in "
                      r"fit: fit saw numbers, this column holds text .* as in fit\.$"):
        codes.predict(frame.to_numpy(dtype=object))
    # New levels of the fit's type, missing values: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(frame.assign(c="9"))
        model.predict(frame.assign(c=None))
        model.predict(frame.iloc[:5])


def test_levels_recoded_as_numbers_at_predict_warn():
    """Text levels of fit given as codes 0, 1 (a label-encoding step applied
    to the new rows only): no value equals a level even as a number, yet the
    column is lost as surely; the warning names the column, the levels of fit
    and the values, at the user's line.  New codes of a numeric categorical
    column stay silent."""
    rng = np.random.default_rng(4)
    n = 200
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["u", "v"], n)})
    y = frame["a"] + 3.0 * (frame["b"] == "u")
    model = CLARITreeRegressor(max_depth=2).fit(frame, y)
    recoded = frame.assign(b=(frame["b"] == "u").astype(int))
    with pytest.warns(UserWarning, match=r"column 'b' holds none of the levels seen in fit: "
                      r"fit saw text \('u', 'v'\), this column holds numbers \((0, 1|1, 0)\), "
                      r"so every row takes the missing-value direction .*categories_\[1\]"
                      ) as record:
        lost = model.predict(recoded)
    assert len(record) == 1 and record[0].filename == __file__
    np.testing.assert_array_equal(lost, model.predict(frame.assign(b=None)))
    # The same codes as text (how a CSV of the encoded column reads), and
    # the levels as bools: lost as surely, said as surely.
    for spelled, kind in ((recoded["b"].astype(str), "numbers"),
                          (recoded["b"].astype(bool), "bools")):
        with pytest.warns(UserWarning, match=rf"column 'b' holds none of the levels seen in "
                          rf"fit: fit saw text \('u', 'v'\), this column holds {kind} "):
            assert np.array_equal(model.predict(frame.assign(b=spelled)), lost)
    codes = CLARITreeRegressor(max_depth=2, categorical_features=["b"]).fit(recoded, y)
    with pytest.warns(UserWarning, match=r"fit saw numbers \(0, 1\), this column holds text"):
        codes.predict(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        codes.predict(recoded.assign(b=7))
        model.predict(frame.assign(b="w"))


def test_flags_given_as_text_at_predict_warn():
    """A bool column given as the text 'True'/'false' (a JSON or CSV source),
    or text flags of fit given as bools, misses every level: a warning says
    how to convert; integers 0/1 (equal to the bools) and new text stay
    silent."""
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"a": rng.normal(size=n), "f": rng.random(n) < 0.5})
    y = np.where(frame["f"], 2 * frame["a"], -frame["a"])
    model = CLARITreeRegressor(max_depth=2).fit(frame, y)
    assert model.tree_.is_categorical[0]
    as_text = frame.assign(f=frame["f"].map({True: "true", False: "False"}))
    with pytest.warns(UserWarning, match=r"column 'f' holds none of the levels seen in fit: "
                      r"fit saw bool values, this column holds text \(('true' for True|"
                      r"'False' for False).*\.str\.lower\(\)\.map") as record:
        lost = model.predict(as_text)
    assert record[0].filename == __file__
    np.testing.assert_array_equal(lost, model.predict(frame.assign(f=None)))
    text_model = CLARITreeRegressor(max_depth=2).fit(
        frame.assign(f=frame["f"].map({True: "True", False: "False"})), y)
    with pytest.warns(UserWarning, match=r"fit saw text, this column holds bool values "
                      r"\(.*True for 'True'.*X\['f'\]\.astype\(str\)"):
        text_model.predict(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(model.predict(frame.assign(f=frame["f"].astype(int))),
                                      model.predict(frame))
        model.predict(frame.assign(f="maybe"))
        model.predict(frame.assign(f=None))


def test_levels_spelled_otherwise_at_predict_warn():
    """Text levels that differ from fit's only in case or surrounding spaces
    (another source, or a cleaning step applied to one file) match none of
    them: a warning names them; new levels and a partial match stay silent."""
    rng = np.random.default_rng(6)
    n = 300
    frame = pd.DataFrame({"a": rng.normal(size=n),
                          "c": rng.choice(["Red", "Blue", "Green"], size=n)})
    y = np.where(frame["c"] == "Red", 2 * frame["a"], -frame["a"])
    model = CLARITreeRegressor(max_depth=2).fit(frame, y)
    assert model.tree_.is_categorical[0]
    spelled = frame.assign(c=frame["c"].str.lower() + " ")
    with pytest.warns(UserWarning, match=r"column 'c' holds none of the levels seen in fit, "
                      r"but its values equal levels of fit up to case or surrounding spaces "
                      r"\('.*' for '(Red|Blue|Green)'.*categories_\[1\]") as record:
        lost = model.predict(spelled)
    assert record[0].filename == __file__
    np.testing.assert_array_equal(lost, model.predict(frame.assign(c=None)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(frame.assign(c="Purple"))
        model.predict(frame.assign(c=np.where(np.arange(n) % 2, "Red", "blue")))
    # Text flags too ('True' in fit, 'true' now).
    flags = CLARITreeRegressor(max_depth=2).fit(
        frame.assign(c=np.where(frame["c"] == "Red", "True", "False")), y)
    with pytest.warns(UserWarning, match=r"'true' for 'True'"):
        flags.predict(frame.assign(c="true"))


def test_mbndt_levels_spelled_otherwise_at_predict_warn():
    """MBNDT's levels given in another case or with spaces ('red ' for
    'Red') match none of them: the same warning; new levels stay silent."""
    pytest.importorskip("torch")

    from clarytree import from_dict, to_dict
    from clarytree.mbndt import MBNDTRegressor

    rng = np.random.default_rng(7)
    n = 300
    frame = pd.DataFrame({"a": rng.normal(size=n),
                          "c": rng.choice(["Red", "Blue", "Green"], size=n)})
    y = 3.0 * (frame["c"] == "Red") + 0.1 * frame["a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MBNDTRegressor(max_depth=1, max_epochs=30, n_restarts=1,
                               random_state=0).fit(frame, y)
    assert 1 in model.tree_.feature[np.asarray(model.tree_.is_categorical, dtype=bool)]
    for fitted in (model, from_dict(to_dict(model))):
        with pytest.warns(UserWarning, match=r"MBNDTRegressor: column 'c' holds none of the "
                          r"levels seen in fit, but its values equal levels of fit up to case "
                          r"or surrounding spaces \(.*'red ' for 'Red'.*unseen levels' "
                          r"branch") as rec:
            fitted.predict(frame.assign(c=frame["c"].str.lower() + " "))
        assert rec[0].filename == __file__
        assert len(rec) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(frame.assign(c="Purple"))


def test_mbndt_levels_read_as_floats_at_predict_warn():
    """MBNDT matches levels as text, so integer codes read as floats ('1.0',
    a column with an empty cell) match none of fit's '1': a warning names
    them; integers (which read '1') and new text levels stay silent."""
    pytest.importorskip("torch")

    from clarytree.mbndt import MBNDTRegressor

    rng = np.random.default_rng(4)
    n = 300
    codes = rng.integers(1, 4, n)
    frame = pd.DataFrame({"a": rng.normal(size=n), "c": codes.astype(str)})
    y = frame["a"] + 3.0 * (codes == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (the numbers-as-text warning of fit)
        model = MBNDTRegressor(max_depth=1, max_epochs=3, n_restarts=1,
                               random_state=0).fit(frame, y)
    from clarytree import from_dict, to_dict

    assert 1 in model.tree_.feature[np.asarray(model.tree_.is_categorical, dtype=bool)]
    floats = codes.astype(float)
    floats[3] = np.nan
    # the fitted model, and the same tree read back from its JSON description
    for fitted in (model, from_dict(to_dict(model))):
        with pytest.warns(UserWarning, match=r"MBNDTRegressor: column 'c' holds none of the "
                          r"levels seen in fit: its values equal levels of fit only as "
                          r"numbers \((.*, )?1\.0 for '1'.*X\['c'\]\.astype\('Int64'\)"
                          r"\.astype\(str\)") as rec:
            fitted.predict(frame.assign(c=floats))
        assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(model.predict(frame.assign(c=codes)),
                                      model.predict(frame))
        model.predict(frame.assign(c="z"))
        model.predict(frame.assign(c=None))


def test_mbndt_text_levels_recoded_as_numbers_at_predict_warn():
    """MBNDT's text levels given as codes 0, 1, 2 match none of them, even as
    numbers: the warning of the CLARITree family, showing the numbers as
    given (0, not '0'), for the model and its JSON round trip; new text
    levels stay silent."""
    pytest.importorskip("torch")

    from clarytree import from_dict, to_dict
    from clarytree.mbndt import MBNDTRegressor

    rng = np.random.default_rng(7)
    n = 300
    levels = np.array(["Red", "Blue", "Green"])
    codes = rng.integers(0, 3, n)
    frame = pd.DataFrame({"a": rng.normal(size=n), "c": levels[codes]})
    y = 3.0 * (codes == 0) + 0.1 * frame["a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MBNDTRegressor(max_depth=1, max_epochs=30, n_restarts=1,
                               random_state=0).fit(frame, y)
    assert 1 in model.tree_.feature[np.asarray(model.tree_.is_categorical, dtype=bool)]
    for fitted in (model, from_dict(to_dict(model))):
        with pytest.warns(UserWarning, match=r"MBNDTRegressor: column 'c' holds none of the "
                          r"levels seen in fit: fit saw text \('Blue', .*\), this column "
                          r"holds numbers \(\d, \d, \d\), so every row takes the unseen "
                          r"levels' branch at its splits\. Pass the column as fit saw it\.$"
                          ) as rec:
            fitted.predict(frame.assign(c=codes))
        assert rec[0].filename == __file__
        assert len(rec) == 1
    # Levels given as bools (True/False for two of them) are lost as surely.
    with pytest.warns(UserWarning, match=r"column 'c' holds none of the levels seen in fit: "
                      r"fit saw text \('Blue', .*\), this column holds bools"):
        model.predict(frame.assign(c=codes == 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(frame.assign(c="Purple"))


@pytest.mark.parametrize("family", ["clari", "cv", "mbndt"])
def test_a_table_without_columns_is_refused_by_name(family):
    # numpy's own message for a DataFrame of no columns ("at least one array
    # or dtype is required") says nothing of the table.
    frame = pd.DataFrame({"a": np.arange(12.0)}).iloc[:, :0]
    y = np.arange(12.0) % 2
    if family == "clari":
        est = CLARITreeRegressor(max_depth=1)
    elif family == "cv":
        from clarytree import CLARITreeRegressorCV

        est = CLARITreeRegressorCV(max_depth=1, cv=2)
    else:
        pytest.importorskip("torch")
        from clarytree.mbndt import MBNDTClassifier

        est = MBNDTClassifier(max_depth=1, max_epochs=2, n_restarts=1)
    name = type(est).__name__
    for X in (frame, frame.to_numpy()):
        with pytest.raises(ValueError, match=re.escape(
                f"0 feature(s) (shape=(12, 0)) while a minimum of 1 is required by {name}")):
            est.fit(X, y)


@pytest.mark.parametrize("n", [40, 600])   # both sides of FACTORIZE_MIN_ROWS
def test_nested_cells_are_refused_naming_their_column(n):
    # Lists, dicts and arrays in a column raised pandas' bare "unhashable
    # type" from deep inside the factorization, in fit and in predict.
    pd = pytest.importorskip("pandas")
    from clarytree import CholeskyTreeRegressor
    from clarytree.mbndt import MBNDTRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=n),
                      "tags": pd.Series([["a"], ["b", "c"]] * (n // 2))})
    flat = X.assign(tags=X["tags"].str.join(","))
    y = X["x"].to_numpy() + (flat["tags"] == "a")
    message = r"column 'tags' holds list values \(\['a'\] in row 0\).*flatten it"
    with pytest.raises(TypeError, match=message):
        CholeskyTreeRegressor(max_depth=2).fit(X, y)
    model = CholeskyTreeRegressor(max_depth=2).fit(flat, y)
    with pytest.raises(TypeError, match=message):
        model.predict(X)
    # MBNDT used str() of each cell below 256 rows (a list became a level)
    # and factorized above, so a model fitted on few rows failed on a
    # larger batch of the same data.
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match=message):
        MBNDTRegressor(max_depth=2, n_restarts=1, stage1_epochs=0, max_epochs=2,
                       random_state=0).fit(X, y)


def test_nested_arrow_columns_are_refused_naming_their_column():
    pa = pytest.importorskip("pyarrow")
    from clarytree import CholeskyTreeRegressor

    rng = np.random.default_rng(0)
    for values, kind in [([[1.0], [2.0, 3.0]], "ndarray|list"), ([{"a": 1}, {"a": 2}], "dict")]:
        table = pa.table({"x": rng.normal(size=300), "z": pa.array(values * 150)})
        with pytest.raises(TypeError, match=rf"column 'z' holds ({kind}) values"):
            CholeskyTreeRegressor(max_depth=2).fit(table, rng.normal(size=300))


def test_levels_of_another_type_at_predict_are_named_by_their_type():
    # Timestamps given where fit saw text were called "numbers".
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=200), "c": rng.choice(["a", "b"], 200)})
    model = CholeskyTreeRegressor(max_depth=2).fit(X, X["x"] + (X["c"] == "a"))
    for value, kind in [(pd.Timestamp("2020-01-01"), "dates or times"), (3.5, "numbers"),
                        (b"a", "values of type bytes")]:
        with pytest.warns(UserWarning, match=rf"fit saw text \('a', 'b'\), this column "
                                             rf"holds {kind} \("):
            model.predict(X.assign(c=[value] * 200))


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
@pytest.mark.parametrize("n_thresholds", [np.uint8(255), np.int8(127), np.int16(32767)])
def test_numpy_integer_at_its_maximum_is_that_many_thresholds(n_thresholds, strategy):
    # n_thresholds + 1 wrapped around in the integer's own dtype: the pools
    # came out empty and the fit was one leaf ("every column is constant").
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = np.where(X[:, 0] > 0.3, 2.0, -1.0) + X[:, 1]
    fitted = CholeskyTreeRegressor(n_thresholds=n_thresholds, threshold_strategy=strategy,
                                   max_depth=2).fit(X, y)
    plain = CholeskyTreeRegressor(n_thresholds=int(n_thresholds), threshold_strategy=strategy,
                                  max_depth=2).fit(X, y)
    for got, expected in zip(fitted.thresholds_, plain.thresholds_, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert fitted.get_n_leaves() == plain.get_n_leaves() > 1
    np.testing.assert_array_equal(
        threshold_pool(X[:, 0], n_thresholds, strategy),
        threshold_pool(X[:, 0], int(n_thresholds), strategy))
