# ruff: noqa: E402
"""Figure 3(b) of the CLARITree paper: rank-one Cholesky sweeps vs refitting.

For each number of features k and sample size n, data come from
``make_piecewise_linear`` (appendix D.3) and one *full threshold sweep* is
timed: every feature, every midpoint between distinct values (``n - 1``
candidates per feature, minus the ``min_samples_leaf`` margins), each
candidate scored by the ridge losses of its two children.

What is timed
-------------
``rank-one``
    clarytree's own sweep with rank-one Cholesky updates/downdates
    (``O(p^2)`` per row, ``p = k + 1``): ``CholeskyTreeRegressor(
    n_thresholds=None, leaf_penalty=0)`` fitted through the package's private
    fit helper ``clarytree._classes._fit_tree`` (the estimator's own
    preparation: target scaling, feature roles, standardization, every
    midpoint a threshold), every feature swept in sorted order
    (``max_hist_bins=0``, no histograms), rank-one route forced. The time is
    ``fit(max_depth=1) - fit(max_depth=0)``, so the preparation and the
    root's own statistics are excluded and only the sweep is compared (best
    of ``--repeats``; each timing loops enough fits to last 0.2 s).
``running sums``
    the same sweep with the bulk route forced: Gram sums carried row by row
    but a fresh ``O(p^3)`` factorization at every threshold. Not a from-scratch
    refit; shown as the middle ground the estimator can also choose.
``from scratch``
    the paper's baseline without rank-one updates: at every threshold both
    children are refit from their rows, i.e. their Gram sums are
    accumulated and factorized anew (``clarytree._linalg.packed_ridge``, the
    same compiled kernels the estimator uses; ``--scratch blas`` uses a
    BLAS Gram product ``W^T W`` and ``numpy.linalg.cholesky`` instead).
    That is ``O(n p^2)`` per threshold and ``O(k n^2 p^2)`` per sweep, so
    for large n it is not run to the end: the cost of one threshold does
    not depend on where it is (the two children always hold n rows
    together), so ``--sample`` thresholds spread over the sorted order are
    timed and the mean is multiplied by the number of candidates. Sweeps
    whose estimate is below ``--exact-seconds`` are timed in full instead
    (column ``scratch_exact``), and for those the best split found from
    scratch is checked against the estimator's objective.

Everything runs single-threaded (BLAS pinned to one thread) and is timed in
process CPU time (``time.process_time``), which equals wall time on an idle
machine and is far less sensitive to other load on a shared one.

Examples
--------
::

    python benchmarks/cholesky_speedup.py                      # n = 1e3..1e6
    python benchmarks/cholesky_speedup.py --n 1000,10000 --k 1,2
    python benchmarks/cholesky_speedup.py --n-max 1e7 --repeats 1
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import make_piecewise_linear, single_threaded_env

single_threaded_env()

import argparse
import csv
import time

import numpy as np

INTERCEPT_RIDGE = 1e-12


def _estimator(depth, kappa):
    from clarytree import CholeskyTreeRegressor

    return CholeskyTreeRegressor(max_depth=depth, n_thresholds=None, leaf_penalty=0.0,
                                 ridge_alpha=kappa)


def fit_time(X, y, depth, route, kappa, repeats, min_seconds=0.2):
    """CPU seconds of one fit through the private fit helper; best of ``repeats``.

    Like ``timeit``: each timing runs as many fits as needed to last
    ``min_seconds`` and divides, so sub-millisecond sweeps are resolved.
    Returns ``(seconds, fitted estimator)``.
    """
    from clarytree._classes import _fit_tree

    def fit():
        return _fit_tree(_estimator(depth, kappa), X, y, route=route, max_hist_bins=0)[0]

    t0 = time.process_time()
    fitted = fit()
    first = time.process_time() - t0
    number = int(min(max(1, min_seconds / max(first, 1e-7)), 5000))
    best = first if number == 1 else np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            fit()
        best = min(best, (time.process_time() - t0) / number)
    return best, fitted


def design(X, y, kappa, fitted):
    """The estimator's standardized design ``[1, (X_r - m) / s]``, centred y and ridge.

    Regression columns and their moments are read off the fitted estimator's
    preparation, so the baseline refits exactly the regressions it scores.
    """
    n = X.shape[0]
    prep = fitted._preparation
    Xr = X[:, fitted.regression_features_]
    mean, std = prep.mean_, prep.std_
    Z = np.empty((n, Xr.shape[1] + 1))
    Z[:, 0] = 1.0
    Z[:, 1:] = (Xr - mean) / std
    ridge = np.full(Z.shape[1], n * kappa)
    ridge[0] = INTERCEPT_RIDGE
    return Z, y - y.mean(), ridge


def _loss_packed(Z, y, ridge):
    from clarytree._linalg import packed_ridge

    return packed_ridge(Z, y, ridge)[0]


def _loss_blas(Z, y, ridge):
    W = np.empty((Z.shape[0], Z.shape[1] + 1))
    W[:, :-1] = Z
    W[:, -1] = y
    G = W.T @ W
    p = Z.shape[1]
    A = G[:p, :p] + np.diag(ridge)
    L = np.linalg.cholesky(A)
    z = np.linalg.solve(L, G[:p, p])
    return G[p, p] - z @ z


def scratch_sweep(Z, y, ridge, X, msl, positions_per_feature, loss_fn):
    """Time the from-scratch refits at given sorted positions of every feature.

    Returns ``(seconds, n_evaluated, best_loss)``; position ``i`` puts the
    first ``i + 1`` sorted rows on the left.
    """
    seconds, count, best = 0.0, 0, np.inf
    for f, positions in enumerate(positions_per_feature):
        order = np.argsort(X[:, f], kind="stable")
        Zs = np.ascontiguousarray(Z[order])
        ys = np.ascontiguousarray(y[order])
        t0 = time.process_time()
        for i in positions:
            loss = loss_fn(Zs[: i + 1], ys[: i + 1], ridge) + loss_fn(Zs[i + 1:], ys[i + 1:],
                                                                      ridge)
            best = min(best, loss)
        seconds += time.process_time() - t0
        count += len(positions)
    return seconds, count, best


def candidates(x, msl):
    """Sorted positions after which a threshold separates distinct values."""
    xs = np.sort(x)
    pos = np.flatnonzero(xs[:-1] < xs[1:])
    n = xs.shape[0]
    return pos[(pos + 1 >= msl) & (n - pos - 1 >= msl)]


def run_case(n, k, args):
    from clarytree._splitter import SearchRoute

    X, y = make_piecewise_linear(n_samples=n, n_features=k, noise=0.5, random_state=args.seed)
    repeats = args.repeats if n < 10 ** 6 else 2
    t0, root = fit_time(X, y, 0, SearchRoute.INCREMENTAL, args.kappa, repeats)
    t_inc, fitted = fit_time(X, y, 1, SearchRoute.INCREMENTAL, args.kappa, repeats)
    t_bulk, _ = fit_time(X, y, 1, SearchRoute.BULK, args.kappa, repeats)
    sweep_inc = max(t_inc - t0, 1e-9)
    sweep_bulk = max(t_bulk - t0, 1e-9)
    objective = fitted.objective_
    # The estimator's resolved choices, so the baseline sweeps the same candidates.
    msl = root.min_samples_leaf_

    Z, yc, ridge = design(X, y, args.kappa, root)
    loss_fn = _loss_blas if args.scratch == "blas" else _loss_packed
    cands = [candidates(X[:, f], msl) for f in range(k)]
    n_cands = sum(len(c) for c in cands)
    # Time a sample on feature 0 first; run the full sweep if it is cheap.
    c0 = cands[0]
    sample = c0[np.unique(np.linspace(0, len(c0) - 1, min(args.sample, len(c0))).astype(int))]
    secs, cnt, _ = scratch_sweep(Z, yc, ridge, X, msl, [sample], loss_fn)
    per = secs / max(cnt, 1)
    estimate = per * n_cands
    exact = estimate <= args.exact_seconds
    agree = ""
    if exact:
        secs, cnt, best = scratch_sweep(Z, yc, ridge, X, msl, cands, loss_fn)
        scratch = secs
        agree = abs(best - objective) / max(abs(objective), 1e-300)
    else:
        scratch = estimate
    return {
        "n": n,
        "k": k,
        "candidates": n_cands,
        "rank_one_s": sweep_inc,
        "running_sums_s": sweep_bulk,
        "scratch_s": scratch,
        "scratch_exact": exact,
        "scratch_per_threshold_s": per,
        "setup_s": t0,
        "speedup": scratch / sweep_inc,
        "speedup_vs_running_sums": sweep_bulk / sweep_inc,
        "objective_rel_diff": agree,
    }


def _fmt_t(s):
    if s >= 3600:
        return f"{s / 3600:.1f}h"
    if s >= 1:
        return f"{s:.2f}s"
    return f"{s * 1e3:.2f}ms"


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for k in sorted({r["k"] for r in rows}):
        rs = sorted((r for r in rows if r["k"] == k), key=lambda r: r["n"])
        n = [r["n"] for r in rs]
        axes[0].plot(n, [r["speedup"] for r in rs], "o-", label=f"k = {k}")
        line = axes[1].plot(n, [r["rank_one_s"] for r in rs], "o-", label=f"rank-one, k = {k}")
        axes[1].plot(n, [r["scratch_s"] for r in rs], "s--", color=line[0].get_color(),
                     label=f"from scratch, k = {k}")
        est = [r for r in rs if not r["scratch_exact"]]
        axes[1].plot([r["n"] for r in est], [r["scratch_s"] for r in est], "s",
                     mfc="none", color=line[0].get_color())
    axes[0].set(xscale="log", yscale="log", xlabel="n", ylabel="speed-up (from scratch / rank-one)",
                title="Full threshold sweep: speed-up")
    axes[1].set(xscale="log", yscale="log", xlabel="n", ylabel="seconds",
                title="Sweep time (hollow: extrapolated)")
    axes[0].legend()
    axes[1].legend(fontsize=7, ncol=2)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _ints(text):
    return [int(float(v)) for v in text.split(",") if v.strip()]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--k", type=_ints, default=[1, 2, 4, 8], help="numbers of features")
    p.add_argument("--n", type=_ints, default=None,
                   help="sample sizes (default: powers of 10 from 1e3 to --n-max)")
    p.add_argument("--n-max", type=float, default=1e6)
    p.add_argument("--kappa", type=float, default=1e-3, help="ridge_alpha")
    p.add_argument("--sample", type=int, default=16,
                   help="from-scratch thresholds timed when extrapolating")
    p.add_argument("--exact-seconds", type=float, default=5.0,
                   help="time the whole from-scratch sweep when estimated below this")
    p.add_argument("--scratch", choices=("packed", "blas"), default="packed")
    p.add_argument("--repeats", type=int, default=5, help="best of, for the clarytree fits")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", type=Path, default=Path("cholesky_speedup_out"))
    args = p.parse_args(argv)
    ns = args.n or [10 ** e for e in range(3, int(np.log10(args.n_max)) + 1)]
    args.out_dir.mkdir(parents=True, exist_ok=True)

    rows = []
    hdr = (f"{'k':>3} {'n':>9} {'cands':>9} {'rank-one':>10} {'run. sums':>10} "
           f"{'scratch':>10} {'speed-up':>9} {'vs sums':>8}  check")
    print(hdr, flush=True)
    for k in args.k:
        for n in ns:
            r = run_case(n, k, args)
            rows.append(r)
            check = (f"rel diff {r['objective_rel_diff']:.1e}" if r["scratch_exact"]
                     else "extrapolated")
            print(f"{k:>3} {n:>9} {r['candidates']:>9} {_fmt_t(r['rank_one_s']):>10} "
                  f"{_fmt_t(r['running_sums_s']):>10} {_fmt_t(r['scratch_s']):>10} "
                  f"{r['speedup']:>8.0f}x {r['speedup_vs_running_sums']:>7.1f}x  {check}",
                  flush=True)

    with open(args.out_dir / "cholesky_speedup.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ks = sorted({r["k"] for r in rows})
    lines = ["| n | " + " | ".join(f"k = {k}" for k in ks) + " |",
             "|---:|" + "---:|" * len(ks)]
    for n in ns:
        cells = []
        for k in ks:
            r = next(r for r in rows if r["k"] == k and r["n"] == n)
            cells.append(f"{r['speedup']:,.0f}x" + ("" if r["scratch_exact"] else " (est.)"))
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print("\nSpeed-up of the rank-one sweep over refitting from scratch at every threshold:\n")
    print(table)
    (args.out_dir / "cholesky_speedup.md").write_text(table + "\n")
    plot(rows, args.out_dir / "cholesky_speedup.png")
    print(f"\nwrote {args.out_dir}/cholesky_speedup.{{csv,md,png}}")


if __name__ == "__main__":
    main()
