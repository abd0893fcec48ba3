# ruff: noqa: E402
"""Compare clarytree with the authors' reference implementation of CLARITree.

Fits :class:`clarytree.CholeskyTreeRegressor` (greedy) and
:class:`clarytree.CLARITreeRegressor` (one-step lookahead) and the reference
``claritree`` package (import name ``clari_tree``; classes ``Greedy`` and
``CLARITree``) on the same data, in one process, single-threaded, and prints
one row per dataset and method: objectives, their relative difference, fit
times, the speed ratio (reference time / clarytree time) and the number of
leaves of both trees.

Data
----
By default the CLARITree paper's regression tables are read from
``../shared/datasets`` relative to the repository root (gzip CSV files under
``regression/``, target in the last column ``target``, listed in
``MANIFEST.json``). Without that folder, or with ``--synthetic``, a few
synthetic piecewise-linear problems generated with numpy are used instead.

The reference
-------------
The reference is not a dependency of clarytree; install it only in a
benchmark environment (it needs a C++17 compiler)::

    pip install cmeel-eigen scikit-build-core pybind11 cmake ninja
    CMAKE_PREFIX_PATH=$VIRTUAL_ENV/lib/python3.11/site-packages/cmeel.prefix \\
        pip install --no-build-isolation --no-deps claritree==0.1.1

(adjust ``python3.11`` to the environment's Python version). Without it, or
with ``--no-reference``, only clarytree is fitted.

Examples
--------
::

    python benchmarks/compare_reference.py
    python benchmarks/compare_reference.py --datasets airfoil,servo --methods greedy
    python benchmarks/compare_reference.py --out results.csv

The objective is the one both implementations minimise: over the leaves,
the ridge residual sum of squares plus ``n * ridge_alpha`` times the squared
norm of the standardized slopes, plus ``leaf_penalty * TSS`` per leaf. Both
are deterministic, so the objectives should agree to a relative difference of
about 1e-6 or better; rows above ``--rtol`` are flagged with ``!``.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import argparse
import csv
import gzip
import json
import math
import time
import traceback
from pathlib import Path

# Importing _common pins BLAS/OpenMP pools to one thread before numpy loads.
import _common  # noqa: F401
import numpy as np

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
    threadpool_limits = None

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "datasets"
METHODS = ("greedy", "lookahead")

INSTALL_HINT = """\
The reference implementation (import name clari_tree) is not installed; showing clarytree only.
To install it in this environment (needs a C++17 compiler):
    pip install cmeel-eigen scikit-build-core pybind11 cmake ninja
    CMAKE_PREFIX_PATH=$VIRTUAL_ENV/lib/python{ver}/site-packages/cmeel.prefix \\
        pip install --no-build-isolation --no-deps claritree==0.1.1"""


# --------------------------------------------------------------------------- data


def _read_table(path):
    """Read a (possibly gzip) numeric CSV with a header; return X, y, feature names."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        header = next(csv.reader(fh))
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    target = header.index("target") if "target" in header else len(header) - 1
    y = data[:, target]
    X = np.delete(data, target, axis=1)
    names = [h for i, h in enumerate(header) if i != target]
    return X, y, names


def load_real_datasets(data_dir):
    """List the regression tables of ``data_dir`` as ``(name, path)`` pairs."""
    manifest = data_dir / "MANIFEST.json"
    if manifest.is_file():
        entries = json.loads(manifest.read_text())["datasets"]
        return [
            (d["name"], data_dir / d["file"])
            for d in entries
            if d.get("task", "regression") == "regression"
        ]
    files = sorted((data_dir / "regression").glob("*.csv*")) or sorted(data_dir.glob("*.csv*"))
    return [(f.name.split(".")[0], f) for f in files]


def make_synthetic(name, n_samples, n_features, n_binary, seed):
    """A piecewise-linear regression problem with a few binary split-only columns."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features))
    X[:, :n_binary] = rng.random((n_samples, n_binary)) < 0.4
    Xc = X[:, n_binary:]
    slopes = rng.normal(size=(4, Xc.shape[1]))
    region = (Xc[:, 0] > 0).astype(int) + 2 * (X[:, 0] > 0.5 if n_binary else Xc[:, 1] > 0.3)
    y = np.einsum("ij,ij->i", Xc, slopes[region]) + 2.0 * region
    y += 0.3 * rng.normal(size=n_samples)
    return name, X, y


SYNTHETIC = (
    ("synthetic_small", 1_000, 5, 1, 0),
    ("synthetic_medium", 5_000, 8, 2, 1),
    ("synthetic_large", 20_000, 10, 3, 2),
)


# --------------------------------------------------------------------------- fitting


def fit_ours(method, X, y, args):
    """Fit clarytree; return (objective, n_leaves, seconds)."""
    from clarytree import CholeskyTreeRegressor, CLARITreeRegressor

    params = dict(
        max_depth=args.max_depth,
        leaf_model="linear",
        leaf_penalty=args.leaf_penalty,
        ridge_alpha=args.ridge_alpha,
        n_thresholds=args.n_thresholds,
        threshold_strategy="quantile",
    )
    if method == "greedy":
        model = CholeskyTreeRegressor(**params)
    else:
        model = CLARITreeRegressor(lookahead_depth=1, **params)
    t0 = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - t0
    return float(model.objective_), int(model.get_n_leaves()), seconds


def fit_reference(method, X, y, args):
    """Fit the reference; return (objective, n_leaves, seconds)."""
    import clari_tree

    cls = clari_tree.Greedy if method == "greedy" else clari_tree.CLARITree
    model = cls(
        kappa=args.ridge_alpha,
        depth=args.max_depth,
        lambda_=args.leaf_penalty,
        n_thresholds=args.n_thresholds,
        thresholds_strategy="quantile",
        verbose=False,
        min_leaf_node_size=0,  # automatic: max(1, 5 * number of regression features)
    )
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    t0 = time.perf_counter()
    objective = model.fit(X, y)
    seconds = time.perf_counter() - t0
    return float(objective), int(model.n_leaves()), seconds


def _timed(fn, method, X, y, args, label, name):
    """Fit once, or up to ``args.repeat`` times while a fit takes under a second.

    Returns the fit with the best time, or ``None`` values (and prints the
    traceback) on failure.
    """
    best = None
    try:
        for _ in range(args.repeat):
            result = fn(method, X, y, args)
            if best is None or result[2] < best[2]:
                best = result
            if result[2] >= 1.0:
                break
    except Exception:  # report and go on with the next fit
        print(f"[{name} / {method}] {label} failed:", file=sys.stderr)
        traceback.print_exc()
        return None, None, None
    return best


# --------------------------------------------------------------------------- output

COLUMNS = (
    ("dataset", "{:<20}"),
    ("n", "{:>6}"),
    ("k", "{:>3}"),
    ("method", "{:<9}"),
    ("obj_ours", "{:>15}"),
    ("obj_ref", "{:>15}"),
    ("rel_diff", "{:>9}"),
    ("time_ours_s", "{:>11}"),
    ("time_ref_s", "{:>10}"),
    ("speedup", "{:>8}"),
    ("leaves_ours", "{:>11}"),
    ("leaves_ref", "{:>10}"),
)


def _fmt(value, kind):
    if value is None:
        return "-"
    if kind == "obj":
        return f"{value:.9g}"
    if kind == "rel":
        return f"{value:.1e}"
    if kind == "time":
        return f"{value:.3f}"
    if kind == "ratio":
        return f"{value:.1f}x"
    return str(value)


_KINDS = {
    "obj_ours": "obj",
    "obj_ref": "obj",
    "rel_diff": "rel",
    "time_ours_s": "time",
    "time_ref_s": "time",
    "speedup": "ratio",
}


def format_row(row, rtol):
    cells = [spec.format(_fmt(row.get(col), _KINDS.get(col))) for col, spec in COLUMNS]
    flag = " !" if row.get("rel_diff") is not None and row["rel_diff"] > rtol else ""
    return "  ".join(cells) + flag


def header_line():
    return "  ".join(spec.format(col) for col, spec in COLUMNS)


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Compare clarytree with the reference CLARITree implementation.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="folder with MANIFEST.json and regression/*.csv.gz; synthetic data if absent",
    )
    parser.add_argument("--synthetic", action="store_true", help="use synthetic data only")
    parser.add_argument("--datasets", default=None, help="comma-separated dataset names")
    parser.add_argument("--methods", default="greedy,lookahead", help="greedy,lookahead")
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--n-thresholds", type=int, default=20)
    parser.add_argument("--leaf-penalty", type=float, default=1e-3, help="lambda")
    parser.add_argument("--ridge-alpha", type=float, default=1e-5, help="kappa")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="repeat fits shorter than 1 s up to this many times; best time kept",
    )
    parser.add_argument("--rtol", type=float, default=1e-6, help="flag larger rel. differences")
    parser.add_argument("--no-reference", action="store_true", help="fit clarytree only")
    parser.add_argument("--out", type=Path, default=None, help="also write the table as CSV")
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def select_datasets(args):
    """Return a list of ``(name, loader)``; ``loader()`` gives ``(X, y)``."""
    if not args.synthetic and args.data_dir.is_dir():
        real = load_real_datasets(args.data_dir)
        pool = [(name, lambda p=path: _read_table(p)[:2]) for name, path in real]
    else:
        if not args.synthetic:
            print(f"{args.data_dir} not found: using synthetic data.", file=sys.stderr)
        pool = [(spec[0], lambda s=spec: make_synthetic(*s)[1:]) for spec in SYNTHETIC]
    if args.datasets:
        wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
        known = {name for name, _ in pool}
        missing = [d for d in wanted if d not in known]
        if missing:
            sys.exit(f"unknown dataset(s) {missing}; available: {sorted(known)}")
        pool = [item for item in pool if item[0] in wanted]
    return pool


def main(argv=None):
    args = parse_args(argv)

    use_reference = not args.no_reference
    if use_reference:
        try:
            import clari_tree  # noqa: F401
        except ImportError:
            ver = f"{sys.version_info.major}.{sys.version_info.minor}"
            print(INSTALL_HINT.format(ver=ver), file=sys.stderr)
            use_reference = False
    try:
        import clarytree  # noqa: F401

        use_ours = True
    except ImportError as exc:
        print(f"clarytree is not importable ({exc}); showing the reference only.", file=sys.stderr)
        use_ours = False
    if not (use_ours or use_reference):
        sys.exit("neither clarytree nor the reference can be imported")

    datasets = select_datasets(args)
    print(
        f"depth={args.max_depth} T={args.n_thresholds} lambda={args.leaf_penalty:g} "
        f"kappa={args.ridge_alpha:g}, quantile thresholds, single-threaded; "
        f"fits under 1 s: best of {args.repeat}"
    )
    print(header_line())
    rows = []
    limits = threadpool_limits(limits=1) if threadpool_limits is not None else None
    try:
        for name, loader in datasets:
            X, y = loader()
            for method in args.methods:
                row = {"dataset": name, "n": X.shape[0], "k": X.shape[1], "method": method}
                if use_ours:
                    obj, leaves, secs = _timed(fit_ours, method, X, y, args, "clarytree", name)
                    row.update(obj_ours=obj, leaves_ours=leaves, time_ours_s=secs)
                if use_reference:
                    obj, leaves, secs = _timed(fit_reference, method, X, y, args, "reference", name)
                    row.update(obj_ref=obj, leaves_ref=leaves, time_ref_s=secs)
                if row.get("obj_ours") is not None and row.get("obj_ref") is not None:
                    scale = max(abs(row["obj_ref"]), np.finfo(float).tiny)
                    row["rel_diff"] = abs(row["obj_ours"] - row["obj_ref"]) / scale
                if row.get("time_ours_s") and row.get("time_ref_s") is not None:
                    row["speedup"] = row["time_ref_s"] / row["time_ours_s"]
                rows.append(row)
                print(format_row(row, args.rtol), flush=True)
    finally:
        if limits is not None:
            limits.unregister()

    compared = [r for r in rows if r.get("rel_diff") is not None]
    if compared:
        bad = [r for r in compared if r["rel_diff"] > args.rtol or math.isnan(r["rel_diff"])]
        worst = max(compared, key=lambda r: r["rel_diff"])
        print(
            f"\n{len(compared) - len(bad)}/{len(compared)} fits agree within rtol={args.rtol:g}; "
            f"largest relative difference {worst['rel_diff']:.2e} "
            f"({worst['dataset']}, {worst['method']})"
        )
        for method in args.methods:
            ratios = [r["speedup"] for r in compared if r["method"] == method and r.get("speedup")]
            if ratios:
                geo = math.exp(sum(math.log(v) for v in ratios) / len(ratios))
                print(f"{method}: speed ratio (reference/clarytree) geometric mean {geo:.1f}x")

    if args.out is not None:
        with open(args.out, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=[col for col, _ in COLUMNS])
            writer.writeheader()
            for row in rows:
                writer.writerow({col: row.get(col, "") for col, _ in COLUMNS})
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
