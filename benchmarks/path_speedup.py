# ruff: noqa: E402
"""The leaf-penalty path against one fit per leaf penalty.

For each table, one ridge strength and the paper's 11 leaf penalties, the
trees are grown twice in the same process, single-threaded: once by
``clarytree.leaf_penalty_path`` (one search for the whole grid) and once by
11 separate ``fit`` calls.  Prints each penalty's two objectives and leaf
counts side by side (they must agree: identical trees, objectives within
1e-12 relative) and the two wall times, the median of ``--repeat`` runs.

Example::

    python benchmarks/path_speedup.py --datasets california_housing,seoul_bike
    python benchmarks/path_speedup.py --lookahead-depth 0 --repeat 3
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA_DIR, read_table, single_threaded_env, table_paths

single_threaded_env()

import argparse
import time

import numpy as np

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor, leaf_penalty_path
from clarytree._path import PAPER_LEAF_PENALTIES


def _estimator(args):
    params = {"max_depth": args.max_depth, "ridge_alpha": args.ridge_alpha,
              "n_thresholds": args.n_thresholds}
    if args.lookahead_depth == 0:
        return CholeskyTreeRegressor(**params)
    return CLARITreeRegressor(lookahead_depth=args.lookahead_depth, **params)


def run(name, X, y, args):
    est = _estimator(args)
    lams = list(PAPER_LEAF_PENALTIES)
    path_times, sep_times = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        path = leaf_penalty_path(est, X, y, lams)
        path_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        separate = [est.__class__(**{**est.get_params(), "leaf_penalty": lam}).fit(X, y)
                    for lam in lams]
        sep_times.append(time.perf_counter() - t0)
    print(f"\n== {name}: n={X.shape[0]}, features={X.shape[1]}, "
          f"lookahead {args.lookahead_depth}, depth {args.max_depth}, "
          f"ridge_alpha {args.ridge_alpha:g}")
    print(f"{'lambda':>8} {'leaves':>6} {'path objective':>22} {'separate objective':>22} "
          f"{'rel. diff':>9} same tree")
    worst = 0.0
    for lam, a, b in zip(lams, path, separate, strict=True):
        ta, tb = a.tree_, b.tree_
        same = (np.array_equal(ta.feature, tb.feature)
                and np.array_equal(ta.threshold, tb.threshold)
                and np.array_equal(ta.children_left, tb.children_left))
        rel = abs(a.objective_ - b.objective_) / abs(b.objective_)
        worst = max(worst, rel)
        print(f"{lam:>8g} {a.get_n_leaves():>6d} {a.objective_:>22.15g} "
              f"{b.objective_:>22.15g} {rel:>9.1e} {same}")
    tp, ts = float(np.median(path_times)), float(np.median(sep_times))
    print(f"path {tp:.2f}s, 11 separate fits {ts:.2f}s: {ts / tp:.1f}x "
          f"(median of {args.repeat}); worst relative objective difference {worst:.1e}")
    return tp, ts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--datasets", default="california_housing,temperature_max,seoul_bike")
    parser.add_argument("--lookahead-depth", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--ridge-alpha", type=float, default=1e-3)
    parser.add_argument("--n-thresholds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    rows = []
    for name, path in table_paths(args.data_dir, "regression", args.datasets,
                                  ".csv.gz").items():
        X, y, _ = read_table(path)
        rows.append((name, *run(name, X, y, args)))
    print("\n| table | path (s) | 11 fits (s) | speed-up |\n|---|---:|---:|---:|")
    for name, tp, ts in rows:
        print(f"| {name} | {tp:.2f} | {ts:.2f} | {ts / tp:.1f}x |")


if __name__ == "__main__":
    main()
