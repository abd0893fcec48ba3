"""Tests for clarytree._explain: contributions, importances, clipping, SQL and Python export."""

import json
import pickle
import sqlite3
import sys
from functools import reduce
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_selection import SelectFromModel
from sklearn.tree import DecisionTreeRegressor

from clarytree import (
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    explain,
    export_graphviz,
    export_python,
    export_sql,
    export_text,
    from_dict,
    leaf_table,
    to_dict,
)
from clarytree.datasets import make_piecewise_linear


@pytest.fixture(scope="module")
def data():
    X, y = make_piecewise_linear(n_samples=500, n_features=4, n_regimes=3, noise=0.1,
                                 random_state=0)
    return X, y


def _models(X, y):
    yield CLARITreeRegressor(max_depth=2).fit(X, y)
    yield CholeskyTreeRegressor(max_depth=3).fit(X, y)
    yield CholeskyTreeRegressor(max_depth=3, leaf_model="constant").fit(X, y)
    yield CholeskyTreeRegressor(max_depth=2, regression_features=[1, 3]).fit(X, y)


def _left_to_right(table, names):
    """intercept + term_1 + term_2 + ... evaluated strictly left to right."""
    return reduce(lambda acc, name: acc + table[name].to_numpy(), names,
                  table["intercept"].to_numpy())


def _far_rows(X, seed=1, scale=50.0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(200, X.shape[1])) * scale * X.std(axis=0)


# --------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------


@pytest.mark.parametrize("extrapolation", ["none", "clip"])
def test_contributions_add_up_to_predict_bit_for_bit(data, extrapolation):
    X, y = data
    rows = np.vstack([X, _far_rows(X)])
    for model in _models(X, y):
        model.set_params(extrapolation=extrapolation)
        table = explain(model, rows)
        names = [f"x[{j}]" for j in range(X.shape[1])]
        assert list(table.columns) == ["leaf", "rule", "intercept", *names, "prediction"]
        pred = model.predict(rows)
        np.testing.assert_array_equal(table["prediction"].to_numpy(), pred)
        np.testing.assert_array_equal(_left_to_right(table, names), pred)
        np.testing.assert_array_equal(table["leaf"].to_numpy(), model.apply(rows))
        # Terms of features outside a leaf model are exactly 0.
        coef = model.tree_.coef[table["leaf"].to_numpy()]
        terms = table[names].to_numpy()
        assert np.all(terms[coef == 0] == 0)
        if extrapolation == "none":
            np.testing.assert_array_equal(terms, coef * rows)


def test_explain_on_real_data_matches_leaf_table_and_rules():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = CLARITreeRegressor(max_depth=2, leaf_penalty=1e-2, ridge_alpha=1e-2).fit(X, y)
    X_new = X.iloc[::7]
    table = explain(model, X_new)
    assert table.index.equals(X_new.index)
    pred = model.predict(X_new)
    np.testing.assert_array_equal(table["prediction"].to_numpy(), pred)
    np.testing.assert_array_equal(_left_to_right(table, list(X.columns)), pred)
    # The rule of a row is its leaf's rule in leaf_table, and every row satisfies it.
    leaves = leaf_table(model, exact_thresholds=True)
    rules = dict(zip(leaves["leaf"], leaves["rule"], strict=True))
    assert all(rules[leaf] == rule for leaf, rule in zip(table["leaf"], table["rule"],
                                                         strict=True))
    for (_, row), rule in zip(X_new.iterrows(), table["rule"], strict=True):
        assert eval(_as_python(rule), {}, {"row": row})


def _as_python(rule):
    """A leaf_table rule as a Python boolean expression over ``row[name]``."""
    import re

    return re.sub(r"([A-Za-z_][A-Za-z0-9_]*)(?= (<=|>|<))|(?<=< )([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: f"row[{(m.group(1) or m.group(3))!r}]", rule)


def test_explain_without_pandas_returns_dict_of_arrays(data, monkeypatch):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    monkeypatch.setitem(sys.modules, "pandas", None)
    table = explain(model, X[:20])
    assert isinstance(table, dict)
    assert list(table) == ["leaf", "rule", "intercept", "x[0]", "x[1]", "x[2]", "x[3]",
                           "prediction"]
    total = table["intercept"]
    for j in range(4):
        total = total + table[f"x[{j}]"]
    np.testing.assert_array_equal(total, model.predict(X[:20]))


def test_explain_input_errors(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    with pytest.raises(ValueError, match="clash"):
        explain(model, X, feature_names=["leaf", "b", "c", "d"])
    with pytest.raises(ValueError, match=r"distinct; repeated: \['a'\]"):
        explain(model, X, feature_names=["a", "a", "c", "d"])
    with pytest.raises(ValueError, match="features"):
        explain(model, X[:, :2])
    with pytest.raises(TypeError, match="fitted"):
        explain(object(), X)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        explain(CholeskyTreeRegressor(), X)


# --------------------------------------------------------------------------
# feature_importances_
# --------------------------------------------------------------------------


def test_constant_leaf_importances_equal_scikit_learn_cart():
    # The same greedy SSE splits over all midpoints: the same tree as CART, so
    # the impurity importances must agree.
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(300, 4))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + X[:, 1] ** 2 + 0.1 * rng.normal(size=300)
    ours = CholeskyTreeRegressor(max_depth=3, leaf_model="constant", leaf_penalty=0.0,
                                 n_thresholds=None).fit(X, y)
    cart = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(ours.apply(X) > 0, cart.apply(X) > 0)
    assert ours.get_n_leaves() == cart.get_n_leaves()
    np.testing.assert_allclose(ours.feature_importances_, cart.feature_importances_,
                               rtol=1e-9, atol=1e-12)


def test_linear_leaf_importances_against_direct_computation(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    tree = model.tree_
    expected = np.zeros(X.shape[1])
    for node in np.flatnonzero(tree.children_left >= 0):
        gain = (tree.node_objective[node] - tree.node_objective[tree.children_left[node]]
                - tree.node_objective[tree.children_right[node]])
        assert gain >= 0
        expected[tree.feature[node]] += gain
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        rows = X[leaves == leaf]
        fitted = rows @ tree.coef[leaf] + tree.intercept[leaf]
        shares = np.array([np.cov(rows[:, j] * tree.coef[leaf, j], fitted, bias=True)[0, 1]
                           for j in range(X.shape[1])]) * rows.shape[0]
        # The Pratt shares add up to the leaf's explained variation.
        np.testing.assert_allclose(shares.sum(), ((fitted - fitted.mean()) ** 2).sum(),
                                   rtol=1e-9)
        expected += np.maximum(shares, 0)
    np.testing.assert_allclose(model.feature_importances_, expected / expected.sum(),
                               rtol=1e-9)
    assert model.feature_importances_.sum() == pytest.approx(1.0)


def test_importances_find_relevant_features_with_select_from_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = np.where(X[:, 0] > 0, 3 * X[:, 1], -2 * X[:, 1]) + 0.05 * rng.normal(size=600)
    model = CLARITreeRegressor(max_depth=2, regression_features=[1, 2, 3, 4, 5])
    selector = SelectFromModel(model).fit(X, y)
    # The split-only feature 0 and the slope feature 1 carry the model.
    assert list(np.flatnonzero(selector.get_support())) == [0, 1]
    imp = selector.estimator_.feature_importances_
    assert imp[[0, 1]].sum() > 0.95


def test_importances_of_a_single_constant_leaf_are_zero(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=0, leaf_model="constant").fit(X, y)
    np.testing.assert_array_equal(model.feature_importances_, np.zeros(X.shape[1]))


# --------------------------------------------------------------------------
# extrapolation="clip"
# --------------------------------------------------------------------------


def test_training_boxes_hold_leaf_extremes(data):
    X, y = data
    model = CLARITreeRegressor(max_depth=2, regression_features=[0, 1, 2]).fit(X, y)
    tree = model.tree_
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        np.testing.assert_array_equal(tree.box_lower[leaf, :3], X[rows, :3].min(axis=0))
        np.testing.assert_array_equal(tree.box_upper[leaf, :3], X[rows, :3].max(axis=0))
        assert tree.target_lower[leaf] == y[rows].min()
        assert tree.target_upper[leaf] == y[rows].max()
    # Not a regression feature: unbounded.
    assert np.all(np.isinf(tree.box_lower[:, 3])) and np.all(np.isinf(tree.box_upper[:, 3]))
    # The root's box is the data's.
    np.testing.assert_array_equal(tree.box_lower[0, :3], X[:, :3].min(axis=0))
    assert tree.target_upper[0] == y.max()


def test_node_statistics_match_a_per_node_reference():
    # Every node (internal ones too) against statistics computed directly on
    # the node's rows, with missing values, a categorical split column,
    # weights and a column that is not a regression feature.
    rng = np.random.default_rng(3)
    X, y = make_piecewise_linear(n_samples=2000, n_features=5, random_state=4)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 1] = np.where(np.isnan(X[:, 1]), np.nan, rng.integers(0, 4, X.shape[0]))
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["b"] = frame["b"].astype("category")
    w = rng.random(X.shape[0]) + 0.1
    model = CholeskyTreeRegressor(max_depth=3, leaf_penalty=1e-4,
                                  regression_features=["a", "c", "d"]).fit(frame, y, w)
    tree = model.tree_
    Xe = model._preparation.transform(model, frame)
    paths = tree.decision_path(Xe).tocsc()
    assert model.get_n_leaves() >= 4
    for node in range(tree.node_count):
        rows = paths.indices[paths.indptr[node]:paths.indptr[node + 1]]
        for j in range(5):
            column = Xe[rows, j]
            if j in (0, 2, 3) and not np.isnan(column).all():
                assert tree.box_lower[node, j] == np.nanmin(column)
                assert tree.box_upper[node, j] == np.nanmax(column)
            else:
                assert tree.box_lower[node, j] == -np.inf
                assert tree.box_upper[node, j] == np.inf
        assert tree.target_lower[node] == y[rows].min()
        assert tree.target_upper[node] == y[rows].max()
        filled = np.where(np.isnan(Xe[rows]), tree.fill_value, Xe[rows])
        terms = filled * tree.coef[node]
        fitted = terms.sum(axis=1)
        wr = w[rows]
        cov = ((terms - np.average(terms, axis=0, weights=wr)).T
               @ (wr * (fitted - np.average(fitted, weights=wr))))
        np.testing.assert_allclose(tree.model_share[node], cov, rtol=1e-10,
                                   atol=1e-12 * np.abs(cov).max())


def test_clip_bounds_far_predictions_and_keeps_training_ones(data):
    X, y = data
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    far = _far_rows(X, scale=1e6)
    free = model.predict(far)
    clipped = model.set_params(extrapolation="clip").predict(far)
    tree = model.tree_
    # Bound of every leaf model over its box, from the box corners.
    bound = max(
        abs(tree.intercept[leaf]) + np.sum(np.abs(tree.coef[leaf]) * np.maximum(
            np.abs(np.where(np.isinf(tree.box_lower[leaf]), 0, tree.box_lower[leaf])),
            np.abs(np.where(np.isinf(tree.box_upper[leaf]), 0, tree.box_upper[leaf]))))
        for leaf in model.leaf_ids_)
    assert np.all(np.abs(clipped) <= bound)
    assert np.abs(free).max() > 1e4 * bound
    # Clipping equals applying the leaf model to the clipped row.
    leaves = model.apply(far)
    lo, hi = tree.box_lower[leaves], tree.box_upper[leaves]
    manual = tree.intercept[leaves] + np.sum(np.clip(far, lo, hi) * tree.coef[leaves], axis=1)
    np.testing.assert_allclose(clipped, manual, rtol=1e-12, atol=1e-9)
    # Training rows lie in their leaf's box: identical predictions.
    np.testing.assert_array_equal(model.predict(X),
                                  model.set_params(extrapolation="none").predict(X))


def test_boxes_survive_json_and_pickle(data):
    X, y = data
    model = CLARITreeRegressor(max_depth=2, extrapolation="clip",
                               regression_features=[0, 1]).fit(X, y)
    far = _far_rows(X)
    text = json.dumps(to_dict(model), allow_nan=False)  # unbounded boxes are null
    clone = from_dict(json.loads(text))
    np.testing.assert_array_equal(clone.predict(far), model.predict(far))
    np.testing.assert_array_equal(clone.tree_.box_lower, model.tree_.box_lower)
    np.testing.assert_array_equal(clone.feature_importances_, model.feature_importances_)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(far), model.predict(far))
    np.testing.assert_array_equal(again.tree_.target_upper, model.tree_.target_upper)


def test_descriptions_without_boxes_still_load(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    data_dict = to_dict(model)
    for name in ("box_lower", "box_upper", "target_lower", "target_upper", "model_share"):
        del data_dict["tree"][name]
    del data_dict["params"]["extrapolation"]
    old = from_dict(data_dict)
    assert np.all(np.isinf(old.tree_.box_lower))
    # Without model shares only the split credits remain.
    assert old.feature_importances_.sum() == pytest.approx(1.0)
    far = _far_rows(X)
    np.testing.assert_array_equal(old.set_params(extrapolation="clip").predict(far),
                                  model.predict(far))


def test_tree_rejects_inconsistent_boxes(data):
    from clarytree._tree import Tree

    X, y = data
    arrays = CholeskyTreeRegressor(max_depth=1).fit(X, y).tree_.to_arrays()
    bad = dict(arrays, box_lower=arrays["box_upper"] + 1.0)
    with pytest.raises(ValueError, match="box_lower <= box_upper"):
        Tree.from_arrays(bad)
    with pytest.raises(ValueError, match="expected"):
        Tree.from_arrays(dict(arrays, target_lower=np.zeros(1)))


def test_extrapolation_parameter_is_validated(data):
    X, y = data
    with pytest.raises(ValueError, match="extrapolation"):
        CholeskyTreeRegressor(extrapolation="wild").fit(X, y)
    # It acts at predict time, so set_params after fit skips fit's check:
    # predict and every export that reproduces predict check it themselves
    # (a misspelled "Clip" must not quietly predict as "none").
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    for value in ("Clip", True, None):
        model.set_params(extrapolation=value)
        for call in (model.predict, lambda X: explain(model, X), lambda X: export_python(model),
                     lambda X: export_sql(model)):
            with pytest.raises(ValueError, match="'extrapolation' parameter .* among"):
                call(X)


# --------------------------------------------------------------------------
# SQL through sqlite3 and Python through exec
# --------------------------------------------------------------------------


def _sqlite_predict(sql_for_table, frame, columns):
    db = sqlite3.connect(":memory:")
    cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    db.execute(f"CREATE TABLE t ({cols})")
    rows = [[None if (isinstance(v, float) and v != v) else v for v in row]
            for row in frame]
    db.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(columns))})", rows)
    return [r[0] for r in db.execute(sql_for_table)]


@pytest.mark.parametrize("dialect", ["sqlite", "ansi", "postgres"])
@pytest.mark.parametrize("extrapolation", ["none", "clip"])
def test_sql_reproduces_predict_in_sqlite(data, dialect, extrapolation):
    X, y = data
    rows = np.vstack([X[::5], _far_rows(X)])
    names = [f"x[{j}]" for j in range(X.shape[1])]
    for model in _models(X, y):
        model.set_params(extrapolation=extrapolation)
        sql = export_sql(model, table="t", dialect=dialect)
        got = np.array(_sqlite_predict(sql, rows.tolist(), names), dtype=np.float64)
        want = model.predict(rows)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        # sqlite parses these literals exactly: in fact bit for bit.
        np.testing.assert_array_equal(got, want)


def test_sql_expression_and_names(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["a", 'b"q', "c", "d"])
    model = CholeskyTreeRegressor(max_depth=2).fit(frame, y)
    expr = export_sql(model, table=None)
    assert expr.startswith("CASE") and expr.endswith("END")
    assert '"b""q"' in expr
    sql = f'SELECT {expr} FROM t'
    got = _sqlite_predict(sql, X.tolist(), list(frame.columns))
    np.testing.assert_array_equal(got, model.predict(frame))
    with pytest.raises(ValueError, match="dialect"):
        export_sql(model, dialect="oracle")
    with pytest.raises(TypeError, match="table"):
        export_sql(model, table="")


@pytest.mark.parametrize("extrapolation", ["none", "clip"])
def test_python_export_reproduces_predict_exactly(data, extrapolation):
    X, y = data
    rows = np.vstack([X, _far_rows(X)])
    for model in _models(X, y):
        model.set_params(extrapolation=extrapolation)
        source = export_python(model, function_name="score_row")
        assert "import" not in source
        namespace = {}
        exec(compile(source, "<clarytree>", "exec"), namespace)
        got = np.array([namespace["score_row"](row) for row in rows.tolist()])
        np.testing.assert_array_equal(got, model.predict(rows))


def test_python_export_computes_float32_rows_as_predict_does():
    # Rows of a float32 array (``for row in X``) hold numpy float32 values,
    # which numpy 2 compares and multiplies in float32: the generated code
    # reads them as Python floats, as predict reads X as float64.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    X[:, 0] = np.where(np.arange(300) % 2, np.float32(1.0000001), np.float32(1.0))
    y = np.where(X[:, 0] > 1.0, 10.0 + X[:, 1], X[:, 1] * 3.0)
    model = CholeskyTreeRegressor(max_depth=1, n_thresholds=None).fit(X, y)
    namespace = {}
    exec(compile(export_python(model, function_name="f"), "<clarytree>", "exec"), namespace)
    got = np.array([namespace["f"](row) for row in X])
    assert all(type(namespace["f"](row)) is float for row in X[:3])
    np.testing.assert_array_equal(got, model.predict(X))


def test_python_export_rejects_bad_names(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    for bad in ("1x", "class", "a-b", ""):
        with pytest.raises(ValueError, match="identifier"):
            export_python(model, function_name=bad)
    # Python 3 identifiers are not only ASCII.
    namespace = {}
    exec(export_python(model, function_name="prédire"), namespace)
    assert namespace["prédire"](X[0].tolist()) == model.predict(X[:1])[0]
    for taken in ("_leaf", "_clarytree_missing", "_PREDICTION", "_leaf_proba"):
        with pytest.raises(ValueError, match="taken by the generated source"):
            export_python(model, function_name=taken)
    # The source calls float() (and may import datetime): a function of that
    # name replaced the builtin and the generated predict failed.
    for shadowing in ("float", "list", "isinstance", "datetime"):
        with pytest.raises(ValueError, match=rf"would shadow Python's '{shadowing}'"):
            export_python(model, function_name=shadowing)


@pytest.mark.parametrize("family", ["clari", "mbndt"])
def test_python_export_takes_rows_of_nullable_frames(family):
    # Rows of a DataFrame with nullable dtypes hold pandas.NA for missing
    # cells, whose comparisons are not truth values.
    rng = np.random.default_rng(4)
    n = 300
    x = rng.normal(size=n)
    frame = pd.DataFrame({
        "x": pd.array(np.where(rng.random(n) < 0.15, None, x), dtype="Float64"),
        "k": pd.array(np.where(rng.random(n) < 0.15, None, rng.integers(0, 3, n)),
                      dtype="Int64"),
        "c": pd.array(np.where(rng.random(n) < 0.15, None, rng.choice(["u", "v"], n)),
                      dtype="string")})
    y = 2.0 * np.nan_to_num(x) + (frame["c"] == "u").fillna(False).to_numpy()
    if family == "clari":
        model = CLARITreeRegressor(max_depth=3).fit(frame, y)
    else:
        pytest.importorskip("torch")
        from clarytree.mbndt import MBNDTRegressor

        model = MBNDTRegressor(max_depth=2, n_restarts=1, max_epochs=30,
                               random_state=0).fit(frame, y)
    namespace = {}
    exec(export_python(model), namespace)
    rows = frame.astype(object).to_numpy().tolist()
    assert any(v is pd.NA for row in rows for v in row)
    np.testing.assert_array_equal([namespace["predict"](r) for r in rows], model.predict(frame))


# --------------------------------------------------------------------------
# MBNDT multiway trees (raw columns: NaN, categories, unseen levels)
# --------------------------------------------------------------------------


MBNDT_FAST = dict(max_depth=2, n_branches=3, n_restarts=1, stage1_epochs=3, max_epochs=15,
                  patience=5, random_state=0)


@pytest.fixture(scope="module")
def mixed_frame():
    rng = np.random.default_rng(0)
    n = 300
    a = rng.normal(size=n)
    b = rng.uniform(0, 10, size=n)
    color = rng.choice(["red", "green", "blue"], size=n).astype(object)
    city = rng.choice([f"c{k}" for k in range(14)], size=n).astype(object)
    signal = 2 * a + 2 * (color == "red") - 1.5 * (b > 5) + 2 * np.isin(city, ["c1", "c2"])
    a[rng.random(n) < 0.1] = np.nan
    color[rng.random(n) < 0.1] = None
    X = pd.DataFrame({"a": a, "b": b, "color": color, "city": city})
    return X, signal


def _new_rows(X):
    """Rows the models never saw: unseen levels, missing values everywhere."""
    rows = X.iloc[:40].copy()
    rows.loc[rows.index[:10], "color"] = "purple"
    rows.loc[rows.index[10:20], "city"] = None
    rows.loc[rows.index[20:30], "b"] = np.nan
    rows.loc[rows.index[30:], "a"] = 1e9
    return pd.concat([X, rows], ignore_index=True)


def _check_mbndt_exports(model, rows):
    want = model.predict(rows)
    db = sqlite3.connect(":memory:")
    rows.to_sql("t", db, index=False)
    got = [r[0] for r in db.execute(export_sql(model))]
    assert list(got) == list(want)
    namespace = {}
    exec(export_python(model), namespace)
    records = rows.astype(object).where(rows.notna(), None).to_numpy().tolist()
    assert [namespace["predict"](r) for r in records] == list(want)
    # NaN instead of None reads the same.
    raw = rows.to_numpy(dtype=object).tolist()
    assert [namespace["predict"](r) for r in raw] == list(want)
    assert [namespace["_leaf"](r) for r in raw] == list(model.apply(rows))
    return namespace


def test_mbndt_regressor_exports_and_explain(mixed_frame):
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTRegressor

    X, signal = mixed_frame
    model = MBNDTRegressor(**MBNDT_FAST).fit(X, signal)
    rows = _new_rows(X)
    _check_mbndt_exports(model, rows)
    table = explain(model, rows)
    np.testing.assert_array_equal(table["prediction"], model.predict(rows))
    np.testing.assert_array_equal(table["intercept"], model.predict(rows))
    assert (table[["a", "b", "color", "city"]].to_numpy() == 0).all()
    # The rules name the exact cuts, as for CLARITree: a shortened decimal
    # can contradict a new row lying between it and the cut.
    exact = leaf_table(model, exact_thresholds=True)
    short = leaf_table(model)
    assert list(exact["rule"]) != list(short["rule"])
    expected = dict(zip(exact["leaf"], exact["rule"], strict=True))
    assert list(table["rule"]) == [expected[leaf] for leaf in table["leaf"]]


def test_mbndt_classifier_exports(mixed_frame):
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTClassifier

    X, signal = mixed_frame
    labels = np.where(signal > 0.5, "yes", "no")
    model = MBNDTClassifier(**MBNDT_FAST).fit(X, labels)
    rows = _new_rows(X)
    namespace = _check_mbndt_exports(model, rows)
    proba = [namespace["predict_proba"](r) for r in rows.to_numpy(dtype=object).tolist()]
    np.testing.assert_array_equal(np.array(proba), model.predict_proba(rows))
    with pytest.raises(TypeError, match="regressor"):
        explain(model, rows)
    # The probabilities in SQL too: one column per class, bit for bit in SQLite.
    db = sqlite3.connect(":memory:")
    rows.to_sql("t", db, index=False)
    cursor = db.execute(export_sql(model, proba=True, column="label"))
    assert [d[0] for d in cursor.description] == ["label", "proba[no]", "proba[yes]"]
    got = cursor.fetchall()
    assert [r[0] for r in got] == list(model.predict(rows))
    np.testing.assert_array_equal(np.array([r[1:] for r in got]), model.predict_proba(rows))
    with pytest.raises(ValueError, match="pass a table"):
        export_sql(model, table=None, proba=True)
    regressor = CholeskyTreeRegressor(max_depth=1).fit(X[["a", "b"]], signal)
    with pytest.raises(TypeError, match="needs a classifier"):
        export_sql(regressor, proba=True)


# --------------------------------------------------------------------------
# PostgreSQL (a real server when this machine has one; skipped otherwise)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL server on a Unix socket; yields a query runner."""
    import os
    import shutil
    import subprocess
    import tempfile

    tools = {name: shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)
        for name in ("initdb", "pg_ctl", "psql")}
    if None in tools.values():
        pytest.skip("PostgreSQL server binaries not installed")
    # Not under pytest's tmp_path: its root-only parents would lock the server out.
    folder = Path(tempfile.mkdtemp(prefix="clarytree-pg-"))
    prefix = []
    if os.geteuid() == 0:  # the server refuses to run as root
        runuser = shutil.which("runuser")
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            runuser = None
        if runuser is None:
            shutil.rmtree(folder)
            pytest.skip("running as root without a 'postgres' user to run the server")
        shutil.chown(folder, "postgres")
        prefix = [runuser, "-u", "postgres", "--"]
    data, sock = folder / "data", folder
    env = dict(os.environ, LC_ALL="C")

    def run(*cmd, **kw):
        return subprocess.run([*prefix, *cmd], capture_output=True, text=True, env=env,
                              timeout=120, **kw)

    made = run(tools["initdb"], "-D", str(data), "-A", "trust", "-U", "postgres")
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"initdb failed: {made.stderr.strip()[:200]}")
    started = run(tools["pg_ctl"], "-D", str(data), "-w", "-l", str(folder / "log"), "-o",
                  f"-k {sock} -c listen_addresses='' -F", "start")
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"pg_ctl start failed: {started.stderr.strip()[:200]}")

    def query(sql):
        out = run(tools["psql"], "-h", str(sock), "-U", "postgres", "-X", "-q", "-A", "-t",
                  "-v", "ON_ERROR_STOP=1", "-d", "postgres", input=sql)
        assert out.returncode == 0, out.stderr
        return out.stdout

    try:
        yield query
    finally:
        run(tools["pg_ctl"], "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("dialect", ["postgres", "ansi"])
def test_sql_reproduces_predict_in_postgres(data, postgres, dialect):
    X, y = data
    rows = np.vstack([X[::5], _far_rows(X)])
    names = [f"x[{j}]" for j in range(X.shape[1])]
    columns = ", ".join(f'"{n}" DOUBLE PRECISION' for n in names)
    values = ",\n".join(f"({i}, " + ", ".join(repr(float(v)) for v in row) + ")"
                         for i, row in enumerate(rows))
    for model in _models(X, y):
        for extrapolation in ("none", "clip"):
            model.set_params(extrapolation=extrapolation)
            # extra_float_digits=3 prints every double exactly (round trip).
            out = postgres(
                "SET extra_float_digits = 3;\n"
                f"DROP TABLE IF EXISTS t; CREATE TABLE t (id INTEGER, {columns});\n"
                f"INSERT INTO t VALUES {values};\n"
                + export_sql(model, table="t ORDER BY id", dialect=dialect) + ";\n")
            got = np.array([float(v) for v in out.split()])
            np.testing.assert_allclose(got, model.predict(rows), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------
# Categorical columns and missing values (CLARITree family)
# --------------------------------------------------------------------------


def _mixed_table(seed=0, n=600):
    rng = np.random.default_rng(seed)
    color = rng.choice(["red", "green", "blue", "black", "white", "grey"], size=n,
                       p=[0.3, 0.3, 0.2, 0.1, 0.06, 0.04]).astype(object)
    size = pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"])
    flag = rng.random(n) < 0.5
    x = rng.normal(size=n)
    z = rng.normal(size=n)
    y = (np.where(np.isin(color, ["red", "blue", "white"]), 2 * z, -z) + flag
         + x * (np.asarray(size) == "L") + np.where(np.isnan(x), 1.5, 0.0)
         + 0.1 * rng.normal(size=n))
    x[rng.random(n) < 0.2] = np.nan
    z[rng.random(n) < 0.05] = np.nan
    color[rng.random(n) < 0.1] = None
    return pd.DataFrame({"color": color, "size": size, "flag": flag, "x": x, "z": z}), y


def _mixed_rows(X):
    """Training rows plus unseen levels, missing values and far-away numbers."""
    extra = X.iloc[:60].copy()
    extra["color"] = extra["color"].astype(object)
    extra.loc[extra.index[:10], "color"] = "purple"
    extra.loc[extra.index[10:20], "x"] = np.nan
    extra.loc[extra.index[20:30], "z"] = np.nan
    extra.loc[extra.index[30:40], "size"] = np.nan
    extra.loc[extra.index[40:], ["x", "z"]] = [[1e6, -1e6]] * 20
    rows = pd.concat([X, extra], ignore_index=True)
    rows["size"] = pd.Categorical(rows["size"], categories=["S", "M", "L"])
    return rows


@pytest.fixture(scope="module")
def mixed_models():
    X, y = _mixed_table()
    models = [CLARITreeRegressor(max_depth=3).fit(X, y),
              CholeskyTreeRegressor(max_depth=4, min_category_weight=50).fit(X, y),
              CholeskyTreeRegressor(max_depth=3, leaf_model="constant").fit(X, y)]
    return models, X, y


def test_mixed_models_use_categorical_and_missing_splits(mixed_models):
    models, X, _ = mixed_models
    tree = models[0].tree_
    internal = tree.children_left >= 0
    assert tree.is_categorical[internal].any()
    assert models[1].merged_categories_[0]          # rare colors merged
    assert any(m.tree_.missing_go_left[m.tree_.children_left >= 0].any() for m in models)
    assert np.isnan(X["x"]).any() and models[0].tree_.coef[:, 3].any()


@pytest.mark.parametrize("extrapolation", ["none", "clip"])
def test_mixed_contributions_and_exports_are_exact(mixed_models, extrapolation):
    models, X, _ = mixed_models
    rows = _mixed_rows(X)
    names = list(X.columns)
    records = rows.astype(object).to_numpy().tolist()
    db = sqlite3.connect(":memory:")
    rows.to_sql("t", db, index=False)
    for model in models:
        model.set_params(extrapolation=extrapolation)
        want = model.predict(rows)
        table = explain(model, rows)
        np.testing.assert_array_equal(table["prediction"].to_numpy(), want)
        np.testing.assert_array_equal(_left_to_right(table, names), want)
        # A missing regression value contributes coef * fill_value.
        missing_x = rows["x"].isna().to_numpy()
        leaves = table["leaf"].to_numpy()
        if extrapolation == "none":
            np.testing.assert_array_equal(
                table["x"].to_numpy()[missing_x],
                model.tree_.coef[leaves[missing_x], 3] * model.tree_.fill_value[3])
        for dialect in ("sqlite", "ansi"):
            got = [r[0] for r in db.execute(export_sql(model, dialect=dialect))]
            np.testing.assert_array_equal(np.array(got, dtype=float), want)
        namespace = {}
        exec(export_python(model), namespace)
        np.testing.assert_array_equal([namespace["predict"](r) for r in records], want)


def test_mixed_rules_hold_for_the_rows_they_explain(mixed_models):
    models, X, _ = mixed_models
    model = models[0]
    table = explain(model, X)
    leaf_rules = leaf_table(model, exact_thresholds=True)
    expected = dict(zip(leaf_rules["leaf"], leaf_rules["rule"], strict=True))
    assert [expected[leaf] for leaf in table["leaf"]] == list(table["rule"])
    assert any(" in {" in rule for rule in table["rule"])


def test_mixed_importances_credit_the_categorical_split(mixed_models):
    models, X, y = mixed_models
    imp = dict(zip(X.columns, models[0].feature_importances_, strict=True))
    assert sum(imp.values()) == pytest.approx(1.0)
    # color decides the sign of the z slope: both carry the model.
    assert imp["color"] > 0.1 and imp["z"] > 0.1
    assert imp["color"] + imp["z"] > imp["flag"] + imp["size"]


def _pg_literal(value):
    if value is None or (isinstance(value, float) and value != value):
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(float(value))


def test_mixed_sql_reproduces_predict_in_postgres(mixed_models, postgres):
    models, X, _ = mixed_models
    rows = _mixed_rows(X)
    records = rows.astype(object).to_numpy().tolist()
    values = ",\n".join(f"({i}, " + ", ".join(_pg_literal(v) for v in r) + ")"
                         for i, r in enumerate(records))
    # Booleans as numbers: PostgreSQL does not compare boolean with numeric.
    setup = ("SET extra_float_digits = 3;\nDROP TABLE IF EXISTS m;\n"
             'CREATE TABLE m (id INTEGER, "color" TEXT, "size" TEXT, '
             '"flag" DOUBLE PRECISION, "x" DOUBLE PRECISION, "z" DOUBLE PRECISION);\n'
             f"INSERT INTO m VALUES {values};\n")
    for model in models:
        for extrapolation in ("none", "clip"):
            model.set_params(extrapolation=extrapolation)
            out = postgres(setup + export_sql(model, table="m ORDER BY id",
                                              dialect="postgres") + ";\n")
            got = np.array([float(v) for v in out.split()])
            np.testing.assert_allclose(got, model.predict(rows), rtol=1e-12, atol=0)


def test_mbndt_sql_of_a_table_that_lists_only_missing_values():
    # A categorical node whose table holds only the missing entry sends every
    # present value (listed nowhere) to the default child: in SQL "IS NOT
    # NULL", not "always", which took the missing rows too (CASE tries the
    # branches in order).
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTRegressor
    from clarytree.mbndt._preprocess import MISSING

    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"a": rng.normal(size=n),
                      "color": rng.choice(["red", "green", "blue"], n).astype(object)})
    X.loc[rng.random(n) < 0.1, "color"] = None
    model = MBNDTRegressor(**MBNDT_FAST).fit(X, X["a"] + 2 * (X["color"] == "red"))
    description = to_dict(model)
    nodes = description["tree"]["nodes"]
    root = nodes[0]
    if not root.get("categorical"):
        root.update(feature=1, categorical=True)
        root.pop("cuts", None)
        root.pop("cut_gaps", None)
    root.update(cat_values=[MISSING], cat_child=[1], default=0)
    edited = from_dict(description)
    rows = _new_rows(X.assign(city="c0", b=1.0))[["a", "color"]]
    assert rows["color"].isna().any() and rows["color"].notna().any()
    # The missing rows and the present ones reach disjoint leaves.
    leaves = edited.apply(rows)
    missing = rows["color"].isna().to_numpy()
    assert not set(leaves[missing]) & set(leaves[~missing])
    _check_mbndt_exports(edited, rows)


@pytest.mark.parametrize("family", ["clari", "mbndt"])
def test_exports_keep_awkward_names_and_levels_intact(family):
    # Line breaks, quotes, backslashes and triple quotes in column names and
    # category levels: the SQL literals keep them as they are (an indented
    # line break inside a literal is another level), and the Python source
    # compiles (a line break ended a comment) with the rows predicted alike.
    rng = np.random.default_rng(1)
    n = 400
    names = ["a b", 'q"uote', "it's", "back\\slash", 'tri"""ple', 'four""""', "two\nlines"]
    levels = ["plain", "it's", 'say "hi"', "back\\slash", "line\nbreak", "", "NULL"]
    frame = pd.DataFrame({name: rng.normal(size=n) for name in names[:-1]})
    frame[names[-1]] = pd.Series(rng.choice(levels, n), dtype=object)
    frame.iloc[rng.random(n) < 0.1, 0] = np.nan
    frame.iloc[rng.random(n) < 0.1, -1] = None
    code = frame[names[-1]].map({v: i for i, v in enumerate(levels)}).fillna(2).to_numpy()
    y = 2.0 * frame.iloc[:, 1].to_numpy() + code + 0.1 * rng.normal(size=n)
    if family == "clari":
        model = CLARITreeRegressor(max_depth=3).fit(frame, y)
    else:
        pytest.importorskip("torch")
        from clarytree.mbndt import MBNDTRegressor

        model = MBNDTRegressor(max_depth=2, n_restarts=1, max_epochs=30,
                               random_state=0).fit(frame, y)
    want = model.predict(frame)
    assert len(np.unique(want)) > 4
    db = sqlite3.connect(":memory:")
    frame.to_sql("t", db, index=False)
    sql = export_sql(model)
    assert "line\nbreak" in sql
    got = np.array([r[0] for r in db.execute(sql)], dtype=float)
    np.testing.assert_array_equal(got, want)
    got = np.array([r[0] for r in db.execute(f"SELECT {export_sql(model, table=None)} FROM t")],
                   dtype=float)
    np.testing.assert_array_equal(got, want)
    namespace = {}
    exec(compile(export_python(model), "<clarytree>", "exec"), namespace)
    assert "two\\nlines" in namespace["predict"].__doc__
    assert 'tri"""ple' in namespace["predict"].__doc__
    assert 'four""""' in namespace["predict"].__doc__
    records = [[None if isinstance(v, float) and v != v else v for v in row]
               for row in frame.astype(object).to_numpy().tolist()]
    np.testing.assert_array_equal([namespace["predict"](r) for r in records], want)
    # Printed and drawn trees show a line break or tab as an escape: one line
    # per branch and leaf, every quoted DOT label on its statement's line.
    text = export_text(model)
    assert "two\\nlines" in text and "line\nbreak" not in text
    assert "line\\nbreak" in text or family == "mbndt"     # (MBNDT may list the others)
    lines = text.splitlines()
    assert all(line.startswith("|") for line in lines), text
    n_nodes = model.tree_.node_count
    n_leaves = int(np.sum(np.asarray(model.tree_.feature) < 0))
    assert len(lines) == n_nodes - 1 + n_leaves
    dot = export_graphviz(model).splitlines()
    assert all(line.endswith(("{", "}", ";")) for line in dot), dot
    table = leaf_table(model)
    assert names[-1] in table.columns or family == "mbndt"
    assert not any("\n" in rule for rule in table["rule"])
    assert any("two\\nlines" in rule for rule in table["rule"])


def test_clip_leaves_the_fill_of_a_missing_value_alone():
    # x0 sits in [0, 2] or [8, 10]; its training mean (about 5, the fill of
    # a missing value) lies in neither leaf's box.  A missing value reads as
    # that mean in training, so clipping it would change the training rows'
    # predictions; predict, explain and the exports all leave it.
    rng = np.random.default_rng(0)
    x0 = np.where(rng.random(400) < 0.5, rng.uniform(0, 2, 400), rng.uniform(8, 10, 400))
    X = np.c_[x0, rng.normal(size=400)]
    y = np.where(x0 < 5, 5 * x0, 100 - 5 * x0) + X[:, 1] + 0.01 * rng.normal(size=400)
    X[(np.arange(400) % 7 == 0) & (x0 < 5), 0] = np.nan     # missing in the left group
    model = CholeskyTreeRegressor(max_depth=1, leaf_penalty=0.0, n_thresholds=None).fit(X, y)
    tree = model.tree_
    leaves = np.flatnonzero(tree.children_left < 0)
    assert all(not tree.box_lower[k, 0] <= tree.fill_value[0] <= tree.box_upper[k, 0]
               for k in leaves)
    unclipped = model.predict(X)
    clipped = model.set_params(extrapolation="clip").predict(X)
    np.testing.assert_array_equal(clipped, unclipped)
    rows = np.vstack([X, [[np.nan, 0.5], [-3.0, 0.5], [np.nan, 40.0], [30.0, np.nan]]])
    expected = model.predict(rows)
    table = explain(model, rows)
    np.testing.assert_array_equal(_left_to_right(table, ["x[0]", "x[1]"]), expected)
    namespace = {}
    exec(export_python(model, function_name="f"), namespace)
    np.testing.assert_array_equal([namespace["f"](r) for r in rows.tolist()], expected)
    sql = f"SELECT {export_sql(model, table=None)} FROM t"
    np.testing.assert_array_equal(_sqlite_predict(sql, rows.tolist(), ["x[0]", "x[1]"]),
                                  expected)
    # Present values outside the box are still clipped.
    assert model.predict(rows[-3:-2])[0] != model.set_params(
        extrapolation="none").predict(rows[-3:-2])[0]


def test_rule_of_a_row_missing_a_value_training_never_missed_holds_for_it():
    # Such a row takes the split's heavier side; the leaf's rule alone
    # ("x[0] <= 0.35") is false for it, so its own rule shows the missing side.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] > 0, 5.0, 0.0) + 0.1 * rng.normal(size=200)
    X[:150, 0] += 0.3
    model = CLARITreeRegressor(max_depth=1, leaf_model="constant").fit(X, y)
    rows = np.array([[np.nan, 0.0], [-5.0, 0.0], [5.0, np.nan]])
    table = explain(model, rows)
    assert list(table["leaf"]) == list(model.apply(rows))
    side = "<=" if model.tree_.missing_go_left[0] else ">"
    assert table["rule"][0].startswith(f"(x[0] {side} ")
    assert table["rule"][0].endswith("or x[0] is missing)")
    # Rows with every split value present keep their leaf's rule.
    assert "missing" not in table["rule"][1] and "missing" not in table["rule"][2]


@pytest.mark.parametrize("column", [None, ["a"], "", 3])
def test_sql_output_column_must_be_a_name(data, column):
    # None and ["a"] were written as AS "None" and AS "['a']".
    X, y = data
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    with pytest.raises(TypeError, match="column must be a non-empty string"):
        export_sql(model, column=column)


@pytest.mark.parametrize("column_type", ["INTEGER", "REAL"])
def test_sql_routes_integers_beyond_2_53_as_predict_does(column_type):
    # predict rounds an int64 ID to float64 before comparing; SQL compared
    # the INTEGER exactly with the float threshold, so 2**53 + 1 went the
    # other way of a threshold 2**53 (a midpoint that rounded onto it).
    from clarytree._explain import _sql_threshold

    base = 2**53
    ids = base + np.arange(0, 400, 2)                     # exact in float64
    y = np.where(ids < base + 100, 0.0, 5.0) + (ids % 7 == 0)
    model = CholeskyTreeRegressor(max_depth=3, leaf_model="constant").fit(
        pd.DataFrame({"id": ids}), y)
    sql = export_sql(model, table="t")
    probe = base - 8 + np.arange(420)                     # odd IDs round in float64
    db = sqlite3.connect(":memory:")
    db.execute(f'CREATE TABLE t ("id" {column_type})')
    db.executemany("INSERT INTO t VALUES (?)", [(int(v),) for v in probe])
    got = [row[0] for row in db.execute(sql)]
    np.testing.assert_array_equal(got, model.predict(pd.DataFrame({"id": probe})))
    # The literal is the largest integer whose float64 is the threshold's
    # side: for every integer, float64(n) <= t exactly when n <= literal.
    for t in [2.0**53, 2.0**53 + 2, 2.0**54 + 4, 2.0**60, -(2.0**53), -(2.0**63), 3 * 2.0**55]:
        literal = int(_sql_threshold(t))
        assert float(literal) == t
        for n in range(int(t) - 600, int(t) + 600):
            assert (float(n) <= t) == (n <= literal), (t, n)
    assert _sql_threshold(1.5) == "1.5" and _sql_threshold(2.0**64) == repr(2.0**64)
    top = float(np.finfo(np.float64).max)       # (its next float is inf)
    assert _sql_threshold(top) == repr(top) and _sql_threshold(2.0**63) == repr(2.0**63)
