"""Tests for clarytree._export: text, dict/JSON, Graphviz, leaf table and plots."""

import io
import json
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from clarytree import (  # noqa: E402
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    export_graphviz,
    export_text,
    from_dict,
    leaf_table,
    plot_partition,
    plot_tree,
    to_dict,
)
from clarytree.datasets import make_piecewise_linear  # noqa: E402

_SPLIT = re.compile(r"^((?:\|   )*)\|--- (.+?) (<=|>) (\S+)$")
_LEAF = re.compile(r"^((?:\|   )*)\|--- leaf (\d+): y = (\S+)(.*?)(?: \[samples: (\d+)\])?$")
_TERM = re.compile(r" ([+-]) (\S+) \* (\S+)")


def parse_text(text, names):
    """Rebuild (route function, leaf models) from export_text output alone."""
    lines = text.splitlines()
    leaves = {}

    def parse(i, depth):
        if m := _LEAF.match(lines[i]):
            assert len(m.group(1)) // 4 == depth
            coef = np.zeros(len(names))
            for sign, value, name in _TERM.findall(m.group(4)):
                coef[names.index(name)] = float(value) * (-1 if sign == "-" else 1)
            leaf = int(m.group(2))
            leaves[leaf] = {"intercept": float(m.group(3)), "coef": coef}
            return {"leaf": leaf}, i + 1
        m = _SPLIT.match(lines[i])
        assert m and m.group(3) == "<=" and len(m.group(1)) // 4 == depth, lines[i]
        left, j = parse(i + 1, depth + 1)
        m2 = _SPLIT.match(lines[j])
        assert m2 and m2.group(3) == ">" and m2.group(2) == m.group(2), lines[j]
        assert m2.group(4) == m.group(4)
        right, k = parse(j + 1, depth + 1)
        node = {"feature": names.index(m.group(2)), "threshold": float(m.group(4)),
                "left": left, "right": right}
        return node, k

    root, end = parse(0, 0)
    assert end == len(lines)

    def route(x):
        node = root
        while "leaf" not in node:
            node = node["left"] if x[node["feature"]] <= node["threshold"] else node["right"]
        return node["leaf"]

    return route, leaves


@pytest.fixture(scope="module")
def data():
    X, y = make_piecewise_linear(n_samples=600, n_features=3, n_regimes=3, noise=0.1,
                                 random_state=0)
    return X, y


@pytest.fixture(scope="module", params=["quantile", "all-midpoints", "constant"])
def model(request, data):
    X, y = data
    if request.param == "quantile":
        est = CLARITreeRegressor(max_depth=3)
    elif request.param == "all-midpoints":
        est = CholeskyTreeRegressor(max_depth=3, n_thresholds=None)
    else:
        est = CLARITreeRegressor(max_depth=3, leaf_model="constant", leaf_penalty=1e-3)
    return est.fit(X, y)


def test_text_routes_training_rows_exactly(model, data):
    X, _ = data
    names = [f"x[{j}]" for j in range(X.shape[1])]
    text = export_text(model, significant_digits=None)
    route, leaves = parse_text(text, names)
    assert sorted(leaves) == sorted(model.leaf_ids_.tolist())
    routed = np.array([route(x) for x in X])
    np.testing.assert_array_equal(routed, model.apply(X))
    # Unrounded equations reproduce the predictions.
    pred = np.array([leaves[leaf]["intercept"] + x @ leaves[leaf]["coef"]
                     for leaf, x in zip(routed, X, strict=True)])
    np.testing.assert_allclose(pred, model.predict(X), rtol=1e-12, atol=1e-12)


def _printed_thresholds(text):
    return [m.group(4) for m in map(_SPLIT.match, text.splitlines())
            if m and m.group(3) == "<="]


def _internal_preorder(tree):
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        if tree.children_left[node] >= 0:
            order.append(node)
            stack += [tree.children_right[node], tree.children_left[node]]
    return order


def test_text_thresholds_are_short_and_route_exactly(model, data):
    X, _ = data
    names = [f"x[{j}]" for j in range(X.shape[1])]
    text = export_text(model, significant_digits=2)
    tree = model.tree_
    internal = _internal_preorder(tree)
    printed = _printed_thresholds(text)
    assert len(printed) == len(internal)
    for node, shown in zip(internal, printed, strict=True):
        # Independent reference: the training values at the node, routed by the model.
        rows = model.decision_path(X)[:, node].toarray().ravel() > 0
        x = X[rows, tree.feature[node]]
        left = x <= tree.threshold[node]
        value = float(shown)
        assert np.all(x[left] <= value) and np.all(x[~left] > value), (node, shown)
        # No decimal with fewer significant digits lies in the gap.
        digits = len(shown.replace("-", "").replace(".", "").lstrip("0").rstrip("0")
                     .split("e")[0]) or 1
        if digits > 1:
            for fewer in range(1, digits):
                for candidate in {float(f"{c:.{fewer}g}") for c in
                                  np.linspace(x[left].max(), x[~left].min(), 2001)}:
                    assert not (x[left].max() <= candidate < x[~left].min()), \
                        (shown, candidate)
        assert len(shown) <= len(repr(float(tree.threshold[node])))
    # Routing with rounded coefficients and short thresholds is exact.
    route, _ = parse_text(text, names)
    np.testing.assert_array_equal([route(x) for x in X], model.apply(X))
    # The model keeps its own thresholds; exact_thresholds prints them.
    exact = export_text(model, exact_thresholds=True)
    assert _printed_thresholds(exact) == [repr(float(tree.threshold[n])) for n in internal]
    assert to_dict(model)["tree"]["threshold"] == tree.threshold.tolist()


def test_readable_defaults():
    """Four significant digits and short thresholds by default (issue example)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2)) * [1.0, 300.0]
    y = np.where(X[:, 0] > 0.2, -1022.6342684163727 - 0.15381866969699098 * X[:, 1],
                 5.0 + 2.0 * X[:, 1])
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    text = export_text(model, show_samples=False)
    for number in re.findall(r"-?\d+\.\d+(?:e-?\d+)?|\b\d+\b", text.replace("x[", "")):
        digits = number.lstrip("-").replace(".", "").split("e")[0].lstrip("0")
        assert len(digits) <= 4, (number, text)
    for m in map(_LEAF.match, text.splitlines()):
        if m:
            intercept = model.tree_.intercept[int(m.group(2))]
            assert float(m.group(3)) == float(f"{intercept:.4g}"), (m.group(3), intercept)
    with pytest.warns(FutureWarning, match="significant_digits"):
        old = export_text(model, decimals=4, show_samples=False)
    assert old == text
    # Both names at once: one would be ignored.
    with pytest.raises(TypeError, match="pass significant_digits only"):
        export_text(model, significant_digits=6, decimals=2)


def test_pipeline_is_unwrapped(data):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y = data
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    pipe = make_pipeline(
        ColumnTransformer([("keep", "passthrough", ["a", "b", "c"])],
                          verbose_feature_names_out=False),
        CholeskyTreeRegressor(max_depth=2)).fit(frame, y)
    assert export_text(pipe) == export_text(pipe[-1], feature_names=["a", "b", "c"])
    assert "a <= " in export_text(pipe) or "b <= " in export_text(pipe) \
        or "c <= " in export_text(pipe)
    assert leaf_table(pipe).equals(leaf_table(pipe[-1], feature_names=["a", "b", "c"]))
    # Steps that give no feature names: a TypeError that says what to pass.
    opaque = make_pipeline(FunctionTransformer(lambda v: v), CholeskyTreeRegressor(max_depth=1))
    opaque.fit(X, y)
    with pytest.raises(TypeError, match=r"pipe\[-1\]"):
        export_text(opaque)
    with pytest.raises(TypeError, match=r"pipe\[-1\]"):
        to_dict(pipe)
    # Steps that name nothing but pass a DataFrame on: the tree's own names.
    for step in ("passthrough", FunctionTransformer()):
        named = make_pipeline(step, CholeskyTreeRegressor(max_depth=2)).fit(frame, y)
        assert export_text(named) == export_text(named[-1])
        assert leaf_table(named).columns.tolist()[-3:] == ["a", "b", "c"]


def test_text_options(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["alpha", "beta", "gamma"])
    model = CholeskyTreeRegressor(max_depth=2).fit(frame, y)
    text = export_text(model, significant_digits=3, show_samples=False, max_terms=1)
    assert "alpha" in text and "x[0]" not in text
    assert "[samples:" not in text
    assert "(2 smaller terms)" in text
    renamed = export_text(model, feature_names=["p", "q", "r"])
    assert "p <= " in renamed or "q <= " in renamed or "r <= " in renamed
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        export_text(model, feature_names=["p", "q"])
    with pytest.raises(ValueError, match="significant_digits"):
        export_text(model, significant_digits=0)
    with pytest.raises(ValueError, match="max_terms"):
        export_text(model, max_terms=-1)


def test_more_significant_digits_than_float64_has_print_as_17(data):
    # 10**30 digits failed in Python's formatting ("Too many decimal digits
    # in format string", "precision too big") without naming the argument.
    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    for digits in (18, 10**30, 2**63):
        assert export_text(model, significant_digits=digits) == \
            export_text(model, significant_digits=17)
        pd.testing.assert_frame_equal(leaf_table(model, significant_digits=digits),
                                      leaf_table(model, significant_digits=17))
    table = leaf_table(model, significant_digits=10**30)
    np.testing.assert_array_equal(table["intercept"], model.tree_.intercept[table["leaf"]])


def test_printed_thresholds_beyond_2_53_route_integers_as_predict():
    # "id <= 9007199254741000.0" sent ID 2**53 + 9 (float64 2**53 + 8, left
    # in the model) right when read with exact integers (SQL, Python ints).
    base = 2**53
    ids = base + np.arange(40)
    y = np.where(ids - base <= 8, 0.0, 10.0)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant").fit(
        pd.DataFrame({"id": ids}), y)
    probe = base - 4 + np.arange(60)
    goes_left = model.apply(pd.DataFrame({"id": probe})) == model.tree_.children_left[0]
    for exact in (False, True):
        text = export_text(model, exact_thresholds=exact)
        (cut,) = re.findall(r"id <= (\S+)", text)
        np.testing.assert_array_equal([int(n) <= int(cut) for n in probe], goes_left)
        rule = leaf_table(model, exact_thresholds=exact)["rule"].tolist()
        assert f"id <= {cut}" in rule, rule


def test_single_leaf_tree(data):
    X, y = data
    model = CLARITreeRegressor(max_depth=0).fit(X, y)
    text = export_text(model)
    assert text.startswith("|--- leaf 0: y = ")
    table = leaf_table(model)
    assert table.shape[0] == 1 and table["rule"][0] == "(all rows)"
    clone = from_dict(json.loads(json.dumps(to_dict(model))))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))


def test_unfitted_and_foreign_estimators():
    with pytest.raises(NotFittedError):
        export_text(CLARITreeRegressor())
    lr = LinearRegression().fit(np.eye(3), np.arange(3.0))
    with pytest.raises(TypeError, match="not a clarytree estimator"):  # no tree_ at all
        to_dict(lr)
    lr.tree_ = object()
    with pytest.raises(TypeError, match="not a clarytree estimator"):
        export_text(lr)



def test_levels_without_a_literal_are_refused_by_json_and_python_exports():
    # pd.cut's Interval levels: JSON cannot hold them and the generated
    # Python could not name them; both say so instead of writing something
    # that fails later.  Pickle and SQL (levels as text) keep working.
    import pickle

    from clarytree import export_python, export_sql

    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    X = pd.DataFrame({"band": pd.cut(x, 4)})
    est = CholeskyTreeRegressor(max_depth=2).fit(X, x ** 2)
    assert est.tree_.is_categorical[0]
    with pytest.raises(TypeError, match="column 'band' has levels of type Interval"):
        to_dict(est)
    with pytest.raises(TypeError, match="column 'band' has levels of type Interval"):
        export_python(est)
    assert "IN (" in export_sql(est)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.predict(X), est.predict(X))
    # As text the same column exports and round-trips.
    text = X.assign(band=X["band"].astype(str))
    est = CholeskyTreeRegressor(max_depth=2).fit(text, x ** 2)
    clone = from_dict(json.loads(json.dumps(to_dict(est))))
    np.testing.assert_array_equal(clone.predict(text), est.predict(text))
    namespace = {}
    exec(export_python(est), namespace)
    generated = [namespace["predict"]([band]) for band in text["band"]]
    np.testing.assert_allclose(generated, est.predict(text), rtol=1e-12)

def test_dict_json_round_trip(model, data):
    X, _ = data
    payload = json.dumps(to_dict(model))
    clone = from_dict(json.loads(payload))
    assert type(clone) is type(model)
    assert clone.get_params() == model.get_params()
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    np.testing.assert_array_equal(clone.apply(X), model.apply(X))
    assert clone.objective_ == model.objective_
    np.testing.assert_array_equal(clone.leaf_coefs_, model.leaf_coefs_)
    np.testing.assert_array_equal(clone.regression_features_, model.regression_features_)
    assert export_text(clone) == export_text(model)
    # A second trip is a fixed point.
    assert json.dumps(to_dict(clone)) == payload


def test_dict_round_trip_keeps_a_fractional_leaf_size(data):
    X, y = data
    model = CLARITreeRegressor(max_depth=2, min_samples_leaf=0.15).fit(X, y)
    clone = from_dict(json.loads(json.dumps(to_dict(model))))
    assert clone.min_samples_leaf == 0.15
    assert clone.min_samples_leaf_ == model.min_samples_leaf_ == 0.15 * len(y)
    assert isinstance(clone.min_samples_leaf_, float)
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))


def test_dict_round_trip_keeps_feature_names(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["alpha", "beta", "gamma"])
    model = CLARITreeRegressor(max_depth=2, regression_features=["beta", "gamma"]).fit(frame, y)
    clone = from_dict(json.loads(json.dumps(to_dict(model))))
    np.testing.assert_array_equal(clone.feature_names_in_, model.feature_names_in_)
    np.testing.assert_array_equal(clone.predict(frame), model.predict(frame))
    with pytest.raises(ValueError, match="feature names"):
        clone.predict(frame.rename(columns={"alpha": "other"}))


def test_from_dict_rejects_bad_input(model):
    good = to_dict(model)
    with pytest.raises(TypeError):
        from_dict("not a dict")
    with pytest.raises(ValueError, match="not a clarytree tree"):
        from_dict({**good, "format": "something else"})
    with pytest.raises(ValueError, match="format_version"):
        from_dict({**good, "format_version": 99})
    with pytest.raises(ValueError, match="unknown estimator"):
        from_dict({**good, "estimator": "RandomForest"})
    broken = {**good, "tree": {k: v for k, v in good["tree"].items() if k != "threshold"}}
    with pytest.raises(ValueError, match="threshold"):
        from_dict(broken)


def _edited(description, **tree):
    """A JSON copy of ``description`` with tree entries set ``{name: (node, value)}``."""
    out = json.loads(json.dumps(description))
    for name, (node, value) in tree.items():
        out["tree"][name][node] = value
    return out


def test_from_dict_rejects_inconsistent_trees(model):
    # A hand-edited description that the core would route wrongly (or read
    # out of bounds) is an error, never a model.
    good = to_dict(model)
    left = good["tree"]["children_left"]
    split = next(i for i, c in enumerate(left) if c >= 0)
    cases = [
        ({"children_left": (split, 99)}, "children must be later nodes"),
        ({"children_left": (split, split)}, "children must be later nodes"),
        ({"children_right": (split, left[split])}, "child of exactly one node"),
        ({"children_left": (split, left[split] + 0.5)}, "children_left must hold integers"),
        ({"feature": (split, 7)}, "split features must index the input columns"),
        ({"feature": (split, "a")}, "feature must hold integers"),
        ({"missing_go_left": (split, 5)}, "missing_go_left must hold 0 or 1"),
        ({"is_categorical": (split, 1)}, r"split kind \(is_categorical\) must match"),
    ]
    for edits, message in cases:
        with pytest.raises(ValueError, match=message):
            from_dict(_edited(good, **edits))
    for reg in ([0, 0], [0, 9], [-1], [0.5]):
        with pytest.raises(ValueError, match="regression_features must be distinct"):
            from_dict({**good, "regression_features": reg})
    np.testing.assert_array_equal(from_dict(_edited(good)).tree_.feature, model.tree_.feature)


def test_leaf_table_reproduces_predictions(model, data):
    X, _ = data
    table = leaf_table(model, significant_digits=None)
    names = [f"x[{j}]" for j in range(X.shape[1])]
    assert list(table.columns) == ["leaf", "rule", "n_samples", "intercept", *names]
    assert table["leaf"].tolist() == model.leaf_ids_.tolist()
    leaves = model.apply(X)
    assert table["n_samples"].tolist() == [int(np.sum(leaves == i)) for i in table["leaf"]]
    rows = table.set_index("leaf")
    pred = rows.loc[leaves, "intercept"].to_numpy() + np.sum(
        X * rows.loc[leaves, names].to_numpy(), axis=1)
    np.testing.assert_allclose(pred, model.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("digits", [1, 2, 4])
def test_leaf_table_rounds_to_the_significant_digits_asked(model, digits):
    exact = leaf_table(model, significant_digits=None)
    table = leaf_table(model, significant_digits=digits)
    numbers = [c for c in exact.columns if c not in ("leaf", "rule", "n_samples")]
    want = exact[numbers].map(lambda v: float(f"{v:.{digits}g}"))
    pd.testing.assert_frame_equal(table[numbers], want)


def test_leaf_table_rules_select_the_leaf_rows(model, data):
    X, _ = data
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    table = leaf_table(model, feature_names=["a", "b", "c"])
    leaves = model.apply(X)
    for leaf, rule in zip(table["leaf"], table["rule"], strict=True):
        if rule == "(all rows)":
            selected = np.ones(len(frame), bool)
        else:
            # Chained comparisons such as "0.1 < a <= 0.5" are valid query syntax.
            selected = frame.eval(rule.replace(" and ", " & ")).to_numpy()
        np.testing.assert_array_equal(selected, leaves == leaf)


def test_graphviz(model, tmp_path):
    dot = export_graphviz(model)
    assert dot.startswith("digraph Tree {") and dot.rstrip().endswith("}")
    n_nodes = model.tree_.node_count
    assert len(re.findall(r"^\d+ \[label=", dot, flags=re.M)) == n_nodes
    assert len(re.findall(r"^\d+ -> \d+ ", dot, flags=re.M)) == n_nodes - 1
    path = tmp_path / "tree.dot"
    assert export_graphviz(model, out_file=path) is None
    assert path.read_text() == dot
    buffer = io.StringIO()
    export_graphviz(model, out_file=buffer)
    assert buffer.getvalue() == dot


def _png_bytes(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def test_plot_tree_renders_png(model):
    fig, ax = plt.subplots(figsize=(10, 6))
    assert plot_tree(model, ax=ax) is ax
    n_nodes = model.tree_.node_count
    # One box per node plus one label per edge.
    assert len(ax.texts) == n_nodes + (n_nodes - 1)
    leaf_texts = [t.get_text() for t in ax.texts if t.get_text().startswith("leaf ")]
    assert len(leaf_texts) == model.get_n_leaves()
    png = _png_bytes(fig)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_plot_tree_left_right_stacks_leaves_without_overlap(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=3, leaf_penalty=0.0).fit(X, y)
    assert model.get_n_leaves() >= 5
    fig, ax = plt.subplots(figsize=(8, 10))
    plot_tree(model, ax=ax, orientation="left-right")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    leaves = [t for t in ax.texts if t.get_text().startswith("leaf ")]
    boxes = sorted((t.get_bbox_patch().get_window_extent(renderer) for t in leaves),
                   key=lambda b: -b.y1)
    assert len(boxes) == model.get_n_leaves()
    # Stacked top to bottom in preorder, each below the previous one.
    for upper, lower in zip(boxes[:-1], boxes[1:], strict=True):
        assert lower.y1 <= upper.y0 + 1e-6
    assert min(t.get_fontsize() for t in leaves) >= 6
    plt.close(fig)
    with pytest.raises(ValueError, match="orientation"):
        plot_tree(model, orientation="sideways")


def test_plot_partition_one_and_two_features():
    X, y = make_piecewise_linear(n_samples=300, n_features=1, n_regimes=3, noise=0.05,
                                 random_state=1)
    model = CLARITreeRegressor(max_depth=2).fit(X, y)
    fig, ax = plt.subplots()
    plot_partition(model, X, y, ax=ax)
    assert len(ax.lines) >= model.get_n_leaves()  # one segment per leaf, plus split lines
    assert _png_bytes(fig)[:4] == b"\x89PNG"

    X2, y2 = make_piecewise_linear(n_samples=300, n_features=2, n_regimes=2,
                                   random_state=2)
    model2 = CLARITreeRegressor(max_depth=2).fit(X2, y2)
    fig, ax = plt.subplots()
    plot_partition(model2, X2, y2, ax=ax)
    leaf_labels = {t.get_text() for t in ax.texts}
    assert leaf_labels == {str(i) for i in model2.leaf_ids_}
    assert _png_bytes(fig)[:4] == b"\x89PNG"


def test_plot_partition_slices_and_errors(data):
    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="more than two features"):
        plot_partition(model, X, y)
    fig, ax = plt.subplots()
    plot_partition(model, X, y, features=[0, 2], ax=ax)
    plt.close(fig)
    with pytest.raises(ValueError, match="one or two"):
        plot_partition(model, X, y, features=[0, 1, 2])
    with pytest.raises(ValueError, match="shape"):
        plot_partition(model, X[:, :2], y)
    with pytest.raises(ValueError, match="unknown feature"):
        plot_partition(model, X, y, features="nope")


def test_mbndt_exports():
    pytest.importorskip("torch")
    mbndt = pytest.importorskip("clarytree.mbndt")
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    model = mbndt.MBNDTClassifier(max_depth=2, n_restarts=1, max_epochs=20,
                                  random_state=0).fit(X, y)
    text = export_text(model)
    assert "class" in text and any(f"{c} <= " in text for c in X.columns)
    clone = from_dict(json.loads(json.dumps(to_dict(model))))
    np.testing.assert_array_equal(clone.predict_proba(X), model.predict_proba(X))
    table = leaf_table(model)
    assert table.shape[0] == model.get_n_leaves()
    assert {"proba[0]", "proba[1]"} <= set(table.columns)
    assert np.all(table["n_samples"] >= 0)
    fig, ax = plt.subplots()
    plot_tree(model, ax=ax)
    assert _png_bytes(fig)[:4] == b"\x89PNG"
    assert export_graphviz(model).startswith("digraph")


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 3),
       n_thresholds=st.sampled_from([3, 20, None]), lookahead=st.integers(0, 1))
def test_text_routing_property(seed, depth, n_thresholds, lookahead):
    """On random data, the printed tree routes every training row like the model."""
    rng = np.random.default_rng(seed)
    n, k = 120, 3
    X = rng.normal(size=(n, k)) * rng.choice([1e-3, 1.0, 1e4], size=k)
    X[:, 0] = np.round(X[:, 0], 1)  # ties
    y = np.where(X[:, 1] > 0, X[:, 2], -X[:, 2]) + rng.normal(size=n)
    model = CLARITreeRegressor(max_depth=depth, lookahead_depth=lookahead,
                               n_thresholds=n_thresholds, leaf_penalty=0.0).fit(X, y)
    route, _ = parse_text(export_text(model, significant_digits=2),
                          [f"x[{j}]" for j in range(k)])
    np.testing.assert_array_equal([route(x) for x in X], model.apply(X))


def test_descriptions_without_gaps_still_load(model, data):
    """Older JSON (no training-value gaps) loads; its thresholds print exactly."""
    X, _ = data
    old = to_dict(model)
    for key in ("gap_lower", "gap_upper"):
        del old["tree"][key]
    clone = from_dict(json.loads(json.dumps(old)))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    assert export_text(clone) == export_text(model, exact_thresholds=True)


def test_core_export_never_imports_mbndt_internals():
    """The core dispatches through its registry; only mbndt registers itself."""
    import clarytree._export as core

    source = open(core.__file__, encoding="utf-8").read()
    assert not re.search(r"mbndt\._|from \.mbndt|import clarytree\.mbndt\.", source)
    assert "family ==" not in source and "hasattr(tree" not in source


def test_from_dict_rejects_inconsistent_mbndt_trees():
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    model = MBNDTClassifier(max_depth=2, n_branches=3, n_restarts=1, max_epochs=30,
                            random_state=0).fit(X, (X[:, 0] + X[:, 1] > 0).astype(int))
    good = json.loads(json.dumps(to_dict(model)))
    nodes = good["tree"]["nodes"]
    split = next(i for i, nd in enumerate(nodes) if nd["feature"] >= 0 and i > 0)
    leaf = next(i for i, nd in enumerate(nodes) if nd["feature"] < 0)

    def edited(node, key, value):
        out = json.loads(json.dumps(good))
        out["tree"]["nodes"][node][key] = value
        return out

    kids = nodes[split]["children"]
    cases = [
        (edited(split, "children", [0] + kids[1:]), "all later nodes"),
        (edited(split, "children", [kids[1]] + kids[1:]), "child of exactly one node"),
        (edited(0, "children", nodes[0]["children"][:-1] + [split]),
         "child of exactly one node"),
        (edited(split, "children", [kids[0] + 0.5] + kids[1:]), "children must hold integers"),
        (edited(split, "feature", 7), "split features must index"),
        (edited(split, "cuts", nodes[split]["cuts"][::-1]), "increasing cut points"),
        (edited(split, "cuts", nodes[split]["cuts"][:1]),
         "increasing cut points|one cut_gaps pair per cut point"),
        (edited(split, "categorical", True), "tests column .* as categorical"),
        (edited(leaf, "value", [None] * len(nodes[leaf]["value"])), "non-finite value"),
        (edited(leaf, "children", [1, 2]), "has children"),
    ]
    for description, message in cases:
        with pytest.raises(ValueError, match=message):
            from_dict(description)
    np.testing.assert_array_equal(from_dict(good).predict(X), model.predict(X))


def test_feature_names_are_a_sequence_of_distinct_names(data):
    # Exports read columns by name: a repeated name would stand for two
    # columns (export_sql would read one of them twice, leaf_table keep one
    # coefficient), and a set has no column order.
    from clarytree import export_python, export_sql

    X, y = data
    model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    exports = (export_text, leaf_table, export_graphviz, export_sql, export_python)
    for export in exports:
        with pytest.raises(ValueError, match=r"distinct; repeated: \['a'\]"):
            export(model, feature_names=["a", "a", "c"])
        for bad in ({"a", "b", "c"}, 3):
            with pytest.raises(TypeError, match="feature_names must be a sequence"):
                export(model, feature_names=bad)
    assert export_text(model, feature_names=np.array(["a", "b", "c"])) == export_text(
        model, feature_names=("a", "b", "c"))


def test_leaf_table_refuses_names_that_are_its_own_columns(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["leaf", "intercept", "x"])
    model = CholeskyTreeRegressor(max_depth=2).fit(frame, y)
    with pytest.raises(ValueError, match=r"\['intercept', 'leaf'\] clash with the columns "
                                         r"of leaf_table\(\); pass feature_names="):
        leaf_table(model)
    table = leaf_table(model, feature_names=["a", "b", "x"], significant_digits=None)
    np.testing.assert_array_equal(table["intercept"], model.tree_.intercept[table["leaf"]])
    np.testing.assert_array_equal(table["a"], model.tree_.coef[table["leaf"], 0])


def test_array_like_parameters_round_trip_through_json():
    # regression_features / categorical_features given as a pandas Index
    # (X.columns[:2]) are array-likes as the docstring allows: to_dict
    # writes them as lists, and the restored model predicts the same.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    frame["g"] = pd.Categorical(rng.choice(["u", "v"], 200))
    y = frame["a"] * (frame["g"] == "u") + frame["b"]
    model = CholeskyTreeRegressor(max_depth=2, regression_features=frame.columns[:2],
                                  categorical_features=pd.Series(["g"])).fit(frame, y)
    data = json.loads(json.dumps(to_dict(model)))
    assert data["params"]["regression_features"] == ["a", "b"]
    np.testing.assert_array_equal(from_dict(data).predict(frame), model.predict(frame))


@pytest.mark.parametrize("regression_features, categorical_features", [
    ({"b", "a"}, {"g"}), (range(2), frozenset({"g"})), (frozenset({0, 1}), range(3, 4))])
def test_set_and_range_parameters_round_trip_through_json(regression_features,
                                                          categorical_features):
    # fit reads a set or range of columns; to_dict raised "cannot serialize
    # parameter value {'a', 'b'} of type set".
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    frame["g"] = pd.Categorical(rng.choice(["u", "v"], 200))
    y = frame["a"] * (frame["g"] == "u") + frame["b"]
    model = CholeskyTreeRegressor(max_depth=2, regression_features=regression_features,
                                  categorical_features=categorical_features).fit(frame, y)
    data = json.loads(json.dumps(to_dict(model)))
    assert data["params"]["regression_features"] == sorted(regression_features)
    restored = from_dict(data)
    np.testing.assert_array_equal(restored.predict(frame), model.predict(frame))
    np.testing.assert_array_equal(restored.regression_features_, model.regression_features_)
    refit = clone(restored).fit(frame, y)
    np.testing.assert_array_equal(refit.predict(frame), model.predict(frame))


def test_infinite_category_level_is_refused_like_infinite_numbers():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=60),
                          "c": pd.Categorical(rng.choice([1.0, 2.0, np.inf], 60))})
    with pytest.raises(ValueError, match=r"infinity in column\(s\) 'c'"):
        CholeskyTreeRegressor(max_depth=1).fit(frame, rng.normal(size=60))


def test_a_real_level_spelled_like_the_merged_label_is_quoted():
    # A level "<other>" beside merged rare levels printed as the same
    # "c in {<other>}" on two leaves with different rows.
    rng = np.random.default_rng(0)
    n = 400
    c = rng.choice(["<other>", "a", "b"], size=n).astype(object)
    c[:12] = [f"r{i % 2}" for i in range(12)]          # rare: merged
    y = np.select([c == "<other>", np.isin(c, ["r0", "r1"])], [5.0, -5.0], 0.0)
    y = y + 0.01 * rng.normal(size=n)
    X = pd.DataFrame({"c": c})
    model = CLARITreeRegressor(max_depth=2, leaf_model="constant", min_category_weight=10,
                               min_samples_leaf=1).fit(X, y)
    assert model.merged_categories_[0] == ["r0", "r1"]
    rules = set(leaf_table(model)["rule"])
    assert "c in {'<other>'}" in rules and "c in {<other>}" in rules
    assert "'<other>'" in export_text(model)


def test_every_level_prints_as_its_own_text():
    # "'1'" (quotes part of the text) printed bare as 'c in {'1'}', which is
    # how the level "1" prints; "a\\n" (a backslash) printed as "a\n" (a
    # line break) does.  The printed form names one level.
    from clarytree._export import _level_text

    levels = ["1", "'1'", '"1"', "'", "a'", "a\n", "a\\n", "a\tb", "a\\tb", "\\",
              "x", " x", "'x'", "<other>", "'<other>'", "", "''", "None", "'None'"]
    printed = [_level_text(level) for level in levels]
    assert len(set(printed)) == len(levels), printed
    assert all(text.isprintable() for text in printed)
    assert _level_text("x") == "x" and _level_text("a'b") == "a'b"      # plain stays bare

    rng = np.random.default_rng(0)
    code = rng.choice(["1", "'1'", "z"], size=300).astype(object)
    y = np.where(code == "'1'", 7.0, 0.0) + rng.normal(scale=0.1, size=300)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant").fit(
        pd.DataFrame({"code": code}), y)
    text = export_text(model)
    assert "code in {\"'1'\"}" in text and "code in {'1', z}" in text, text


def test_from_dict_refuses_hand_edits_that_would_predict_garbage():
    # Each edit used to load and then predict NaN, shifted values or
    # probabilities summing to 2.7, or fail later with a bare IndexError.
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300),
                      "c": rng.choice(list("abcdefg"), size=300).astype(object)})
    X.loc[:20, "x"] = np.nan
    y = X["x"].fillna(0).to_numpy() + (X["c"] == "a")
    model = CLARITreeRegressor(max_depth=2, min_category_weight=50).fit(X, y)
    good = json.loads(json.dumps(to_dict(model)))
    leaf = int(np.flatnonzero(np.asarray(good["tree"]["children_left"]) < 0)[0])

    def edit(change):
        data = json.loads(json.dumps(good))
        change(data)
        return data

    cases = [
        (lambda d: d["tree"]["intercept"].__setitem__(leaf, None), "tree.intercept must be finite"),
        (lambda d: d["tree"]["coef"][leaf].__setitem__(1, 2.0), "0 outside regression_features"),
        (lambda d: d["tree"]["fill_value"].__setitem__(0, None), "tree.fill_value must be finite"),
        (lambda d: d["preparation"]["is_categorical"].pop(), "must be a list of 1 entries"),
        (lambda d: d["preparation"]["categories"].__setitem__(1, None),
         r"categories\[1\] must be a list of levels exactly when"),
        (lambda d: d["preparation"]["categories"][1].append("a"), "list each level once"),
        (lambda d: d.__setitem__("n_features_in", 2.5), "n_features_in must be a positive"),
        (lambda d: d.__setitem__("feature_names_in", ["x", "x"]), "name each column once"),
        (lambda d: d["tree"]["categories_left"][0].__setitem__(0, 2**64),
         "inconsistent tree description"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            from_dict(edit(change))
    assert np.array_equal(from_dict(good).predict(X), model.predict(X))


def test_from_dict_refuses_inconsistent_mbndt_leaves_and_tables():
    pytest.importorskip("torch")
    import pandas as pd

    from clarytree.mbndt import MBNDTClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(list("abc"), size=300)})
    labels = np.where(X["x"] > 0, "p", np.where(X["c"] == "a", "q", "r"))
    model = MBNDTClassifier(max_depth=2, n_restarts=1, max_epochs=20,
                            random_state=0).fit(X, labels)
    good = json.loads(json.dumps(to_dict(model)))
    nodes = good["tree"]["nodes"]
    leaf = next(i for i, nd in enumerate(nodes) if nd["feature"] < 0)
    table = next((i for i, nd in enumerate(nodes) if nd.get("cat_values")), None)

    def edit(change):
        data = json.loads(json.dumps(good))
        change(data)
        return data

    cases = [
        (lambda d: d["tree"]["nodes"][leaf].__setitem__("value", [0.9]), "values and 3 logits"),
        (lambda d: d.pop("classes"), "classes must list the 3 distinct classes"),
        (lambda d: d["tree"]["nodes"][leaf].__setitem__("value", [0.9, 0.9, 0.9]),
         "probabilities summing to 1"),
        (lambda d: d.__setitem__("column_kinds", ["numeric", "cat"]), "'num' or 'cat'"),
        (lambda d: d["tree"].__setitem__("impute_values", None), "impute_values must map"),
    ]
    if table is not None:
        cases.append((lambda d: d["tree"]["nodes"][table]["cat_child"].pop(),
                      "one cat_child entry per cat_values level"))
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            from_dict(edit(change))
    restored = from_dict(good)
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))


def test_estimators_of_other_libraries_are_not_called_unfitted():
    # A fitted LinearRegression was "not fitted yet" (check_is_fitted on
    # tree_ ran before the family check).
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_piecewise_linear(n_samples=100, n_features=2, random_state=0)
    for other in (LinearRegression().fit(X, y),
                  RandomForestRegressor(n_estimators=2, random_state=0).fit(X, y),
                  make_pipeline(StandardScaler(), LinearRegression()).fit(X, y)):
        for export in (export_text, leaf_table, export_graphviz):
            with pytest.raises(TypeError, match="LinearRegression|RandomForestRegressor"):
                export(other)
        with pytest.raises(TypeError, match="not a clarytree estimator|Pipeline"):
            to_dict(other)
    with pytest.raises(NotFittedError):
        export_text(CholeskyTreeRegressor())


@pytest.mark.parametrize("out_file", [1, True, 2.5])
def test_graphviz_out_file_that_is_not_a_path_is_refused(out_file):
    # open() took an int (True: 1) as a file descriptor to overwrite and
    # close: out_file=True closed the process's stdout.
    X, y = make_piecewise_linear(n_samples=100, n_features=2, random_state=0)
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    with pytest.raises(TypeError, match="out_file must be a path, a file object or None"):
        export_graphviz(model, out_file=out_file)


def test_invalid_parameter_set_after_fit_is_not_written_or_restored():
    X, y = make_piecewise_linear(n_samples=100, n_features=2, random_state=0)
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    data = to_dict(model)
    model.set_params(extrapolation="bogus")
    with pytest.raises(ValueError, match="extrapolation"):
        to_dict(model)
    data["params"]["extrapolation"] = "bogus"
    with pytest.raises(ValueError, match="invalid params: .*extrapolation"):
        from_dict(data)


def test_a_rounded_value_prints_in_one_notation():
    # 999995.3 and 1000004 both round to 1e6 at 4 digits: the first printed
    # as positional 1000000, the second as 1e+06.
    X = np.repeat([[0.0], [1.0]], 20, axis=0)
    y = np.where(X[:, 0] > 0.5, 1000004.1, 999995.3)
    model = CholeskyTreeRegressor(max_depth=1, leaf_model="constant").fit(X, y)
    text = export_text(model, significant_digits=4)
    assert text.count("1e+06") == 2 and "1000000" not in text
    assert "1000004.1" in export_text(model, significant_digits=None)
