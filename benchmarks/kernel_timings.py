"""Per-call cost of the rank-one Cholesky kernels versus a fresh factorization.

Run ``python benchmarks/kernel_timings.py``.  Prints, for each ``p``, the best
per-call time (over many repeats) of

* ``update``: ``CholeskyState.update`` (O(p^2) Givens sweep),
* ``downdate``: ``CholeskyState.downdate`` (O(p^2) dchdd sweep),
* ``np.cholesky``: ``np.linalg.cholesky`` of the already updated ``p x p``
  matrix (LAPACK ``dpotrf``, O(p^3)),
* ``refactor``: what replacing a kernel call by refactoring costs,
  ``A += x x^T`` followed by ``np.linalg.cholesky(A)``,

and the ratios of the fresh factorization to the kernels.  All timings go
through the Python wrappers, so the kernel columns include a fixed wrapper
overhead of about 3 microseconds per update or downdate call (argument
checks and memoryview set-up): at small ``p`` it is most of what they show,
and their ratios there say little about the kernels themselves.
BLAS and OpenMP are pinned to one thread before numpy is imported.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402
from clarytree._linalg import CholeskyState  # noqa: E402

N_CALLS = 2000  # calls per timed run: long enough to swamp timer resolution


def _design(p, n, seed):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p))
    Z[:, 0] = 1.0
    y = Z @ rng.standard_normal(p) + rng.standard_normal(n)
    ridge = np.full(p, 1e-2)
    ridge[0] = 1e-12
    return [np.ascontiguousarray(z) for z in Z], [float(t) for t in y], ridge


def _best_per_call(stmt, setup, namespace, repeat):
    """Best time per call over ``repeat`` runs of ``N_CALLS`` calls each.

    ``stmt`` loops over ``N_CALLS`` rows itself (``number=1``) so that the
    setup, which rebuilds the state, runs before every timed run.
    """
    timer = timeit.Timer(stmt, setup, globals=namespace)
    return min(timer.repeat(repeat=repeat, number=1)) / N_CALLS


def time_p(p, repeat):
    """Per-call seconds for update, downdate, np.cholesky and refactor."""
    rows, targets, ridge = _design(p, N_CALLS, seed=p)
    pairs = list(zip(rows, targets, strict=True))
    ns = {"np": np, "CholeskyState": CholeskyState, "pairs": pairs, "ridge": ridge}
    # Downdates remove rows that are in the system, in reverse order, so
    # every call is a valid O(p^2) sweep; the setup refills the state.
    fill = "st = CholeskyState(ridge)\nfor x, t in pairs: st.update(x, t)"
    update = _best_per_call(
        "for x, t in pairs: st.update(x, t)", "st = CholeskyState(ridge)", ns, repeat
    )
    downdate = _best_per_call("for x, t in reversed(pairs): st.downdate(x, t)", fill, ns, repeat)
    # Fresh factorizations of the matrices the kernels produce.
    mats = [np.eye(p) * 1e-2]
    for x in rows:
        mats.append(mats[-1] + np.outer(x, x))
    ns["mats"] = mats[1:]
    fresh = _best_per_call("for A in mats: np.linalg.cholesky(A)", "", ns, repeat)
    refactor = _best_per_call(
        "for x in rows:\n    A += np.outer(x, x)\n    np.linalg.cholesky(A)",
        "A = np.eye(len(rows[0])) * 1e-2",
        dict(ns, rows=rows),
        repeat,
    )
    return update, downdate, fresh, refactor


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--repeat", type=int, default=50, help="timed runs per entry")
    args = parser.parse_args()

    header = (
        f"{'p':>4} {'update':>10} {'downdate':>10} {'np.cholesky':>12} {'refactor':>10}"
        f" {'chol/upd':>9} {'chol/dd':>8} {'refac/upd':>10}"
    )
    print(f"per-call times in microseconds, best of {args.repeat} x {N_CALLS} calls")
    print(header)
    print("-" * len(header))
    for p in args.p:
        upd, dd, fresh, refac = time_p(p, args.repeat)
        print(
            f"{p:>4} {upd * 1e6:>10.3f} {dd * 1e6:>10.3f} {fresh * 1e6:>12.3f}"
            f" {refac * 1e6:>10.3f} {fresh / upd:>9.2f} {fresh / dd:>8.2f}"
            f" {refac / upd:>10.2f}"
        )


if __name__ == "__main__":
    main()
