"""Tests of the pure helpers of the benchmark scripts (no long fits)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
if not BENCH.is_dir():  # pragma: no cover - tests run outside a checkout
    pytest.skip("benchmarks/ not available", allow_module_level=True)
sys.path.insert(0, str(BENCH))

import cholesky_speedup  # noqa: E402
import reproduce_table2 as rt  # noqa: E402
from cholesky_speedup import candidates  # noqa: E402


def _cv(lam, kap, score, fold=0):
    return {"leaf_penalty": lam, "ridge_alpha": kap, "eval_r2": score, "fold": fold}


def test_select_best_mean_and_per_lambda_kappa():
    rows = [
        _cv(1e-2, 1e-3, 0.5, 0), _cv(1e-2, 1e-3, 0.7, 1),    # mean 0.6
        _cv(1e-2, 1e-4, 0.9, 0), _cv(1e-2, 1e-4, 0.1, 1),    # mean 0.5
        _cv(1e-3, 1e-3, 0.8, 0), _cv(1e-3, 1e-3, 0.8, 1),    # mean 0.8: best
        _cv(1e-3, 1e-4, 0.9, 0), _cv(1e-3, 1e-4, float("nan"), 1),  # failed fit
    ]
    by_lambda, best = rt.select(rows)
    assert by_lambda == {1e-2: 1e-3, 1e-3: 1e-3}
    assert best == (1e-3, 1e-3)


def test_select_ties_prefer_sparser_tree():
    rows = [_cv(1e-2, 1e-3, 0.5), _cv(1e-3, 1e-3, 0.5), _cv(1e-3, 1e-2, 0.5)]
    by_lambda, best = rt.select(rows)
    assert best == (1e-2, 1e-3)
    assert by_lambda[1e-3] == 1e-2      # larger kappa on ties


def test_select_without_kappa():
    rows = [_cv(1e-2, float("nan"), 0.4), _cv(1e-3, float("nan"), 0.6)]
    by_lambda, best = rt.select(rows)
    assert best[0] == 1e-3 and math.isnan(best[1])


def _path(method, split, lam, r2, mse, selected):
    return {"dataset": "d", "method": method, "kind": "path", "outer_split": str(split),
            "leaf_penalty": str(lam), "eval_r2": str(r2), "eval_mse": str(mse),
            "train_r2": "0.9", "n_leaves": "4", "fit_time_s": "0.1", "fit_cpu_s": "0.1",
            "timed_out": "False", "selected": str(selected)}


def test_summary_and_ratio_over_common_splits():
    rows = [
        _path("lookahead1", 0, 1e-2, 0.8, 2.0, True),
        _path("lookahead1", 1, 1e-2, 0.9, 1.0, True),
        _path("greedy", 0, 1e-2, 0.7, 3.0, True),      # only split 0
    ]
    summ = rt.summarize(rows)
    assert np.allclose(summ[("d", "lookahead1")]["test_r2"], [0.8, 0.9])
    md = rt.render(rows, {"d": {"rows": 10, "n_features": 2, "n_binary": 0,
                                "n_continuous": 2}})
    # greedy MSE 3.0 against lookahead1's 2.0 on the common split 0.
    assert "(1.50)" in md
    assert "**0.850 ± 0.050**" in md
    # A baseline whose R² prints as 1.00 gets no (unstable) ratio, as in the paper.
    exact = [_path("lookahead1", 0, 1e-2, 0.999, 1e-9, True),
             _path("greedy", 0, 1e-2, 0.99, 1e-5, True)]
    md = rt.render(exact, {"d": {}})
    assert "0.990 ± 0.000 |" in md and "(1.0e+04)" not in md


def test_params_from_reuses_the_cv_choice_of_another_method(tmp_path):
    rows = [
        {**_path("lookahead1", 0, 1e-2, 0.8, 2.0, True), "ridge_alpha": "0.001"},
        {**_path("lookahead1", 0, 1e-3, 0.9, 1.0, False), "ridge_alpha": "0.01"},
        {**_path("lookahead1", 1, 1e-3, 0.9, 1.0, True), "ridge_alpha": "0.1"},
        {**_path("greedy", 1, 1e-4, 0.9, 1.0, True), "ridge_alpha": "0.1"},
    ]
    csv_path = tmp_path / "fits.csv"
    rt.write_csv(rows, csv_path)
    chosen = rt.params_from_csv([csv_path], "lookahead1")
    assert chosen == {("d", 0): (1e-2, 1e-3), ("d", 1): (1e-3, 1e-1)}
    with pytest.raises(ValueError, match="no CV-selected streed"):
        rt.params_from_csv([csv_path], "streed")

    train, test = np.arange(8), np.arange(8, 10)
    splits = {0: (train, test, []), 1: (train, test, []), 2: (train, test, [])}
    tasks = rt.fixed_tasks([("d", "lookahead2", splits), ("d", "cart", splits)], chosen,
                           "lookahead1", cfg={})
    # Split 2 has no lookahead1 choice; CART takes no kappa.
    assert [(t["method"], t["outer_split"]) for t in tasks] == [
        ("lookahead2", 0), ("lookahead2", 1), ("cart", 0), ("cart", 1)]
    assert tasks[1]["leaf_penalty"] == 1e-3 and tasks[1]["ridge_alpha"] == 1e-1
    assert math.isnan(tasks[2]["ridge_alpha"])
    assert all(t["kind"] == "path" for t in tasks)

    fixed = [{**_path("lookahead2", s, lam, r2, 1.0, True),
              "note": rt.FIXED_NOTE.format("lookahead1")}
             for s, lam, r2 in ((0, 1e-2, 0.7), (1, 1e-3, 0.9))]
    summ = rt.summarize(fixed)[("d", "lookahead2")]
    # One fit per split at differing lambdas: the best-lambda convention is that fit.
    assert np.allclose(summ["oracle_r2"], [0.7, 0.9])
    md = rt.render(fixed, {"d": {}})
    assert "0.800 ± 0.100‡" in md


def test_paper_comparison_counts_gaps_in_paper_stds():
    rows = [_path("lookahead1", s, 1e-2, r2, 1.0, True) for s, r2 in ((0, 0.80), (1, 0.82))]
    rows += [_path("greedy", s, 1e-2, r2, 1.0, True) for s, r2 in ((0, 0.70), (1, 0.72))]
    paper = {("d", "claritree"): {"test_r2_mean": "0.80", "test_r2_std": "0.02",
                                  "timed_out": "False"},
             ("d", "greedy"): {"test_r2_mean": "0.80", "test_r2_std": "0.05",
                               "timed_out": "True"}}
    lines, short = rt.render_paper(rt.summarize(rows), ["d"], paper)
    row = next(line for line in lines if line.startswith("| d |"))
    # Ours 0.81 vs 0.80 +- 0.02: +0.5 sigma; greedy 0.71 vs 0.80 +- 0.05: -1.8 sigma.
    assert "0.80 ± 0.02 | 0.810 ± 0.010 | +0.5" in row
    assert "0.80 ± 0.05* | 0.710 ± 0.010 | -1.8" in row
    assert [(d, m) for d, m, *_ in short] == [("d", "greedy")]
    assert rt.render_paper(rt.summarize(rows), ["d"], {}) == ([], [])


def test_published_table_covers_every_dataset_and_our_columns():
    paper = rt.read_paper_table()
    names = {d for d, _ in paper}
    assert len(names) == 16 and len(paper) == 16 * 7
    for name in names:
        for column in rt.PAPER_COLUMN.values():
            r = paper[(name, column)]
            assert -1e3 < float(r["test_r2_mean"]) <= 1.0 and float(r["test_r2_std"]) >= 0


def test_candidates_respect_ties_and_min_leaf():
    x = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 4.0])
    # sorted: 1 2 2 3 4 5; thresholds after positions 0, 2, 3, 4
    assert candidates(x, 1).tolist() == [0, 2, 3, 4]
    assert candidates(x, 2).tolist() == [2, 3]


def _clf(method, split, score, leaves, path):
    return {"dataset": "d", "method": method, "kind": "test", "outer_split": str(split),
            "metric": "balanced_accuracy", "eval_score": str(score), "train_score": "1.0",
            "n_leaves": str(leaves), "mean_path_length": str(path), "fit_time_s": "0.1",
            "note": ""}


def test_render_classification_tables():
    rows = [
        _clf("mbndt", 0, 0.8, 4, 2.0), _clf("mbndt", 1, 0.9, 6, 3.0),
        _clf("cart", 0, 0.7, 8, 3.0), _clf("cart", 1, 0.7, 8, 3.0),
        _clf("xgboost", 0, 0.75, "", ""), _clf("xgboost", 1, 0.75, "", ""),
    ]
    assert rt.is_classification(rows)
    assert not rt.is_classification([_path("greedy", 0, 1e-2, 0.7, 3.0, True)])
    md = rt.render_classification(rows, {"d": {"rows": 10}})
    assert "**0.8500 ± 0.0500**" in md          # MBNDT best on test
    assert "5.0 ± 1.0" in md                     # MBNDT leaves
    assert "| d | 10 | 2.50 ± 0.50 | 3.00 ± 0.00 | - |" in md   # path length


def test_fit_one_classification_cart_row_schema():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.choice(["u", "v"], 60)})
    X.loc[3, "a"] = np.nan
    y = (X["a"].fillna(0) > 0).to_numpy().astype(int)
    task = {"dataset": "d", "method": "cart", "kind": "test", "outer_split": 0,
            "cfg": {"max_depth": 2, "time_limit": 60.0}}
    row = rt.fit_one_classification(task, X.iloc[:40], y[:40], X.iloc[40:], y[40:])
    assert row["note"] == ""
    assert row["metric"] == "balanced_accuracy" and 0.0 <= row["eval_score"] <= 1.0
    assert row["n_leaves"] >= 1 and 0.0 <= row["mean_path_length"] <= 2.0
    assert set(row) <= set(rt.FIELDS)


@pytest.mark.parametrize("method", ["lookahead1", "greedy"])
def test_clarytree_cv_and_path_rows_equal_the_fit_per_pair_loop(method):
    # The CV estimator and the path give the rows one fit per pair gives.
    from clarytree.datasets import make_piecewise_linear

    X, y = make_piecewise_linear(n_samples=300, n_features=3, random_state=0)
    splits = rt.make_splits(len(y), 1, 3, seed=0)
    train, test, folds = splits[0]
    cfg = {"max_depth": 3, "n_thresholds": 10, "time_limit": 600}
    lams, kaps = [1e-1, 1e-2, 1e-3], [1e-2, 1e-4]
    task = {"dataset": "d", "method": method, "kind": "cv", "outer_split": 0,
            "lambdas": lams, "kappas": kaps, "cfg": cfg, "train_idx": train, "folds": folds}
    rows = {(r["fold"], r["leaf_penalty"], r["ridge_alpha"]): r
            for r in rt.cv_clarytree(task, X, y)}
    assert len(rows) == 3 * len(lams) * len(kaps)
    for f, (tr, va) in enumerate(folds):
        for lam in lams:
            for kap in kaps:
                one = rt.fit_one({"method": method, "leaf_penalty": lam, "ridge_alpha": kap,
                                  "cfg": cfg}, X[tr], y[tr], X[va], y[va])
                row = rows[(f, lam, kap)]
                assert row["eval_r2"] == pytest.approx(one["eval_r2"], rel=1e-12, abs=1e-12)
                assert row["n_leaves"] == one["n_leaves"]
    by_lambda, best = rt.select(list(rows.values()))
    path = {"dataset": "d", "method": method, "kind": "path", "outer_split": 0, "fold": "",
            "lambdas": lams, "ridge_alpha": kaps[0], "selected": [best[0]], "cfg": cfg,
            "train_idx": train, "eval_idx": test}
    for row in rt.path_clarytree(path, X, y):
        one = rt.fit_one({"method": method, "leaf_penalty": row["leaf_penalty"],
                          "ridge_alpha": kaps[0], "cfg": cfg}, X[train], y[train],
                         X[test], y[test])
        for key in ("train_r2", "eval_r2", "eval_mse", "n_leaves"):
            assert row[key] == one[key], key
        assert row["selected"] == (row["leaf_penalty"] == best[0])


def test_cholesky_speedup_case_runs_through_the_fit_helper():
    """A tiny Figure 3(b) case: the from-scratch baseline finds the fit's objective."""
    import argparse

    args = argparse.Namespace(seed=0, repeats=1, kappa=1e-3, scratch="packed", sample=4,
                              exact_seconds=60.0)
    row = cholesky_speedup.run_case(300, 2, args)
    assert row["scratch_exact"] and row["candidates"] > 0
    assert row["objective_rel_diff"] < 1e-10
    assert row["rank_one_s"] > 0 and row["scratch_s"] > 0
