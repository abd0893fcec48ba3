"""Scikit-learn estimators for CLARITree and CholeskyTree regression trees."""

import copy
import functools
import math
import sys
import time
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._builder import (
    BuildContext,
    GreedyBuilder,
    LookaheadBuilder,
    PathState,
    omp_max_threads,
    openmp_enabled,
    workspace_bytes,
)
from ._criterion import ConstantCriterion, RidgeCriterion
from ._explain import EXTRAPOLATIONS, clips, feature_importances, with_node_statistics
from ._preparation import Preparation, user_stacklevel
from ._sklearn_compat import Interval, RealNotInt, StrOptions, fit_context, validate_params
from ._splitter import SearchRoute, Splitter
from ._tree import TREE_LEAF

_SEMANTICS = """
    The fitted tree minimizes (approximately; a ``CLARITreeRegressor`` with
    ``lookahead_depth >= max_depth`` exactly, among the candidate splits its
    search tries: see ``lookahead_depth``) the objective

        sum over leaves [SSE_leaf + n * ridge_alpha * ||beta_leaf||^2]
        + leaf_penalty * TSS * n_leaves,

    where ``n`` is the number of training rows, ``TSS = sum (y - mean(y))^2``
    and ``beta_leaf`` are the leaf's coefficients on the regression features
    z-scored with the global training mean and population standard deviation
    (a standard deviation below 1e-12 of the column's magnitude counts as 1).
    With ``sample_weight`` every sum, mean and standard deviation is
    weighted: ``SSE_leaf = sum w (y - f(x))^2``, ``n`` is the total weight
    ``W = sum w`` and ``TSS = sum w (y - mean_w(y))^2``, so an integer
    weight is the same as repeating the row (zero: dropping it).
    The intercept is not penalized (its ridge entry is 1e-12, times the
    lightest row weight where that is below 1).  The fit is
    equivariant to the units of X and y: very large or very small values are
    rescaled by powers of two inside, so their squares neither overflow nor
    vanish (what is reported in squared units of y, ``objective_``, the
    node objectives and ``feature_importances_`` built on them, does
    overflow where ``|y|`` passes about 1e154 and vanish below about
    1e-154: rescale y there; and a leaf's slope, in units of y per unit of
    a regression column, must stay below float64's 1.8e308, else the fit
    raises a ValueError naming the column).  ``leaf_penalty`` is therefore a
    fraction of the total variance paid per leaf and ``ridge_alpha`` a
    per-sample ridge strength on standardized features.  Leaf coefficients
    are reported in original units.

    Feature roles: categorical columns (see ``categorical_features``) are
    split-only.  With ``regression_features="auto"`` a numeric column whose
    values are all exactly 0 or 1 (or missing) is split-only too (its
    threshold is 0.5) and never enters a leaf regression; every other column
    is used both for splitting and in every leaf regression.

    Categorical features: the levels of a column are learned from the
    training rows and kept in ``categories_`` (a pandas ``category``
    column's own order, otherwise sorted; at most 256).  A split sends a set
    of levels left.  Each node orders its present levels by the mean
    residual of the node's own leaf model (for constant leaves: by the mean
    target, for which the optimal set is a prefix of the order, Fisher 1958;
    a ``min_samples_leaf`` that rules out that prefix may leave a better
    admissible set that is not a prefix, and such sets are not tried)
    and takes the prefixes, so ``K`` levels present in a node give at most
    ``K - 1`` candidates, scored like thresholds (lookahead scores them like
    any other candidate).  When the node has rows whose value is missing,
    every prefix is a candidate with them on the right and on the left, as
    at a numeric threshold, and "missing versus present" is one more:
    ``2K - 1`` candidates.  A level
    without training rows at a node follows the node's missing-value
    direction.  With ``min_category_weight=m`` the levels whose training
    weight is below ``m``, and the levels beyond the 255 heaviest, are
    merged into one level ``"<other>"`` (its members in
    ``merged_categories_``); with None more than 256 levels are an error.

    Missing values: NaN in ``X`` (never in ``y``) is allowed.  Every
    threshold is tried with the rows whose split feature is missing on the
    left and on the right, and the side with the lower children's loss is
    kept with it (the right on a tie, as in scikit-learn), so a threshold is
    one candidate, for lookahead too; "missing versus present" is one more
    (threshold ``+inf``: present values left, missing right).  A
    categorical column's level sets are tried with the missing rows on
    either side too (see above), each side a candidate of its own.  At
    predict time a missing value, and a categorical
    level unseen in training, follows the learned side; where a split saw
    no missing values in training they go to the child with more training
    weight, rows when unweighted (``tree_.missing_go_left``).  In the leaf
    regressions a missing feature counts as its training mean (0
    standardized), in fit and predict alike.

    Thresholds: one pool per feature, computed once from all training rows
    whose value is present.
    A feature with at most ``n_thresholds + 1`` distinct values gets every
    midpoint between consecutive distinct values; otherwise
    ``numpy.quantile(x, k / (n_thresholds + 1), method="linear")`` for
    k = 1..n_thresholds, de-duplicated (``threshold_strategy="quantile"``), or
    the centres of ``n_thresholds`` equal-width bins (``"uniform"``).
    ``n_thresholds=None`` enumerates all midpoints.  A node only considers
    thresholds that separate its own rows, tied values are never split,
    ``x <= threshold`` goes left, and among pool thresholds inducing the same
    partition of a node the smallest is used.

    Stopping and pruning: a node is a leaf at depth ``max_depth``, when its
    leaf objective (its ridge loss plus its own ``leaf_penalty * TSS``) is at
    most ``2 * leaf_penalty * TSS``, or when it has fewer
    than ``2 * min_samples_leaf`` rows.  A split is admissible when both
    children keep at least ``min_samples_leaf`` rows.  Rows are counted by
    their weight (``sample_weight``; to a relative 1e-9).  A split is kept only
    if its subtree objective is below the node's leaf objective (plus its
    leaf penalty) by more than rounding noise (1e-10 relative, or 1e-12 of
    the node's sum of squared targets, centred on the training mean), so a
    node that is already an exact fit is not split at ``leaf_penalty=0``.
    Among equally good candidates (within the same tolerance) the first in
    feature order, then threshold order, wins; a categorical feature's
    levels whose mean residuals agree to 1e-9 of their scale keep their
    level order.
"""


def _assemble_builder(context, lookahead, max_depth):
    """The builder chain: a GreedyBuilder wrapped by ``lookahead`` LookaheadBuilders.

    A node with one level left chooses greedily whatever the strategy, so
    lookahead beyond ``max_depth - 1`` levels changes nothing and the chain
    is capped there.
    """
    builder = GreedyBuilder(context)
    for _ in range(_lookahead_levels(lookahead, max_depth)):
        builder = LookaheadBuilder(context, builder)
    return builder


def _lookahead_levels(lookahead, max_depth):
    """Lookahead levels a search runs (none below the last split level)."""
    return min(lookahead, max(max_depth - 1, 0))


# Histogram features keep every node's sums per bin: n_stats (about k^2 / 2
# for k regression features) per bin and node slot, which outgrows memory
# on wide tables (500 regression features: ~100 GB), while a sorted sweep
# keeps O(k^2) per node.  Past this size of one thread's workspace, every
# numeric feature is swept (same trees; level sets stay histograms).
MAX_HISTOGRAM_BYTES = 2 << 30

# A parallel fit may use at most this multiple of the single-thread working
# set (data, design, bins, row orders, one workspace).
MAX_MEMORY_MULTIPLE = 4


def _stats_threads(n_jobs):
    """Threads from scikit-learn's n_jobs, for the committed tree's sums.

    None is 1, -1 all cores (joblib's count, which follows CPU affinity
    and cgroup limits; negative values count back from it, and they also
    respect OpenMP's thread budget, e.g. a threadpoolctl limit).  These
    threads need no workspace of their own (one row of scratch each), so,
    unlike the candidate loops', their number is not capped by memory.
    """
    if n_jobs is None or not openmp_enabled():
        return 1
    n = int(n_jobs)
    if n < 0:
        n = min(effective_n_jobs(n), max(omp_max_threads(), 1))
    return max(1, n)


def _n_threads(n_jobs, lookahead, splitter, max_depth, single_thread_bytes):
    """Threads for the candidate loops: ``_stats_threads(n_jobs)``, capped.

    Only lookahead searches have candidate loops; their threads are capped
    so that the extra workspaces stay within ``MAX_MEMORY_MULTIPLE - 1``
    times the single-thread working set.
    """
    n = _stats_threads(n_jobs)
    if n == 1 or not lookahead or max_depth < 2:
        return 1
    extra = workspace_bytes(splitter, max_depth)
    cap = 1 + int((MAX_MEMORY_MULTIPLE - 1) * single_thread_bytes // max(extra, 1))
    return max(1, min(n, cap))


# Fitted state that does not end in "_" (dropped with the rest by
# ``forgets_unfinished_fit``).
PRIVATE_FIT_STATE = ("_preparation", "_column_kinds")


def forgets_unfinished_fit(fit):
    """Wrap ``fit`` so that a fit that does not finish leaves no fitted state.

    A refit stopped by Ctrl-C or by an error would otherwise keep the
    previous ``tree_`` beside the new fit's encoding (its levels, columns,
    thresholds) and predict wrong values without a sign; a first fit would
    leave attributes that make ``check_is_fitted`` pass.  Every attribute
    ending in ``_`` and the private ones in ``PRIVATE_FIT_STATE`` go.
    Placed outside ``fit_context``, so that a refit refused for an invalid
    parameter forgets the previous fit too.
    """
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            forget_fit(self)
            raise
    return wrapper


def forget_fit(estimator):
    """Delete ``estimator``'s fitted state (see ``forgets_unfinished_fit``)."""
    for name in list(vars(estimator)):
        if (name.endswith("_") and not name.startswith("__")) or name in PRIVATE_FIT_STATE:
            delattr(estimator, name)


def _fit_tree(estimator, X, y, sample_weight=None, *, route=SearchRoute.AUTO,
              max_hist_bins=None, leaf_penalties=None, bounded_scan=True):
    """Fit ``estimator`` (a CLARITree-family regressor) on ``(X, y)``.

    The engine's search knobs are arguments here rather than estimator
    parameters: they never change the fitted tree's objective (up to
    rounding), only how thresholds are evaluated.

    Parameters
    ----------
    estimator : CLARITreeRegressor or CholeskyTreeRegressor
    X, y : array-like
    sample_weight : array-like of shape (n_samples,), optional
    route : SearchRoute, default=SearchRoute.AUTO
        How features searched by sorted sweeps evaluate their thresholds.
    max_hist_bins : int or None, default=None
        Features with at most this many bins (thresholds + 1) are searched
        from per-bin histograms, the others by sorted sweeps (0: sweep all).
        None: 256, or for a lookahead search up to an eighth of the rows
        (see ``Preparation.fit``).
    bounded_scan : bool, default=True
        Whether split searches may skip thresholds that provably lose (see
        ``Splitter``); the fitted tree is the same either way.

    leaf_penalties : sequence of float, optional
        Grow the trees of all these leaf penalties in one search (the
        leaf-penalty path; ``estimator.leaf_penalty`` is then unused).  A
        ``time_limit`` then bounds the whole search.

    Returns
    -------
    estimator : the fitted estimator
        With ``leaf_penalties``, a list of fitted copies of ``estimator``,
        one per penalty, each equal to its own fit (without a time limit);
        ``estimator`` itself keeps only the preparation.
    counters : dict
        Engine counters: ``n_evaluations`` (candidate splits scored),
        ``n_bulk_sweeps`` and ``n_incremental_sweeps`` (sorted sweeps by
        route), ``n_refactor`` (downdates replaced by a refactorization),
        ``n_factorizations`` (ridge leaf losses computed from packed sums).
    """
    validate_params(estimator)
    route = SearchRoute(route)
    if estimator.leaf_model == "linear" and not estimator.ridge_alpha > 0:
        raise ValueError(
            "ridge_alpha must be > 0 for linear leaves (got "
            f"{estimator.ridge_alpha!r}): without it the leaf regressions can be "
            "singular and objectives come out negative")
    prep = estimator._make_preparation()
    searches = _lookahead_levels(estimator._effective_lookahead(), estimator.max_depth) > 0
    data = prep.fit(estimator, X, y, sample_weight, max_hist_bins, lookahead=searches)
    max_hist_bins = data.max_hist_bins
    estimator._preparation = prep
    reg = prep.regression_features_
    estimator.regression_features_ = reg
    estimator.is_categorical_ = prep.is_categorical_
    estimator.categories_ = prep.categories_
    estimator.merged_categories_ = prep.merged_categories_
    estimator.missing_features_ = prep.missing_features_
    estimator.thresholds_ = prep.thresholds_

    if estimator.leaf_model == "linear":
        criterion = RidgeCriterion(data.W, data.ridge)
    else:
        criterion = ConstantCriterion(data.W, data.ridge)
    msl = _resolve_min_samples_leaf(estimator, reg.shape[0], data.sample_weight,
                                    data.bins.shape[0])
    estimator.min_samples_leaf_ = msl

    unsplittable = None
    if estimator.max_depth >= 1:
        unsplittable = _unsplittable_message(estimator, data.bins, data.n_bins, msl,
                                             reg.shape[0], data.sample_weight,
                                             prep.split_missing(), data.n_zero_weight)

    stats_threads = _stats_threads(getattr(estimator, "n_jobs", None))

    def make_splitter(bins, order, n_bins):
        splitter = Splitter(bins, order, n_bins, msl, criterion, max_hist_bins, route,
                            categorical=prep.split_categorical(),
                            missing=prep.split_missing(),
                            level_missing=prep.split_level_missing(),
                            bounded_scan=bounded_scan)
        splitter.set_stats_threads(stats_threads)
        return splitter

    splitter = make_splitter(data.bins, data.order, data.n_bins)
    if (max_hist_bins > 0 and splitter.n_swept < splitter.n_features
            and workspace_bytes(splitter, estimator.max_depth, False) > MAX_HISTOGRAM_BYTES):
        max_hist_bins = 0
        data.bins, data.order, data.n_bins = prep.bins(data.X, max_hist_bins)
        splitter = make_splitter(data.bins, data.order, data.n_bins)
    lookahead = estimator._effective_lookahead()
    progress = _Progress() if estimator.verbose and lookahead else None
    time_limit = getattr(estimator, "time_limit", None)
    single = (data.X.nbytes + data.W.nbytes + data.bins.nbytes + data.order.nbytes
              + workspace_bytes(splitter, estimator.max_depth, False))
    n_threads = _n_threads(getattr(estimator, "n_jobs", None), lookahead, splitter,
                           estimator.max_depth, single)
    if leaf_penalties is not None:
        try:
            fitted, counters = _fit_path(
                estimator, prep, data, splitter, criterion, msl, progress,
                time_limit if lookahead else None, leaf_penalties, n_threads,
                lambda: make_splitter(*prep.bins(data.X, max_hist_bins)))
        finally:
            _close_progress(progress)
        if unsplittable and all(est.tree_.node_count == 1 for est in fitted):
            warnings.warn(unsplittable, UnsplittableWarning, stacklevel=user_stacklevel())
        return fitted, counters
    leaf_cost = float(estimator.leaf_penalty) * data.tss
    context = BuildContext(splitter, criterion, estimator.max_depth, leaf_cost, msl,
                           progress, time_limit if lookahead else None, n_threads)
    builder = _assemble_builder(context, lookahead, estimator.max_depth)
    try:
        objective, nodes = builder.build()
    finally:
        # A search stopped by time_limit or Ctrl-C leaves its line open.
        _close_progress(progress)
    counters = context.counters()
    report = context.search_report()
    if _cut_deep_search(report, builder):
        # A depth-k search cut short refines committed children greedily,
        # which can fall behind the greedy tree: keep whichever is better.
        # The search's workspaces (histograms) go first, not beside the
        # greedy fit's.
        del builder, context
        greedy_splitter = make_splitter(*prep.bins(data.X, max_hist_bins))
        greedy_objective, greedy_nodes = GreedyBuilder(BuildContext(
            greedy_splitter, criterion, estimator.max_depth, leaf_cost, msl)).build()
        if greedy_objective < objective:
            objective, nodes = greedy_objective, greedy_nodes
            report["greedy_fallback"] = True
    counters["search"] = report
    counters["n_threads"] = n_threads
    counters["stats_threads"] = stats_threads
    counters["n_threaded_sums"] = splitter.n_threaded_sums
    if "time_limit" in estimator.get_params(deep=False):
        estimator.search_complete_ = bool(report["complete"])
    if not report["complete"]:
        warnings.warn(_time_limit_message(time_limit, report), UserWarning,
                      stacklevel=user_stacklevel())
    _warn_if_singular(estimator, counters)
    estimator.n_candidate_evaluations_ = counters["n_evaluations"]
    unit = prep.y_scale_ * prep.y_scale_
    objective *= unit
    nodes["node_objective"] = nodes["node_objective"] * unit
    nodes["coef"] = nodes["coef"] * prep.y_scale_
    # Splits in the input's terms (feature, threshold or level set, missing
    # direction).
    nodes = prep.resolve_splits(nodes, data)
    estimator.objective_ = float(objective)
    estimator.tree_ = with_node_statistics(_fitted_tree(estimator, nodes, data, prep), data,
                                           prep)
    if unsplittable and estimator.tree_.node_count == 1:
        warnings.warn(unsplittable, UnsplittableWarning, stacklevel=user_stacklevel())
    return estimator, counters


def _cut_deep_search(report, builder):
    """Whether a lookahead search of depth >= 2 was cut short by its time limit."""
    return (not report["complete"] and isinstance(builder, LookaheadBuilder)
            and builder.lookahead_depth >= 2)


def _fit_path(estimator, prep, data, splitter, criterion, msl, progress, time_limit,
              leaf_penalties, n_threads, fresh_splitter):
    """The leaf-penalty path part of ``_fit_tree``: fitted copies, one per penalty.

    ``fresh_splitter()`` makes a splitter on unpermuted rows, for the greedy
    path that a depth-k search cut short by ``time_limit`` is compared with
    (per penalty, as a single fit does).
    """
    lookahead = estimator._effective_lookahead()
    context = BuildContext(splitter, criterion, estimator.max_depth, 0.0, msl, progress,
                           time_limit, n_threads)
    builder = _assemble_builder(context, lookahead, estimator.max_depth)
    costs = np.array([float(lam) * data.tss for lam in leaf_penalties])
    results = builder.build_path(PathState(costs, estimator.max_depth, context.n_threads))
    counters = context.counters()
    counters["n_threads"] = context.n_threads
    report = context.search_report()
    if _cut_deep_search(report, builder):
        # As in _fit_tree: children refined greedily after a depth-k search
        # was cut short can fall behind the greedy tree; keep the better.
        del builder, context
        greedy = GreedyBuilder(BuildContext(fresh_splitter(), criterion, estimator.max_depth,
                                            0.0, msl)).build_path(
            PathState(costs, estimator.max_depth, 1))
        results = [g if g[0] < r[0] else r for r, g in zip(results, greedy, strict=True)]
    counters["search"] = report
    if not report["complete"]:
        warnings.warn(_time_limit_message(time_limit, report), UserWarning,
                      stacklevel=user_stacklevel())
    _warn_if_singular(estimator, counters)
    unit = prep.y_scale_ * prep.y_scale_
    fitted = []
    for lam, (objective, nodes) in zip(leaf_penalties, results, strict=True):
        est = copy.deepcopy(estimator)
        est.leaf_penalty = lam
        est.n_candidate_evaluations_ = counters["n_evaluations"]
        if "time_limit" in est.get_params(deep=False):
            est.search_complete_ = bool(report["complete"])
        est.objective_ = float(objective * unit)
        nodes["node_objective"] = nodes["node_objective"] * unit
        nodes["coef"] = nodes["coef"] * prep.y_scale_
        est.tree_ = with_node_statistics(_fitted_tree(est, prep.resolve_splits(nodes, data),
                                                      data, prep),
                                         data, prep)
        fitted.append(est)
    return fitted, counters


def _fitted_tree(estimator, nodes, data, prep):
    """The Tree of resolved ``nodes``, without the terms of leaf-constant columns.

    A regression feature that takes one value on all of a leaf's training
    rows (e.g. a two-valued column split on) is collinear with the
    intercept there.  The intercept's ridge entry is tiny, not zero (it
    keeps the system definite), so the two would share that value's part,
    the column getting a coefficient of about intercept * 1e-12 /
    (n * ridge_alpha) (printed as ``+ 3.5e-08 * doors``); with the unpenalized
    intercept of the objective it is 0, and so it is set: the intercept
    takes its part, the training rows' predictions keep their values.
    """
    tree = estimator._make_tree(nodes)
    reg = np.asarray(prep.regression_features_, dtype=np.intp)
    if reg.size == 0 or tree.node_count < 1:
        return tree
    leaves = tree.apply(data.X)
    weight = data.sample_weight
    rows = np.arange(leaves.shape[0]) if weight is None else np.flatnonzero(weight > 0)
    # The rows of every leaf at once (one sort, not one pass per leaf).
    rows = rows[np.argsort(leaves[rows], kind="stable")]
    ids, starts = np.unique(leaves[rows], return_index=True)
    beta = nodes["coef"]
    changed = False
    for leaf, index in zip(ids, np.split(rows, starts[1:]), strict=True):
        if not index.size:
            continue
        for k, f in enumerate(reg):
            if beta[leaf, 1 + k] == 0.0:
                continue
            # One column at a time (no copy of the leaf's block), standardized
            # as the design: a missing value counts as the mean (0).
            x = data.X[index, f]
            z = np.where(np.isnan(x), 0.0, (x - prep.mean_[k]) / prep.std_[k])
            if np.all(z == z[0]):
                beta[leaf, 0] += beta[leaf, 1 + k] * z[0]
                beta[leaf, 1 + k] = 0.0
                changed = True
    return estimator._make_tree(nodes) if changed else tree


def _warn_if_singular(estimator, counters):
    """Warn when leaf fits needed a larger ridge than ``ridge_alpha`` to factorize.

    With ``ridge_alpha`` near the float64 resolution of the leaves' Gram
    matrices (about 1e-16 of their diagonal), regression features that are
    collinear within a leaf leave it numerically singular.  Such a leaf is
    solved with its Gram diagonal raised by the least of a few multiples of
    float64's rounding unit that factorizes (the criterion's fallback): its
    loss and coefficients are those of that slightly larger ridge, and its
    predictions those of least squares on its rows.
    """
    n = counters.get("n_singular", 0)
    if n:
        warnings.warn(
            f"{type(estimator).__name__}: {n} leaf regression(s) among the scored "
            f"candidates could not be factorized at ridge_alpha={estimator.ridge_alpha!r} "
            "(regression features collinear within a leaf, and a ridge too small to "
            "separate them in float64); they were solved with the ridge raised by a few "
            "rounding units of their Gram diagonal, so their losses and coefficients "
            "are those of a slightly larger ridge; raise ridge_alpha (e.g. to 1e-8) or "
            "drop duplicated columns from regression_features.", UserWarning,
            stacklevel=user_stacklevel())


class UnsplittableWarning(UserWarning):
    """Warning of a fit in which no split is admissible: the tree is one leaf.

    Issued by ``fit`` when ``max_depth >= 1`` but the resolved
    ``min_samples_leaf`` (``"auto"``: 5 rows per regression feature) leaves
    no threshold with enough rows on both sides, or no column varies. The
    message names the cause and the parameter to change.
    """


def _resolve_min_samples_leaf(estimator, n_regression, sample_weight, n_rows):
    """The least training weight of a leaf, from ``min_samples_leaf``.

    A fraction is that share of the total training weight (of the row count
    when unweighted): a leaf of whole rows or integer weights is admissible
    exactly when it holds ``ceil(fraction * total)`` (scikit-learn's rule; for
    integer weights that of the repeated rows).  Below the lightest row it
    means one row, as 1 does for unweighted rows.
    """
    value = estimator.min_samples_leaf
    if isinstance(value, str):      # "auto"
        return max(1, 5 * n_regression) if estimator.leaf_model == "linear" else 1
    if isinstance(value, Integral):
        return int(value)
    if sample_weight is None:
        return float(max(math.ceil(float(value) * n_rows), 1))
    need = float(value) * float(sample_weight.sum())
    if np.all(sample_weight == np.floor(sample_weight)):
        # Leaves of integer weights weigh whole numbers: the ceiling admits
        # the same leaves, and also where the product rounds just above an
        # integer (0.07 * 100), as scikit-learn's rule on the repeated rows.
        need = float(math.ceil(need))
    return max(need, float(sample_weight.min()))


def _unsplittable_message(estimator, bins, n_bins, msl, n_regression, sample_weight=None,
                          missing=None, n_zero_weight=0):
    """The warning, naming cause and remedy, when no root split looks admissible.

    A split is admissible when both children keep ``msl`` rows; the root's
    candidates are the pool thresholds, so the count of rows at or below each
    threshold decides it (for a column with a missing bin, ``missing[f]``,
    also with the missing rows added to the left).  A categorical column's
    candidates are prefixes of the root's order of its levels, known only
    in the search: its levels are tried in code order here, and the fit
    warns only where the tree it returns is a single leaf.  ``bins`` holds
    the rows of positive weight only (``n_zero_weight`` were dropped).
    Returns None where a split is admissible.
    """
    # min_samples_leaf counts training weight (rows when unweighted).
    n = bins.shape[0] if sample_weight is None else float(sample_weight.sum())
    total = f"{n:g} rows" if sample_weight is None else f"total sample_weight of {n:g}"
    rows = total if sample_weight is None else f"a {total}"
    present = np.flatnonzero(n_bins > 1)
    if n >= 2 * msl:
        for f in present:
            counts = np.bincount(bins[:, f], weights=sample_weight, minlength=n_bins[f])
            left = np.cumsum(counts)[:-1]
            if missing is not None and missing[f]:
                left = np.r_[left, left[:-1] + counts[-1]]
            if np.any((left >= msl) & (n - left >= msl)):
                return None
    # (a column with a missing bin but no present value counts bins it
    # does not fill)
    varying = bins.shape[0] > 0 and any(np.any(bins[:, f] != bins[0, f]) for f in present)
    if not varying:
        kept = bins.shape[0]
        over = (f" over the {kept} row{'s' * (kept != 1)} with positive sample_weight "
                f"({n_zero_weight} of weight 0 do not count)" if n_zero_weight else "")
        constant = ("is constant or entirely missing" if missing is not None and np.any(missing)
                    else "is constant")
        cause = f"every column of X {constant}{over}, so there is no threshold to split on"
    elif n < 2 * msl:
        cause = (f"a split needs at least min_samples_leaf = {msl:.10g} rows on each side, "
                 f"but X has {rows}")
    elif np.any(estimator.is_categorical_[present]):
        # A level set beyond the prefixes of the node's order may pass the
        # limit: the claim is about the candidates only.
        cause = (f"no candidate split (a threshold, or a prefix of a categorical column's "
                 f"levels in the node's order) leaves min_samples_leaf = {msl:.10g} of the "
                 f"{total} on both sides")
    else:
        cause = f"no threshold leaves min_samples_leaf = {msl:.10g} of the {total} on both sides"
    if estimator.min_samples_leaf == "auto" and n_regression > 0 and "min_samples" in cause:
        remedy = (f"min_samples_leaf='auto' is 5 rows per regression feature ({n_regression} "
                  "here): pass fewer regression_features (a short list, or None for "
                  "constant-in-leaf intercepts), or set min_samples_leaf")
    elif "min_samples" in cause:
        remedy = "lower min_samples_leaf"
    elif n_zero_weight:
        remedy = "give positive weight to rows whose columns differ"
    else:
        remedy = "pass X with at least one varying column"
    if sample_weight is not None and "min_samples" in cause and n < bins.shape[0]:
        # Weights that sum to less than the row count (e.g. normalized to 1)
        # make few "rows" and squeeze the quantile pools, whatever the
        # fraction min_samples_leaf is.
        remedy += (f" (sample_weight counts rows, a row of weight w as w rows, for "
                   "min_samples_leaf and for the threshold quantiles, which weights this "
                   f"small squeeze towards each column's smallest values: it sums to {n:g} "
                   f"over {bins.shape[0]} rows; rescale it, e.g. to mean 1, if it is "
                   "relative)")
    return (f"{type(estimator).__name__} cannot split: {cause}; the tree is a single "
            f"leaf. To allow splits, {remedy}.")


def _time_limit_message(time_limit, report):
    if report["root_scored"] == 0:
        root = "no root candidate was scored"
    elif report["root_scored"] < report["root_candidates"]:
        root = (f"{report['root_scored']} of {report['root_candidates']} root "
                "candidates were scored")
    else:
        root = f"all {report['root_candidates']} root candidates were scored"
    text = (f"time_limit={time_limit:g}s reached before the lookahead search "
            f"finished: {root}, {report['nodes_searched']} lookahead node(s) were "
            f"searched fully and {report['nodes_completed_greedily']} completed "
            "greedily")
    if report.get("greedy_fallback"):
        text += "; the greedy tree was better and is returned"
    return text + " (search_complete_ is False)."


class _Progress:
    """Prints work done / total (root candidates, say) with elapsed and remaining time."""

    def __init__(self, label="root candidates", stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.last = 0.0
        self.open = False
        self.finished = False

    def __call__(self, done, total):
        now = time.perf_counter()
        if done < total and now - self.last < 0.5:
            return
        if done == total:
            # Threads scoring the last candidates and the loop after them
            # may both report the end: one final line.
            if self.finished:
                return
            self.finished = True
        self.last = now
        elapsed = now - self.start
        remaining = elapsed / done * (total - done) if done else float("nan")
        end = "\n" if done == total else "\r"
        print(f"{self.label} {done}/{total}  elapsed {elapsed:7.1f}s  "
              f"remaining ~{remaining:7.1f}s", end=end, file=self.stream, flush=True)
        self.open = end == "\r"

    def close(self):
        """End a line left open (the search stopped before its last candidate)."""
        if self.open:
            print(file=self.stream, flush=True)
            self.open = False


def _close_progress(progress):
    if progress is not None:
        progress.close()


class _BaseLinearTree(RegressorMixin, BaseEstimator):
    """Shared fit/predict of the CLARITree family."""

    _parameter_constraints: dict = {
        "max_depth": [Interval(Integral, 0, 64, closed="both")],
        "leaf_model": [StrOptions({"linear", "constant"})],
        "leaf_penalty": [Interval(Real, 0, None, closed="left")],
        "ridge_alpha": [Interval(Real, 0, None, closed="left")],
        "n_thresholds": [Interval(Integral, 1, None, closed="left"), None],
        "threshold_strategy": [StrOptions({"quantile", "uniform"})],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left"),
                             Interval(RealNotInt, 0.0, 1.0, closed="neither"),
                             StrOptions({"auto"})],
        "regression_features": ["array-like", StrOptions({"auto"}), None],
        "extrapolation": [StrOptions(set(EXTRAPOLATIONS))],
        "categorical_features": ["array-like", StrOptions({"from_dtype"}), None],
        "min_category_weight": [Interval(Real, 0, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    _lookahead = 0

    def _effective_lookahead(self):
        return self._lookahead

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        # Text and categorical columns are split on as levels (see
        # categorical_features).
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _make_preparation(self):
        return Preparation(
            leaf_model=self.leaf_model, regression_features=self.regression_features,
            categorical_features=self.categorical_features,
            min_category_weight=self.min_category_weight, n_thresholds=self.n_thresholds,
            threshold_strategy=self.threshold_strategy, ridge_alpha=self.ridge_alpha)

    @forgets_unfinished_fit
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``(X, y)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns (NaN marks a missing value; inf is an error) and,
            in a DataFrame, categorical columns (see ``categorical_features``).
            A DataFrame's column names are kept in ``feature_names_in_``.
            polars DataFrames and pyarrow Tables are read as pandas ones.
        y : array-like of shape (n_samples,)
            Finite numeric target.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative, finite row weights.  An integer weight is the same
            as repeating the row (same tree and objective); a zero weight
            drops the row; ``min_samples_leaf`` counts weight, so weights
            that are only relative (e.g. normalized to sum 1) should be
            rescaled, e.g. to mean 1.

        Returns
        -------
        self : object
        """
        _fit_tree(self, X, y, sample_weight)
        return self

    # Views of ``tree_`` (and of ``regression_features_``), derived here only,
    # so a tree restored by ``from_dict`` needs nothing else.
    def _check_tree(self):
        """Raise ``NotFittedError`` unless there is a fitted ``tree_``."""
        check_is_fitted(self, "tree_")

    @property
    def leaf_ids_(self):
        self._check_tree()
        return np.flatnonzero(self.tree_.children_left == TREE_LEAF)

    @property
    def leaf_intercepts_(self):
        leaves = self.leaf_ids_     # (checks the fit first)
        return np.array(self.tree_.intercept[leaves])

    @property
    def leaf_coefs_(self):
        leaves = self.leaf_ids_     # (checks the fit first)
        return np.array(self.tree_.coef[leaves])

    @property
    def feature_importances_(self):
        self._check_tree()
        return feature_importances(self.tree_)

    @property
    def split_only_features_(self):
        self._check_tree()
        return np.setdiff1d(np.arange(self.n_features_in_), self.regression_features_)

    def _make_tree(self, nodes, *mapping, X=None):
        # The preparation maps the builder's resolved nodes back to the
        # input's units; the training-value gaps are already in ``nodes``.
        return self._preparation.make_tree(nodes)

    def _validate_X_predict(self, X):
        self._check_tree()
        return self._preparation.transform(self, X)

    def predict(self, X):
        """Predict with each row's leaf model.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Encoded as in training: NaN (and a categorical level unseen in
            training) follows each split's missing-value direction, and a
            missing regression feature counts as its training mean.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        X = self._validate_X_predict(X)
        return self.tree_.predict(X, clip=clips(self))

    def apply(self, X):
        """Leaf node id reached by each row.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Read as ``predict`` reads it.

        Returns
        -------
        leaves : ndarray of int of shape (n_samples,)
            Node ids of ``tree_`` (as ``leaf_ids_`` and ``leaf_table`` number them).
        """
        X = self._validate_X_predict(X)
        return self.tree_.apply(X)

    def decision_path(self, X):
        """The nodes each row visits, from the root to its leaf.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Read as ``predict`` reads it.

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_samples, n_nodes)
            Nonzero where the row visits the node.
        """
        X = self._validate_X_predict(X)
        return self.tree_.decision_path(X)

    def get_n_leaves(self):
        """Number of leaves of the fitted tree.

        Returns
        -------
        n_leaves : int
        """
        self._check_tree()
        return self.tree_.n_leaves

    def get_depth(self):
        """Depth of the fitted tree.

        Returns
        -------
        depth : int
            The longest root-to-leaf path in splits (0 for a single leaf).
        """
        self._check_tree()
        return self.tree_.max_depth


_PARAMS_DOC = """
    Parameters
    ----------
    max_depth : int, default=4
        Maximum depth of the tree (0 fits one leaf model).
{lookahead}    leaf_model : {{"linear", "constant"}}, default="linear"
        Ridge regression in each leaf, or a constant (then ``ridge_alpha``
        and the regression features are unused and the leaf loss is
        ``sum y^2 - (sum y)^2 / n``).
    leaf_penalty : float, default=1e-3
        lambda: cost of one leaf as a fraction of the total sum of squares.
    ridge_alpha : float, default=1e-5
        kappa: per-sample ridge strength on standardized features; must be
        positive for linear leaves.
    n_thresholds : int or None, default=20
        Size ``T`` of each feature's threshold pool; None uses all midpoints.
    threshold_strategy : {{"quantile", "uniform"}}, default="quantile"
        How the pool is drawn for features with more than ``T + 1`` values.
    min_samples_leaf : int, float or "auto", default="auto"
        Minimum rows per leaf (training weight with ``sample_weight``); a
        float in (0, 1) is that fraction of the training rows (of their total
        weight), as in scikit-learn's trees: an unweighted leaf needs
        ``ceil(min_samples_leaf * n_samples)`` rows.  "auto" is
        ``max(1, 5 * r)`` for linear leaves with ``r`` regression features and
        1 for constant leaves.
    regression_features : "auto", None or array-like, default="auto"
        Columns used in the leaf regressions (indices, names, or a boolean
        mask); "auto" takes every column that is not all 0/1.  None fits
        intercept-only leaves.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        Categorical columns: "from_dtype" takes the pandas ``category``,
        ``object``, ``string`` and ``bool`` columns of a DataFrame (none of a
        numeric array); otherwise column indices, names or a boolean mask,
        which may also declare numeric codes categorical.  None: no column.
    min_category_weight : float or None, default=None
        Merge the levels of a categorical column whose training weight (row
        count) is below this, and those beyond the 255 heaviest, into one
        level ``"<other>"``.  None never merges and rejects a column with more
        than 256 levels.  A warning says when a column loses all its levels
        this way, or when one merged past the cap looks like an identifier
        or like dates (columns to leave out or convert, not to merge).
    extrapolation : {{"none", "clip"}}, default="none"
        What ``predict`` does with values outside the training data of the
        row's leaf. "none" applies the leaf model as it is (a linear model
        keeps growing beyond its data). "clip" first moves every regression
        feature into the leaf's training box (the smallest and largest value
        of the leaf's training rows, in ``tree_.box_lower`` and
        ``tree_.box_upper``), so a prediction never leaves the range the leaf
        model takes on its box; a missing value reads as the training mean
        either way, unclipped. Training rows lie in their leaf's box, so
        their predictions are the same either way; the parameter only acts
        at predict time and can be changed with ``set_params`` after fitting.
    verbose : int, default=0
        Print the progress of the root's candidate evaluations of a
        lookahead search to standard error (from the main thread, also with
        several threads); a greedy fit has none and prints nothing.

    Attributes
    ----------
    tree_ : clarytree._tree.Tree
        The fitted tree as plain arrays.
    objective_ : float
        Objective of the fitted tree (see above), in squared units of ``y``.
    regression_features_ : ndarray of int
        Columns entering the leaf regressions.
    split_only_features_ : ndarray of int
        The other columns.
    min_samples_leaf_ : int or float
        The resolved minimum leaf size (a float, the least leaf weight, for
        a fractional ``min_samples_leaf``).
    thresholds_ : list of ndarray
        The threshold pool of each feature (empty for categorical ones).
    is_categorical_ : ndarray of bool
        Which input columns are categorical.
    categories_ : list
        Per input column None (numeric) or the array of its levels in code
        order (the codes that ``tree_.categories_left`` refers to).
    merged_categories_ : list
        Per input column None or the list of levels merged into ``"<other>"``.
    missing_features_ : ndarray of int
        Columns that had missing values in training.
    leaf_ids_ : ndarray of int
        Node ids of the leaves, in preorder.
    leaf_intercepts_ : ndarray of shape (n_leaves,)
        Intercepts of the leaf models, in the order of ``leaf_ids_``.
    leaf_coefs_ : ndarray of shape (n_leaves, n_features)
        Leaf models in original units (zeros for columns not in the leaf
        regressions).
    feature_importances_ : ndarray of shape (n_features,)
        Share of each feature in the fitted tree, summing to 1 (0 everywhere
        for a one-leaf constant model): the objective decrease of every split
        credited to its feature, plus, in every leaf, each feature's share
        ``sum_i w_i (t_ij - mean t_j)(yhat_i - mean yhat)`` of the variation
        of the leaf model's fitted values over its training rows (``t_ij``
        the term ``coef_j * x_ij``, weighted means; the shares add up to
        ``sum_i w_i (yhat_i - mean yhat)^2``; negative shares count as 0).
        Both parts are sums of squares of ``y``. With constant leaves this is
        scikit-learn's impurity importance. Works with
        :class:`~sklearn.feature_selection.SelectFromModel`.
    n_candidate_evaluations_ : int
        Candidate splits the search scored by completing their subtrees
        (0 for the greedy tree, which scores none that way).
    n_features_in_ : int
        Number of columns of ``X`` in fit.
    feature_names_in_ : ndarray of str
        Present when ``X`` had string column names.
"""


class CLARITreeRegressor(_BaseLinearTree):
    __doc__ = (
        """Piecewise-linear regression tree grown with lookahead (CLARITree).

    Every candidate split of a node is scored by the objective of the trees
    that a shallower search grows below it: with ``lookahead_depth=1`` (the
    paper's CLARITree) both children are completed greedily to the remaining
    depth (CholeskyTree); the best candidate is kept and both children are
    refined recursively the same way.  ``lookahead_depth=k`` scores
    candidates with lookahead ``k - 1`` (all split combinations down to depth
    ``k``, greedy below); ``lookahead_depth >= max_depth`` is an exhaustive
    search for the optimal tree within the threshold pools (categorical
    splits: within the prefixes of each node's level order; missing values:
    each threshold's chosen direction).  With one level
    left a node chooses greedily (the two are equivalent there).  Candidates
    inducing the same partition are scored once.
"""
        + _SEMANTICS
        + _PARAMS_DOC.format(lookahead="""    lookahead_depth : int, default=1
        Levels of exhaustive search before greedy completion (0 = greedy).
    time_limit : float or None, default=None
        Seconds of lookahead search (anytime search).  Each lookahead node
        scores the greedy split first, so the best candidate found is never
        worse than the greedy tree's; when the limit is reached the search
        stops scoring, every node not yet refined is completed greedily,
        ``search_complete_`` is False and a ``UserWarning`` says how far the
        search got.  ``time_limit=0`` returns the ``CholeskyTreeRegressor``
        tree.  None searches to the end.
    n_jobs : int or None, default=None
        Threads scoring a lookahead node's candidates (OpenMP): the root's
        and, while they have enough candidates, the refined nodes'.  None
        means 1, -1 all cores (negative values count back from it and
        respect OpenMP's thread budget, e.g. a ``threadpoolctl`` limit).
        The tree and objective are bit-identical for every ``n_jobs``: each
        candidate is scored on its own and the tie rule is applied in
        candidate order afterwards.  Each extra thread holds its own
        workspace, about ``(8 k_s + 9) n + 16 (max_depth + 2) B s`` bytes
        for ``n`` rows, ``k_s`` sorted row orders (the number of features
        when some feature is swept, i.e. has more than 256 bins, or with
        lookahead more than an eighth of the rows, else 1), ``B``
        histogram bins in all and ``s = (p + 1)(p + 2) / 2`` packed
        statistics for ``p`` leaf coefficients; threads are capped so that
        a fit needs at most 4 times its single-thread memory.  The
        committed nodes' statistics are also summed on ``n_jobs`` threads
        (each adds every row into the bins of its own features: the same
        bits), and the per-column preparation runs on as many.  Without
        OpenMP at build time fits are single-threaded.
""").replace("    n_features_in_ : int\n", """    search_complete_ : bool
        False when ``time_limit`` cut the lookahead search short.
    n_features_in_ : int
""", 1)
        + """
    See Also
    --------
    CholeskyTreeRegressor : the greedy tree (``lookahead_depth=0``).

    Examples
    --------
    >>> from clarytree import CLARITreeRegressor
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=500, random_state=0)
    >>> model = CLARITreeRegressor(max_depth=2).fit(X, y)
    >>> model.get_n_leaves() <= 4
    True
    """
    )

    _parameter_constraints: dict = {
        **_BaseLinearTree._parameter_constraints,
        "lookahead_depth": [Interval(Integral, 0, None, closed="left")],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, *, max_depth=4, lookahead_depth=1, time_limit=None, n_jobs=None,
                 leaf_model="linear", leaf_penalty=1e-3, ridge_alpha=1e-5,
                 n_thresholds=20, threshold_strategy="quantile",
                 min_samples_leaf="auto", regression_features="auto",
                 categorical_features="from_dtype", min_category_weight=None,
                 extrapolation="none", verbose=0):
        self.max_depth = max_depth
        self.lookahead_depth = lookahead_depth
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.leaf_model = leaf_model
        self.leaf_penalty = leaf_penalty
        self.ridge_alpha = ridge_alpha
        self.n_thresholds = n_thresholds
        self.threshold_strategy = threshold_strategy
        self.min_samples_leaf = min_samples_leaf
        self.regression_features = regression_features
        self.categorical_features = categorical_features
        self.min_category_weight = min_category_weight
        self.extrapolation = extrapolation
        self.verbose = verbose

    def _effective_lookahead(self):
        return int(self.lookahead_depth)


class CholeskyTreeRegressor(_BaseLinearTree):
    __doc__ = (
        """Greedy piecewise-linear regression tree (CholeskyTree).

    Each node takes the admissible split with the smallest sum of its two
    children's ridge leaf objectives, then the children are grown
    recursively and the split is pruned when it does not pay for its extra
    leaf.  By default (a feature with at most 255 thresholds, as with
    ``n_thresholds=20``) a feature's thresholds are scored from per-bin
    statistics: one pass adds each row's packed Gram sums to its bin
    (siblings by subtraction from the parent) and each threshold costs one
    factorization of the accumulated sums.  A feature with more thresholds
    (``n_thresholds=None`` on a column with many values, every midpoint a
    candidate) is swept in sorted order with rank-one Cholesky updates and
    downdates, or with per-threshold factorizations of running sums when a
    flop count says that is cheaper.  It is CLARITree with ``lookahead_depth=0`` and
    the completion routine inside CLARITree.
"""
        + _SEMANTICS
        + _PARAMS_DOC.format(lookahead="""    n_jobs : int or None, default=None
        Threads for the per-column preparation of a fit (threshold pools,
        bins and row orders: numpy work that releases the GIL) and for the
        nodes' statistics, the bulk of the greedy search on many rows (each
        thread adds every row into the bins of its own features, with
        OpenMP); a node's threshold scan runs on one thread.  None means 1,
        -1 all cores (joblib's count).  The tree is the same bits for every
        ``n_jobs``: each column is prepared on its own, and every bin gets
        its rows' adds in the same order.
""")
        + """
    See Also
    --------
    CLARITreeRegressor : the lookahead tree.
    """
    )

    _parameter_constraints: dict = {
        **_BaseLinearTree._parameter_constraints,
        "n_jobs": [Integral, None],
    }

    def __init__(self, *, max_depth=4, n_jobs=None, leaf_model="linear", leaf_penalty=1e-3,
                 ridge_alpha=1e-5, n_thresholds=20, threshold_strategy="quantile",
                 min_samples_leaf="auto", regression_features="auto",
                 categorical_features="from_dtype", min_category_weight=None,
                 extrapolation="none", verbose=0):
        self.max_depth = max_depth
        self.n_jobs = n_jobs
        self.leaf_model = leaf_model
        self.leaf_penalty = leaf_penalty
        self.ridge_alpha = ridge_alpha
        self.n_thresholds = n_thresholds
        self.threshold_strategy = threshold_strategy
        self.min_samples_leaf = min_samples_leaf
        self.regression_features = regression_features
        self.categorical_features = categorical_features
        self.min_category_weight = min_category_weight
        self.extrapolation = extrapolation
        self.verbose = verbose
