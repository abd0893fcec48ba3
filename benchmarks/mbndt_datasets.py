"""Benchmark MBNDT against CART and XGBoost (depth 4) on the binary classification sets.

For every data set: five stratified 80/20 splits (seeds 0..4); each model is fit
on the training part and scored on the test part.  Reported per set and on
average: test balanced accuracy, realized leaves, mean test path length (tests
per prediction) and fit time.  XGBoost is a black-box reference (leaves and
path length are not single-tree quantities and are left empty); it is skipped
when the package is not installed.

Usage::

    python benchmarks/mbndt_datasets.py                       # all sets, default config
    python benchmarks/mbndt_datasets.py --datasets diabetes vote --out results.csv
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.tree import DecisionTreeClassifier

HERE = Path(__file__).resolve().parent


def _load(path):
    df = pd.read_csv(path)
    X = df.drop(columns="target")
    y = df["target"].to_numpy()
    return X, y


def _cart_pipeline(X):
    """CART needs numeric inputs: median imputation + one-hot (as sklearn users would)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    num = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
    cat = [c for c in X.columns if c not in num]
    ct = ColumnTransformer([
        ("num", SimpleImputer(strategy="median", keep_empty_features=True), num),
        ("cat", make_pipeline(SimpleImputer(strategy="constant", fill_value="__missing__"),
                              OneHotEncoder(handle_unknown="ignore", sparse_output=False)), cat),
    ])
    return ct


def run_mbndt(Xtr, ytr, Xte, yte, seed, params):
    from clarytree.mbndt import MBNDTClassifier

    t = time.perf_counter()
    est = MBNDTClassifier(random_state=seed, **params).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    return dict(bacc=balanced_accuracy_score(yte, est.predict(Xte)), leaves=est.n_leaves_,
                path=float(est.decision_path_length(Xte).mean()), fit_s=fit_s)


def run_cart(Xtr, ytr, Xte, yte, seed):
    ct = _cart_pipeline(Xtr)
    t = time.perf_counter()
    Atr = ct.fit_transform(Xtr)
    est = DecisionTreeClassifier(max_depth=4, random_state=seed).fit(Atr, ytr)
    fit_s = time.perf_counter() - t
    Ate = ct.transform(Xte)
    # Path length = number of tests = depth of the reached leaf.
    path = np.asarray(est.decision_path(Ate).sum(1)).ravel() - 1
    return dict(bacc=balanced_accuracy_score(yte, est.predict(Ate)),
                leaves=est.get_n_leaves(), path=float(path.mean()), fit_s=fit_s)


def run_xgb(Xtr, ytr, Xte, yte, seed):
    import xgboost as xgb

    ct = _cart_pipeline(Xtr)
    t = time.perf_counter()
    Atr = ct.fit_transform(Xtr)
    est = xgb.XGBClassifier(max_depth=4, n_estimators=200, learning_rate=0.1, n_jobs=1,
                            random_state=seed, tree_method="hist")
    est.fit(Atr, ytr)
    fit_s = time.perf_counter() - t
    return dict(bacc=balanced_accuracy_score(yte, est.predict(ct.transform(Xte))),
                leaves=np.nan, path=np.nan, fit_s=fit_s)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "datasets"),
                        help="folder holding MANIFEST.json and classification/ "
                             "(default: ../shared/datasets relative to the repository)")
    parser.add_argument("--datasets", nargs="*", default=None,
                        help="subset of data set names (default: all classification sets)")
    parser.add_argument("--splits", type=int, default=5, help="number of 80/20 splits")
    parser.add_argument("--only-splits", type=int, nargs="*", default=None,
                        help="run only these split indices (e.g. to resume or parallelize)")
    parser.add_argument("--out", default=None, help="write per-split results to this CSV")
    parser.add_argument("--params", default="{}",
                        help="JSON dict of MBNDTClassifier parameters (default config)")
    parser.add_argument("--no-xgboost", action="store_true", help="skip XGBoost")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    params = json.loads(args.params)
    data_dir = Path(args.data_dir)
    manifest = json.loads((data_dir / "MANIFEST.json").read_text())
    sets = [d for d in manifest["datasets"] if d["task"] == "classification"]
    sets.sort(key=lambda d: d["rows"])
    if args.datasets:
        wanted = set(args.datasets)
        sets = [d for d in sets if d["name"] in wanted]
        missing = wanted - {d["name"] for d in sets}
        if missing:
            parser.error(f"unknown data sets: {sorted(missing)}")
    models = {"MBNDT": lambda *a: run_mbndt(*a, params), "CART": run_cart}
    if not args.no_xgboost:
        try:
            import xgboost  # noqa: F401

            models["XGBoost"] = run_xgb
        except ImportError:
            print("xgboost not installed: skipping the XGBoost reference", file=sys.stderr)

    rows = []
    for d in sets:
        X, y = _load(data_dir / d["file"])
        sss = StratifiedShuffleSplit(n_splits=args.splits, test_size=0.2, random_state=0)
        for split, (tr, te) in enumerate(sss.split(np.zeros(len(y)), y)):
            if args.only_splits is not None and split not in args.only_splits:
                continue
            Xtr, Xte = X.iloc[tr].reset_index(drop=True), X.iloc[te].reset_index(drop=True)
            for name, fn in models.items():
                res = fn(Xtr, y[tr], Xte, y[te], split)
                rows.append(dict(dataset=d["name"], rows=d["rows"], split=split, model=name,
                                 **res))
                print(f"{d['name']:>36s} split {split} {name:>8s}: bacc {res['bacc']:.4f} "
                      f"leaves {res['leaves']:>5} path {res['path']:.2f} "
                      f"fit {res['fit_s']:.2f}s", flush=True)
        if args.out:
            pd.DataFrame(rows).to_csv(args.out, index=False)

    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
    table = df.groupby(["dataset", "model"], sort=False)[["bacc", "leaves", "path", "fit_s"]]
    table = table.mean().unstack("model")
    order = [d["name"] for d in sets]
    table = table.loc[order]
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 50)
    print()
    print(table.round(3).to_string())
    print("\nAverage over data sets:")
    print(df.groupby(["dataset", "model"])[["bacc", "leaves", "path", "fit_s"]].mean()
          .groupby("model").mean().round(4).to_string())
    return df


if __name__ == "__main__":
    main()
