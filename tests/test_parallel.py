"""n_jobs: candidates scored on several threads give bit-identical fits."""

import numpy as np
import pytest
from clarytree._builder import openmp_enabled
from clarytree._splitter import SearchRoute

from clarytree import CLARITreeRegressor
from clarytree._classes import _fit_tree, _n_threads
from clarytree.datasets import make_piecewise_linear


@pytest.fixture(scope="module")
def data():
    X, y = make_piecewise_linear(n_samples=1500, n_features=4, noise=0.5, random_state=4)
    rng = np.random.default_rng(1)
    flag = rng.integers(0, 2, size=X.shape[0]).astype(float)
    return np.column_stack([X, flag]), y + 0.5 * flag


def fit(data, n_jobs, lookahead, leaf_model, route, max_hist_bins, n_thresholds=12):
    X, y = data
    if n_thresholds is None:
        X, y = X[:300], y[:300]     # every midpoint: a few hundred rows suffice
    model = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead, n_jobs=n_jobs,
                               leaf_model=leaf_model, n_thresholds=n_thresholds)
    model, counters = _fit_tree(model, X, y, route=route, max_hist_bins=max_hist_bins)
    return model, counters


SEARCHES = {
    "histogram": (SearchRoute.AUTO, 256, 12),
    "swept": (SearchRoute.AUTO, 0, 12),
    "incremental": (SearchRoute.INCREMENTAL, 0, None),
    "mixed": (SearchRoute.AUTO, 4, 12),
}


@pytest.mark.parametrize("search", list(SEARCHES))
@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_bit_identical_for_every_n_jobs(data, search, leaf_model, lookahead):
    route, max_hist_bins, n_thresholds = SEARCHES[search]
    if lookahead == 2 and n_thresholds is None:
        pytest.skip("every midpoint with lookahead 2 is too slow for the suite")
    ref, _ = fit(data, 1, lookahead, leaf_model, route, max_hist_bins, n_thresholds)
    for n_jobs in (2, 3, -1):
        model, counters = fit(data, n_jobs, lookahead, leaf_model, route,
                              max_hist_bins, n_thresholds)
        if openmp_enabled() and lookahead:
            assert counters["n_threads"] == (n_jobs if n_jobs > 0 else counters["n_threads"])
        assert model.objective_ == ref.objective_           # bitwise
        for name in ("feature", "threshold", "children_left", "children_right",
                     "node_objective", "intercept", "coef"):
            np.testing.assert_array_equal(getattr(model.tree_, name),
                                          getattr(ref.tree_, name), err_msg=name)


def test_threads_are_used_and_capped(data):
    X, y = data
    if not openmp_enabled():
        pytest.skip("built without OpenMP")
    _, counters = fit(data, 4, 1, "linear", SearchRoute.AUTO, 256)
    assert counters["n_threads"] == 4
    _, counters = fit(data, None, 1, "linear", SearchRoute.AUTO, 256)
    assert counters["n_threads"] == 1
    _, counters = fit(data, 4, 0, "linear", SearchRoute.AUTO, 256)
    assert counters["n_threads"] == 1       # greedy trees have no candidate loops


def test_thread_cap_keeps_memory_a_small_multiple():
    X, y = make_piecewise_linear(n_samples=400, n_features=3, random_state=0)
    model = CLARITreeRegressor(max_depth=3, n_jobs=1)
    _fit_tree(model, X, y)
    from clarytree._builder import workspace_bytes
    from clarytree._criterion import RidgeCriterion
    from clarytree._splitter import Splitter

    from clarytree._thresholds import bin_features
    bins, order, n_bins = bin_features(X, model.thresholds_)
    crit = RidgeCriterion(np.ones((400, 5)), np.ones(4))
    splitter = Splitter(bins, order, n_bins, 5, crit)
    extra = workspace_bytes(splitter, 3)
    if not openmp_enabled():
        assert _n_threads(64, 1, splitter, 3, 10 * extra) == 1
        return
    # The working set pays for 3 x its size in extra workspaces, no more.
    assert _n_threads(64, 1, splitter, 3, extra) == 4
    assert _n_threads(64, 1, splitter, 3, 10 * extra) == 31
    assert _n_threads(2, 1, splitter, 3, 10 * extra) == 2
    assert _n_threads(None, 1, splitter, 3, 10 * extra) == 1


def test_bad_n_jobs(data):
    X, y = data
    with pytest.raises(ValueError, match="n_jobs"):
        CLARITreeRegressor(n_jobs=1.5).fit(X, y)


def test_verbose_progress_with_threads(data, capsys):
    X, y = data
    if not openmp_enabled():
        pytest.skip("built without OpenMP")
    model = CLARITreeRegressor(max_depth=3, n_jobs=2, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    total = err.strip().split("\n")[-1].split("\r")[-1]
    # The last report, from the main thread, counts every root candidate.
    done, of = total.split()[2].split("/")
    assert done == of and int(of) > 0
    # One final line, though threads and the loop after them both report it.
    finals = [part for line in err.split("\n") for part in line.split("\r")
              if part.startswith(f"root candidates {of}/{of}")]
    assert len(finals) == 1, err
    assert model.objective_ == CLARITreeRegressor(max_depth=3).fit(X, y).objective_


def test_results_do_not_depend_on_the_blas_thread_count():
    # Long sums (the total sum of squares, weighted moments) are numpy's
    # pairwise sums, not BLAS dot products that split them between threads.
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 3)) * [1.0, 10.0, 1e3]
    y = X @ [1.0, -0.3, 0.002] + np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(40_000)
    w = rng.random(40_000) + 0.5
    results = []
    for n_threads in (1, 2):
        with threadpoolctl.threadpool_limits(n_threads, user_api="blas"):
            model = CLARITreeRegressor(max_depth=2, n_thresholds=8).fit(X, y, w)
        results.append((model.objective_, model.tree_.node_objective.tolist()))
    assert results[0] == results[1]


def test_greedy_tree_prepares_columns_on_n_jobs_threads(data):
    """CholeskyTreeRegressor's n_jobs: the per-column preparation (pools,
    bins, orders) runs on that many threads; the tree is the same bits, on
    numeric and on mixed tables; bad values are errors."""
    import pandas as pd

    from clarytree import CholeskyTreeRegressor

    X, y = data
    rng = np.random.default_rng(3)
    mixed = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    mixed["x0"] = mixed["x0"].mask(rng.random(len(mixed)) < 0.1)
    mixed["color"] = rng.choice(["red", "green", "blue"], size=len(mixed))
    for table in (X, mixed):
        ref = CholeskyTreeRegressor(max_depth=3).fit(table, y)
        for n_jobs in (2, -1):
            model = CholeskyTreeRegressor(max_depth=3, n_jobs=n_jobs).fit(table, y)
            assert model._preparation._n_workers >= 2 or n_jobs == -1
            assert model.objective_ == ref.objective_
            for name in ("feature", "threshold", "children_left", "node_objective",
                         "intercept", "coef"):
                np.testing.assert_array_equal(getattr(model.tree_, name),
                                              getattr(ref.tree_, name), err_msg=name)
    assert CholeskyTreeRegressor(n_jobs=2).get_params()["n_jobs"] == 2
    with pytest.raises(ValueError, match="n_jobs"):
        CholeskyTreeRegressor(n_jobs="two").fit(X, y)


def _mixed_splitter(n=6000, seed=5):
    """A splitter with numeric, level-set, missing-bin and swept features."""
    from clarytree._criterion import RidgeCriterion
    from clarytree._splitter import Splitter

    from clarytree._thresholds import bin_features, threshold_pool

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    pools = [threshold_pool(X[:, f], 20, "quantile") for f in range(6)]
    pools[5] = threshold_pool(X[:, 5], 300, "quantile")     # swept at max_hist_bins 64
    bins, order, n_bins = bin_features(X, pools)
    bins = bins.astype(np.int32)
    bins[:, 3] = rng.integers(0, 7, size=n)                 # levels of a categorical
    n_bins = np.array(n_bins, dtype=np.int32)
    n_bins[3] = 7
    nan_rows = rng.random(n) < 0.1                          # feature 1: a missing bin
    n_bins[1] += 1
    bins[nan_rows, 1] = n_bins[1] - 1
    order = np.ascontiguousarray(np.argsort(bins.T, axis=1, kind="stable"), dtype=np.int32)
    # Nine regressors: 66 packed statistics, more than one column range.
    Z = np.column_stack([X[:, [0, 2, 4]], rng.normal(size=(n, 6))])
    W = np.column_stack([np.ones(n), Z, X[:, 0] - X[:, 2] + rng.normal(size=n)])
    crit = RidgeCriterion(np.ascontiguousarray(W), np.full(10, 1e-3 * n))
    categorical = np.array([0, 0, 0, 1, 0, 0], dtype=np.uint8)
    missing = np.array([0, 1, 0, 0, 0, 0], dtype=np.uint8)
    return Splitter(bins, order, n_bins, 5, crit, 64, categorical=categorical,
                    missing=missing)


def test_exact_sums_are_the_same_bits_on_every_thread_count():
    """The committed tree's sums (total, every histogram feature's bins and
    row keys) split by feature ranges across threads equal the one-thread
    sums bit for bit, whatever the number of threads (more threads than
    histogram features included), on a node of all rows (several blocks of
    rows) and on a part, with whole rows and by column ranges (as for bins
    beyond the caches)."""
    splitter = _mixed_splitter()
    assert splitter.n_swept == 1 and splitter.stats_threads == 1
    assert splitter.n_stats > 64
    for start, end in ((0, splitter.n_samples), (1000, 5200)):
        ref = [a.copy() for a in splitter._node_stats(start, end, True)]
        for n_threads, ranges_min in ((2, None), (3, 1), (5, None), (8, 1)):
            splitter.set_stats_threads(n_threads)
            assert splitter.stats_threads == n_threads
            before = splitter.n_threaded_sums
            got = splitter._node_stats(start, end, True, exact_ranges_min=ranges_min)
            if openmp_enabled():
                assert splitter.n_threaded_sums == before + 1, "summed on one thread"
            for a, b, name in zip(got, ref, ("total", "hist", "keys"), strict=True):
                assert a.tobytes() == b.tobytes(), (name, n_threads, start)
            splitter.set_stats_threads(1)
    with pytest.raises(ValueError, match="n_threads must be >= 1"):
        splitter.set_stats_threads(0)


def test_greedy_tree_sums_nodes_on_n_jobs_threads():
    """CholeskyTreeRegressor's n_jobs also sums the committed nodes'
    statistics on that many threads (lookahead trees too, which, unlike
    their candidate loops, are not capped by memory); the fitted trees are
    the same bits as on one thread, with weights, NaN and a text column."""
    import pandas as pd

    from clarytree import CholeskyTreeRegressor

    X, y = make_piecewise_linear(n_samples=9000, n_features=5, noise=0.5, random_state=2)
    rng = np.random.default_rng(4)
    table = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    table["x1"] = table["x1"].mask(rng.random(len(table)) < 0.1)
    table["color"] = rng.choice(["red", "green", "blue"], size=len(table))
    weights = rng.random(len(table)) + 0.5
    for make in (lambda n_jobs: CholeskyTreeRegressor(max_depth=4, n_jobs=n_jobs),
                 lambda n_jobs: CLARITreeRegressor(max_depth=2, n_jobs=n_jobs)):
        ref, counters = _fit_tree(make(None), table, y, weights)
        assert counters["stats_threads"] == 1
        for n_jobs in (2, 3):
            model, counters = _fit_tree(make(n_jobs), table, y, weights)
            assert counters["stats_threads"] == (n_jobs if openmp_enabled() else 1)
            assert (counters["n_threaded_sums"] > 0) == openmp_enabled()
            assert model.objective_ == ref.objective_
            for name in ("feature", "threshold", "children_left", "children_right",
                         "missing_go_left", "node_objective", "intercept", "coef",
                         "box_lower", "box_upper", "model_share"):
                np.testing.assert_array_equal(getattr(model.tree_, name),
                                              getattr(ref.tree_, name), err_msg=name)
            np.testing.assert_array_equal(model.feature_importances_,
                                          ref.feature_importances_)

