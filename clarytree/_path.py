"""The leaf-penalty path and the cross-validated estimators.

The path grows the trees of a whole grid of leaf penalties in one search
(``clarytree._pathbuilder``); the CV estimators run one path per (fold, ridge
strength) and select like ``GridSearchCV``.
"""

import numbers
import time
import warnings
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from numpy.ma import MaskedArray
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_array, check_consistent_length, column_or_1d, metadata_routing
from sklearn.utils.validation import has_fit_parameter, indexable, validate_data

from ._classes import (
    _PARAMS_DOC,
    CholeskyTreeRegressor,
    CLARITreeRegressor,
    _BaseLinearTree,
    _close_progress,
    _fit_tree,
    _Progress,
    _stats_threads,
    forgets_unfinished_fit,
)
from ._frames import as_pandas
from ._preparation import check_has_columns, check_row_count, validate_sample_weight
from ._sklearn_compat import (
    fit_context,
    scorer_accepts_sample_weight,
    scorers_refusing_sample_weight,
)

PAPER_LEAF_PENALTIES = (1e-1, 8e-2, 5e-2, 3e-2, 1e-2, 8e-3, 5e-3, 3e-3, 1e-3, 5e-4, 1e-4)
PAPER_RIDGE_ALPHAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)



def _check_tree_estimator(estimator):
    if isinstance(estimator, type):
        raise TypeError("expected an estimator instance, got a class")
    if not isinstance(estimator, _BaseLinearTree) or isinstance(estimator, _CVMixin):
        raise TypeError(
            "expected a CLARITreeRegressor or CholeskyTreeRegressor, got "
            f"{type(estimator).__name__}")


def _check_grid(values, name):
    if values is None or isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}")
    if any(isinstance(v, (str, bytes)) for v in np.asarray(values, dtype=object).ravel()):
        # np.asarray(..., float) reads "0.1" as a number; fit's leaf_penalty
        # does not.
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}")
    try:
        grid = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers") from None
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of numbers")
    if not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {grid.tolist()}")
    return [float(v) for v in grid]


def _fit_params(estimator, sample_weight):
    if sample_weight is None:
        return {}
    if not has_fit_parameter(estimator, "sample_weight"):
        raise TypeError(
            f"{type(estimator).__name__}.fit does not accept sample_weight")
    return {"sample_weight": sample_weight}


# Private search knobs of the single tree (tests set them as attributes;
# clone does not carry them): attribute -> argument of _classes._fit_tree.
_KNOBS = {"_route": "route", "_max_hist_bins": "max_hist_bins"}


def leaf_penalty_path(estimator, X, y, leaf_penalties, sample_weight=None):
    """Fit a tree for every leaf penalty of a grid in one search.

    Each returned estimator is the tree that ``estimator`` with that
    ``leaf_penalty`` grows on ``(X, y)`` on its own: the same nodes, the
    objective within 1e-12 (relative).  The penalty does not change which
    splits a node can take, how a candidate's completion splits, or a
    node's greedy split; it decides where the tree stops, what it prunes and,
    with lookahead, which candidate wins.  So every split search, candidate
    list and completion is computed once for all the penalties that reach
    it, each penalty keeps its own stop, score, winner and prune decisions
    (with the estimator's tie rule), and penalties that choose the same
    winner recurse together.

    Parameters
    ----------
    estimator : CLARITreeRegressor or CholeskyTreeRegressor
        The tree's parameters; its own ``leaf_penalty`` is ignored and it is
        not modified.  A lookahead search scores candidates on the
        estimator's ``n_jobs`` threads, as its ``fit`` does (the trees do
        not depend on them), and a ``time_limit`` bounds the whole search
        rather than each penalty's.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Training data, as the estimator's ``fit`` takes it.
    y : array-like of shape (n_samples,)
        Target values.
    leaf_penalties : sequence of float
        The penalties (lambda, each >= 0), in any order; repeats are allowed.
    sample_weight : array-like of shape (n_samples,), optional
        Passed to ``fit`` (for estimators that accept it).

    Returns
    -------
    estimators : list
        One fitted estimator per entry of ``leaf_penalties``, in that order,
        each with its ``leaf_penalty`` set.  Repeated penalties share one
        estimator.  ``n_candidate_evaluations_`` counts the shared search.

    Examples
    --------
    >>> from clarytree import CholeskyTreeRegressor, leaf_penalty_path
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, random_state=0)
    >>> path = leaf_penalty_path(CholeskyTreeRegressor(max_depth=3), X, y,
    ...                          [1e-1, 1e-2, 1e-3])
    >>> [tree.get_n_leaves() for tree in path] == sorted(
    ...     tree.get_n_leaves() for tree in path)
    True
    """
    _check_tree_estimator(estimator)
    penalties = _check_grid(leaf_penalties, "leaf_penalties")
    fit_params = _fit_params(estimator, sample_weight)
    distinct = list(dict.fromkeys(penalties))
    knobs = {arg: getattr(estimator, name) for name, arg in _KNOBS.items()
             if hasattr(estimator, name)}
    # Its own leaf_penalty is ignored: even one fit would refuse (None).
    base = clone(estimator).set_params(leaf_penalty=distinct[0])
    path, _ = _fit_tree(base, as_pandas(X), y, leaf_penalties=distinct, **knobs, **fit_params)
    fitted = dict(zip(distinct, path, strict=True))
    return [fitted[lam] for lam in penalties]


# --------------------------------------------------------------------------
# Cross-validation
# --------------------------------------------------------------------------


# Private fitted state the refitted tree's methods read (the preparation
# maps X for predict and export).
_PRIVATE_FIT_STATE = ("_preparation",)


def _routing_enabled():
    import sklearn

    return bool(sklearn.get_config().get("enable_metadata_routing", False))


def _take(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _run_tasks(jobs, n_jobs, verbose):
    """Run the CV tasks with joblib; with ``verbose``, show how many are done.

    The count needs results as they come (joblib's generator); a backend
    that cannot give them so (dask's, with older joblib) runs without it.
    """
    parallel_verbose = max(0, int(verbose) - 1)
    if verbose:
        progress = _Progress("CV path fits")
        try:
            results = Parallel(n_jobs=n_jobs, verbose=parallel_verbose,
                               return_as="generator")(jobs)
        except ValueError as exc:
            if "return_as" not in str(exc):
                raise
        else:
            out = []
            try:
                for res in results:
                    out.append(res)
                    progress(len(out), len(jobs))
            finally:
                _close_progress(progress)
            return out
    return Parallel(n_jobs=n_jobs, verbose=parallel_verbose)(jobs)


def _path_task(estimator, X, y, sample_weight, score_weight, train, test, penalties,
               scorer, several=False):
    """Fit the path on one fold's training rows and score every tree.

    ``sample_weight`` weighs the fits, ``score_weight`` (None: unweighted)
    the validation scores.
    """
    start = time.perf_counter()
    weight = None if sample_weight is None else sample_weight[train]
    path = leaf_penalty_path(estimator, _take(X, train), y[train], penalties,
                             sample_weight=weight)
    fit_time = time.perf_counter() - start
    X_test, y_test = _take(X, test), y[test]
    kwargs = {} if score_weight is None else {"sample_weight": score_weight[test]}
    scores, score_times, n_leaves = [], [], []
    multimetric = False
    for tree in path:
        start = time.perf_counter()
        score = _score(scorer, tree, X_test, y_test, kwargs, several)
        multimetric = multimetric or isinstance(score, dict)
        # Several metrics come as a dict (as GridSearchCV's scorers return
        # them), one as a number: named "score", GridSearchCV's key; a
        # failed scoring (None) as {}, NaN for every metric.
        scores.append({} if score is None else score if isinstance(score, dict)
                      else {"score": score})
        score_times.append(time.perf_counter() - start)
        n_leaves.append(tree.get_n_leaves())
    return {"fit_time": fit_time / len(penalties), "scores": scores,
            "multimetric": multimetric,
            "score_times": score_times, "n_leaves": n_leaves}


def _score(scorer, tree, X, y, kwargs, several=False):
    """One validation score (a float, or a dict of floats), as GridSearchCV's
    default ``error_score=np.nan`` scores: a scorer that raises gives None and
    a warning, one that returns no number an error.

    ``several``: ``scorer`` is scikit-learn's scorer of several metrics, made
    with ``raise_exc=False``: a metric that fails comes back as its error's
    text (NaN here, with the warning), and what the scorer itself raises (its
    metadata requests unset) is raised, as GridSearchCV raises it.
    """
    if several:
        score = scorer(tree, X, y, **kwargs)
        for name, value in score.items():
            if isinstance(value, str):
                warnings.warn("Scoring failed. The score on this train-test partition for "
                              f"these parameters will be set to nan. Details: \n{value}",
                              UserWarning, stacklevel=2)
                score[name] = np.nan
        return {name: _number(value, scorer) for name, value in score.items()}
    try:
        score = scorer(tree, X, y, **kwargs)
    except Exception as exc:    # as GridSearchCV: any failure of a scorer
        warnings.warn("Scoring failed. The score on this train-test partition for these "
                      f"parameters will be set to nan. Details: {type(exc).__name__}: "
                      f"{exc}", UserWarning, stacklevel=2)
        return None
    if isinstance(score, dict):
        return {name: _number(value, scorer) for name, value in score.items()}
    return _number(score, scorer)


def _number(value, scorer):
    if hasattr(value, "item"):
        try:
            value = value.item()
        except ValueError:      # an array of several values
            pass
    if not isinstance(value, numbers.Number) or isinstance(value, bool):
        raise ValueError(f"scoring must return a number, got {value!r} "
                         f"({type(value).__name__}) instead (scorer={scorer})")
    return float(value)


def _store(results, key, array, splits=False, rank=False):
    # The aggregation of GridSearchCV, so that means, stds and ranks agree
    # with it bit for bit.
    n_splits = array.shape[1]
    if splits:
        for k in range(n_splits):
            results[f"split{k}_{key}"] = array[:, k]
    means = np.average(array, axis=1)
    results[f"mean_{key}"] = means
    results[f"std_{key}"] = np.sqrt(np.average((array - means[:, np.newaxis]) ** 2, axis=1))
    if rank:
        if np.isnan(means).all():
            ranks = np.ones_like(means, dtype=np.int32)
        else:
            means = np.where(np.isnan(means), np.nanmin(means) - 1, means)
            ranks = rankdata(-means, method="min").astype(np.int32, copy=False)
        results[f"rank_{key}"] = ranks


def _check_scoring_kind(owner, scoring):
    """Refuse a ``scoring`` that is no scorer, as GridSearchCV does.

    fit skips nested parameter validation, so ``check_scoring`` alone would
    hand back no scorer (or one failing on every call) for these: every
    score NaN and a refit at the first pair.
    """
    from sklearn.metrics import get_scorer_names

    if scoring is None or callable(scoring):
        return
    if isinstance(scoring, str):
        if scoring not in get_scorer_names():
            raise ValueError(f"The 'scoring' parameter of {owner} must be a scorer name "
                             "(sklearn.metrics.get_scorer_names()), a callable, a list, "
                             f"tuple or dict of them, or None; got {scoring!r}")
        return
    if isinstance(scoring, dict):
        for name, value in scoring.items():
            if not (isinstance(value, str) or callable(value)):
                raise TypeError(
                    f"scoring[{name!r}] must be a scorer name or a callable, got "
                    f"{value!r} of type {type(value).__name__}")
        return
    if not isinstance(scoring, (list, tuple, set)):
        raise ValueError(f"The 'scoring' parameter of {owner} must be a scorer name, a "
                         "callable, a list, tuple or dict of them, or None; got "
                         f"{scoring!r} of type {type(scoring).__name__}")


class _CVMixin:
    # ``groups`` only feeds the cv splitter, which requests it itself (as
    # GridSearchCV's and LassoCV's do): no request of the estimator's own.
    __metadata_request__fit = {"groups": metadata_routing.UNUSED}
    """Tuning of (leaf_penalty, ridge_alpha) by cross-validation along the path."""

    _cv_constraints: dict = {
        "leaf_penalties": ["array-like"],
        "ridge_alphas": ["array-like"],
        # check_cv says what is wrong with cv; fit checks scoring itself
        # (_check_scoring_kind: the scorer names load with sklearn.metrics).
        "cv": "no_validation",
        "scoring": "no_validation",
        "n_jobs": [Integral, None],
        "refit": ["boolean", str, callable],
        "verbose": ["verbose"],
    }

    def _tree_estimator(self):
        """The single-tree estimator with this object's tree parameters."""
        names = self._tree_class._get_param_names()
        params = {k: v for k, v in self.get_params(deep=False).items() if k in names}
        params["verbose"] = 0
        if "n_jobs" in names:
            # This object's n_jobs runs the (fold, kappa) tasks; the cores
            # they leave over become the tasks' search threads (in fit).
            params["n_jobs"] = None
        return self._tree_class(**params)

    @forgets_unfinished_fit
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Choose the leaf penalty and ridge strength by CV, then refit.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Training data, as the tree's ``fit`` takes it.
        y : array-like of shape (n_samples,)
            Target values.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of every fit (each fold's training rows, and the
            refit) and of the validation scores, as in
            ``GridSearchCV.fit(X, y, sample_weight=...)``: a scorer that does
            not take weights scores unweighted (with a warning); with
            metadata routing enabled, the scorer's request decides (the
            default R² requests them).
        groups : array-like of shape (n_samples,), optional
            Group labels for a group-aware ``cv`` splitter.

        Returns
        -------
        self : object

        Notes
        -----
        With a refit, the whole table's columns are encoded once before the
        CV tasks run, so that a problem only the refit would meet (a
        categorical column with more than 256 levels in the table but fewer
        in every fold's training part) is raised at once, not after the CV.
        """
        # Imported here: importing clarytree must not need these modules
        # (they import private scikit-learn names at import time).
        from sklearn.metrics import check_scoring
        from sklearn.model_selection import check_cv
        from sklearn.utils.metadata_routing import process_routing

        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__"):
                delattr(self, name)
        penalties = _check_grid(self.leaf_penalties, "leaf_penalties")
        alphas = _check_grid(self.ridge_alphas, "ridge_alphas")
        if self.leaf_model == "linear" and min(alphas) <= 0:
            raise ValueError("ridge_alphas must be > 0 for linear leaves "
                             f"(got {alphas})")
        # Values are checked by the inner fits' preparation (categorical
        # columns, missing values); here only shapes, names and y.
        X = as_pandas(X)        # a polars or Arrow table: its rows are taken by iloc
        check_has_columns(X, type(self).__name__)
        check_row_count(X, type(self).__name__)
        if hasattr(X, "iloc"):
            # Inner fits see the caller's DataFrame (column names select
            # regression features), so only its names and width are checked
            # here: scikit-learn's array conversion casts a frame with nullable
            # columns (Int64, boolean) to float as a whole, and fails on its
            # text columns.
            validate_data(self, X, skip_check_array=True)
            y_checked = column_or_1d(check_array(y, ensure_2d=False, dtype=np.float64,
                                                 input_name="y"), warn=True)
            check_consistent_length(X, y_checked)
            data = X
        else:
            data, y_checked = validate_data(self, X, y, dtype=None, ensure_all_finite=False,
                                            y_numeric=True)
        y_checked = np.ascontiguousarray(y_checked, dtype=np.float64)
        # As the tree's fit reads it (a scalar weights every row alike).
        sample_weight = validate_sample_weight(sample_weight, y_checked.shape[0])
        base = self._tree_estimator()
        _check_scoring_kind(type(self).__name__, self.scoring)
        several = isinstance(self.scoring, (list, tuple, set, dict))
        scorer = check_scoring(base, scoring=self.scoring, raise_exc=not several)
        if several:
            self._check_refit_for_metrics(list(self.scoring))
        # The validation scores' weights, as GridSearchCV gives its scorer
        # the fit's sample_weight: with metadata routing, where the scorer
        # requests them (the default R2 does); without, when the scorer
        # accepts them (else a warning, and unweighted scores).
        score_weight = None
        if _routing_enabled():
            metadata = {k: v for k, v in (("sample_weight", sample_weight),
                                          ("groups", groups)) if v is not None}
            routed = process_routing(self, "fit", **metadata)
            groups = routed.splitter.split.get("groups")
            score_weight = routed.scorer.score.get("sample_weight")
        elif sample_weight is not None:
            # As GridSearchCV: one warning per metric that scores unweighted;
            # the others get the weights.
            for name, refusing in scorers_refusing_sample_weight(scorer):
                described = refusing if name is None else f"{name}={refusing}"
                warnings.warn(f"The scoring {described} does not support sample_weight, "
                              "which may lead to statistically incorrect results when "
                              f"fitting {type(self).__name__} with sample_weight.",
                              UserWarning, stacklevel=3)
            if scorer_accepts_sample_weight(scorer):
                score_weight = sample_weight
        if score_weight is not None:
            score_weight = np.asarray(score_weight, dtype=np.float64)
        data, y_checked, groups = indexable(data, y_checked, groups)
        cv = check_cv(self.cv, y_checked, classifier=False)
        folds = list(cv.split(data, y_checked, groups))
        if not folds:
            raise ValueError(
                f"cv={self.cv!r} gave no train/test split (an empty list, or a generator "
                "that an earlier fit already used up); pass a splitter such as KFold(5), "
                "or a list of (train, test) index pairs")
        for i, split in enumerate(folds):
            for part, rows in zip(("training", "test"), split, strict=True):
                rows = np.asarray(rows)
                if (np.count_nonzero(rows) if rows.dtype == bool else rows.size) == 0:
                    raise ValueError(f"CV split {i} (of {len(folds)}) has an empty {part} "
                                     "part; every split needs rows on both sides")

        if self.refit:
            # What only the whole table holds (a categorical column with more
            # levels than a split takes, when no fold's training part has as
            # many) would otherwise stop the refit after every CV task: the
            # refit's column encoding runs first, without the search.
            probe = clone(base)
            probe._make_preparation().encode(probe, data, y_checked, sample_weight)
        if sample_weight is not None:
            for i, (train, _) in enumerate(folds):
                if np.all(sample_weight[train] == 0):
                    raise ValueError(
                        f"sample_weight is zero on every training row of CV split {i} (of "
                        f"{len(folds)}, {len(train)} training rows), so no tree can be fitted "
                        "on it; use a splitter whose training parts all hold weighted rows "
                        "(e.g. KFold(shuffle=True)), or drop the zero-weight rows first")

        tasks = [(f, j) for f in range(len(folds)) for j in range(len(alphas))]
        if self.n_jobs is not None and "n_jobs" in base.get_params(deep=False):
            # Cores left over by the tasks go to their search threads: tasks
            # running at once times threads per task stays within n_jobs.
            # Negative n_jobs count back from the cores and respect OpenMP's
            # thread budget (a threadpoolctl limit), as a single tree's do.
            total = _stats_threads(self.n_jobs)
            threads = total // min(total, len(tasks))
            if threads > 1:
                base.set_params(n_jobs=threads)
        jobs = [delayed(_path_task)(clone(base).set_params(ridge_alpha=alphas[j]), data,
                                    y_checked, sample_weight, score_weight, folds[f][0],
                                    folds[f][1], penalties, scorer, several)
                for f, j in tasks]
        out = _run_tasks(jobs, self.n_jobs, self.verbose)

        n_lam, n_alpha, n_splits = len(penalties), len(alphas), len(folds)
        shape = (n_lam, n_alpha, n_splits)
        multimetric = several or any(res["multimetric"] for res in out)
        # The metrics' names from the first scoring that did not fail.
        metrics = next((list(score) for res in out for score in res["scores"] if score),
                       list(self.scoring) if several else ["score"])
        if multimetric:
            self._check_refit_for_metrics(metrics)
        scores = {name: np.empty(shape) for name in metrics}
        fit_times = np.empty(shape)
        score_times, leaves = np.empty(shape), np.empty(shape, dtype=np.intp)
        for (f, j), res in zip(tasks, out, strict=True):
            for name, array in scores.items():
                array[:, j, f] = [s.get(name, np.nan) for s in res["scores"]]
            fit_times[:, j, f] = res["fit_time"]
            score_times[:, j, f] = res["score_times"]
            leaves[:, j, f] = res["n_leaves"]

        # Candidates in GridSearchCV's order: leaf_penalty outer, ridge_alpha inner.
        n_cand = n_lam * n_alpha
        params = [{"leaf_penalty": lam, "ridge_alpha": kap}
                  for lam in penalties for kap in alphas]
        results = {}
        _store(results, "fit_time", fit_times.reshape(n_cand, n_splits))
        _store(results, "score_time", score_times.reshape(n_cand, n_splits))
        for key in ("leaf_penalty", "ridge_alpha"):
            results[f"param_{key}"] = MaskedArray(
                np.array([p[key] for p in params]), mask=np.zeros(n_cand, dtype=bool))
        results["params"] = params
        for name, array in scores.items():
            _store(results, f"test_{name}", array.reshape(n_cand, n_splits), splits=True,
                   rank=True)
        for name in scores:
            means = results[f"mean_test_{name}"]
            if not np.isfinite(means).all():
                # (GridSearchCV's warning: such pairs rank last.)
                warnings.warn(f"One or more of the test scores are non-finite: {means}",
                              category=UserWarning, stacklevel=3)
        _store(results, "n_leaves", leaves.reshape(n_cand, n_splits).astype(np.float64))
        self.cv_results_ = results
        self.n_leaves_path_ = leaves
        self.n_splits_ = n_splits
        self.multimetric_ = multimetric
        self.scorer_ = scorer
        # The choice, as GridSearchCV makes it: by the (refit) metric's rank,
        # or by a callable refit; none for several metrics with refit=False.
        if callable(self.refit):
            self.best_index_ = self._refit_index(results, n_cand)
        elif self.refit or not multimetric:
            key = self.refit if multimetric else "score"
            self.best_index_ = int(results[f"rank_test_{key}"].argmin())
            self.best_score_ = float(results[f"mean_test_{key}"][self.best_index_])
        if hasattr(self, "best_index_"):
            best = params[self.best_index_]
            self.leaf_penalty_ = best["leaf_penalty"]
            self.ridge_alpha_ = best["ridge_alpha"]
            if self.verbose:
                score = (f" mean CV score {self.best_score_:.4f}"
                         if hasattr(self, "best_score_") else "")
                print(f"[{type(self).__name__}] best leaf_penalty={self.leaf_penalty_:g} "
                      f"ridge_alpha={self.ridge_alpha_:g}{score}")
        if self.refit:
            start = time.perf_counter()
            tree = clone(base).set_params(leaf_penalty=self.leaf_penalty_,
                                          ridge_alpha=self.ridge_alpha_)
            if "n_jobs" in tree.get_params(deep=False):
                # One fit: this object's n_jobs become its search threads
                # (the tree does not depend on them).
                tree.set_params(n_jobs=self.n_jobs)
            # The refit shows its own progress; the stored tree keeps the
            # fold fits' parameters.
            tree.set_params(verbose=min(int(self.verbose), 1))
            tree.fit(data, y_checked, sample_weight=sample_weight)
            tree.set_params(verbose=0)
            self.refit_time_ = time.perf_counter() - start
            for name, value in vars(tree).items():
                if name.endswith("_") and not name.startswith("__"):
                    setattr(self, name, value)
            for name in _PRIVATE_FIT_STATE:
                setattr(self, name, getattr(tree, name))
            self.best_estimator_ = tree
        return self

    def get_metadata_routing(self):
        """Where ``fit``'s metadata go (see scikit-learn's metadata routing).

        ``fit`` uses ``sample_weight`` itself (every tree's fit) and routes
        it to the scorer where the scorer requests it (the default R2 always
        does, as ``RidgeCV``'s); ``groups`` go to the ``cv`` splitter.

        Returns
        -------
        routing : MetadataRouter
        """
        from sklearn.metrics import check_scoring, make_scorer, r2_score
        from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping

        if self.scoring is None:
            scorer = make_scorer(r2_score)
            if _routing_enabled():      # (requests can only be set then)
                scorer = scorer.set_score_request(sample_weight=True)
        else:
            scorer = check_scoring(self._tree_estimator(), scoring=self.scoring)
        return (MetadataRouter(owner=type(self).__name__)
                .add_self_request(self)
                .add(scorer=scorer,
                     method_mapping=MethodMapping().add(caller="fit", callee="score"))
                .add(splitter=self.cv,
                     method_mapping=MethodMapping().add(caller="fit", callee="split")))

    def _check_refit_for_metrics(self, metrics):
        # GridSearchCV's rule: with several metrics, refit names the one that
        # chooses (or is a callable, or False: no choice, no refit).
        if self.refit is not False and not callable(self.refit) and (
                not isinstance(self.refit, str) or self.refit not in metrics):
            raise ValueError(
                "For multi-metric scoring, refit must be the name of one of the metrics "
                f"{metrics}, a callable, or False (no refit, no chosen pair); got "
                f"{self.refit!r}")

    def _refit_index(self, results, n_candidates):
        index = self.refit(results)
        if not isinstance(index, Integral) or not 0 <= index < n_candidates:
            raise IndexError(f"refit callable returned {index!r}, not an index of "
                             f"cv_results_ (0 to {n_candidates - 1})")
        return int(index)

    def _check_tree(self):
        if getattr(self, "cv_results_", None) is not None and not hasattr(self, "tree_"):
            raise NotFittedError(
                f"This {type(self).__name__} was fitted with refit=False: it holds the "
                "CV results but no tree; refit it or fit the chosen pair yourself")
        super()._check_tree()


_CV_PARAMS_DOC = """
    leaf_penalties : array-like of float, default=PAPER_LEAF_PENALTIES
        The leaf penalties (lambda) tried; the default is the paper's grid
        (1e-1, 8e-2, 5e-2, 3e-2, 1e-2, 8e-3, 5e-3, 3e-3, 1e-3, 5e-4, 1e-4).
    ridge_alphas : array-like of float, default=PAPER_RIDGE_ALPHAS
        The ridge strengths (kappa) tried; the default is the paper's grid
        (1e-1, 1e-2, 1e-3, 1e-4, 1e-5).
    cv : int, cross-validation generator or iterable, default=None
        As in scikit-learn: None is 5-fold, an int the number of folds of an
        unshuffled ``KFold``, or a splitter or an iterable of (train, test)
        index arrays.
    scoring : str, callable, list, tuple, set, dict or None, default=None
        Validation score (larger is better); None is the tree's ``score``,
        R^2.  Several metrics as in GridSearchCV (names, a dict of scorers,
        or a callable returning a dict): ``cv_results_`` then holds
        ``split{k}_test_<name>``, ``mean_test_<name>``... for each, and
        ``refit`` names the one that chooses.
    n_jobs : int or None, default=None
        Parallel tasks, one per (fold, ridge_alpha): each grows the path of
        all leaf penalties.  Runs through joblib, so
        ``joblib.parallel_backend("dask")`` sends the tasks to a Dask
        cluster.  For lookahead trees, with fewer tasks than ``n_jobs`` the
        cores left over become each task's search threads (tasks times
        threads stays within ``n_jobs``), and the refit searches with
        ``n_jobs`` threads (a greedy tree's search is single-threaded).  The
        result does not depend on it.
    refit : bool, str or callable, default=True
        Refit on all rows at the chosen pair; the estimator then is that
        fitted tree.  With several metrics, the name of the one that chooses
        (or False: no chosen pair, no refit).  A callable takes
        ``cv_results_`` and returns the chosen index (``best_score_`` is then
        not set), as in GridSearchCV.
"""

_CV_ATTRIBUTES_DOC = """
    leaf_penalty_ : float
        The chosen leaf penalty.
    ridge_alpha_ : float
        The chosen ridge strength.
    best_score_ : float
        Mean validation score of the chosen pair (by the refit metric).
    best_index_ : int
        Its index in ``cv_results_``.
    cv_results_ : dict of ndarray
        As GridSearchCV's (``pandas.DataFrame(cv_results_)`` reads it), with
        candidates ordered by leaf penalty, then ridge strength: ``params``,
        ``param_leaf_penalty``, ``param_ridge_alpha``,
        ``split{k}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time`` / ``std_fit_time`` (a path's
        time divided equally over its penalties), ``mean_score_time``,
        ``std_score_time``, and ``mean_n_leaves`` / ``std_n_leaves``.  Ties go
        to the first candidate, as in GridSearchCV.
    n_leaves_path_ : ndarray of shape (n_leaf_penalties, n_ridge_alphas, n_splits)
        Leaves of every tree fitted during the CV.
    n_splits_ : int
        Number of CV splits.
    multimetric_ : bool
        Whether ``scoring`` gave several metrics.
    scorer_ : callable
        The scorer used.
    refit_time_ : float
        Seconds of the refit (with ``refit=True``).
    best_estimator_ : CLARITreeRegressor or CholeskyTreeRegressor
        The refitted tree (with ``refit=True``), whose fitted attributes
        (``tree_``, ``objective_``, ``leaf_coefs_``...) this estimator
        shares.
"""


def _cv_doc(tree_doc_params, name, lookahead):
    return (
        f"""{name} with the leaf penalty and ridge strength chosen by cross-validation.

    lambda (``leaf_penalty``) and kappa (``ridge_alpha``) are relative (a
    fraction of the total variance per leaf and a per-sample ridge on
    standardized features) but their best values depend on the data, and the
    defaults of the single tree favour fit over size: tune them.  Every
    (fold, ridge_alpha) task grows the trees of all leaf penalties in one
    search (:func:`leaf_penalty_path`), scores them on the fold's validation
    rows, and the pair with the best mean score is refitted on all rows;
    the result equals ``GridSearchCV`` over the same grid, folds and scoring.

    Parameters
    ----------
{_CV_PARAMS_DOC.strip(chr(10))}
    verbose : int, default=0
        1 shows on standard error how many (fold, ridge_alpha) path fits
        are done, then the refit's progress (a lookahead tree's root
        candidates), and prints the chosen pair; larger values also
        joblib's progress.
"""
        + tree_doc_params
        + "\n    Attributes\n    ----------\n"
        + _CV_ATTRIBUTES_DOC.strip("\n")
        + "\n    tree_, objective_, leaf_ids_, leaf_intercepts_, leaf_coefs_, ...\n"
        + "        Those of the refitted tree (see the single-tree estimator).\n"
        + f"""
    See Also
    --------
    leaf_penalty_path : the trees of a leaf-penalty grid in one search.
    plot_cv_path : validation score against the leaf penalty.

    Examples
    --------
    >>> from clarytree import {name}CV
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, random_state=0)
    >>> model = {name}CV(max_depth=2{lookahead}, cv=3).fit(X, y)
    >>> model.leaf_penalty_ in model.leaf_penalties
    True
    >>> model.predict(X[:2]).shape
    (2,)
"""
    )


def _tree_params_doc(lookahead):
    # The single tree's parameter list without the two tuned parameters.
    text = _PARAMS_DOC.format(lookahead=lookahead).split("Attributes")[0]
    lines = text.split("\n")
    out, skip = [], False
    for line in lines[3:]:
        if line.startswith("    ") and not line.startswith("     "):
            skip = line.split(" :")[0].strip() in ("leaf_penalty", "ridge_alpha", "verbose")
        if not skip:
            out.append(line)
    return "\n".join(out).rstrip() + "\n"


class CLARITreeRegressorCV(_CVMixin, _BaseLinearTree):
    __doc__ = _cv_doc(_tree_params_doc("""    lookahead_depth : int, default=1
        Levels of exhaustive search before greedy completion (0 = greedy).
    time_limit : float or None, default=None
        Seconds of lookahead search of each (fold, ridge_alpha) path task and
        of the refit (see ``CLARITreeRegressor``); the limit bounds a path's
        whole search.  None searches to the end.
"""), "CLARITreeRegressor", ", lookahead_depth=1")

    _tree_class = CLARITreeRegressor
    _parameter_constraints: dict = {
        **{k: v for k, v in CLARITreeRegressor._parameter_constraints.items()
           if k not in ("leaf_penalty", "ridge_alpha")},
        **_CVMixin._cv_constraints,
    }

    def __init__(self, *, leaf_penalties=PAPER_LEAF_PENALTIES,
                 ridge_alphas=PAPER_RIDGE_ALPHAS, cv=None, scoring=None, n_jobs=None,
                 refit=True, verbose=0, max_depth=4, lookahead_depth=1, time_limit=None,
                 leaf_model="linear", n_thresholds=20, threshold_strategy="quantile",
                 min_samples_leaf="auto", regression_features="auto",
                 categorical_features="from_dtype", min_category_weight=None,
                 extrapolation="none"):
        self.leaf_penalties = leaf_penalties
        self.ridge_alphas = ridge_alphas
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.verbose = verbose
        self.max_depth = max_depth
        self.lookahead_depth = lookahead_depth
        self.time_limit = time_limit
        self.leaf_model = leaf_model
        self.n_thresholds = n_thresholds
        self.threshold_strategy = threshold_strategy
        self.min_samples_leaf = min_samples_leaf
        self.regression_features = regression_features
        self.categorical_features = categorical_features
        self.min_category_weight = min_category_weight
        self.extrapolation = extrapolation

    def _effective_lookahead(self):
        return int(self.lookahead_depth)


class CholeskyTreeRegressorCV(_CVMixin, _BaseLinearTree):
    __doc__ = _cv_doc(_tree_params_doc(""), "CholeskyTreeRegressor", "")

    _tree_class = CholeskyTreeRegressor
    _parameter_constraints: dict = {
        **{k: v for k, v in CholeskyTreeRegressor._parameter_constraints.items()
           if k not in ("leaf_penalty", "ridge_alpha")},
        **_CVMixin._cv_constraints,
    }

    def __init__(self, *, leaf_penalties=PAPER_LEAF_PENALTIES,
                 ridge_alphas=PAPER_RIDGE_ALPHAS, cv=None, scoring=None, n_jobs=None,
                 refit=True, verbose=0, max_depth=4, leaf_model="linear",
                 n_thresholds=20, threshold_strategy="quantile", min_samples_leaf="auto",
                 regression_features="auto", categorical_features="from_dtype",
                 min_category_weight=None, extrapolation="none"):
        self.leaf_penalties = leaf_penalties
        self.ridge_alphas = ridge_alphas
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.verbose = verbose
        self.max_depth = max_depth
        self.leaf_model = leaf_model
        self.n_thresholds = n_thresholds
        self.threshold_strategy = threshold_strategy
        self.min_samples_leaf = min_samples_leaf
        self.regression_features = regression_features
        self.categorical_features = categorical_features
        self.min_category_weight = min_category_weight
        self.extrapolation = extrapolation


def plot_cv_path(estimator, ax=None):
    """Mean validation score against the leaf penalty, one line per ridge strength.

    The view to choose sparsity from: each point is a (leaf_penalty,
    ridge_alpha) pair, its error bar the standard deviation over the folds;
    the points of the chosen ridge strength are labelled with their mean
    number of leaves and the chosen pair is starred.  Larger penalties
    (fewer leaves) are on the left.

    Parameters
    ----------
    estimator : CLARITreeRegressorCV or CholeskyTreeRegressorCV
        A fitted CV estimator.
    ax : matplotlib Axes, optional
        Where to draw (a new figure by default).

    Returns
    -------
    ax : matplotlib Axes
    """
    if not isinstance(estimator, _CVMixin):
        raise TypeError("plot_cv_path expects a fitted CLARITreeRegressorCV or "
                        f"CholeskyTreeRegressorCV, got {type(estimator).__name__}")
    if not hasattr(estimator, "cv_results_"):
        raise NotFittedError(f"This {type(estimator).__name__} is not fitted yet")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    res = estimator.cv_results_
    lam = np.asarray(res["param_leaf_penalty"], dtype=float)
    kap = np.asarray(res["param_ridge_alpha"], dtype=float)
    key, label = "test_score", "mean validation score"
    if getattr(estimator, "multimetric_", False):
        # Several metrics: the one that chose (else the first).
        metric = estimator.refit if isinstance(estimator.refit, str) else next(
            k[len("mean_test_"):] for k in res if k.startswith("mean_test_"))
        key, label = f"test_{metric}", f"mean validation {metric}"
    mean, std = res[f"mean_{key}"], res[f"std_{key}"]
    leaves = res["mean_n_leaves"]
    # The chosen pair; with several metrics and refit=False, the best by the plotted one.
    best = getattr(estimator, "best_index_", None)
    star = "chosen"
    if best is None:
        best, star = int(res[f"rank_{key}"].argmin()), "best"
    for alpha in dict.fromkeys(kap.tolist()):
        rows = np.flatnonzero(kap == alpha)
        rows = rows[np.argsort(-lam[rows], kind="stable")]
        chosen = alpha == kap[best]
        ax.errorbar(lam[rows], mean[rows], yerr=std[rows], marker="o", capsize=2,
                    lw=2.0 if chosen else 1.0, alpha=1.0 if chosen else 0.6,
                    label=f"ridge_alpha={alpha:g}")
        if chosen:
            for r in rows:
                ax.annotate(f"{leaves[r]:.3g}", (lam[r], mean[r]), textcoords="offset points",
                            xytext=(0, 7), ha="center", fontsize=7)
    ax.plot([lam[best]], [mean[best]], marker="*", ms=16, color="k", ls="none",
            label=f"{star}: leaf_penalty={lam[best]:g}, ridge_alpha={kap[best]:g}, "
                  f"{leaves[best]:.3g} leaves")
    if np.all(lam > 0):
        ax.set_xscale("log")
    if not ax.xaxis_inverted():     # drawn again on the same axes: keep it so
        ax.invert_xaxis()
    ax.set_xlabel("leaf_penalty (lambda); labels: mean leaves at the chosen ridge_alpha")
    ax.set_ylabel(label)
    ax.legend(fontsize=7)
    return ax
