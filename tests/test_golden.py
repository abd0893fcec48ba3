"""Golden trees and objectives of every search route, pinned before the engine v2 refactor.

The values in ``data/golden_search.json`` were produced by the engine as of
commit a44fad9 (one ``TreeBuilder.grow`` with a lookahead argument) by running
this module as a script.  Later engines must reproduce every tree exactly
(features, thresholds, children) and every objective within 1e-12 relative:
the refactor into builder classes, threads and time limits must not change
what is searched.  Regenerate only when the search semantics change on
purpose, and say so in the commit.
"""

import json
import os

import numpy as np
import pytest
from clarytree._splitter import SearchRoute

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._classes import _fit_tree
from clarytree.datasets import make_piecewise_linear

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "golden_search.json")

# name -> (max_hist_bins, route): how thresholds are searched.
ROUTES = {
    "histogram": (256, SearchRoute.AUTO),       # per-bin statistics, every feature
    "bulk": (0, SearchRoute.BULK),              # sweeps, one factorization per threshold
    "incremental": (0, SearchRoute.INCREMENTAL),    # sweeps, rank-one updates
    "sweep_auto": (0, SearchRoute.AUTO),        # sweeps, route picked per node/feature
    "mixed": (4, SearchRoute.AUTO),             # binary column by histogram, others swept
}


def data(kind):
    if kind == "pool":
        X, y = make_piecewise_linear(n_samples=240, n_features=3, noise=0.5,
                                     random_state=0)
    elif kind.startswith("parity"):
        # The sign of x0 x1 x2 is invisible to greedy and one-step splits:
        # lookahead 0, 1 and 2 grow different trees here (seed 5: linear
        # leaves, seed 3: constant leaves).
        rng = np.random.default_rng(5 if kind == "parity_a" else 3)
        X = rng.normal(size=(240, 4))
        y = np.sign(X[:, 0] * X[:, 1] * X[:, 2]) * (1 + 0.5 * X[:, 3]) \
            + 0.3 * rng.normal(size=240)
        return X, y
    else:       # "midpoints": every midpoint is a threshold (T = None)
        X, y = make_piecewise_linear(n_samples=150, n_features=2, noise=0.3,
                                     random_state=1)
    rng = np.random.default_rng(7)
    flag = rng.integers(0, 2, size=X.shape[0]).astype(float)
    return np.column_stack([X, flag]), y + 0.7 * flag


def cases():
    for kind in ("pool", "parity_a", "parity_b"):
        for route in ROUTES if kind == "pool" else ("histogram", "bulk", "incremental"):
            for lookahead in (0, 1, 2):
                for leaf_model in ("linear", "constant"):
                    yield dict(data=kind, route=route, lookahead=lookahead,
                               leaf_model=leaf_model, max_depth=3, n_thresholds=12)
    for route in ("histogram", "bulk", "incremental"):
        for lookahead in (0, 1):
            for leaf_model in ("linear", "constant"):
                yield dict(data="midpoints", route=route, lookahead=lookahead,
                           leaf_model=leaf_model, max_depth=3, n_thresholds=None)


def case_id(case):
    return "{data}-{route}-la{lookahead}-{leaf_model}".format(**case)


def fit(case):
    X, y = data(case["data"])
    params = dict(max_depth=case["max_depth"], leaf_model=case["leaf_model"],
                  n_thresholds=case["n_thresholds"], leaf_penalty=1e-3,
                  ridge_alpha=1e-3)
    if case["lookahead"] == 0:
        model = CholeskyTreeRegressor(**params)
    else:
        model = CLARITreeRegressor(lookahead_depth=case["lookahead"], **params)
    max_hist_bins, route = ROUTES[case["route"]]
    return _fit_tree(model, X, y, route=route, max_hist_bins=max_hist_bins)[0]


def record(model):
    tree = model.tree_
    return {
        "objective": model.objective_,
        "feature": tree.feature.tolist(),
        "threshold": tree.threshold.tolist(),
        "children_left": tree.children_left.tolist(),
        "children_right": tree.children_right.tolist(),
        "node_objective": tree.node_objective.tolist(),
    }


def load():
    with open(GOLDEN) as fh:
        return json.load(fh)


CASES = list(cases())


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden_tree_and_objective(case):
    expected = load()[case_id(case)]
    model = fit(case)
    got = record(model)
    assert got["feature"] == expected["feature"]
    assert got["children_left"] == expected["children_left"]
    assert got["children_right"] == expected["children_right"]
    # Thresholds are pool values: equal bits.
    assert got["threshold"] == expected["threshold"]
    np.testing.assert_allclose(got["objective"], expected["objective"], rtol=1e-12)
    np.testing.assert_allclose(got["node_objective"], expected["node_objective"],
                               rtol=1e-12)


def test_golden_cases_are_not_trivial():
    """The pinned trees split (several nodes) and lookahead changes some of them."""
    golden = load()
    assert set(golden) == {case_id(c) for c in CASES}
    assert all(len(v["feature"]) >= 3 for v in golden.values())
    for deeper in (1, 2):
        differs = [c for c in CASES if c["lookahead"] == deeper
                   and golden[case_id(c)]["objective"]
                   < golden[case_id(dict(c, lookahead=deeper - 1))]["objective"]
                   * (1 - 1e-6)]
        assert {c["leaf_model"] for c in differs} == {"linear", "constant"}


if __name__ == "__main__":
    out = {case_id(c): record(fit(c)) for c in CASES}
    with open(GOLDEN, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {len(out)} cases to {GOLDEN}")
