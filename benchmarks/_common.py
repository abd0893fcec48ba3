"""Helpers shared by the benchmark scripts: data loading and synthetic data.

Nothing here imports clarytree at module level, so the scripts can run with
an interpreter that only has a peer (for example the reference ``clari_tree``)
installed.
"""

import csv
import gzip
import json
import os
import sys
from pathlib import Path

_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def single_threaded_env():
    """Pin BLAS/OpenMP pools to one thread (call before importing numpy users).

    Parallelism comes from running independent fits side by side, as in the
    paper (all algorithms single-threaded).
    """
    for var in _THREAD_VARS:
        os.environ.setdefault(var, "1")


# Pinned on import, before numpy loads its BLAS: the pools size themselves
# once, so setting the variables after ``import numpy`` would be too late.
single_threaded_env()

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "datasets"


def read_table(path):
    """Read a (gzip) numeric CSV with a header row.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    names : list of str
        Feature names (the column named ``target``, else the last, is ``y``).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        header = next(csv.reader(fh))
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    target = header.index("target") if "target" in header else len(header) - 1
    y = np.ascontiguousarray(data[:, target])
    X = np.ascontiguousarray(np.delete(data, target, axis=1))
    names = [h for i, h in enumerate(header) if i != target]
    return X, y, names


_COUNT_FIELDS = {
    "n_binary": "binary_features",
    "n_continuous": "continuous_features",
    "n_categorical": "categorical_features",
}


def _datasets(data_dir, task, counts):
    """Tables of one task: from ``MANIFEST.json`` when present, else by file name."""
    data_dir = Path(data_dir)
    manifest = data_dir / "MANIFEST.json"
    if manifest.is_file():
        return [
            {
                "name": d["name"],
                "path": data_dir / d["file"],
                "rows": d.get("rows"),
                "n_features": d.get("n_features"),
                **{key: len(d.get(_COUNT_FIELDS[key], [])) for key in counts},
            }
            for d in json.loads(manifest.read_text())["datasets"]
            if d.get("task", "regression") == task
        ]
    files = sorted((data_dir / task).glob("*.csv*"))
    if not files and task == "regression":
        files = sorted(data_dir.glob("*.csv*"))
    return [
        {"name": f.name.split(".")[0], "path": f, "rows": None, "n_features": None,
         **dict.fromkeys(counts)}
        for f in files
    ]


def regression_datasets(data_dir):
    """Regression tables of ``data_dir`` as a list of dicts.

    Each dict has ``name``, ``path``, ``rows``, ``n_features``, ``n_binary``,
    ``n_continuous`` (from ``MANIFEST.json`` when present, else ``None`` for
    the counts, filled in when the table is loaded).
    """
    return _datasets(data_dir, "regression", ("n_binary", "n_continuous"))


def read_frame(path):
    """Read a classification CSV as ``(X, y)``: a DataFrame and an int array.

    Columns keep their types (strings stay categorical, blanks are missing
    values): MBNDT handles them natively, the peers get an imputing one-hot
    preprocessor. The target is the column named ``target``, else the last.
    """
    import pandas as pd

    df = pd.read_csv(path)
    target = "target" if "target" in df.columns else df.columns[-1]
    y = df[target].to_numpy()
    if not np.issubdtype(y.dtype, np.integer):
        y = np.unique(y, return_inverse=True)[1]
    return df.drop(columns=target), np.ascontiguousarray(y, dtype=np.int64)


def classification_datasets(data_dir):
    """Classification tables of ``data_dir`` (smallest first), like :func:`regression_datasets`."""
    out = _datasets(data_dir, "classification", ("n_binary", "n_continuous", "n_categorical"))
    out.sort(key=lambda d: (d["rows"] is None, d["rows"] or 0))
    return out


def make_piecewise_linear(**params):
    """The paper's appendix D.3 design, :func:`clarytree.datasets.make_piecewise_linear`.

    Imported on call, so the module stays importable where only a peer is
    installed (tables from a data folder need no clarytree).
    """
    from clarytree.datasets import make_piecewise_linear as generate

    return generate(**params)


def table_paths(data_dir, folder, names, suffix):
    """The files of the comma-separated table ``names`` in ``data_dir/folder``.

    Exits with a message naming the missing tables and the available ones
    (not a traceback) when the folder or a table is not there.
    """
    where = Path(data_dir) / folder
    paths = {name: where / f"{name}{suffix}" for name in names.split(",")}
    missing = [name for name, path in paths.items() if not path.is_file()]
    if missing:
        available = [p.name[:-len(suffix)] for p in where.glob(f"*{suffix}")] \
            if where.is_dir() else []
        exit_unknown_tables(missing, available, where)
    return paths


def exit_unknown_tables(unknown, available, where):
    """Exit naming the ``unknown`` tables and the ``available`` ones in ``where``."""
    sys.exit(f"no table {', '.join(unknown)} in {where}"
             + (f"; available: {', '.join(sorted(available))}" if available
                else " (pass --data-dir, the folder holding the shared datasets)"))


def as_float(value):
    """``float(value)``, NaN for empty or non-numeric CSV cells."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def synthetic_datasets():
    """Small synthetic stand-ins used when no data folder is available."""
    specs = (
        ("synthetic_pwl_1k", 1_000, 4, 0),
        ("synthetic_pwl_3k", 3_000, 6, 1),
    )
    out = []
    for name, n, k, seed in specs:
        out.append(
            {
                "name": name,
                "loader": (lambda n=n, k=k, s=seed: make_piecewise_linear(
                    n_samples=n, n_features=k, noise=0.5, random_state=s)),
                "rows": n,
                "n_features": k,
                "n_binary": 0,
                "n_continuous": k,
            }
        )
    return out
