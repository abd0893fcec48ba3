"""Does ``extrapolation="clip"`` ever hurt? Test MSE with and without clipping.

For every regression table: seeded 80/20 splits; one tree is fitted per
split and scored twice on the test rows, with ``extrapolation="none"`` (the
leaf models as fitted) and ``"clip"`` (every regression feature moved into its
leaf's training box first). Training predictions are identical by
construction, so the comparison isolates what happens to test rows that fall
outside their leaf's training box. Prints one line per table: the mean test
MSE of both settings, their ratio, how many splits clipping made worse or
better (relative difference above 1e-12), and the share of test rows that
were clipped at all.

    python benchmarks/extrapolation_clip.py                    # 16 tables, 5 splits
    python benchmarks/extrapolation_clip.py --lookahead-depth 0 --splits 10
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# _common pins the BLAS pools to one thread before numpy loads.
from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    exit_unknown_tables,
    read_table,
    regression_datasets,
)


def _run_split(X, y, seed, args):
    import numpy as np
    from sklearn.model_selection import train_test_split

    from clarytree import CholeskyTreeRegressor, CLARITreeRegressor

    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=seed)
    params = dict(max_depth=args.max_depth, leaf_penalty=args.leaf_penalty,
                  ridge_alpha=args.ridge_alpha)
    if args.lookahead_depth == 0:
        model = CholeskyTreeRegressor(**params)
    else:
        model = CLARITreeRegressor(lookahead_depth=args.lookahead_depth, **params)
    model.fit(X_tr, y_tr)
    free = model.predict(X_te)
    clipped = model.set_params(extrapolation="clip").predict(X_te)
    tree = model.tree_
    leaves = model.apply(X_te)
    outside = np.any((X_te < tree.box_lower[leaves]) | (X_te > tree.box_upper[leaves]), axis=1)
    return (float(np.mean((free - y_te) ** 2)), float(np.mean((clipped - y_te) ** 2)),
            float(outside.mean()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--datasets", help="comma-separated table names (default: all)")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--lookahead-depth", type=int, default=1)
    parser.add_argument("--leaf-penalty", type=float, default=1e-3)
    parser.add_argument("--ridge-alpha", type=float, default=1e-5)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args(argv)
    import numpy as np
    from joblib import Parallel, delayed

    import clarytree  # noqa: F401  (builds an editable install before the clock starts)

    tables = regression_datasets(args.data_dir)
    if args.datasets:
        wanted = args.datasets.split(",")
        names = [t["name"] for t in tables]
        unknown = [name for name in wanted if name not in names]
        if unknown and tables:
            exit_unknown_tables(unknown, names, args.data_dir)
        tables = [t for t in tables if t["name"] in wanted]
    if not tables:
        sys.exit(f"no regression tables found in {args.data_dir}")
    print(f"{'table':22s} {'MSE none':>12s} {'MSE clip':>12s} {'clip/none':>9s} "
          f"{'worse':>5s} {'better':>6s} {'rows clipped':>12s} {'seconds':>8s}")
    total_worse = total_better = 0
    for table in tables:
        X, y, _ = read_table(table["path"])
        start = time.perf_counter()
        results = Parallel(n_jobs=args.n_jobs)(
            delayed(_run_split)(X, y, seed, args) for seed in range(args.splits))
        free, clip, share = (np.array(r) for r in zip(*results, strict=True))
        rel = (clip - free) / free
        worse, better = int(np.sum(rel > 1e-12)), int(np.sum(rel < -1e-12))
        total_worse += worse
        total_better += better
        print(f"{table['name']:22s} {free.mean():12.5g} {clip.mean():12.5g} "
              f"{clip.mean() / free.mean():9.4f} {worse:5d} {better:6d} "
              f"{share.mean():12.1%} {time.perf_counter() - start:8.1f}", flush=True)
    print(f"splits where clipping raised the test MSE: {total_worse}, lowered it: "
          f"{total_better} (of {args.splits * len(tables)})")


if __name__ == "__main__":
    main()
