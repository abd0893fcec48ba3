"""Benchmark MBNDT against CART and XGBoost (depth 4) on the binary classification sets.

For every data set: five stratified 80/20 splits (seeds 0..4); each model is fit
on the training part and scored on the test part.  Reported per set and on
average: test balanced accuracy, realized leaves, mean test path length (tests
per prediction) and fit time.  XGBoost is a black-box reference (leaves and
path length are not single-tree quantities and are left empty); it is skipped
when the package is not installed.

This is the classification mode of ``reproduce_table2.py`` under its original
command line: the fits run through the same runner (``--n-jobs`` joblib
workers or ``--backend dask``) and ``--out`` is written in the ``fits.csv``
schema of that script (one row per fit, ``metric`` = ``balanced_accuracy``,
the score in ``eval_score``), so ``reproduce_table2.py --report-only`` renders
and merges it.  The equivalent call is::

    python benchmarks/reproduce_table2.py --task classification --datasets diabetes,vote

Usage::

    python benchmarks/mbndt_datasets.py                       # all sets, default config
    python benchmarks/mbndt_datasets.py --datasets diabetes vote --out results.csv
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_table2 as rt  # noqa: E402  (pins BLAS/OpenMP to one thread)


def _translate(ns):
    """``reproduce_table2`` arguments equivalent to this script's options."""
    argv = ["--task", "classification", "--data-dir", ns.data_dir,
            "--outer-splits", str(ns.splits), "--mbndt-params", ns.params,
            "--n-jobs", str(ns.n_jobs), "--backend", ns.backend]
    if ns.datasets:
        argv += ["--datasets", ",".join(ns.datasets)]
    if ns.only_splits is not None:
        argv += ["--split-ids", ",".join(str(s) for s in ns.only_splits)]
    if ns.no_xgboost:
        argv += ["--methods", "mbndt,cart"]
    if ns.scheduler:
        argv += ["--scheduler", ns.scheduler]
    return argv


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(rt.DEFAULT_DATA_DIR),
                        help="folder holding MANIFEST.json and classification/ "
                             "(default: ../shared/datasets relative to the repository)")
    parser.add_argument("--datasets", nargs="*", default=None,
                        help="subset of data set names (default: all classification sets)")
    parser.add_argument("--splits", type=int, default=5, help="number of 80/20 splits")
    parser.add_argument("--only-splits", type=int, nargs="*", default=None,
                        help="run only these split indices (e.g. to resume or parallelize)")
    parser.add_argument("--out", default=None,
                        help="write per-split results to this CSV (fits.csv schema)")
    parser.add_argument("--params", default="{}",
                        help="JSON dict of MBNDTClassifier parameters (default config)")
    parser.add_argument("--no-xgboost", action="store_true", help="skip XGBoost")
    parser.add_argument("--n-jobs", type=int, default=1, help="fits run side by side")
    parser.add_argument("--backend", choices=("joblib", "dask"), default="joblib")
    parser.add_argument("--scheduler", default=None, help="dask scheduler address")
    ns = parser.parse_args(argv)

    args = rt.parse_args(_translate(ns))
    methods, status = rt.runnable_methods(args.methods)
    if "mbndt" not in methods:
        parser.error(status["mbndt"])
    known = {d["name"] for d in rt.classification_datasets(args.data_dir)}
    missing = set(ns.datasets or ()) - known
    if missing:
        parser.error(f"unknown data sets: {sorted(missing)}")
    datasets = rt.select_datasets(args)

    rows = rt.run_classification(args, datasets, methods)
    for r in rows:
        print(f"{r['dataset']:>36s} split {r['outer_split']} {r['method']:>8s}: "
              f"bacc {rt.as_float(r.get('eval_score')):.4f} leaves {r.get('n_leaves') or '-':>5} "
              f"path {rt.as_float(r.get('mean_path_length')):.2f} "
              f"fit {rt.as_float(r.get('fit_time_s')):.2f}s", flush=True)
    if ns.out:
        rt.write_csv(rows, ns.out)
    print()
    print(rt.render_classification(rows, {d["name"]: d for d in datasets}))
    return rows


if __name__ == "__main__":
    main()
