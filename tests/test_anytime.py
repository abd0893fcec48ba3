"""time_limit (anytime search), Ctrl-C and the progress callback."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from clarytree._builder import BuildContext, GreedyBuilder, LookaheadBuilder
from clarytree._criterion import RidgeCriterion
from clarytree._splitter import Splitter

from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
from clarytree._thresholds import bin_features, threshold_pool
from clarytree.datasets import make_piecewise_linear


@pytest.fixture(scope="module")
def data():
    return make_piecewise_linear(n_samples=3000, n_features=5, noise=0.5, random_state=3)


def same_tree(a, b):
    for name in ("feature", "threshold", "children_left", "children_right"):
        np.testing.assert_array_equal(getattr(a.tree_, name), getattr(b.tree_, name))


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("leaf_model", ["linear", "constant"])
@pytest.mark.parametrize("lookahead", [1, 2])
def test_time_limit_zero_is_the_greedy_tree(data, leaf_model, lookahead, n_jobs):
    X, y = data
    greedy = CholeskyTreeRegressor(max_depth=4, leaf_model=leaf_model).fit(X, y)
    with pytest.warns(UserWarning, match="time_limit=0s reached"):
        model = CLARITreeRegressor(max_depth=4, lookahead_depth=lookahead, time_limit=0,
                                   leaf_model=leaf_model, n_jobs=n_jobs).fit(X, y)
    same_tree(model, greedy)
    assert model.objective_ == greedy.objective_
    assert model.search_complete_ is False
    assert model.n_candidate_evaluations_ == 0


def test_time_limit_warning_points_at_the_callers_fit(data):
    X, y = data
    with pytest.warns(UserWarning, match="time_limit=0s reached") as record:
        CLARITreeRegressor(max_depth=2, time_limit=0).fit(X, y)
    assert [w.filename for w in record] == [__file__]


@pytest.mark.parametrize("lookahead, n_jobs", [(1, None), (2, None), (1, 2)])
def test_tiny_limit_lies_between_lookahead_and_greedy(data, lookahead, n_jobs):
    X, y = data
    params = dict(max_depth=4, lookahead_depth=lookahead, n_jobs=n_jobs)
    full = CLARITreeRegressor(**params).fit(X, y)
    greedy = CholeskyTreeRegressor(max_depth=4).fit(X, y)
    assert full.search_complete_ is True
    assert full.objective_ < greedy.objective_ * (1 - 1e-3)     # lookahead pays here
    # Limits from tiny to large: every result lies between the two, and
    # some limit cuts the search part-way (how far depends on the machine).
    partial = False
    for limit in (1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            cut = CLARITreeRegressor(time_limit=limit, **params).fit(X, y)
        assert full.objective_ * (1 - 1e-12) <= cut.objective_
        assert cut.objective_ <= greedy.objective_ * (1 + 1e-10)
        assert (not cut.search_complete_) == bool(record)
        if record:
            assert "search_complete_ is False" in str(record[0].message)
        if not cut.search_complete_ and 0 < cut.n_candidate_evaluations_:
            assert cut.n_candidate_evaluations_ < full.n_candidate_evaluations_
            partial = True
            break
    assert partial


def test_generous_limit_equals_no_limit(data):
    X, y = data
    for lookahead in (1, 2):
        free = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            timed = CLARITreeRegressor(max_depth=3, lookahead_depth=lookahead,
                                       time_limit=1e6).fit(X, y)
        same_tree(timed, free)
        assert timed.objective_ == free.objective_
        assert timed.search_complete_ is True
        assert timed.n_candidate_evaluations_ == free.n_candidate_evaluations_


def test_bad_time_limit(data):
    X, y = data
    with pytest.raises(ValueError, match="time_limit"):
        CLARITreeRegressor(time_limit=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="time_limit"):
        CLARITreeRegressor(time_limit="soon").fit(X, y)


def _context(progress):
    X, y = make_piecewise_linear(n_samples=300, n_features=3, random_state=0)
    W = np.column_stack([np.ones(len(y)), (X - X.mean(0)) / X.std(0), y - y.mean()])
    ridge = np.full(4, 0.3)
    ridge[0] = 1e-12
    crit = RidgeCriterion(W, ridge)
    pools = [threshold_pool(X[:, f], 10, "quantile") for f in range(3)]
    bins, order, n_bins = bin_features(X, pools)
    return BuildContext(Splitter(bins, order, n_bins, 5, crit), crit, 3, 1e-3, 5,
                        progress)


def test_progress_callback_exception_propagates():
    calls = []

    def progress(done, total):
        calls.append((done, total))
        if done == 3:
            raise RuntimeError("stop here")

    ctx = _context(progress)
    builder = LookaheadBuilder(ctx, GreedyBuilder(ctx))
    with pytest.raises(RuntimeError, match="stop here"):
        builder.build()
    assert [c[0] for c in calls] == [1, 2, 3]
    # The context is reusable after the error.
    ctx2 = _context(None)
    assert LookaheadBuilder(ctx2, GreedyBuilder(ctx2)).build()[0] > 0


# A child process: the opening, the lines that make ``model`` and the data
# (``X``, ``y``), then the fit that the test interrupts.
CHILD_OPENING = textwrap.dedent("""
    import signal, sys
    # A child started from a background job inherits SIGINT as ignored, and
    # Python then installs no handler: restore the interactive default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from clarytree import CholeskyTreeRegressor, CLARITreeRegressor
""")
CHILD_FIT = textwrap.dedent("""
    print("fitting", flush=True)
    try:
        model.fit(X, y)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        # The fit did not finish: nothing of it, nor of an earlier fit, is
        # left to predict with.
        print("forgotten", not hasattr(model, "tree_")
              and not hasattr(model, "_preparation") and not hasattr(model, "n_features_in_"),
              flush=True)
        small = CLARITreeRegressor(max_depth=2).fit(X[:300, :5], y[:300])
        print("usable", small.get_n_leaves() >= 1, flush=True)
""")
CHILD = CHILD_OPENING + textwrap.dedent("""
    from clarytree.datasets import make_piecewise_linear
    X, y = make_piecewise_linear(n_samples=20000, n_features=6, noise=0.5,
                                 random_state=0)
    model = CLARITreeRegressor(max_depth=4, lookahead_depth=2,
                               verbose=int(sys.argv[1]), n_jobs=int(sys.argv[2]))
    model.fit(X[:300], y[:300])
""") + CHILD_FIT


def _interrupt(script, args, tmp_path):
    """Run ``script`` in a child, SIGINT it a second into its fit.

    Returns its output, error output, exit code and the seconds it took to
    exit after the signal.
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Outside the source tree, so the child imports the installed package
    # (CI installs it non-editable; the source tree has no compiled modules).
    child = subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=tmp_path)
    try:
        line = child.stdout.readline().strip()
        assert line == "fitting", child.stderr.read()
        time.sleep(1.0)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        waited = time.perf_counter() - sent
    finally:
        child.kill()
    return out, err, child.returncode, waited


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("verbose, n_jobs", [(0, 1), (1, 1), (1, 2)])
def test_ctrl_c_stops_a_long_fit(verbose, n_jobs, tmp_path):
    """SIGINT during a fit of tens of seconds raises KeyboardInterrupt promptly."""
    out, err, returncode, waited = _interrupt(CHILD, [verbose, n_jobs], tmp_path)
    assert "interrupted" in out and "usable True" in out, (out, err)
    assert "forgotten True" in out, (out, err)
    assert "Exception ignored" not in err
    assert returncode == 0
    # About a second on an idle machine (the full fit takes ~30 s); generous
    # for shared CI runners, which also run the interpreter's shutdown.
    assert waited < 10.0


WIDE_CHILD = CHILD_OPENING + textwrap.dedent("""
    import numpy as np
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 400))
    y = X[:, 0] + (X[:, 1] > 0) + rng.normal(size=3000)
    # 400 regression features: too many for histograms, every feature is
    # swept in sorted order, about a second per feature at the root.
    params = dict(max_depth=2, min_samples_leaf=20)
    model = (CholeskyTreeRegressor(**params) if sys.argv[1] == "greedy"
             else CLARITreeRegressor(n_jobs=int(sys.argv[2]), **params))
""") + CHILD_FIT


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("builder, n_jobs", [("greedy", 1), ("lookahead", 1),
                                             ("lookahead", 2)])
def test_ctrl_c_stops_a_wide_leaf_model_within_a_node(builder, n_jobs, tmp_path):
    """A node's search of a wide leaf model takes minutes: it stops between features."""
    out, err, returncode, waited = _interrupt(WIDE_CHILD, [builder, n_jobs], tmp_path)
    assert "interrupted" in out and "usable True" in out, (out, err)
    assert "Exception ignored" not in err
    assert returncode == 0
    assert waited < 10.0


@pytest.mark.parametrize("path", [False, True])
def test_progress_line_is_ended_when_the_limit_stops_the_search(path, capsys):
    # The progress line is rewritten in place ("\r"); a search that stops
    # before its last candidate must still end it, so that the time_limit
    # warning and what follows start on their own line.
    from clarytree import leaf_penalty_path

    X, y = make_piecewise_linear(n_samples=1500, n_features=12, random_state=0)
    model = CLARITreeRegressor(max_depth=3, lookahead_depth=2, time_limit=0.7, verbose=1)
    with pytest.warns(UserWarning, match="time_limit"):
        if path:
            leaf_penalty_path(model, X, y, [1e-2, 1e-3])
        else:
            model.fit(X, y)
    err = capsys.readouterr().err
    assert "root candidates" in err
    assert err.endswith("\n") and not err.endswith("\r\n\n")


@pytest.mark.parametrize("time_limit", [0.002, 0.004, 0.008])
def test_a_path_cut_short_is_never_worse_than_the_greedy_path(time_limit):
    # A depth-2 search stopped by the limit refines its committed children
    # greedily, which can fall behind the greedy tree: the path keeps the
    # greedy tree then, per penalty, as a single fit does (before, 311.2
    # against the greedy 299.4 here).  Whatever the machine's speed, each
    # tree is at least as good as the greedy one.
    from clarytree import CholeskyTreeRegressor, leaf_penalty_path

    rng = np.random.default_rng(7)
    X = rng.normal(size=(1000, 4))
    y = (np.sin(3 * X[:, 0]) * X[:, 1] + np.abs(X[:, 2]) * (X[:, 3] > 0.3)
         + rng.normal(scale=0.2, size=1000))
    penalties = [1e-3, 1e-2]
    est = CLARITreeRegressor(max_depth=3, lookahead_depth=2, n_thresholds=8,
                             time_limit=time_limit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = leaf_penalty_path(est, X, y, penalties)
    for lam, fitted in zip(penalties, path, strict=True):
        greedy = CholeskyTreeRegressor(max_depth=3, n_thresholds=8, leaf_penalty=lam).fit(X, y)
        assert fitted.objective_ <= greedy.objective_ * (1 + 1e-12)


@pytest.mark.parametrize("path", [False, True])
def test_the_greedy_fallback_runs_after_the_cut_search_is_freed(path, monkeypatch):
    # After a depth-2 search cut short, a greedy fit is compared with it:
    # the search's workspaces (histograms) must be freed first, or the fit
    # holds both at once (twice its memory).
    import gc

    from clarytree import _classes, leaf_penalty_path

    live = []

    class CountingGreedy(GreedyBuilder):
        def __init__(self, ctx):
            gc.collect()
            live.append(sum(isinstance(o, BuildContext) for o in gc.get_objects()))
            super().__init__(ctx)

    monkeypatch.setattr(_classes, "GreedyBuilder", CountingGreedy)
    X, y = make_piecewise_linear(n_samples=400, n_features=4, noise=0.5, random_state=0)
    est = CLARITreeRegressor(max_depth=3, lookahead_depth=2, time_limit=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path:
            leaf_penalty_path(est, X, y, [1e-2, 1e-3])
        else:
            est.fit(X, y)
    assert live and live[-1] == 1, live       # the fallback's own context only
