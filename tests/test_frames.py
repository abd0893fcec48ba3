"""polars DataFrames and pyarrow Tables fit and predict as their pandas twins."""

import decimal
import sys
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from clarytree import (  # noqa: E402
    CLARITreeRegressor,
    CLARITreeRegressorCV,
    explain,
    export_text,
    leaf_penalty_path,
    plot_partition,
)
from clarytree._frames import as_pandas, is_foreign_table  # noqa: E402

pl = pytest.importorskip("polars")


def columns(seed=0, n=240):
    """Raw columns with missing entries, and a target that uses every one."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=n)
    num[rng.random(n) < 0.1] = np.nan
    count = rng.integers(0, 5, size=n).astype(float)
    color = rng.choice(["red", "green", "blue"], size=n).astype(object)
    color[rng.random(n) < 0.1] = None
    size = rng.choice(["S", "M", "L"], size=n).astype(object)
    flag = rng.random(n) < 0.5
    y = (np.where(color == "red", 2.0, 0.0) + np.where(size == "L", -1.0, 0.0)
         + 1.5 * np.nan_to_num(num) + 0.3 * count + flag
         + rng.normal(scale=0.1, size=n))
    return {"num": num, "count": count, "color": color, "size": size, "flag": flag}, y


def polars_frame(cols):
    missing = np.isnan(cols["num"])
    return pl.DataFrame({
        "num": pl.Series([None if m else v for v, m in zip(cols["num"], missing, strict=True)],
                         dtype=pl.Float64),
        "count": pl.Series(cols["count"].astype(np.int64)),      # integers
        "color": pl.Series(list(cols["color"]), dtype=pl.String),
        "size": pl.Series(list(cols["size"]), dtype=pl.Enum(["S", "M", "L"])),
        "flag": pl.Series(cols["flag"], dtype=pl.Boolean),
    })


def pandas_frame(cols):
    return pd.DataFrame({
        "num": cols["num"],
        "count": cols["count"].astype(np.int64),
        "color": pd.Series(cols["color"], dtype=object),
        "size": pd.Categorical(cols["size"], categories=["S", "M", "L"]),
        "flag": cols["flag"],
    })


def assert_same_tree(a, b):
    for field in ("feature", "threshold", "children_left", "children_right",
                  "missing_go_left", "intercept", "coef"):
        np.testing.assert_array_equal(getattr(a.tree_, field), getattr(b.tree_, field),
                                      err_msg=field)


def test_conversion_keeps_dtypes_and_missing_values():
    cols, _ = columns()
    converted = as_pandas(polars_frame(cols))
    assert list(converted.columns) == ["num", "count", "color", "size", "flag"]
    np.testing.assert_array_equal(np.isnan(converted["num"]), np.isnan(cols["num"]))
    assert converted["count"].dtype.kind == "i"
    assert converted["flag"].dtype == bool
    assert list(converted["size"].cat.categories) == ["S", "M", "L"]   # Enum's order
    assert converted["color"].isna().sum() == sum(c is None for c in cols["color"])
    # a categorical of polars holds the levels present, and null is missing
    cat = as_pandas(pl.DataFrame({"c": pl.Series(["b", None, "a"], dtype=pl.Categorical)}))
    assert str(cat["c"].dtype) == "category"
    assert sorted(cat["c"].cat.categories) == ["a", "b"]
    assert cat["c"].isna().tolist() == [False, True, False]
    # booleans with null are object columns with None
    flags = as_pandas(pl.DataFrame({"f": [True, None, False]}))["f"]
    assert flags.tolist()[0] is True and flags.isna().tolist() == [False, True, False]


def test_non_tables_pass_through():
    X = np.arange(6.0).reshape(3, 2)
    assert as_pandas(X) is X
    frame = pd.DataFrame(X)
    assert as_pandas(frame) is frame
    assert not is_foreign_table([[1.0, 2.0]])
    assert not is_foreign_table(pl.Series([1.0, 2.0]))
    assert is_foreign_table(pl.DataFrame({"a": [1.0]}))


@pytest.mark.parametrize("lookahead_depth", [0, 1])
def test_polars_fit_equals_pandas_fit(lookahead_depth):
    cols, y = columns()
    P, D = polars_frame(cols), pandas_frame(cols)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    params = dict(max_depth=3, leaf_penalty=1e-3, lookahead_depth=lookahead_depth)
    a = CLARITreeRegressor(**params).fit(P, y, sample_weight=w)
    b = CLARITreeRegressor(**params).fit(D, y, sample_weight=w)
    assert a.get_n_leaves() > 2
    assert list(a.feature_names_in_) == list(D.columns)
    np.testing.assert_array_equal(a.is_categorical_, [False, False, True, True, True])
    assert_same_tree(a, b)
    assert a.objective_ == b.objective_
    assert export_text(a) == export_text(b)
    # either kind of table predicts with either model
    expected = b.predict(D)
    np.testing.assert_array_equal(a.predict(P), expected)
    np.testing.assert_array_equal(a.predict(D), expected)
    np.testing.assert_array_equal(b.predict(P), expected)
    np.testing.assert_array_equal(a.apply(P), b.apply(D))


def test_pyarrow_table_fits_as_pandas():
    pa = pytest.importorskip("pyarrow")
    cols, y = columns(seed=2)
    D = pandas_frame(cols)
    T = pa.Table.from_pandas(D, preserve_index=False)
    a = CLARITreeRegressor(max_depth=3, leaf_penalty=1e-3).fit(T, y)
    b = CLARITreeRegressor(max_depth=3, leaf_penalty=1e-3).fit(D, y)
    assert_same_tree(a, b)
    np.testing.assert_array_equal(a.predict(T), b.predict(D))


def test_polars_without_pyarrow(monkeypatch):
    # The conversion reads polars' own numpy arrays: no pyarrow needed, and
    # the result is the pandas twin, column for column.
    cols, _ = columns(seed=3)
    P = polars_frame(cols)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError):
        import pyarrow  # noqa: F401
    converted, twin = as_pandas(P), pandas_frame(cols)
    # (pandas >= 3 stores the text column as its string dtype)
    assert converted["color"].astype(object).where(converted["color"].notna(), None).tolist() \
        == twin["color"].tolist()
    pd.testing.assert_frame_equal(converted.drop(columns="color"), twin.drop(columns="color"))


def test_cv_path_and_explain_take_polars():
    cols, y = columns(seed=4)
    P, D = polars_frame(cols), pandas_frame(cols)
    grid = dict(max_depth=2, cv=3, leaf_penalties=[1e-1, 1e-3], ridge_alphas=[1e-2, 1e-4])
    a = CLARITreeRegressorCV(**grid).fit(P, y)
    b = CLARITreeRegressorCV(**grid).fit(D, y)
    assert (a.leaf_penalty_, a.ridge_alpha_) == (b.leaf_penalty_, b.ridge_alpha_)
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(a.predict(P), b.predict(D))

    path = leaf_penalty_path(CLARITreeRegressor(max_depth=2), P, y, [1e-1, 1e-3])
    separate = [CLARITreeRegressor(max_depth=2, leaf_penalty=lam).fit(D, y)
                for lam in (1e-1, 1e-3)]
    for p, s in zip(path, separate, strict=True):
        assert_same_tree(p, s)

    table = explain(a, P.head(5))
    np.testing.assert_array_equal(table["prediction"], b.predict(D.head(5)))
    ax = plot_partition(a, P, y, features=["num"])
    assert len(ax.collections) + len(ax.lines) + len(ax.patches) > 0
    matplotlib.pyplot.close(ax.figure)


def test_unsupported_polars_columns_are_named():
    lazy = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}).lazy()
    with pytest.raises(TypeError, match=r"polars LazyFrame: collect it first"):
        CLARITreeRegressor().fit(lazy, [1.0, 2.0, 3.0, 4.0])
    P = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "tags": [[1], [2], [1, 2], []]})
    with pytest.raises(TypeError, match="column 'tags' has polars dtype List"):
        CLARITreeRegressor().fit(P, [1.0, 2.0, 3.0, 4.0])
    dates = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0],
                          "day": pl.date_range(pl.date(2026, 1, 1), pl.date(2026, 1, 4),
                                               eager=True)})
    with pytest.raises(ValueError, match="column 'day' has dtype"):
        CLARITreeRegressor().fit(dates, [1.0, 2.0, 3.0, 4.0])


def test_128_bit_integer_columns_are_numbers(monkeypatch):
    # numpy has no 128-bit integers: polars' Int128 and UInt128 columns fit
    # and predict as their float twins, with or without pandas.
    rng = np.random.default_rng(8)
    x = rng.integers(0, 1000, size=120).astype(float)
    x[[3, 50]] = np.nan
    z = rng.normal(size=120)
    y = np.where(x > 400, 5.0, 0.0) + z + rng.normal(scale=0.1, size=120)
    twin = pl.DataFrame({"x": x, "z": z}, nan_to_null=True)
    reference = CLARITreeRegressor(max_depth=2).fit(twin, y)
    for dtype in (pl.Int128, pl.UInt128):
        P = twin.with_columns(pl.col("x").cast(pl.Int64).cast(dtype))
        assert P.schema["x"] == dtype
        model = CLARITreeRegressor(max_depth=2).fit(P, y)
        assert_same_tree(model, reference)
        np.testing.assert_array_equal(model.predict(P), reference.predict(twin))
    monkeypatch.setitem(sys.modules, "pandas", None)
    np.testing.assert_array_equal(as_pandas(P), twin.to_numpy())


def test_integers_with_nulls_stay_exact_in_every_batch():
    # numpy reads a polars or Arrow integer column with a null as float64:
    # IDs beyond 2**53 merged (at fit too), and an MBNDT level 1 read 1.0,
    # but only in a batch that held a null.
    pytest.importorskip("pyarrow")
    big = 2**53
    ids = np.array([big, big + 1] * 30)
    y = np.where(ids == big, 0.0, 10.0)
    model = CLARITreeRegressor(max_depth=1, categorical_features=["id"]).fit(
        pl.DataFrame({"id": ids}), y)
    rows = pl.DataFrame({"id": [big + 1, None, big]})
    for X in (rows, rows.to_arrow()):
        assert as_pandas(X)["id"].tolist()[::2] == [big + 1, big]
        np.testing.assert_allclose(model.predict(X)[::2], [10.0, 0.0], atol=1e-9)
    with_null = pl.DataFrame({"id": pl.Series([*ids.tolist(), None])})
    model = CLARITreeRegressor(max_depth=1, categorical_features=["id"]).fit(
        with_null, np.r_[y, 5.0])
    assert model.categories_[0].tolist() == [big, big + 1]
    assert model.get_n_leaves() > 1


def test_mbndt_integer_levels_from_polars_with_nulls():
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTRegressor

    rng = np.random.default_rng(2)
    codes = rng.integers(0, 4, size=200)
    y = np.where(np.isin(codes, [1, 3]), 8.0, 0.0) + rng.normal(scale=0.1, size=200)
    model = MBNDTRegressor(max_depth=1, n_restarts=1, max_epochs=30, random_state=0).fit(
        pd.DataFrame({"c": pd.Categorical(codes)}), y)
    rows = pl.DataFrame({"c": [1, 2]})
    alone = model.predict(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch = model.predict(pl.concat([rows, pl.DataFrame({"c": [None]},
                                                            schema={"c": pl.Int64})]))
    np.testing.assert_array_equal(batch[:2], alone)
    np.testing.assert_array_equal(alone, model.predict(pd.DataFrame(
        {"c": pd.Categorical([1, 2], categories=[0, 1, 2, 3])})))


def decimal_data(n=160):
    """Prices with two decimals (and a missing one), the target a step in them."""
    rng = np.random.default_rng(5)
    values = [decimal.Decimal(f"{v:.2f}") for v in rng.uniform(0, 100, size=n)]
    values[7] = None
    price = np.array([np.nan if v is None else float(v) for v in values])
    y = np.where(price > 50, 10.0, 0.0) + 0.05 * np.nan_to_num(price) \
        + rng.normal(scale=0.1, size=n)
    return price, values, y


def test_decimal_columns_are_numbers():
    # pandas reads SQL NUMERIC and Parquet decimals as objects of
    # decimal.Decimal, and Arrow keeps them as decimal128: numbers all,
    # fitted and predicted as the float column (new prices are not levels).
    pa = pytest.importorskip("pyarrow")
    price, values, y = decimal_data()
    reference = CLARITreeRegressor(max_depth=2).fit(pd.DataFrame({"price": price}), y)
    arrow = pa.array(values, type=pa.decimal128(10, 2))
    for X in (pd.DataFrame({"price": pd.Series(values, dtype=object)}),
              pd.DataFrame({"price": pd.array(arrow, dtype=pd.ArrowDtype(arrow.type))}),
              pa.table({"price": arrow}),
              pl.DataFrame({"price": pl.Series([None if v is None else float(v)
                                                for v in values]).cast(pl.Decimal(10, 2))})):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = CLARITreeRegressor(max_depth=2).fit(X, y)
        assert not model.is_categorical_.any()
        assert_same_tree(model, reference)
        np.testing.assert_array_equal(model.predict(X), reference.predict(
            pd.DataFrame({"price": price})))


def test_polars_null_column_is_missing_everywhere():
    # polars types a column of nulls only as Null: it reads as its pandas
    # twin (objects, all None), at fit and in a one-row predict.
    cols, y = columns(seed=6)
    P = polars_frame(cols).with_columns(pl.lit(None).alias("empty"))
    D = pandas_frame(cols).assign(empty=pd.Series([None] * len(y), dtype=object))
    a = CLARITreeRegressor(max_depth=2).fit(P, y)
    b = CLARITreeRegressor(max_depth=2).fit(D, y)
    assert_same_tree(a, b)
    row = pl.DataFrame({"num": [None], "count": [2], "color": [None], "size": ["M"],
                        "flag": [True], "empty": [None]},
                       schema_overrides={"size": pl.Enum(["S", "M", "L"])})
    assert row.schema["num"] == pl.Null
    twin = D.head(1).assign(num=np.nan, count=2, color=None, size="M", flag=True)
    np.testing.assert_array_equal(a.predict(row), b.predict(twin))


def test_mbndt_takes_polars():
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTRegressor

    cols, y = columns(seed=5)
    P, D = polars_frame(cols), pandas_frame(cols)
    params = dict(max_depth=2, max_epochs=5, n_restarts=1, random_state=0)
    a = MBNDTRegressor(**params).fit(P, y)
    b = MBNDTRegressor(**params).fit(D, y)
    np.testing.assert_array_equal(a.predict(P), b.predict(D))
    np.testing.assert_array_equal(a.predict(D), b.predict(D))
