# ruff: noqa: E402
"""Fit time on a table with missing values against its imputed twin.

The mixed tables of the shared datasets (string columns restored) get a
fraction of every numeric column blanked at random.  Each is fitted as it
is (NaN handled natively, string columns as split-only categoricals) and
as the table a user would build for a model without that support: NaN
replaced by the column medians, string columns one-hot encoded.
``--indicators`` adds a 0/1 missing-indicator column per numeric column to
the twin (the information the native fit uses).  ``--variant numeric``
one-hot encodes the string columns in both, so only the missing values
differ.

Prints process CPU seconds per fit, medians of ``--repeat`` runs that
alternate the two tables, their ratio (table / twin) and the candidate
evaluations of each.  Single-threaded, as the benchmarks of the paper.

Example::

    python benchmarks/missing_speed.py --repeat 5
    python benchmarks/missing_speed.py --variant numeric --indicators
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA_DIR, single_threaded_env, table_paths

single_threaded_env()

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor


def tables(path, missing, seed, variant, indicators):
    """The table with NaN (and string columns) and its imputed twin."""
    df = pd.read_csv(path)
    y = df.pop("target").to_numpy(dtype=np.float64)
    text = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    numeric = [c for c in df.columns if c not in text]
    rng = np.random.default_rng(seed)
    raw = df.copy()
    for c in numeric:
        raw[c] = raw[c].astype(np.float64).mask(rng.random(len(raw)) < missing)
    onehot = pd.get_dummies(raw[text], dtype=np.float64)
    twin = raw[numeric].fillna(raw[numeric].median())
    if indicators:
        twin = pd.concat([twin, raw[numeric].isna().astype(np.float64)
                          .add_suffix("_missing")], axis=1)
    twin = pd.concat([twin, onehot], axis=1)
    if variant == "numeric":
        raw = pd.concat([raw[numeric], onehot], axis=1)
    return raw, twin, y


def cpu_fit(make, X, y):
    est = make()
    start = time.process_time()
    est.fit(X, y)
    return time.process_time() - start, est.n_candidate_evaluations_


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--datasets", default="insurance,california_housing")
    parser.add_argument("--missing", type=float, default=0.1,
                        help="fraction of each numeric column set to NaN")
    parser.add_argument("--variant", choices=["mixed", "numeric"], default="mixed")
    parser.add_argument("--indicators", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    models = {
        "greedy": CholeskyTreeRegressor,
        "lookahead 1": lambda: CLARITreeRegressor(n_jobs=1),
    }
    print(f"variant {args.variant}, {args.missing:.0%} missing per numeric column, twin "
          f"{'imputed + indicators' if args.indicators else 'imputed'} + one-hot, "
          f"median of {args.repeat}")
    print(f"{'table':>20} {'model':>12} {'NaN table (s)':>14} {'twin (s)':>9} "
          f"{'ratio':>6} {'evaluations':>12}")
    for name, path in table_paths(args.data_dir, "mixed", args.datasets,
                                  "_raw.csv.gz").items():
        raw, twin, y = tables(path, args.missing, args.seed, args.variant, args.indicators)
        for label, make in models.items():
            cpu_fit(make, raw, y), cpu_fit(make, twin, y)          # warm-up
            times = {"raw": [], "twin": []}
            evals = {}
            for r in range(args.repeat):
                for key in (("raw", "twin") if r % 2 == 0 else ("twin", "raw")):
                    t, evals[key] = cpu_fit(make, raw if key == "raw" else twin, y)
                    times[key].append(t)
            a, b = statistics.median(times["raw"]), statistics.median(times["twin"])
            counts = (f"{evals['raw']:>5} / {evals['twin']:<5}" if label != "greedy"
                      else f"{'-':>5}")
            print(f"{name:>20} {label:>12} {a:14.4f} {b:9.4f} {a / b:6.2f} {counts}")


if __name__ == "__main__":
    main()
