"""End-to-end tests of the ``clarytree`` command line, run through subprocess."""

import decimal
import importlib.util
import io
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from clarytree.datasets import make_piecewise_linear

_WORKDIR = {}


@pytest.fixture(scope="module", autouse=True)
def _empty_workdir(tmp_path_factory):
    # ``python -m`` puts the working directory first on sys.path: run from an
    # empty folder so that the installed package is tested, not the sources.
    _WORKDIR["path"] = tmp_path_factory.mktemp("cwd")


def run(*args, pythonpath=None):
    """Run ``python -m clarytree *args``; ``pythonpath`` puts stub modules first."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("CLARYTREE_DEBUG", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-m", "clarytree", *map(str, args)],
                          capture_output=True, text=True, cwd=_WORKDIR["path"], env=env,
                          timeout=300)


def assert_usage_error(result, *fragments):
    """Exit status 2 with exactly one line on stderr and no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("clarytree: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def data_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    X, y = make_piecewise_linear(n_samples=400, n_features=3, n_regimes=2, noise=0.05,
                                 random_state=0)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = y
    path = folder / "train.csv"
    frame.to_csv(path, index=False)
    return path


def test_demo_shows_lookahead_winning():
    result = run("demo", "--n-samples", 600)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "CholeskyTree (greedy)" in out and "CLARITree (one-step lookahead)" in out
    assert out.count("test R2:") == 2 and out.count("fit time:") == 2
    assert "leaf" in out and "y = " in out
    ratio = float(out.split("(ratio ")[1].split(";")[0])
    assert ratio > 3


def test_demo_needs_only_the_core_dependencies():
    """README's first command installs no extras: the demo must run without pandas."""
    code = (
        "import runpy, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'matplotlib', 'torch'):\n"
        "            raise ImportError(name + ' blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['clarytree', 'demo', '--n-samples', '300']\n"
        "runpy.run_module('clarytree', run_name='__main__')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=_WORKDIR["path"], timeout=300)
    assert result.returncode == 0, result.stderr
    assert "CLARITree (one-step lookahead)" in result.stdout


def test_fit_predict_round_trip(data_csv, tmp_path):
    model = tmp_path / "model.joblib"
    tree_json = tmp_path / "tree.json"
    plot = tmp_path / "tree.png"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 2,
                 "--out", model, "--json", tree_json, "--plot", plot)
    assert result.returncode == 0, result.stderr
    assert "train R2:" in result.stdout and "test R2:" in result.stdout
    assert "a <= " in result.stdout
    assert model.exists() and tree_json.exists()
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    preds = tmp_path / "pred.csv"
    result = run("predict", model, data_csv, "--out", preds)
    assert result.returncode == 0, result.stderr
    got = pd.read_csv(preds)["prediction"].to_numpy()

    import joblib

    fitted = joblib.load(model)
    frame = pd.read_csv(data_csv)
    np.testing.assert_allclose(got, fitted.predict(frame[["a", "b", "c"]]), rtol=1e-12)
    r2 = 1 - np.sum((frame["target"] - got) ** 2) / np.sum(
        (frame["target"] - frame["target"].mean()) ** 2)
    assert r2 > 0.95

    # The JSON export rebuilds the same model.
    import json

    from clarytree import from_dict

    clone = from_dict(json.loads(tree_json.read_text()))
    np.testing.assert_array_equal(clone.predict(frame[["a", "b", "c"]]),
                                  fitted.predict(frame[["a", "b", "c"]]))

    # Without --out, predictions go to stdout as CSV.
    result = run("predict", model, data_csv)
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == "prediction"
    assert len(result.stdout.splitlines()) == len(frame) + 1


def test_fit_n_jobs_sets_the_search_threads(data_csv, tmp_path):
    import joblib

    model = tmp_path / "model.joblib"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 2, "--n-jobs", 2,
                 "--out", model)
    assert result.returncode == 0, result.stderr
    assert joblib.load(model).n_jobs == 2


def test_fit_greedy_and_parquet(data_csv, tmp_path):
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "train.parquet"
    pd.read_csv(data_csv).to_parquet(parquet)
    result = run("fit", parquet, "--target", "target", "--lookahead-depth", 0,
                 "--max-depth", 2, "--test-size", 0, "--n-thresholds", "all")
    assert result.returncode == 0, result.stderr
    assert "== CholeskyTreeRegressor ==" in result.stdout
    assert "test R2" not in result.stdout



def test_parquet_decimals_are_numbers(tmp_path):
    # pandas reads a Parquet decimal column as objects of decimal.Decimal:
    # numbers to split on (not one level per price), and a numeric target.
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    price = [decimal.Decimal(f"{v:.2f}") for v in rng.uniform(0, 100, size=120)]
    y = [decimal.Decimal(f"{10 * (float(v) > 50) + 0.01 * float(v):.3f}") for v in price]
    path = tmp_path / "prices.parquet"
    pd.DataFrame({"price": price, "y": y}).to_parquet(path)
    assert pd.read_parquet(path)["price"].dtype == object
    result = run("fit", path, "--target", "y", "--max-depth", 1, "--lookahead-depth", 0,
                 "--test-size", 0)
    assert result.returncode == 0, result.stderr
    threshold = re.search(r"price <= (\d+\.?\d*)\n", result.stdout)
    assert threshold and 45 < float(threshold.group(1)) < 55, result.stdout
    assert " in {" not in result.stdout


@pytest.mark.parametrize("column", ["date", "timestamp"])
def test_parquet_dates_are_refused_with_the_ways_out(column, tmp_path):
    # A Parquet date or timestamp column is neither numbers nor levels: the
    # error names it and the options, and --categorical / --drop work.
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 50, 120), unit="D")
    frame = pd.DataFrame({"when": days.date if column == "date" else days,
                          "x": rng.normal(size=120), "y": rng.normal(size=120)})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    result = run("fit", path, "--target", "y", "--max-depth", 1)
    assert_usage_error(result, "column 'when'", "pass --drop when",
                       "--categorical when to split on each date as a level")
    for extra in (("--categorical", "when"), ("--drop", "when")):
        result = run("fit", path, "--target", "y", "--max-depth", 1, *extra)
        assert result.returncode == 0, result.stderr
    if importlib.util.find_spec("torch") is not None:
        result = run("mbndt", path, "--target", "y", "--max-epochs", 1)
        assert_usage_error(result, "column 'when'", "or pass --drop when")
        assert "--categorical" not in result.stderr

def test_parquet_without_an_engine_is_one_line(tmp_path):
    # Neither pyarrow nor fastparquet importable (stubs that fail first on
    # the path): pandas' several-line message becomes one line with the fix.
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for engine in ("pyarrow", "fastparquet"):
        (stubs / f"{engine}.py").write_text("raise ImportError('not installed')\n")
    path = tmp_path / "table.parquet"
    path.write_bytes(b"PAR1")
    result = run("fit", path, "--target", "y", pythonpath=stubs)
    assert_usage_error(result, "reading Parquet needs pyarrow", "pip install pyarrow")


def test_commands_that_read_tables_name_pandas_when_it_is_missing(data_csv, tmp_path):
    # pandas is not a dependency of the package: a bare install ran demo and
    # export, while fit, predict and mbndt ended in a ModuleNotFoundError
    # traceback.
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "pandas.py").write_text("raise ImportError('not installed')\n")
    for command in (["fit", data_csv, "--target", "target"],
                    ["predict", tmp_path / "model.joblib", data_csv],
                    ["mbndt", data_csv, "--target", "target"]):
        result = run(*command, pythonpath=stubs)
        assert_usage_error(result, f"'clarytree {command[0]}' reads its tables with pandas",
                           "pip install pandas")
    result = run("demo", "--n-samples", 400, pythonpath=stubs)
    assert result.returncode == 0, result.stderr


def test_fit_cv_tunes_then_fits(data_csv, tmp_path):
    from sklearn.model_selection import KFold, train_test_split

    from clarytree import CLARITreeRegressorCV

    model_file = tmp_path / "model.joblib"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 2, "--cv", 3,
                 "--leaf-penalties", "1e-1,1e-2,1e-3", "--ridge-alphas", "1e-2,1e-5",
                 "--random-state", 3, "--out", model_file)
    assert result.returncode == 0, result.stderr
    frame = pd.read_csv(data_csv)
    X_train, _, y_train, _ = train_test_split(frame[["a", "b", "c"]], frame["target"],
                                              test_size=0.2, random_state=3)
    ref = CLARITreeRegressorCV(leaf_penalties=[1e-1, 1e-2, 1e-3], ridge_alphas=[1e-2, 1e-5],
                               max_depth=2, cv=KFold(3, shuffle=True, random_state=3))
    ref.fit(X_train, y_train.to_numpy())
    assert (f"chosen by 3-fold CV: leaf_penalty={ref.leaf_penalty_:g} "
            f"ridge_alpha={ref.ridge_alpha_:g}  mean CV R2: {ref.best_score_:.4f}"
            in result.stdout)
    assert "test R2:" in result.stdout
    import joblib

    saved = joblib.load(model_file)
    np.testing.assert_array_equal(saved.predict(X_train), ref.predict(X_train))


@pytest.mark.parametrize("args, fragment", [
    (["--cv", "1"], "--cv"),
    (["--cv", "3", "--leaf-penalties", "1e-2,x"], "--leaf-penalties"),
    (["--cv", "3", "--ridge-alphas", "-1"], "--ridge-alphas"),
    (["--cv", "3", "--ridge-alphas", "0"], "ridge_alphas"),
])
def test_fit_cv_bad_options(data_csv, args, fragment):
    assert_usage_error(run("fit", data_csv, "--target", "target", *args), fragment)


def test_cli_grid_defaults_are_the_estimators():
    from clarytree import CLARITreeRegressorCV
    from clarytree._cli import _PAPER_LEAF_PENALTIES, _PAPER_RIDGE_ALPHAS

    params = CLARITreeRegressorCV().get_params()
    assert tuple(params["leaf_penalties"]) == _PAPER_LEAF_PENALTIES
    assert tuple(params["ridge_alphas"]) == _PAPER_RIDGE_ALPHAS


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    text_target = folder / "text_target.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": ["u", "v", "w", "x"]}).to_csv(
        text_target, index=False)
    stray_target = folder / "stray_target.csv"
    pd.DataFrame({"a": np.arange(30.0), "y": [str(v) for v in range(28)] + ["?", "unknown"]}
                 ).to_csv(stray_target, index=False)
    missing_target = folder / "missing_target.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [1.0, None, 3.0, 4.0]}).to_csv(
        missing_target, index=False)
    twice = folder / "twice.csv"
    twice.write_text("price,a,price,b,b\n1,2,3,4,5\n2,3,4,5,6\n3,4,5,6,7\n")
    not_a_model = folder / "model.joblib"
    not_a_model.write_text("this is not a pickle")
    return {"text_target": text_target, "stray_target": stray_target,
            "missing_target": missing_target, "not_a_model": not_a_model, "twice": twice}


@pytest.mark.parametrize(
    "args, fragments",
    [
        (("fit", "{tmp}/nope.csv", "--target", "y"), ["file not found", "nope.csv"]),
        (("fit", "{data}", "--target", "nope"), ["column 'nope' not found", "'a', 'b', 'c'"]),
        (("fit", "{text_target}", "--target", "y"),
         ["target column 'y' is not numeric", "classes: u, v, w, x", "clarytree mbndt",
          "text_target.csv --target y"]),
        (("fit", "{stray_target}", "--target", "y"),
         ["target column 'y' is not numeric: it holds numbers and some text (?, unknown)",
          "fix or remove those rows"]),
        (("fit", "{data}", "--target", "target", "--categorical", "a,zz"),
         ["--categorical", "zz"]),
        (("fit", "{missing_target}", "--target", "y"), ["missing or infinite"]),
        (("fit", "{twice}", "--target", "price"),
         ["twice.csv: its header gives more than one column the names 'price', 'b'",
          "give each column its own name"]),
        (("fit", "{data}", "--target", "target", "--max-depth", "-1"), ["--max-depth"]),
        (("fit", "{data}", "--target", "target", "--leaf-penalty", "x"), ["--leaf-penalty"]),
        (("fit", "{data}", "--target", "target", "--leaf-model", "cubic"), ["--leaf-model"]),
        (("fit", "{data}", "--target", "target", "--test-size", "1.5"), ["--test-size"]),
        (("fit", "{data}", "--target", "target", "--ridge-alpha", "0"), ["ridge_alpha"]),
        (("fit", "{data}", "--target", "target", "--out", "{tmp}/no/dir/m.joblib"),
         ["folder does not exist"]),
        (("fit", "{data}"), ["--target"]),
        (("predict", "{tmp}/missing.joblib", "{data}"), ["file not found"]),
        (("predict", "{not_a_model}", "{data}"),
         ["cannot load a model", "not a model file written by --out"]),
        (("fit", "{data}", "--target", "target", "--categorical", "target"),
         ["--categorical: 'target' is the target column"]),
        (("fit", "{data}", "--target", "target", "--drop", "a", "--categorical", "a"),
         ["--categorical: 'a' is dropped by --drop"]),
        (("demo", "--epsilon", "0.7"), ["epsilon"]),
        (("demo", "--n-nuisance", "3"), ["--n-nuisance"]),
        (("demo", "--max-depth", "1"), ["--max-depth must be >= 2"]),
        (("frobnicate",), ["invalid choice"]),
    ],
)
def test_errors_exit_2_with_one_line(args, fragments, data_csv, bad_files, tmp_path):
    paths = {"tmp": tmp_path, "data": data_csv, **bad_files}
    result = run(*(a.format(**paths) for a in args))
    assert_usage_error(result, *fragments)


def test_dates_written_as_text_are_refused_as_parquet_dates_are(tmp_path):
    # With 256 distinct dates or fewer a CSV's date column became levels
    # without a word (every test date unseen); Parquet's date column is an
    # error naming --drop and --categorical.
    rng = np.random.default_rng(3)
    days = pd.date_range("2024-01-01", periods=100).strftime("%Y-%m-%d")
    x = rng.normal(size=100)
    path = tmp_path / "days.csv"
    pd.DataFrame({"day": days, "x": x, "y": 2 * x}).to_csv(path, index=False)
    assert_usage_error(run("fit", path, "--target", "y"),
                       "column 'day' holds dates written as text (e.g. '2024-01-01')",
                       "--drop day", "--categorical day")
    assert run("fit", path, "--target", "y", "--categorical", "day").returncode == 0
    assert run("fit", path, "--target", "y", "--drop", "day").returncode == 0
    # codes shaped like dates that are none (month 13), and times of day
    # (shift starts), are levels
    pd.DataFrame({"code": np.resize(["2024-13-45", "1001-20-30"], 100),
                  "shift": np.resize(["06:00", "14:00", "22:00"], 100), "x": x,
                  "y": 2 * x}).to_csv(path, index=False)
    assert run("fit", path, "--target", "y").returncode == 0
    # mbndt, which has no --categorical, keeps dates as levels with a warning
    pytest.importorskip("torch")
    pd.DataFrame({"day": days, "x": x, "y": 2 * x}).to_csv(path, index=False)
    result = run("mbndt", path, "--target", "y", "--max-epochs", 2, "--n-restarts", 1)
    assert result.returncode == 0, result.stderr
    assert "column 'day' holds dates written as text" in result.stderr


def test_parquet_with_repeated_names_is_named(tmp_path):
    # pyarrow refused it with "Multiple matches for FieldRef.Name(a)".
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1.0, 2.0, 3.0])] * 3,
                                        names=["a", "y", "a"]), path)
    assert_usage_error(run("fit", path, "--target", "y"),
                       "twice.parquet: its header gives more than one column the name 'a'",
                       "give each column its own name")


def test_predict_writes_parquet_by_its_extension(data_csv, tmp_path):
    pytest.importorskip("pyarrow")
    model = tmp_path / "model.joblib"
    assert run("fit", data_csv, "--target", "target", "--max-depth", 1, "--out",
               model).returncode == 0
    out = tmp_path / "predictions.parquet"
    result = run("predict", model, data_csv, "--out", out)
    assert result.returncode == 0, result.stderr
    to_csv = tmp_path / "predictions.csv"
    assert run("predict", model, data_csv, "--out", to_csv).returncode == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_csv(to_csv))


def test_mbndt_task_follows_the_target(tmp_path):
    # Two amounts with a fraction (0.5, 2.5) are a regression target for
    # --task auto; --task classification makes them classes (by their text);
    # --task regression of a text target names the column.
    pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=120)
    path = tmp_path / "amounts.csv"
    pd.DataFrame({"x": x, "y": np.where(x > 0, 2.5, 0.5),
                  "label": np.where(x > 0, "p", "n")}).to_csv(path, index=False)
    fast = ("--max-depth", 1, "--n-restarts", 1, "--max-epochs", 3, "--test-size", 0)
    result = run("mbndt", path, "--target", "y", "--drop", "label", *fast)
    assert result.returncode == 0, result.stderr
    assert "MBNDTRegressor (regression)" in result.stdout
    model = tmp_path / "classes.joblib"
    result = run("mbndt", path, "--target", "y", "--drop", "label", "--task",
                 "classification", "--out", model, *fast)
    assert result.returncode == 0, result.stderr
    assert "MBNDTClassifier (classification)" in result.stdout
    import joblib

    assert list(joblib.load(model).classes_) == ["0.5", "2.5"]
    assert_usage_error(run("mbndt", path, "--target", "label", "--drop", "y", "--task",
                           "regression", *fast),
                       "--task regression: target column 'label' is not numeric")


def test_mbndt_target_checks_and_decimal_classes(tmp_path):
    # An infinite target is refused as fit refuses it (it fitted, and a test
    # split holding it printed "test R2: n/a (constant target)"); whole
    # decimals (a database's NUMERIC class codes) are classes; a class of one
    # row points to --test-size 0.
    pytest.importorskip("torch")
    pa = pytest.importorskip("pyarrow")
    import decimal

    import pyarrow.parquet as pq

    x = np.random.default_rng(1).normal(size=80)
    fast = ("--max-depth", 1, "--n-restarts", 1, "--max-epochs", 3)
    path = tmp_path / "inf.csv"
    pd.DataFrame({"x": x, "y": np.where(np.arange(80) == 5, np.inf, x)}).to_csv(path,
                                                                             index=False)
    assert_usage_error(run("mbndt", path, "--target", "y", *fast),
                       "target column 'y' has 1 infinite value(s)")
    codes = pa.array([decimal.Decimal(int(v > 0)) for v in x], type=pa.decimal128(5, 0))
    table = tmp_path / "codes.parquet"
    pq.write_table(pa.table({"x": x, "y": codes}), table)
    model = tmp_path / "codes.joblib"
    result = run("mbndt", table, "--target", "y", "--out", model, *fast)
    assert result.returncode == 0, result.stderr
    assert "MBNDTClassifier (classification)" in result.stdout
    import joblib

    assert joblib.load(model).classes_.tolist() == [0, 1]
    # codes beyond int64 are classes by their text, not wrapped integers
    big = pa.array([decimal.Decimal(10**20 if v > 0 else 1) for v in x],
                   type=pa.decimal128(25, 0))
    pq.write_table(pa.table({"x": x, "y": big}), table)
    result = run("mbndt", table, "--target", "y", "--out", model, *fast)
    assert result.returncode == 0, result.stderr
    assert joblib.load(model).classes_.tolist() == ["1", str(10**20)]
    single = tmp_path / "single.csv"
    pd.DataFrame({"x": x, "y": ["a", "b"] * 39 + ["c", "d"]}).to_csv(single, index=False)
    assert_usage_error(run("mbndt", single, "--target", "y", *fast),
                       "cannot split the data", "--test-size 0 fits on every row")


def test_column_options_name_columns_as_written(tmp_path):
    # A header written "id, x, code, y" names " x": --drop, --categorical and
    # --regression-features stripped every name and could not reach it; a
    # name with a comma is reachable as the whole option.
    rng = np.random.default_rng(2)
    x = rng.normal(size=60)
    path = tmp_path / "spaced.csv"
    pd.DataFrame({"id": np.arange(60), " x": x, " code": rng.integers(0, 3, 60),
                  "price, EUR": 2 * x, " y": 3 * x}).to_csv(path, index=False)
    model = tmp_path / "m.joblib"
    result = run("fit", path, "--target", " y", "--drop", "id, price, EUR",
                 "--categorical", " code", "--regression-features", " x", "--out", model)
    assert result.returncode == 0, result.stderr
    import joblib

    fitted = joblib.load(model)
    assert list(fitted.feature_names_in_) == [" x", " code"]
    assert fitted.is_categorical_.tolist() == [False, True]
    result = run("fit", path, "--target", " y", "--drop", "price, EUR", "--out", model)
    assert result.returncode == 0, result.stderr
    assert "price, EUR" not in joblib.load(model).feature_names_in_
    assert_usage_error(run("fit", path, "--target", " y", "--drop", "x"),
                       "--drop: column(s) not in", "columns: 'id', ' x'")
    assert_usage_error(run("fit", path, "--target", " y", "--categorical", " y"),
                       "--categorical: ' y' is the target column")
    # predict --keep reads such names as written too (it raised a KeyError)
    pd.DataFrame({"id": ["007", "010"], " x": [0.5, 1.0], " code": [1, 2],
                  "price, EUR": [1.0, 2.0]}).to_csv(path, index=False)
    out = tmp_path / "kept.csv"
    result = run("predict", model, path, "--keep", "id, price, EUR", "--out", out)
    assert result.returncode == 0, result.stderr
    kept = pd.read_csv(out, dtype=str)
    assert kept["id"].tolist() == ["007", "010"]
    assert kept["price, EUR"].tolist() == ["1.0", "2.0"]


def test_predict_missing_feature_column(data_csv, tmp_path):
    model = tmp_path / "model.joblib"
    assert run("fit", data_csv, "--target", "target", "--max-depth", 1, "--out",
               model).returncode == 0
    partial = tmp_path / "partial.csv"
    pd.read_csv(data_csv).drop(columns=["b"]).to_csv(partial, index=False)
    assert_usage_error(run("predict", model, partial), "missing", "b")


def test_no_command_prints_help():
    result = run()
    assert result.returncode == 2
    assert "demo" in result.stdout and "predict" in result.stdout


def test_console_script_entry_point():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "clarytree"]
    assert ep.value == "clarytree._cli:main"
    from clarytree._cli import main

    assert ep.load() is main


def test_progress_display(data_csv):
    # -v shows the lookahead's progress on stderr; captured output stays quiet.
    loud = run("fit", data_csv, "--target", "target", "--max-depth", 3, "-v")
    assert loud.returncode == 0, loud.stderr
    assert re.search(r"\d+/\d+", loud.stderr), loud.stderr
    quiet = run("fit", data_csv, "--target", "target", "--max-depth", 3)
    assert quiet.returncode == 0
    assert quiet.stderr == ""


def test_cv_progress_display(data_csv):
    # fit --cv -v: the CV fits' progress, then the refit's, on stderr; the
    # chosen pair once on stdout (the estimator's own line joins stderr).
    cv = ("--cv", 2, "--leaf-penalties", "1e-1,1e-2", "--ridge-alphas", "1e-1,1e-3")
    loud = run("fit", data_csv, "--target", "target", "--max-depth", 2, *cv, "-v")
    assert loud.returncode == 0, loud.stderr
    assert re.search(r"CV path fits 4/4 .*\n", loud.stderr), loud.stderr
    assert re.search(r"root candidates (\d+)/\1 ", loud.stderr), loud.stderr
    assert loud.stdout.count("leaf_penalty=") == 1, loud.stdout
    quiet = run("fit", data_csv, "--target", "target", "--max-depth", 2, *cv)
    assert quiet.returncode == 0
    assert quiet.stderr == ""
    def timeless(text):
        return re.sub(r"\d+\.\d+s", "?s", text)

    assert timeless(quiet.stdout) == timeless(loud.stdout)


def test_mbndt_fit_predict(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("clarytree.mbndt")
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame.iloc[:, [0, 1, 20, 27, 30]]
    path = tmp_path / "cancer.csv"
    frame.to_csv(path, index=False)
    model = tmp_path / "mbndt.joblib"
    result = run("mbndt", path, "--target", "target", "--max-depth", 2, "--n-restarts", 1,
                 "--max-epochs", 30, "--out", model, "--json", tmp_path / "tree.json",
                 "--device", "auto")
    assert result.returncode == 0, result.stderr
    assert "MBNDTClassifier (classification)" in result.stdout
    assert "balanced accuracy" in result.stdout and "class " in result.stdout
    result = run("predict", model, path)
    assert result.returncode == 0, result.stderr
    predictions = result.stdout.splitlines()[1:]
    assert len(predictions) == len(frame) and set(predictions) <= {"0", "1"}
    assert_usage_error(run("mbndt", path, "--target", "nope"), "column 'nope' not found")
    assert_usage_error(run("mbndt", path, "--target", "target", "--device", "no-such"),
                       "must name a torch device such as 'cpu'")
    # Probabilities and kept columns (an id) beside the predictions.
    import io

    import joblib

    fitted = joblib.load(model)
    scored = frame.assign(id=[f"r{i}" for i in range(len(frame))])
    scored.to_csv(path, index=False)
    result = run("predict", model, path, "--proba", "--keep", "id,target")
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(io.StringIO(result.stdout))
    assert list(out.columns) == ["id", "target", "prediction", "proba[0]", "proba[1]"]
    assert out["id"].tolist() == scored["id"].tolist()
    X = frame.drop(columns="target")
    np.testing.assert_array_equal(out["prediction"], fitted.predict(X))
    np.testing.assert_allclose(out[["proba[0]", "proba[1]"]], fitted.predict_proba(X),
                               rtol=1e-15)
    assert_usage_error(run("predict", model, path, "--keep", "nope"), "--keep", "nope")
    scored.assign(prediction=0).to_csv(path, index=False)       # last run's output
    assert_usage_error(run("predict", model, path, "--keep", "prediction"), "clash")
    assert_usage_error(run("predict", model, path, "--explain"), "--explain",
                       "is a classifier")
    # The same probabilities from the exported SQL.
    import sqlite3

    result = run("export", model, "--sql", "--proba", "--table", "rows")
    assert result.returncode == 0, result.stderr
    db = sqlite3.connect(":memory:")
    X.to_sql("rows", db, index=False)
    got = db.execute(result.stdout).fetchall()
    np.testing.assert_array_equal(np.array([r[1:] for r in got]), fitted.predict_proba(X))
    assert_usage_error(run("export", model, "--python", "--proba"), "goes with --sql")


def test_predict_keeps_columns_and_refuses_proba_of_a_regressor(data_csv, tmp_path):
    import io

    model = tmp_path / "m.joblib"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--out", model, "-q")
    assert result.returncode == 0, result.stderr
    result = run("predict", model, data_csv, "--keep", "target, a,target")
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(io.StringIO(result.stdout))
    frame = pd.read_csv(data_csv)
    assert list(out.columns) == ["target", "a", "prediction"]
    np.testing.assert_array_equal(out[["target", "a"]], frame[["target", "a"]])
    assert_usage_error(run("predict", model, data_csv, "--proba"), "is a regressor")
    assert_usage_error(run("export", model, "--sql", "--proba"), "is a regressor")


def test_mbndt_without_torch(data_csv, tmp_path):
    # A stand-in module that fails to import hides any installed torch.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "torch.py").write_text("raise ImportError('torch is hidden in this test')\n")
    result = run("mbndt", data_csv, "--target", "target", pythonpath=shadow)
    assert_usage_error(result, "needs PyTorch")


def test_predict_into_a_closed_pipe(data_csv, tmp_path):
    """``clarytree predict ... | head -1`` ends quietly (no Broken pipe error)."""
    model = tmp_path / "model.joblib"
    assert run("fit", data_csv, "--target", "target", "--max-depth", 1, "--out",
               model).returncode == 0
    big = tmp_path / "big.csv"
    frame = pd.read_csv(data_csv)
    pd.concat([frame] * 200, ignore_index=True).to_csv(big, index=False)
    env = dict(os.environ)
    env.pop("CLARYTREE_DEBUG", None)
    cmd = f"{sys.executable} -m clarytree predict {model} {big} | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                            text=True, cwd=_WORKDIR["path"], env=env, timeout=300)
    assert result.stdout == "prediction\n"
    assert result.stderr == "", result.stderr
    assert result.returncode == 141  # as a program ended by SIGPIPE


def test_infinite_feature_values_are_reported(tmp_path):
    """Text columns and empty cells are data; an infinite value is an error naming its column."""
    path = tmp_path / "inf.csv"
    pd.DataFrame({"a": ["x", "y", "z", "w"], "b": [1.0, np.inf, 2.0, 3.0],
                  "y": [1.0, 2.0, 3.0, 4.0]}).to_csv(path, index=False)
    assert_usage_error(run("fit", path, "--target", "y", "--test-size", 0), "infinity", "'b'")


@pytest.mark.parametrize("command, shown", [
    ("fit", ["(default: 4)", "(default: 0.001)", "(default: 20)", "(default: 0.2)",
             "(default: 0)", "(default: linear)"]),
    ("demo", ["(default: 1000)", "(default: 0.05)", "(default: 8)"]),
    ("mbndt", ["(default: 3)", "(default: 16.0)", "(default: 500)"]),
])
def test_help_shows_defaults(command, shown):
    result = run(command, "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # undo argparse's line wrapping
    for fragment in shown:
        assert fragment in text, (fragment, result.stdout)
    # An option whose help states its default is not given a second one.
    assert re.search(r"\(default: [^)]*\) \(default:", text) is None, text


def test_fit_prints_readable_numbers(data_csv):
    result = run("fit", data_csv, "--target", "target", "--max-depth", 2)
    assert result.returncode == 0, result.stderr
    numbers = re.findall(r"(?<![\w\[])-?\d+\.\d+(?:e-?\d+)?", result.stdout.split("leaves:")[0])
    assert numbers
    for number in numbers:
        assert len(number.lstrip("-").split("e")[0].replace(".", "").lstrip("0")) <= 4, number
    exact = run("fit", data_csv, "--target", "target", "--max-depth", 2,
                "--significant-digits", "all", "--exact-thresholds")
    assert exact.returncode == 0, exact.stderr
    assert max(len(n) for n in re.findall(r"\d+\.\d+", exact.stdout)) > 10


@pytest.fixture(scope="module")
def mixed_frame():
    rng = np.random.default_rng(3)
    n = 400
    color = rng.choice(["red", "green", "blue"], size=n).astype(object)
    grade = rng.integers(1, 4, size=n)            # numeric codes of a category
    x = rng.normal(size=n)
    y = np.where(color == "green", 3.0, 0.0) + np.where(grade == 2, -2.0, 0.0) + x
    y += 0.05 * rng.normal(size=n)
    color[rng.random(n) < 0.1] = None             # empty cells
    x[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"color": color, "grade": grade, "x": x, "target": y})


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_fit_predict_mixed_table(mixed_frame, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    path = tmp_path / f"mixed{suffix}"
    if suffix == ".csv":
        mixed_frame.to_csv(path, index=False)
    else:
        mixed_frame.to_parquet(path)
    model = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--categorical", "grade", "--leaf-model", "constant", "--out", model)
    assert result.returncode == 0, result.stderr
    assert "color in {green}" in result.stdout or "color in {blue, red}" in result.stdout
    assert "grade in {" in result.stdout
    import joblib

    fitted = joblib.load(model)
    np.testing.assert_array_equal(fitted.is_categorical_, [True, True, False])
    np.testing.assert_array_equal(fitted.categories_[1], [1, 2, 3])
    result = run("predict", model, path)
    assert result.returncode == 0, result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    np.testing.assert_array_equal(got, fitted.predict(frame[["color", "grade", "x"]]))
    # The rules found the two effects: green adds 3, grade 2 subtracts 2.
    truth = np.where(frame["color"] == "green", 3.0, 0.0) + np.where(frame["grade"] == 2,
                                                                      -2.0, 0.0)
    known = frame["color"].notna().to_numpy()
    assert np.corrcoef(got[known], truth[known])[0, 1] > 0.9


def test_export_sql_and_python_reproduce_predict(data_csv, tmp_path):
    import io
    import sqlite3

    model_path, json_path = tmp_path / "m.joblib", tmp_path / "m.json"
    fitted = run("fit", data_csv, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--out", model_path, "--json", json_path, "-q")
    assert fitted.returncode == 0, fitted.stderr
    X = pd.read_csv(data_csv)[["a", "b", "c"]]
    predicted = run("predict", model_path, data_csv)
    expected = pd.read_csv(io.StringIO(predicted.stdout))["prediction"]
    db = sqlite3.connect(":memory:")
    X.to_sql("rows", db, index=False)
    sql = run("export", model_path, "--sql", "--table", "rows", "--extrapolation", "clip")
    assert sql.returncode == 0, sql.stderr
    np.testing.assert_allclose([r[0] for r in db.execute(sql.stdout)], expected, rtol=1e-12)
    py_file = tmp_path / "scorer.py"
    out = run("export", json_path, "--python", "--function-name", "score", "--out", py_file)
    assert out.returncode == 0 and "written to" in out.stdout, out.stderr
    namespace = {}
    exec(py_file.read_text(), namespace)
    got = [namespace["score"](row) for row in X.to_numpy().tolist()]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert_usage_error(run("export", model_path), "one of the arguments --sql --python")
    assert_usage_error(run("export", data_csv, "--sql"), "cannot load a model")


@pytest.mark.parametrize("sep, decimal, suffix", [
    (",", ".", ".csv"), (";", ".", ".csv"), ("\t", ".", ".tsv"), ("|", ".", ".csv.gz"),
    (";", ",", ".csv"), (";", ",", ".csv.bz2"), (",", ".", ".csv.xz")])
def test_separator_and_decimal_comma_are_detected(mixed_frame, tmp_path, sep, decimal,
                                                  suffix):
    # A text column holding the separator of another dialect must not fool it.
    frame = mixed_frame.assign(note=np.where(np.arange(len(mixed_frame)) % 3, "a, b; c",
                                             "d|e"))
    path = tmp_path / f"table{suffix}"
    frame.to_csv(path, sep=sep, decimal=decimal, index=False)
    model = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--out", model)
    assert result.returncode == 0, result.stderr
    import joblib

    fitted = joblib.load(model)
    assert list(fitted.feature_names_in_) == ["color", "grade", "x", "note"]
    np.testing.assert_array_equal(fitted.is_categorical_, [True, False, False, True])
    ref = pd.read_csv(path, sep=sep, decimal=decimal)
    np.testing.assert_array_equal(ref["x"].to_numpy(), mixed_frame["x"].to_numpy())
    result = run("predict", model, path)
    assert result.returncode == 0, result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    np.testing.assert_array_equal(got, fitted.predict(ref.drop(columns="target")))


@pytest.mark.parametrize("encoding, option, sep", [
    ("cp1252", ["--encoding", "cp1252"], ";"), ("latin-1", ["--encoding", "latin-1"], ","),
    ("utf-16", [], "\t"), ("utf-32", [], ","), ("utf-8-sig", [], ","),
    ("utf-16-le", ["--encoding", "utf-16-le"], ",")])
def test_text_encodings(mixed_frame, tmp_path, encoding, option, sep):
    # Excel writes cp1252 CSV and UTF-16 "Unicode text"; both marks are detected.
    frame = mixed_frame.assign(color=mixed_frame["color"].replace(
        {"red": "rouge été", "green": "grün"}))
    path = tmp_path / "table.csv"
    frame.to_csv(path, sep=sep, index=False, encoding=encoding)
    model = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--out", model, *option)
    assert result.returncode == 0, result.stderr
    import joblib

    fitted = joblib.load(model)
    assert list(fitted.feature_names_in_) == ["color", "grade", "x"]
    levels = set(fitted.categories_[0])
    assert {"rouge été", "grün", "blue"} <= levels, levels
    result = run("predict", model, path, *option)
    assert result.returncode == 0, result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    np.testing.assert_array_equal(got, fitted.predict(frame.drop(columns="target")))


def test_wrong_text_encoding_is_explained(mixed_frame, tmp_path):
    frame = mixed_frame.assign(color=mixed_frame["color"].replace("red", "été"))
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False, encoding="cp1252")
    assert_usage_error(run("fit", path, "--target", "target"), "is not UTF-8 text",
                       "--encoding cp1252")
    assert_usage_error(run("predict", "m.joblib", path, "--encoding", "nonesuch"),
                       "unknown encoding 'nonesuch'")
    assert_usage_error(run("fit", path, "--target", "target", "--encoding", "utf-16"),
                       "is not utf-16 text", "pass the file's encoding")
    frame.to_csv(path, index=False, encoding="utf-16-be")     # no byte order mark
    assert_usage_error(run("fit", path, "--target", "target"), "NUL bytes",
                       "--encoding utf-16-le")
    # ASCII text in UTF-16 decodes as UTF-8 too, into names full of NULs.
    mixed_frame.to_csv(path, index=False, encoding="utf-16-le")
    assert_usage_error(run("fit", path, "--target", "target", "--encoding", "utf-8"),
                       "NUL bytes", "not utf-8 text")


def test_min_category_weight_merges_many_levels(tmp_path):
    # 600 levels seen once, 20 common ones: too many for a split in every fold.
    rng = np.random.default_rng(5)
    code = np.r_[np.arange(600), rng.integers(0, 20, size=900)]
    x = rng.normal(size=code.size)
    frame = pd.DataFrame({"zone": [f"z{i:03d}" for i in code], "x": x,
                          "target": x + 0.1 * (code % 3)})
    path = tmp_path / "zones.csv"
    frame.to_csv(path, index=False)
    for extra in ([], ["--cv", 2, "--leaf-penalties", "1e-2", "--ridge-alphas", "1e-3",
                       "--n-jobs", 2]):
        assert_usage_error(run("fit", path, "--target", "target", *extra),
                           "'zone' has", "levels, more than the 256 supported",
                           "pass --min-category-weight W")
    # An identifier column: the advice is to drop it, in the command's words.
    frame.assign(row=[f"r{i:05d}" for i in range(code.size)]).to_csv(path, index=False)
    assert_usage_error(run("fit", path, "--target", "target", "--drop", "zone"),
                       "'row' has", "an identifier?", "pass --drop 'row'")
    frame.to_csv(path, index=False)
    model = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--max-depth", 2, "--test-size", 0,
                 "--min-category-weight", 10, "--out", model, "-q")
    assert result.returncode == 0, result.stderr
    import joblib

    fitted = joblib.load(model)
    assert fitted.min_category_weight == 10
    counts = frame["zone"].value_counts()
    kept = sorted(counts.index[counts >= 10])
    assert list(fitted.categories_[0]) == kept + ["<other>"]
    assert sorted(fitted.merged_categories_[0]) == sorted(counts.index[counts < 10])


def test_numbers_read_as_text_are_pointed_out(mixed_frame, tmp_path):
    frame = mixed_frame.assign(x=mixed_frame["x"].round(1)).astype({"x": object})
    frame.loc[5, "x"] = "?"
    path = tmp_path / "typo.csv"
    frame.to_csv(path, index=False)
    result = run("fit", path, "--target", "target", "--max-depth", 2)
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "'x'" in line]
    assert len(warning) == 1, result.stderr
    assert warning[0].startswith("clarytree: warning: column 'x' holds text, yet ")
    assert "(the others: '?')" in warning[0] and "--categorical x" in warning[0]
    assert "color" not in result.stderr        # real text is not flagged
    result = run("fit", path, "--target", "target", "--max-depth", 2, "--categorical", "x")
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr


def test_predict_reads_categorical_columns_as_the_fit_saw_them(tmp_path):
    """A file has no column types.  A column that was text in the training
    file (one stray '?') and is all numbers in the file to score is read as
    text, and numeric codes written as text are read as numbers: the rows
    find their levels, with no warning.  Before, the first case sent every
    row the missing values' way without a word."""
    import joblib

    rng = np.random.default_rng(0)
    n = 300
    a = rng.normal(size=n)
    c = rng.integers(1, 4, n)
    y = a + 3.0 * (c == 1)
    train = pd.DataFrame({"a": a, "c": c.astype(object), "y": y})
    train.loc[5, "c"] = "?"
    train.to_csv(tmp_path / "train.csv", index=False)
    score = pd.DataFrame({"a": a, "c": c})
    score.to_csv(tmp_path / "score.csv", index=False)
    model = tmp_path / "text.joblib"
    result = run("fit", tmp_path / "train.csv", "--target", "y", "--max-depth", 2,
                 "--test-size", 0, "--out", model)
    assert result.returncode == 0, result.stderr
    assert list(joblib.load(model).categories_[1]) == ["1", "2", "3", "?"]
    result = run("predict", model, tmp_path / "score.csv")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    np.testing.assert_allclose(got, y, atol=1e-3)
    expected = joblib.load(model).predict(score.assign(c=c.astype(str)))
    np.testing.assert_array_equal(got, expected)

    # numeric codes declared categorical, a stray text entry in the file to score
    train.loc[5, "c"] = 2
    train.to_csv(tmp_path / "codes.csv", index=False)
    model = tmp_path / "codes.joblib"
    result = run("fit", tmp_path / "codes.csv", "--target", "y", "--max-depth", 2,
                 "--test-size", 0, "--categorical", "c", "--out", model)
    assert result.returncode == 0, result.stderr
    assert list(joblib.load(model).categories_[1]) == [1, 2, 3]
    stray = score.astype({"c": object})
    stray.loc[7, "c"] = "?"
    stray.to_csv(tmp_path / "stray.csv", index=False)
    result = run("predict", model, tmp_path / "stray.csv")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    expected = joblib.load(model).predict(stray.assign(c=stray["c"].replace("?", None)
                                                       .astype(float)))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(np.delete(got, 7), np.delete(y, 7), atol=1e-3)


def test_mbndt_predict_reads_categorical_columns_as_text(tmp_path):
    """MBNDT matches levels as text: a file to score whose level column is
    all numbers with an empty cell reads as floats ('1.0'), which matched
    none of the training file's levels ('1')."""
    pytest.importorskip("torch")
    import joblib

    rng = np.random.default_rng(1)
    n = 400
    a = rng.normal(size=n)
    c = rng.integers(1, 4, n)
    train = pd.DataFrame({"a": a, "c": c.astype(object), "target": (c == 1).astype(int)})
    train.loc[5, "c"] = "?"
    train.to_csv(tmp_path / "train.csv", index=False)
    model = tmp_path / "mbndt.joblib"
    result = run("mbndt", tmp_path / "train.csv", "--target", "target", "--max-depth", 1,
                 "--n-restarts", 1, "--max-epochs", 60, "--out", model)
    assert result.returncode == 0, result.stderr
    score = pd.DataFrame({"a": a, "c": pd.array(c, dtype="Int64")})
    score.loc[9, "c"] = pd.NA
    score.to_csv(tmp_path / "score.csv", index=False)      # 1, 2, 3 and an empty cell
    assert pd.read_csv(tmp_path / "score.csv")["c"].dtype == np.float64
    result = run("predict", model, tmp_path / "score.csv")
    assert result.returncode == 0, result.stderr
    got = np.array([int(v) for v in result.stdout.splitlines()[1:]])
    fitted = joblib.load(model)
    as_text = pd.read_csv(tmp_path / "score.csv", dtype={"c": str})
    np.testing.assert_array_equal(got, fitted.predict(as_text))
    known = np.arange(n) != 9
    assert np.mean(got[known] == (c[known] == 1)) > 0.95


@pytest.fixture(scope="module")
def weighted_csv(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"id": np.arange(n) * 7 + 1000, "x": rng.normal(size=n),
                          "color": rng.choice(["red", "blue"], size=n),
                          "w": rng.integers(0, 4, size=n).astype(float)})
    frame["target"] = (np.where(frame["color"] == "red", 2 * frame["x"], -frame["x"])
                       + 0.1 * rng.normal(size=n))
    path = tmp_path_factory.mktemp("weighted") / "table.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_fit_with_weights_dropped_columns_and_leaf_size(weighted_csv, tmp_path):
    import joblib
    from sklearn.metrics import r2_score

    from clarytree import CLARITreeRegressor

    path, frame = weighted_csv
    model_file = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--weight", "w", "--drop", "id",
                 "--min-samples-leaf", "0.1", "--time-limit", "600", "--max-depth", 2,
                 "--test-size", 0, "--out", model_file)
    assert result.returncode == 0, result.stderr
    fitted = joblib.load(model_file)
    assert list(fitted.feature_names_in_) == ["x", "color"]
    assert fitted.min_samples_leaf == 0.1 and fitted.time_limit == 600
    X, y, w = frame[["x", "color"]], frame["target"].to_numpy(), frame["w"].to_numpy()
    reference = CLARITreeRegressor(max_depth=2, min_samples_leaf=0.1, leaf_penalty=1e-3,
                                   ridge_alpha=1e-5).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(fitted.predict(X), reference.predict(X))
    assert np.all(w == np.round(w))     # integer weights: the repeated rows' ceiling
    assert fitted.min_samples_leaf_ == np.ceil(0.1 * w.sum())
    r2 = r2_score(y, reference.predict(X), sample_weight=w)
    assert f"train R2 (weighted): {r2:.4f}" in result.stdout
    # predict reads the same file: the id, weight and target columns are not features.
    out = run("predict", model_file, path, "--keep", "id")
    assert out.returncode == 0, out.stderr
    printed = pd.read_csv(io.StringIO(out.stdout))
    np.testing.assert_array_equal(printed["id"], frame["id"])
    np.testing.assert_allclose(printed["prediction"], reference.predict(X), rtol=1e-15)


def test_cv_with_weights(weighted_csv):
    from sklearn.model_selection import KFold

    from clarytree import CLARITreeRegressorCV

    path, frame = weighted_csv
    result = run("fit", path, "--target", "target", "--weight", "w", "--drop", "id",
                 "--cv", 3, "--leaf-penalties", "1e-1,1e-3", "--ridge-alphas", "1e-2,1e-4",
                 "--max-depth", 2, "--test-size", 0)
    assert result.returncode == 0, result.stderr
    reference = CLARITreeRegressorCV(
        max_depth=2, leaf_penalties=[1e-1, 1e-3], ridge_alphas=[1e-2, 1e-4],
        cv=KFold(3, shuffle=True, random_state=0)).fit(
        frame[["x", "color"]], frame["target"], sample_weight=frame["w"].to_numpy())
    assert (f"leaf_penalty={reference.leaf_penalty_:g} ridge_alpha={reference.ridge_alpha_:g}"
            f"  mean CV R2 (weighted): {reference.best_score_:.4f}") in result.stdout


def test_fit_with_regression_features(tmp_path):
    import joblib

    from clarytree import CLARITreeRegressor

    rng = np.random.default_rng(6)
    n = 300
    frame = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n),
                          "color": rng.choice(["red", "blue"], size=n)})
    frame["target"] = np.where(frame["z"] > 0, 2 * frame["x"], -frame["x"]) \
        + 0.1 * rng.normal(size=n)
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    model_file = tmp_path / "model.joblib"
    result = run("fit", path, "--target", "target", "--regression-features", "x",
                 "--max-depth", 2, "--test-size", 0, "--out", model_file)
    assert result.returncode == 0, result.stderr
    fitted = joblib.load(model_file)
    np.testing.assert_array_equal(fitted.regression_features_, [0])
    X = frame.drop(columns="target")
    reference = CLARITreeRegressor(max_depth=2, leaf_penalty=1e-3, ridge_alpha=1e-5,
                                   regression_features=["x"]).fit(X, frame["target"])
    np.testing.assert_array_equal(fitted.predict(X), reference.predict(X))
    assert " * z" not in result.stdout and " * x" in result.stdout
    assert_usage_error(run("fit", path, "--target", "target", "--regression-features", "zz"),
                       "regression_features", "zz")
    assert_usage_error(run("fit", path, "--target", "target", "--regression-features",
                           "x,color"), "categorical column(s) 'color'", "split-only")
    assert_usage_error(run("fit", path, "--target", "target", "--regression-features",
                           "x", "--leaf-model", "constant"),
                       "--regression-features", "constant leaves")


@pytest.mark.parametrize("args, fragments", [
    (["--weight", "nope"], ["--weight", "'nope' not found", "columns: id, x, color"]),
    (["--weight", "target"], ["--weight", "is the target"]),
    (["--weight", "color"], ["--weight", "'color' is not numeric"]),
    (["--drop", "id,zz"], ["--drop", "not in", "zz"]),
    (["--drop", "target"], ["--drop", "is the target"]),
    (["--min-samples-leaf", "1.5"], ["--min-samples-leaf", "a fraction in (0, 1)"]),
    (["--min-samples-leaf", "0"], ["--min-samples-leaf", "an integer >= 1"]),
    (["--time-limit", "0"], ["--time-limit", "a finite number > 0"]),
    (["--time-limit", "5", "--lookahead-depth", "0"], ["--time-limit", "greedy"]),
])
def test_table_column_options_errors(weighted_csv, args, fragments):
    path, _ = weighted_csv
    assert_usage_error(run("fit", path, "--target", "target", *args), *fragments)


def test_negative_or_missing_weights_are_usage_errors(weighted_csv, tmp_path):
    _, frame = weighted_csv
    bad = frame.copy()
    bad.loc[3, "w"] = -1.0
    bad.loc[5, "w"] = np.nan
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    assert_usage_error(run("fit", path, "--target", "target", "--weight", "w"),
                       "--weight", "2 missing, negative or infinite value(s)")
    zero = frame.assign(w=0.0)
    zero.to_csv(path, index=False)
    assert_usage_error(run("fit", path, "--target", "target", "--weight", "w"),
                       "every weight", "is 0")


def test_mbndt_with_weights_and_dropped_columns(weighted_csv, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("clarytree.mbndt")
    import joblib

    _, frame = weighted_csv
    labelled = frame.assign(target=(frame["target"] > 0).astype(int))
    path = tmp_path / "labelled.csv"
    labelled.to_csv(path, index=False)
    model_file = tmp_path / "model.joblib"
    result = run("mbndt", path, "--target", "target", "--weight", "w", "--drop", "id",
                 "--max-depth", 2, "--n-restarts", 1, "--max-epochs", 20,
                 "--out", model_file, "-q")
    assert result.returncode == 0, result.stderr
    assert "test balanced accuracy (weighted):" in result.stdout
    assert list(joblib.load(model_file).feature_names_in_) == ["x", "color"]


def test_predict_explain(weighted_csv, tmp_path):
    import joblib

    from clarytree import explain

    path, frame = weighted_csv
    model_file = tmp_path / "model.joblib"
    fitted = run("fit", path, "--target", "target", "--drop", "id,w", "--max-depth", 2,
                 "--test-size", 0, "--out", model_file)
    assert fitted.returncode == 0, fitted.stderr
    out = run("predict", model_file, path, "--explain", "--keep", "id")
    assert out.returncode == 0, out.stderr
    printed = pd.read_csv(io.StringIO(out.stdout))
    assert list(printed.columns) == ["id", "leaf", "rule", "intercept", "term[x]",
                                     "term[color]", "prediction"]
    model = joblib.load(model_file)
    X = frame[["x", "color"]]
    reference = explain(model, X)
    np.testing.assert_array_equal(printed["leaf"], reference["leaf"])
    assert list(printed["rule"]) == list(reference["rule"])
    for column in ("intercept", "x", "color", "prediction"):
        name = column if column in ("intercept", "prediction") else f"term[{column}]"
        np.testing.assert_allclose(printed[name], reference[column], rtol=1e-15)
    np.testing.assert_allclose(printed["intercept"] + printed["term[x]"]
                               + printed["term[color]"], printed["prediction"], rtol=1e-12)
    with_rule = tmp_path / "with_rule.csv"
    frame.assign(rule="r").to_csv(with_rule, index=False)
    assert run("predict", model_file, with_rule, "--keep", "rule").returncode == 0
    assert_usage_error(run("predict", model_file, with_rule, "--explain", "--keep", "id,rule"),
                       "--keep", "rule", "clash")


@pytest.mark.parametrize("command", ["fit", "mbndt"])
def test_undefined_r2_is_said_not_printed_as_nan(tmp_path, command):
    # R2 is undefined on one row and on a constant target: the report says
    # which, where it printed "nan".
    if command == "mbndt":
        pytest.importorskip("torch")
    path = tmp_path / "tiny.csv"
    pd.DataFrame({"a": np.arange(12.0), "y": 3.0}).to_csv(path, index=False)
    extra = ["--test-size", 0.05]
    if command == "mbndt":
        extra += ["--max-epochs", 1, "--task", "regression"]
    else:
        extra += ["--max-depth", 1]
    result = run(command, path, "--target", "y", "-q", *extra)
    assert result.returncode == 0, result.stderr
    assert "train R2: n/a (constant target)" in result.stdout
    assert "test R2: n/a (one row)" in result.stdout
    assert "nan" not in result.stdout


# -- reading tables (in process: the reader alone) ----------------------------


def read(path, **kw):
    from clarytree._cli import _read_table

    return _read_table(str(path), **kw)


def test_a_trailing_separator_on_the_data_rows_does_not_shift_the_columns(tmp_path):
    # pandas would make the first column the index and name every column
    # after its left neighbour: y read as a, a as b.
    path = tmp_path / "trail.csv"
    path.write_text("y,a,b\n3.0,1.0,5.0,\n6.0,2.0,7.0,\n")
    frame = read(path)
    assert list(frame.columns) == ["y", "a", "b"]
    np.testing.assert_array_equal(frame["y"], [3.0, 6.0])
    np.testing.assert_array_equal(frame["b"], [5.0, 7.0])


def test_rows_with_more_values_than_the_header_are_refused(tmp_path):
    from clarytree._cli import UsageError

    path = tmp_path / "longer.csv"
    path.write_text("y,a,b\n1,2,3,\n2,3,4,9\n")
    with pytest.raises(UsageError, match="data row 2 has more fields than the header's 3"):
        read(path)
    path.write_text("y,a,b\n1,2,3\n2,3,4,9\n")
    with pytest.raises(UsageError, match="Expected 3 fields in line 3, saw 4"):
        read(path)


def test_missing_markers_are_missing_among_numbers_and_levels_among_text(tmp_path):
    path = tmp_path / "na.csv"
    path.write_text("grade,x,y,z\nNone,1.5,0,NA\nLow,NA,1,NA\nNA,2.5,2,\n,3.5,3,NA\n"
                    "High,null,4,NA\n")
    frame = read(path)
    assert frame["grade"].tolist()[:3] == ["None", "Low", "NA"]
    assert pd.isna(frame["grade"][3])
    assert frame["x"].dtype == np.float64
    np.testing.assert_array_equal(frame["x"], [1.5, np.nan, 2.5, 3.5, np.nan])
    # Markers only: a column of missing values.
    assert frame["z"].dtype == np.float64 and frame["z"].isna().all()
    # A column read as text on purpose (predict: a categorical column whose
    # levels were text) keeps its markers as levels.
    assert read(path, text_columns=["z"])["z"].tolist()[:2] == ["NA", "NA"]


def test_a_decimal_comma_first_seen_after_fifty_rows_is_read(tmp_path):
    path = tmp_path / "late.csv"
    rows = [f"{i};{2 * i}" for i in range(60)] + ["60,5;121", "61,5;123"]
    path.write_text("price;y\n" + "\n".join(rows) + "\n")
    frame = read(path)
    assert frame["price"].dtype == np.float64
    assert frame["price"].iloc[-1] == 61.5


def test_one_column_with_a_decimal_comma(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("x\n1,5\n2,25\n-0,5\n")
    frame = read(path)
    assert list(frame.columns) == ["x"]
    np.testing.assert_array_equal(frame["x"], [1.5, 2.25, -0.5])


@pytest.mark.parametrize("name", ["data.csv.zip", "data.csv"])
def test_zip_and_compression_told_by_content(tmp_path, name):
    import gzip
    import zipfile

    text = "x,y\n1,2\n3,4\n"
    path = tmp_path / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("data.csv", text)
    else:      # gzip without its extension
        path.write_bytes(gzip.compress(text.encode()))
    frame = read(path)
    np.testing.assert_array_equal(frame.to_numpy(), [[1, 2], [3, 4]])


def test_kept_columns_are_read_as_written(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_text("id,x\n00123,0.1\n,0.2\n9007199254740993,0.3\n")
    frame = read(path, as_written=["id", "nope"])
    assert frame.attrs["as_written"]["id"].tolist() == ["00123", "", "9007199254740993"]
    assert frame["x"].dtype == np.float64


def test_model_files_are_loaded_by_content(data_csv, tmp_path):
    from clarytree._cli import UsageError, _check_writable, _load_model

    model = tmp_path / "model.joblib"
    tree = tmp_path / "tree.json"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 1, "-q",
                 "--out", model, "--json", tree)
    assert result.returncode == 0, result.stderr
    swapped = tmp_path / "model.data"
    swapped.write_bytes(tree.read_bytes())
    assert _load_model(str(swapped)).get_n_leaves() == _load_model(str(model)).get_n_leaves()
    with pytest.raises(UsageError, match="--out writes a joblib pickle, not JSON"):
        _check_writable(str(tmp_path / "m.json"), "--out", model_outputs=True)
    with pytest.raises(UsageError, match="--json writes the tree as JSON"):
        _check_writable(str(tmp_path / "t.joblib"), "--json", model_outputs=True)
    with pytest.raises(UsageError, match=r"--plot: .*tree.pgn needs an image extension"):
        _check_writable(str(tmp_path / "tree.pgn"), "--plot", model_outputs=True)


def test_held_out_rows_of_weight_zero_say_so():
    from clarytree._cli import _r2_text

    y = np.array([1.0, 2.0, 3.0])
    assert _r2_text(y, y, np.zeros(3)) == "n/a (no row with positive weight)"
    assert _r2_text(y, y, np.ones(3)) == "1.0000"


def test_bools_among_missing_markers_stay_bools(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("x,b\n0.5,True\n0.5,False\n0.5,NA\n")
    assert read(path)["b"].tolist() == [True, False, None]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_trailing_separator_with_any_separator(tmp_path, sep):
    path = tmp_path / "t.csv"
    path.write_text(sep.join("xgy") + "\n" + "".join(
        f"{i}{sep}{'ab'[i % 2]}{sep}{2 * i}{sep}\n" for i in range(20)))
    frame = read(path)
    assert list(frame.columns) == ["x", "g", "y"]
    np.testing.assert_array_equal(frame["y"], 2 * np.arange(20))


def test_plain_text_named_as_an_archive_and_cut_off_archives(tmp_path):
    import gzip
    import zipfile

    from clarytree._cli import UsageError

    text = "x,y\n1,2\n3,4\n"
    for name in ("plain.csv.gz", "plain.csv.zip", "plain.csv.xz"):
        (tmp_path / name).write_text(text)
        np.testing.assert_array_equal(read(tmp_path / name).to_numpy(), [[1, 2], [3, 4]])
    rows = "".join(f"{v},{v * 7 % 1000}\n" for v in np.random.default_rng(0).integers(
        0, 10**9, size=2000))
    (tmp_path / "cut.gz").write_bytes(gzip.compress(("x,y\n" + rows).encode())[:3000])
    with pytest.raises(UsageError, match="cannot read"):
        read(tmp_path / "cut.gz")
    # A folder entry beside the file (zip -r), and an empty archive.
    with zipfile.ZipFile(tmp_path / "folder.zip", "w") as archive:
        archive.writestr("data/", "")
        archive.writestr("data/train.csv", text)
    np.testing.assert_array_equal(read(tmp_path / "folder.zip").to_numpy(), [[1, 2], [3, 4]])
    zipfile.ZipFile(tmp_path / "empty.zip", "w").close()
    with pytest.raises(UsageError, match="must hold exactly one file, it holds 0"):
        read(tmp_path / "empty.zip")


def test_a_decimal_comma_first_seen_beyond_the_head(tmp_path):
    # The head (64 KB) chose no decimal comma: a column of such numbers is
    # still numbers, not levels '0', '0,5', ...
    rows = [f"{i % 97};{3 * (i % 97)};{'ab'[i % 2]}" for i in range(9000)]
    rows += [f"{i % 97},5;{3 * (i % 97) + 1.5:.1f};a".replace(".", ",") for i in range(100)]
    path = tmp_path / "late.csv"
    path.write_text("x;y;g\n" + "\n".join(rows) + "\n")
    assert path.stat().st_size > 1 << 16
    frame = read(path)
    assert frame["x"].dtype == np.float64 and frame["x"].iloc[-1] == 2.5
    assert frame["y"].dtype == np.float64
    assert frame["g"].tolist()[:2] == ["a", "b"]


def test_header_names_that_are_markers_are_names(tmp_path):
    from clarytree._cli import UsageError

    path = tmp_path / "dup.csv"
    path.write_text("NA,NA,y\n1,2,3\n")
    with pytest.raises(UsageError, match="more than one column the name 'NA'"):
        read(path)


def test_longer_rows_are_counted_as_data_rows(tmp_path):
    from clarytree._cli import UsageError

    path = tmp_path / "blank.csv"
    path.write_text("x,y\n\n1,2,\n\n3,4,5\n")
    with pytest.raises(UsageError, match="data row 2 has more fields"):
        read(path)


def test_json_model_with_a_byte_order_mark_and_outputs_named_json(data_csv, tmp_path):
    import codecs

    from clarytree._cli import _check_writable, _load_model

    tree = tmp_path / "tree.json"
    result = run("fit", data_csv, "--target", "target", "--max-depth", 1, "-q", "--json", tree)
    assert result.returncode == 0, result.stderr
    marked = tmp_path / "bom.json"
    marked.write_bytes(codecs.BOM_UTF8 + tree.read_bytes())
    assert _load_model(str(marked)).get_n_leaves() == 2
    # predict and export write predictions and code: any name.
    _check_writable(str(tmp_path / "predictions.json"), "--out")


def test_one_type_per_column_beyond_the_first_chunk(tmp_path):
    # pandas types a large file chunk by chunk (262,144 rows): a marker or a
    # decimal comma first seen after the first chunk mixed floats and text.
    n = 270_000
    path = tmp_path / "big.csv"
    lines = ["x;b;y"] + [f"{i % 50};{'True' if i % 2 else 'False'};{i % 7}"
                         for i in range(n)]
    lines[-3] = "NA;NA;1"
    lines[-2] = "12,5;True;2"
    path.write_text("\n".join(lines) + "\n")
    frame = read(path)
    assert frame["x"].dtype == np.float64 and frame["x"].iloc[-2] == 12.5
    assert set(map(repr, frame["b"].unique())) == {"True", "False", "None"}


def test_semicolons_bools_with_empty_cells_and_tar_archives(tmp_path):
    import tarfile

    path = tmp_path / "flags.csv"
    path.write_text("x;flag;y\n1.5;True;1\n2.5;;2\n3.5;False;3\n")
    assert read(path)["flag"].tolist()[::2] == [True, False]
    plain = tmp_path / "t.csv"
    plain.write_text("x,y\n1,2\n3,4\n")
    with tarfile.open(tmp_path / "t.csv.tar.gz", "w:gz") as archive:
        archive.add(plain, arcname="t.csv")
    np.testing.assert_array_equal(read(tmp_path / "t.csv.tar.gz").to_numpy(), [[1, 2], [3, 4]])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_integer_ids_with_an_empty_cell_stay_exact(tmp_path, suffix):
    # pandas reads integers with an empty cell as float64: IDs beyond 2**53
    # merged (2**53 + 1 into 2**53) into one level of a --categorical column.
    import joblib

    base = 2**53
    ids = pd.array([None] + [base + i % 4 for i in range(1, 200)], dtype="Int64")
    y = np.array([0.0] + [10.0 * (i % 4) for i in range(1, 200)])
    train = pd.DataFrame({"id": ids, "y": y})
    probe = pd.DataFrame({"id": pd.array([base + k for k in range(4)] + [None],
                                         dtype="Int64")})
    if suffix == ".csv":
        train.to_csv(tmp_path / "train.csv", index=False)
        probe.to_csv(tmp_path / "probe.csv", index=False)
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        # As Spark or DuckDB write it: no pandas metadata restoring Int64.
        for frame, name in ((train, "train"), (probe, "probe")):
            table = pa.Table.from_pandas(frame, preserve_index=False)
            pq.write_table(table.replace_schema_metadata(None), tmp_path / f"{name}.parquet")
    model = tmp_path / "ids.joblib"
    result = run("fit", tmp_path / f"train{suffix}", "--target", "y", "--categorical", "id",
                 "--leaf-model", "constant", "--test-size", 0, "--out", model, "-q")
    assert result.returncode == 0, result.stderr
    assert [int(v) for v in joblib.load(model).categories_[0]] == [base + k for k in range(4)]
    result = run("predict", model, tmp_path / f"probe{suffix}")
    assert result.returncode == 0, result.stderr
    got = np.array([float(v) for v in result.stdout.splitlines()[1:]])
    np.testing.assert_allclose(got[:4], [0.0, 10.0, 20.0, 30.0], atol=1e-9)
