# ruff: noqa: E402
"""Figure 2 panels of the CLARITree paper: test R^2 vs leaves and vs fit time.

One PNG per dataset with two panels: test R^2 against the number of leaves
(sparsity) and against the training time (log scale; the CPU time of the
fitting thread when the CSV has it, which is robust to a busy machine, else
wall time). One line per method, each point one leaf penalty lambda of the
sweep (mean over the outer splits, error bars +- 1 std), as in the paper's
Figure 2 / appendix E.1-E.2 plots; hollow markers: fits over the time limit.

Input is either

* the ``fits.csv`` of ``reproduce_table2.py`` (its ``path`` rows: for every
  lambda the refit on each outer training set with the CV-best kappa), or
* ``--run``: a lambda path computed here (``--outer-splits`` seeded 80/20
  splits, a fixed ``--kappa``, no CV), for the datasets and methods given.

Examples
--------
::

    python benchmarks/plot_pareto.py --csv table2_out/fits.csv --out-dir pareto
    python benchmarks/plot_pareto.py --run --datasets airfoil --methods lookahead1,greedy,cart
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import as_float, single_threaded_env

single_threaded_env()

import argparse
import csv

import numpy as np

PATH_LAMBDAS = (1e-1, 5e-2, 3e-2, 1e-2, 5e-3, 3e-3, 1e-3, 5e-4, 1e-4)
STYLE = {
    "lookahead1": ("tab:red", "o"),
    "lookahead2": ("tab:purple", "D"),
    "greedy": ("tab:blue", "s"),
    "cart": ("tab:gray", "^"),
    "streed": ("tab:green", "v"),
    "reference": ("tab:orange", "x"),
}



def curves(rows):
    """``{dataset: {method: list of per-lambda dicts}}`` from ``path`` rows."""
    acc = {}
    for r in rows:
        if r.get("kind") != "path" or not np.isfinite(as_float(r.get("eval_r2"))):
            continue
        key = (r["dataset"], r["method"], as_float(r["leaf_penalty"]))
        a = acc.setdefault(key, {"r2": [], "leaves": [], "time": [], "timed_out": False})
        a["r2"].append(as_float(r["eval_r2"]))
        a["leaves"].append(as_float(r["n_leaves"]))
        cpu = as_float(r.get("fit_cpu_s"))
        a["time"].append(cpu if np.isfinite(cpu) else as_float(r["fit_time_s"]))
        a["timed_out"] |= str(r.get("timed_out")).lower() in ("true", "1")
    out = {}
    for (d, m, lam), a in acc.items():
        out.setdefault(d, {}).setdefault(m, []).append({
            "lambda": lam,
            "r2": np.mean(a["r2"]), "r2_std": np.std(a["r2"]),
            "leaves": np.mean(a["leaves"]), "leaves_std": np.std(a["leaves"]),
            "time": np.mean(a["time"]), "time_std": np.std(a["time"]),
            "timed_out": a["timed_out"],
        })
    for per in out.values():
        for pts in per.values():
            pts.sort(key=lambda p: -p["lambda"])
    return out


def plot_dataset(name, per_method, path, time_limit=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_l, ax_t) = plt.subplots(1, 2, figsize=(10, 4))
    for method, pts in per_method.items():
        color, marker = STYLE.get(method, (None, "o"))
        r2 = np.array([p["r2"] for p in pts])
        r2s = np.array([p["r2_std"] for p in pts])
        hollow = [p["timed_out"] for p in pts]
        # Points joined in lambda order (decreasing penalty = growing trees).
        ax_l.errorbar([p["leaves"] for p in pts], r2, yerr=r2s, color=color, marker=marker,
                      capsize=2, label=method)
        tpts = sorted(pts, key=lambda p: -p["lambda"])
        ax_t.errorbar([p["time"] for p in tpts], [p["r2"] for p in tpts],
                      yerr=[p["r2_std"] for p in tpts], color=color, marker=marker, capsize=2,
                      label=method)
        for p, h in zip(pts, hollow, strict=True):
            if h:   # runs that hit the time limit: hollow marker
                ax_t.plot(p["time"], p["r2"], marker=marker, mfc="white", color=color, ms=8)
    if time_limit:
        ax_t.axvline(time_limit, ls="--", color="k", lw=0.8)
    ax_l.set(xlabel="number of leaves", ylabel="test R²", title=f"{name}: accuracy vs sparsity")
    ax_t.set(xscale="log", xlabel="training time (s; CPU time where recorded)", ylabel="test R²",
             title=f"{name}: accuracy vs time")
    for ax in (ax_l, ax_t):
        ax.grid(True, alpha=0.3)
    ax_l.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_path(args):
    """Compute a lambda path here; returns rows shaped like ``fits.csv``."""
    from reproduce_table2 import fit_one, select_datasets
    from sklearn.model_selection import ShuffleSplit

    cfg = {"max_depth": args.max_depth, "n_thresholds": args.n_thresholds,
           "time_limit": args.time_limit}
    rows = []
    for d in select_datasets(args):
        X, y = d["loader"]()
        splits = ShuffleSplit(args.outer_splits, test_size=0.2, random_state=args.seed)
        for s, (tr, te) in enumerate(splits.split(X)):
            for method in args.methods:
                for lam in args.lambdas:
                    task = {"dataset": d["name"], "method": method, "kind": "path",
                            "outer_split": s, "leaf_penalty": lam, "ridge_alpha": args.kappa,
                            "cfg": cfg}
                    r = fit_one(task, X[tr], y[tr], X[te], y[te])
                    rows.append(r)
                    print(f"{d['name']:<18} {method:<11} split {s} lambda {lam:<7g} "
                          f"R2 {as_float(r['eval_r2']):.4f} leaves {r.get('n_leaves', '-')} "
                          f"{as_float(r.get('fit_time_s')):.3f}s", flush=True)
    return rows


def main(argv=None):
    from _common import DEFAULT_DATA_DIR

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--csv", nargs="+", type=Path, default=None,
                   help="fits.csv file(s) of reproduce_table2.py")
    p.add_argument("--run", action="store_true", help="compute a lambda path here instead")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--datasets", default=None)
    p.add_argument("--methods", default="lookahead1,greedy,cart")
    p.add_argument("--lambdas", default=",".join(f"{v:g}" for v in PATH_LAMBDAS))
    p.add_argument("--kappa", type=float, default=1e-3)
    p.add_argument("--outer-splits", type=int, default=3)
    p.add_argument("--max-depth", type=int, default=4)
    p.add_argument("--n-thresholds", type=int, default=20)
    p.add_argument("--time-limit", type=float, default=600.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", type=Path, default=Path("pareto_out"))
    args = p.parse_args(argv)
    if not args.csv and not args.run:
        p.error("give --csv FILE(S) or --run")
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.lambdas = [float(v) for v in args.lambdas.split(",") if v.strip()]
    args.out_dir.mkdir(parents=True, exist_ok=True)

    if args.run:
        rows = run_path(args)
        from reproduce_table2 import write_csv

        write_csv(rows, args.out_dir / "path_fits.csv")
    else:
        rows = []
        for path in args.csv:
            with open(path, newline="") as fh:
                rows.extend(csv.DictReader(fh))
    data = curves(rows)
    if args.datasets and not args.run:
        keep = {d.strip() for d in args.datasets.split(",")}
        data = {d: v for d, v in data.items() if d in keep}
    if not data:
        sys.exit("no lambda-path rows to plot")
    for name, per_method in sorted(data.items()):
        out = args.out_dir / f"pareto_{name}.png"
        plot_dataset(name, per_method, out, args.time_limit if args.time_limit < 600 else None)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
