"""plot_partition on mixed tables: categorical axes, held levels, missing values.

Every drawn leaf id and model value is checked against the estimator's own
``apply``/``predict`` on raw DataFrame rows built here, independently of the
plot's encoded grid: the held columns at the median of their present values
(numeric) or their most frequent level (categorical).
"""

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor, plot_partition  # noqa: E402

ESTIMATORS = [CLARITreeRegressor, CholeskyTreeRegressor]


def _mixed_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    h = rng.uniform(-1, 1, n)
    color = rng.choice(["red", "green", "blue"], n, p=[0.3, 0.25, 0.45])
    size = pd.Categorical(rng.choice(["S", "M", "L"], n, p=[0.2, 0.5, 0.3]),
                          categories=["S", "M", "L"])
    flag = rng.random(n) < 0.35
    y = np.where(color == "red", 2 * x, -x) + 3 * flag + 4 * (h > 0) \
        + rng.normal(0, 0.1, n)
    X = pd.DataFrame({"x": x, "h": h, "color": color, "size": size, "flag": flag})
    X.loc[rng.random(n) < 0.1, "h"] = np.nan
    X.loc[rng.random(n) < 0.1, "x"] = np.nan
    return X, y


@pytest.fixture(scope="module")
def table():
    return _mixed_frame()


@pytest.fixture(scope="module", params=ESTIMATORS, ids=lambda c: c.__name__)
def fitted(request, table):
    X, y = table
    return request.param(max_depth=3).fit(X, y)


def _held(X):
    held = {}
    for c in X.columns:
        if X[c].dtype.kind == "f":
            held[c] = X[c].median()             # skips NaN
        else:
            counts = X[c].value_counts()
            assert counts.iloc[0] > counts.iloc[1]  # a clear most frequent level
            held[c] = counts.index[0]
    return held


def _rows(X, held, m, **plotted):
    """``m`` raw rows with X's dtypes: ``plotted`` columns given, the rest held."""
    frame = pd.DataFrame({c: list(plotted[c]) if c in plotted else [held[c]] * m
                          for c in X.columns})
    for c in X.columns:
        if X[c].dtype.kind == "f":
            frame[c] = frame[c].astype(np.float64)
        elif str(X[c].dtype) == "category":
            frame[c] = pd.Categorical(frame[c], categories=X[c].cat.categories)
        elif X[c].dtype.kind == "b" and frame[c].notna().all():
            frame[c] = frame[c].astype(bool)
    return frame


def _leaf_lines(ax):
    return [line for line in ax.lines if line.get_label().startswith("leaf ")]


def _tick_labels(ax, which="x"):
    ticks = ax.get_xticklabels() if which == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks]


def test_numeric_feature_segments_are_the_models_predictions(fitted, table):
    X, y = table
    held = _held(X)
    fig, ax = plt.subplots()
    plot_partition(fitted, X, y, features="x", ax=ax)
    lines = _leaf_lines(ax)
    assert lines
    covered = []
    for line in lines:
        xs, ys = (np.asarray(a, dtype=float) for a in line.get_data())
        inner = xs[1:-1]        # an end point on a threshold belongs to the left leaf
        rows = _rows(X, held, inner.size, x=inner)
        leaf = int(line.get_label().split()[1])
        np.testing.assert_array_equal(fitted.apply(rows), leaf)
        np.testing.assert_allclose(ys[1:-1], fitted.predict(rows), rtol=1e-12, atol=1e-12)
        covered.append((xs[0], xs[-1]))
    # The segments tile the drawn range and every leaf met along it is drawn.
    dense = np.linspace(np.nanmin(X["x"]), np.nanmax(X["x"]), 400)
    met = set(fitted.apply(_rows(X, held, dense.size, x=dense)).tolist())
    assert met == {int(line.get_label().split()[1]) for line in lines}
    # Rows with x missing are left out of the scatter, and the title says so.
    n_missing = int(X["x"].isna().sum())
    assert ax.collections[0].get_offsets().shape[0] == len(X) - n_missing
    assert f"{n_missing} rows with x missing not shown" in ax.get_title()
    plt.close(fig)


@pytest.mark.parametrize("column", ["color", "size", "flag"])
def test_categorical_feature_levels_and_values(fitted, table, column):
    X, y = table
    held = _held(X)
    j = list(X.columns).index(column)
    levels = list(fitted.categories_[j])
    fig, ax = plt.subplots()
    plot_partition(fitted, X, y, features=column, ax=ax)
    assert _tick_labels(ax) == [str(v) for v in levels]
    segments = {}
    for line in _leaf_lines(ax) + [ln for ln in ax.lines if ln.get_label() == "_nolegend_"]:
        xs, ys = line.get_data()
        assert ys[0] == ys[1]
        segments[int(round(np.mean(xs)))] = ys[0]
    assert sorted(segments) == list(range(len(levels)))
    rows = _rows(X, held, len(levels), **{column: levels})
    np.testing.assert_allclose([segments[c] for c in range(len(levels))],
                               fitted.predict(rows), rtol=1e-12, atol=1e-12)
    labels = {int(round(t.xy[0])): int(t.get_text()) for t in ax.texts}
    assert [labels[c] for c in range(len(levels))] == fitted.apply(rows).tolist()
    # The strip holds every row, jittered within its level's slot.
    offsets = ax.collections[0].get_offsets()
    assert offsets.shape[0] == len(X)
    codes = np.rint(offsets[:, 0]).astype(int)
    assert np.all(np.abs(offsets[:, 0] - codes) <= 0.3)
    np.testing.assert_array_equal(
        np.bincount(codes, minlength=len(levels)),
        [int((X[column] == v).sum()) for v in levels])
    plt.close(fig)


def test_categorical_axis_with_unseen_level_says_so(fitted, table):
    X, y = table
    X = X.copy()
    X["color"] = X["color"].astype(object)
    X.loc[X.index[:7], "color"] = "purple"      # unseen in training: encoded missing
    fig, ax = plt.subplots()
    plot_partition(fitted, X, y, features="color", ax=ax)
    assert ax.collections[0].get_offsets().shape[0] == len(X) - 7
    assert "7 rows with color missing or unseen not shown" in ax.get_title()
    plt.close(fig)


def _check_cells(ax, fitted, X, held, features):
    """Every cell's leaf label is ``apply`` at its centre; the mesh is ``predict``."""
    labels = [(t.get_position(), int(t.get_text())) for t in ax.texts]
    assert labels
    levels = {c: list(fitted.categories_[list(X.columns).index(c)]) for c in features
              if X[c].dtype.kind != "f"}

    def raw(c, coords):
        coords = np.asarray(coords, dtype=float)
        if c in levels:
            assert np.allclose(coords, np.rint(coords))
            return [levels[c][int(round(v))] for v in coords]
        return coords

    pos = np.array([p for p, _ in labels])
    rows = _rows(X, held, len(labels), **{c: raw(c, pos[:, k]) for k, c in enumerate(features)})
    np.testing.assert_array_equal(fitted.apply(rows), [leaf for _, leaf in labels])
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    edges = mesh.get_coordinates()
    cx = (edges[0, 1:, 0] + edges[0, :-1, 0]) / 2
    cy = (edges[1:, 0, 1] + edges[:-1, 0, 1]) / 2
    gx, gy = np.meshgrid(cx, cy)
    rows = _rows(X, held, gx.size, **{features[0]: raw(features[0], gx.ravel()),
                                      features[1]: raw(features[1], gy.ravel())})
    np.testing.assert_allclose(np.asarray(mesh.get_array()).ravel(), fitted.predict(rows),
                               rtol=1e-10, atol=1e-10)
    return labels, levels


def test_numeric_by_categorical_bands(fitted, table):
    X, y = table
    held = _held(X)
    fig, ax = plt.subplots()
    plot_partition(fitted, X, y, features=["x", "color"], ax=ax)
    labels, levels = _check_cells(ax, fitted, X, held, ["x", "color"])
    assert _tick_labels(ax, "y") == [str(v) for v in fitted.categories_[2]]
    # Per level, the drawn leaves are those met along x at that level.
    dense = np.linspace(np.nanmin(X["x"]), np.nanmax(X["x"]), 300)
    for c, level in enumerate(levels["color"]):
        met = fitted.apply(_rows(X, held, dense.size, x=dense, color=[level] * dense.size))
        assert {leaf for (_, yc), leaf in labels if round(yc) == c} == set(met.tolist())
    assert ax.collections[-1].get_offsets().shape[0] == int(X["x"].notna().sum())
    plt.close(fig)


def test_two_categorical_axes_grid(fitted, table):
    X, y = table
    held = _held(X)
    fig, ax = plt.subplots()
    plot_partition(fitted, X, y, features=["color", "flag"], ax=ax)
    labels, levels = _check_cells(ax, fitted, X, held, ["color", "flag"])
    assert len(labels) == len(levels["color"]) * len(levels["flag"])   # one per cell
    assert _tick_labels(ax, "x") == ["blue", "green", "red"]
    assert _tick_labels(ax, "y") == ["False", "True"]
    plt.close(fig)


def test_held_levels_and_fixed_values(fitted, table):
    X, y = table
    held = _held(X)
    for fixed in ({"color": "red", "flag": True}, {"size": "L", "h": -0.5},
                  {"color": None}):
        fig, ax = plt.subplots()
        plot_partition(fitted, X, y, features="x", ax=ax, fixed=fixed)
        here = dict(held, **fixed)
        for line in _leaf_lines(ax):
            xs, ys = (np.asarray(a, dtype=float) for a in line.get_data())
            rows = _rows(X, here, xs.size - 2, x=xs[1:-1])
            np.testing.assert_array_equal(fitted.apply(rows), int(line.get_label().split()[1]))
            np.testing.assert_allclose(ys[1:-1], fitted.predict(rows), rtol=1e-12, atol=1e-12)
        plt.close(fig)
    with pytest.raises(ValueError, match="not a level of column 'color'"):
        plot_partition(fitted, X, y, features="x", fixed={"color": "purple"})
    with pytest.raises(ValueError, match="which is plotted"):
        plot_partition(fitted, X, y, features="x", fixed={"x": 1.0})
    with pytest.raises(ValueError, match="finite number"):
        plot_partition(fitted, X, y, features="x", fixed={"h": "high"})
    with pytest.raises(ValueError, match="unknown feature"):
        plot_partition(fitted, X, y, features="x", fixed={"nope": 1.0})
    with pytest.raises(TypeError, match="dict"):
        plot_partition(fitted, X, y, features="x", fixed=[("h", 1.0)])
    with pytest.raises(ValueError, match="shape"):
        plot_partition(fitted, X.iloc[:, :3], y, features="x")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda c: c.__name__)
def test_missing_held_value_follows_the_learned_direction(estimator):
    # Rows with h missing behave like h <= 0, so missing values go left at
    # the split on h: a held missing h must draw the left side's leaf (the
    # comparison NaN <= t would send it right).
    rng = np.random.default_rng(3)
    n = 400
    x = rng.uniform(0, 4, n)
    h = rng.uniform(-1, 1, n)
    left_like = h <= 0
    h[rng.random(n) < 0.3 * left_like + 0.02 * ~left_like] = np.nan
    left_like = left_like | np.isnan(h)
    y = np.where(left_like, 3 * x, -2 * x + 10) + rng.normal(0, 0.05, n)
    X = pd.DataFrame({"x": x, "h": h, "g": rng.choice(["a", "b"], n)})
    model = estimator(max_depth=1).fit(X, y)
    tree = model.tree_
    assert tree.feature[0] == 1 and tree.missing_go_left[0] == 1
    left = int(tree.children_left[0])
    for X_plot, fixed in ((X, {"h": None}), (X.assign(h=np.nan), None)):
        fig, ax = plt.subplots()
        plot_partition(model, X_plot, y, features="x", ax=ax, fixed=fixed)
        [line] = _leaf_lines(ax)
        assert line.get_label() == f"leaf {left}"
        xs, ys = (np.asarray(a, dtype=float) for a in line.get_data())
        rows = pd.DataFrame({"x": xs, "h": np.nan, "g": X["g"].mode()[0]})
        np.testing.assert_array_equal(model.apply(rows), left)
        np.testing.assert_allclose(ys, model.predict(rows), rtol=1e-12, atol=1e-12)
        plt.close(fig)
    # Plotting h itself: the rows with h missing are left out, and the title
    # says that missing h goes with the h <= t side.
    fig, ax = plt.subplots()
    plot_partition(model, X, y, features="h", ax=ax)
    title = ax.get_title()
    assert f"{int(np.isnan(h).sum())} rows with h missing not shown" in title
    assert "missing h goes with h <= " in title
    plt.close(fig)


def test_mbndt_on_a_table_with_text_columns(table):
    pytest.importorskip("torch")
    mbndt = pytest.importorskip("clarytree.mbndt")
    X, y = table
    held = _held(X)
    model = mbndt.MBNDTRegressor(max_depth=2, n_restarts=1, max_epochs=15,
                                 random_state=0).fit(X, y)
    fig, ax = plt.subplots()
    plot_partition(model, X, y, features="x", ax=ax)
    [line] = [ln for ln in ax.lines if ln.get_label() == "model"]
    xs, ys = line.get_data()
    np.testing.assert_allclose(ys, model.predict(_rows(X, held, len(xs), x=xs)),
                               rtol=1e-6, atol=1e-9)
    plt.close(fig)

    fig, ax = plt.subplots()
    plot_partition(model, X, y, features="size", ax=ax)
    assert _tick_labels(ax) == ["S", "M", "L"]   # the column's category order
    values = [ln.get_data()[1][0] for ln in ax.lines]
    rows = _rows(X, held, 3, size=["S", "M", "L"])
    np.testing.assert_allclose(values, model.predict(rows), rtol=1e-6, atol=1e-9)
    labels = {int(round(t.xy[0])): int(t.get_text()) for t in ax.texts}
    assert [labels[c] for c in range(3)] == model.apply(rows).tolist()
    plt.close(fig)

    fig, ax = plt.subplots()
    plot_partition(model, X, y, features=["x", "color"], ax=ax)
    assert _tick_labels(ax, "y") == ["blue", "green", "red"]
    plt.close(fig)


# -- figures made without pyplot, and other plotting edges ---------------------


def _small_model(names=("income - tax", "b")):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=list(names))
    y = np.where(X.iloc[:, 0] > 0, 2.0, -1.0) + X.iloc[:, 1] + 0.1 * rng.normal(size=300)
    return CLARITreeRegressor(max_depth=2).fit(X, y), X, y


def test_plot_tree_on_a_figure_without_an_agg_canvas():
    # A bare Figure (as on servers) or the svg/pdf backends have no
    # canvas.get_renderer(): plot_tree measured its boxes with it.
    from matplotlib.figure import Figure

    from clarytree import plot_tree

    model, X, y = _small_model()
    before = plt.get_fignums()
    fig = Figure()
    ax = plot_tree(model, ax=fig.subplots())
    texts = [t.get_text() for t in ax.texts]
    # A name with " - " stays on one line (the equations' terms already are).
    assert any("income - tax <=" in t for t in texts)
    assert not any(t.startswith("- tax") or "\n- tax" in t for t in texts)
    plot_partition(model, X, y, features=[0, 1], ax=fig.subplots(1, 2)[1])
    assert plt.get_fignums() == before      # no pyplot figure opened on the side


def test_plot_tree_font_argument_and_pipeline_errors():
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from clarytree import plot_tree

    model, X, y = _small_model()
    with pytest.raises(ValueError, match="fontsize must be a positive number"):
        plot_tree(model, fontsize="small")
    with pytest.raises(NotFittedError):
        plot_tree(make_pipeline(StandardScaler(), CLARITreeRegressor()))
    with pytest.raises(TypeError, match="features must be column indices or names, got 1.0"):
        plot_partition(model, X, y, features=1.0)
    plt.close("all")


def test_plot_tree_shrinks_side_by_side_nodes_until_they_fit():
    from clarytree import plot_tree

    rng = np.random.default_rng(1)
    names = [f"a_long_feature_name_{j}" for j in range(3)]
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=names)
    y = np.sign(X.iloc[:, 0]) + np.sign(X.iloc[:, 1]) + 0.1 * rng.normal(size=400)
    model = CLARITreeRegressor(max_depth=2, leaf_model="constant").fit(X, y)
    fig, ax = plt.subplots(figsize=(9, 4))
    plot_tree(model, ax=ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t for t in ax.texts if t.get_bbox_patch() is not None
             and t.get_bbox_patch().get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    extents = [t.get_bbox_patch().get_window_extent(renderer) for t in boxes]
    if min(t.get_fontsize() for t in boxes) > 4.0:      # not at the floor
        for i, a in enumerate(extents):
            for b in extents[i + 1:]:
                assert not a.overlaps(b) or a.y1 <= b.y0 or b.y1 <= a.y0
    plt.close(fig)


def test_classifier_partition_plots_its_rows_as_the_probability():
    pytest.importorskip("torch")
    from clarytree.mbndt import MBNDTClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300)})
    labels = np.where(X["x"] > 0, "dog", "cat")
    model = MBNDTClassifier(max_depth=1, max_epochs=5, n_restarts=1,
                            random_state=0).fit(X, labels)
    ax = plot_partition(model, X, labels)
    assert ax.get_ylabel() == "P(class dog)"
    offsets = ax.collections[0].get_offsets()
    assert set(np.unique(offsets[:, 1])) <= {0.0, 1.0}
    plt.close("all")


def test_cv_path_drawn_twice_stays_inverted():
    from clarytree import CholeskyTreeRegressorCV, plot_cv_path

    model, X, y = _small_model()
    cv = CholeskyTreeRegressorCV(max_depth=2, leaf_penalties=[1e-1, 1e-2, 1e-3],
                                 ridge_alphas=[1e-3], cv=3).fit(X, y)
    fig, ax = plt.subplots()
    plot_cv_path(cv, ax=ax)
    plot_cv_path(cv, ax=ax)
    assert ax.xaxis_inverted()
    plt.close(fig)


def test_partition_refuses_a_y_of_several_columns():
    # A (100, 2) y was flattened and reported as "200 entries"; a column
    # vector is one target per row.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = X[:, 0] * (X[:, 1] > 0)
    model = CholeskyTreeRegressor(max_depth=1).fit(X, y)
    with pytest.raises(ValueError, match=r"y must be 1-d \(one target per row\), got shape "
                                         r"\(100, 2\)"):
        plot_partition(model, X, np.c_[y, y], features=0)
    plot_partition(model, X, y[:, None], features=0)
    plt.close("all")
