"""The MBNDT estimators: :class:`MBNDTClassifier` and :class:`MBNDTRegressor`.

Training needs PyTorch; it is imported only inside ``fit``.  A fitted
estimator holds plain numpy arrays and scikit-learn transformers only, so it
pickles, loads and predicts without torch.
"""

import sys
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from .._classes import forgets_unfinished_fit
from .._frames import as_pandas
from .._preparation import (
    _column_name,
    _infinity_error,
    check_has_columns,
    recoded_kind,
    user_stacklevel,
    validate_sample_weight,
    warn_levels_matching_as_numbers,
    warn_levels_of_another_kind,
    warn_levels_spelled_otherwise,
)
from .._sklearn_compat import Interval, StrOptions, validate_params
from ._preprocess import (
    MISSING,
    _column_is_numeric,
    _is_text_dtype,
    build_preprocessor,
    feature_map,
    infer_column_kinds,
    numeric_impute_values,
    raw_table,
)

__all__ = ["MBNDTClassifier", "MBNDTRegressor"]

_MAX_NOMINAL_LEAVES = 2**16


def _missing_as_nan(values):
    """An object column with NaN for pandas' NA (which float conversion refuses)."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return values
    missing = np.asarray(pd.isna(values), dtype=bool)
    if not missing.any():
        return values
    values = values.copy()
    values[missing] = np.nan
    return values


_FLOAT32_TINY = float(np.finfo(np.float32).smallest_subnormal)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_no_infinity(X):
    """Reject infinite values, naming their columns (NaN means missing)."""
    if _is_dataframe(X):
        names = [str(c) for c in X.columns]
        # Text columns hold no infinity (and converting arrow strings to
        # objects costs more than the check).
        columns = (np.empty(0) if _is_text_dtype(c.dtype) else c.to_numpy()
                   for _, c in X.items())
    else:
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.dtype.kind not in "fO":
            return      # integers hold no infinity; shapes are validate_data's job
        names = None
        columns = (arr[:, j] for j in range(arr.shape[1]))
    bad = []
    for j, col in enumerate(columns):
        if col.dtype.kind == "O":
            if not _column_is_numeric(col):
                continue        # text levels such as "inf" are levels, not numbers
            try:
                col = np.asarray(_missing_as_nan(col), dtype=np.float64)
            except (TypeError, ValueError, ArithmeticError):
                continue        # a categorical column
        if col.dtype.kind == "f" and np.isinf(col).any():
            bad.append(_column_name(names, j))
    if bad:
        raise _infinity_error(bad)


# Spreads whose square is below float64's smallest normal number lose their
# digits in ``y.std()``.
_SQUARE_UNDERFLOWS_BELOW = 1e-150


def _columns_lost_by_scaling(ct, raw, xt):
    """Raw numeric columns that vary but come out of the scaler constant (in
    training's float32): their variance underflowed, so the scaler kept them
    at their raw, tiny size."""
    lost = set()
    for t, (kind, j, _) in enumerate(feature_map(ct)):
        if kind != "num" or j in lost:
            continue
        col = np.asarray(raw[:, j], dtype=np.float64)
        present = col[~np.isnan(col)]
        if present.size and present.max() > present.min():
            out = xt[:, t].astype(np.float32)
            if out.max() == out.min():
                lost.add(j)
    return sorted(lost)


def _target_moments(y):
    """Mean and standard deviation (1 for a constant target) of a finite ``y``.

    Targets near the float64 limits overflow or underflow ``y.std()`` (its
    squares: a spread below ~1e-154 squares to 0 and would read as a
    constant); they are then computed on ``y / max|y|`` and scaled back.
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        mean, std = float(y.mean()), float(y.std())
        overflowed = not (np.isfinite(mean) and np.isfinite(std))
        underflowed = std < _SQUARE_UNDERFLOWS_BELOW and y.max() > y.min()
    if overflowed or underflowed:
        scale = float(np.max(np.abs(y)))
        unit = y / scale
        mean, std = float(unit.mean()) * scale, float(unit.std()) * scale
        if not (np.isfinite(mean) and np.isfinite(std)):
            raise ValueError("y is too large for float64 arithmetic (its spread "
                             "overflows); rescale it")
    return mean, (std if std > 0 else 1.0)


def _is_dataframe(X):
    return hasattr(X, "dtypes") and hasattr(X, "iloc") and hasattr(X, "columns")


def _import_training():
    try:
        from . import _train
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Fitting MBNDT models requires PyTorch; install it with "
            "`pip install clarytree[torch]`.") from exc
    return _train



def _float32_safe(xt):
    """Columns of ``xt`` that are finite and within float32's range, by a margin."""
    return np.isfinite(xt).all(axis=0) & (np.abs(xt) <= _FLOAT32_SAFE).all(axis=0)


# A standardized, rank-Gauss or target-encoded value is far below this; one
# above it is a column whose scaling overflowed (float32 ends near 3.4e38).
_FLOAT32_SAFE = 1e30

class _BaseMBNDT(BaseEstimator):
    """Shared fitting machinery of :class:`MBNDTClassifier` and :class:`MBNDTRegressor`."""

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "n_branches": [Interval(Integral, 2, None, closed="left")],
        "leaf_budget": [Interval(Real, 1, None, closed="left"), None],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "stage1_epochs": [Interval(Integral, 0, None, closed="left")],
        "patience": [Interval(Integral, 1, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "lr_features": [Interval(Real, 0, None, closed="neither")],
        "lr_thresholds": [Interval(Real, 0, None, closed="neither")],
        "lr_masks": [Interval(Real, 0, None, closed="neither")],
        "lr_leaves": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "rank_gauss": ["boolean"],
        "max_onehot_levels": [Interval(Integral, 1, None, closed="left")],
        "feature_init": [StrOptions({"gain", "random"})],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, max_depth=4, n_branches=3, leaf_budget=16, n_restarts=5,
                 max_epochs=500, stage1_epochs=40, patience=25, temperature=0.3,
                 lr_features=0.05, lr_thresholds=0.02, lr_masks=0.05, lr_leaves=0.05,
                 batch_size="auto", validation_fraction=0.2, rank_gauss=False,
                 max_onehot_levels=10, feature_init="gain", device="cpu", random_state=None,
                 verbose=0):
        self.max_depth = max_depth
        self.n_branches = n_branches
        self.leaf_budget = leaf_budget
        self.n_restarts = n_restarts
        self.max_epochs = max_epochs
        self.stage1_epochs = stage1_epochs
        self.patience = patience
        self.temperature = temperature
        self.lr_features = lr_features
        self.lr_thresholds = lr_thresholds
        self.lr_masks = lr_masks
        self.lr_leaves = lr_leaves
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.rank_gauss = rank_gauss
        self.max_onehot_levels = max_onehot_levels
        self.feature_init = feature_init
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        # Text and category columns are read as levels (one-hot or target
        # encoded for training, matched as levels by the tree).  Not tagged
        # categorical: scikit-learn's checks then round every X to integer
        # codes, on which a short MBNDT fit scores below their 0.5 bar.
        tags.input_tags.string = True
        return tags

    # ---------------------------------------------------------- validation
    def _validate_fit_input(self, X, y):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             "target y is None.")
        X = as_pandas(X)
        check_has_columns(X, type(self).__name__)
        _check_no_infinity(X)
        if _is_dataframe(X):
            # y first: validating "no_validation" X would reset the feature names.
            y_checked = validate_data(self, X="no_validation", y=y,
                                      y_numeric=self._is_regressor)
            validate_data(self, X, skip_check_array=True)
            check_consistent_length(X, y_checked)
            if X.shape[0] < 2:
                raise ValueError(f"Found {X.shape[0]} sample(s); a minimum of 2 is required.")
            return X, y_checked
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite="allow-nan",
                             ensure_min_samples=2, y_numeric=self._is_regressor)
        return X, y

    def _validate_predict_input(self, X):
        check_is_fitted(self, "tree_")
        X = as_pandas(X)
        _check_no_infinity(X)
        if _is_dataframe(X):
            if X.shape[0] == 0:         # as for an array (scikit-learn's message)
                raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a "
                                 f"minimum of 1 is required by {type(self).__name__}.")
            validate_data(self, X, reset=False, skip_check_array=True)
        else:
            X = validate_data(self, X, reset=False, dtype=None, ensure_all_finite="allow-nan")
        raw = raw_table(X, self._column_kinds)
        if raw.dtype == object:
            self._warn_levels_matching_as_numbers(raw, X)
        return raw

    def _warn_levels_matching_as_numbers(self, raw, X):
        # Levels are matched as text: a column of codes read as floats
        # ('1.0') matches none of fit's '1' and every row would take the
        # unseen levels' branches without a word.  Known levels: those the
        # splits list (all a model read from JSON has, and all that matter).
        # The warnings show the caller's values (X's), not their text.
        tree = self.tree_
        split_levels = {}
        for node in np.flatnonzero(np.asarray(tree.is_categorical, dtype=bool)):
            table = tree.cat_values[tree.cat_ptr[node]:tree.cat_ptr[node + 1]]
            split_levels.setdefault(int(tree.feature[node]), set()).update(
                str(v) for v in table if v != MISSING)
        names = getattr(self, "feature_names_in_", None)
        for j, known in split_levels.items():
            present = raw[:, j][raw[:, j] != MISSING]
            if not known or present.shape[0] == 0 or any(v in known for v in present):
                continue
            name = _column_name(names, j)
            given = X.iloc[:, j].to_numpy(dtype=object) if _is_dataframe(X) else X[:, j]
            sample = given[raw[:, j] != MISSING][:1000].tolist()
            if warn_levels_spelled_otherwise(
                    type(self).__name__, name, sample, sorted(known),
                    "so every row takes the unseen levels' branch at its splits",
                    "spell its values as fit saw them"):
                continue
            consequence = "so every row takes the unseen levels' branch at its splits"
            if warn_levels_matching_as_numbers(
                    type(self).__name__, name, sample, sorted(known),
                    "its values equal levels of fit only as numbers", consequence,
                    "Pass the levels as fit saw them (integer codes read as floats: "
                    + (f"X[{name}].astype('Int64').astype(str)" if names is not None
                       else "as integers") + ")."):
                continue
            # Levels compare as text here, so text levels given as codes 0, 1,
            # ... show only as values that all read as numbers where no level
            # of fit does.  (Text after levels that read as numbers may be
            # new levels: fit's '1' may have been text.)
            recoded = recoded_kind(sample, sorted(known))
            if recoded is not None:
                warn_levels_of_another_kind(
                    type(self).__name__, name, sample, sorted(known), "text", recoded,
                    consequence, "Pass the column as fit saw it.")

    # ----------------------------------------------------------------- fit
    def _fit(self, X, y_task, task, n_outputs, leaf_value, target_type, y_encode,
             sample_weight=None):
        """Preprocess, train and export.  ``y_task`` is what the network learns.

        ``sample_weight`` (validated, or None) weights the training loss and the
        early-stopping metrics; rows of weight 0 are left out of the
        preprocessing, split, initialization, training and pruning, as if
        dropped (the input checks and the column kinds still read them).
        """
        # n_branches >= 2: a depth beyond log2 of the cap is too deep whatever
        # the branching (and a huge power would take long to compute and print).
        # (As Python ints: a numpy int32 power wraps around below the cap.)
        if int(self.max_depth) > _MAX_NOMINAL_LEAVES.bit_length() - 1 \
                or int(self.n_branches)**int(self.max_depth) > _MAX_NOMINAL_LEAVES:
            raise ValueError(
                f"n_branches**max_depth = {self.n_branches}**{self.max_depth} nominal "
                "leaves is too large; MBNDT is meant for shallow trees (at most "
                f"{_MAX_NOMINAL_LEAVES} leaves).")
        # Training runs in float32: a temperature or learning rate that is 0
        # or infinite there passes the (float64) parameter check but breaks
        # the network with an error that names nothing.
        # (Adam's first step is lr / (1 - beta1), about 10 lr, computed as torch does.)
        for name in ("temperature", "lr_features", "lr_thresholds", "lr_masks", "lr_leaves"):
            value, rate = float(getattr(self, name)), name.startswith("lr_")
            step = value / (1 - 0.9 ** 1) if rate else value
            if not (step <= _FLOAT32_MAX and np.float32(value) > 0):
                top = _FLOAT32_MAX * (0.1 if rate else 1.0)
                raise ValueError(
                    f"{name}={value!r} is outside the range in which the network trains "
                    f"in float32 (about {_FLOAT32_TINY:.2g} to {top:.4g})")
        training = _import_training()
        # Before the preprocessing, so that a bad device fails at once.
        device = training.check_device(_resolve_device(self.device), type(self).__name__)
        rng = check_random_state(self.random_state)
        split_seed, torch_seed, prep_seed = (int(s) for s in rng.randint(0, 2**31 - 1, size=3))

        kinds = infer_column_kinds(X, type(self).__name__)
        raw = raw_table(X, kinds, fitting=True)
        self._column_kinds = kinds
        if sample_weight is not None:
            # Rows of weight 0 are left out from here on, as if dropped.
            pos = np.flatnonzero(sample_weight > 0)
            raw, y_encode, y_task = raw[pos], y_encode[pos], y_task[pos]
            sample_weight = sample_weight[pos]
        ct = build_preprocessor(kinds, raw, y_encode, self.max_onehot_levels,
                                self.rank_gauss, target_type, prep_seed)
        # fit_transform cross-fits the target encoder (leakage-safe training inputs);
        # the deployment transform below is what pruning and export must mirror.
        with np.errstate(over="ignore", invalid="ignore"):
            # Overflowing columns are reported by name below.
            xt_fit = np.asarray(ct.fit_transform(raw, y_encode), dtype=np.float64)
            xt = np.asarray(ct.transform(raw), dtype=np.float64)
        # Finite but beyond float32 (training's precision): a scaler whose
        # variance overflowed leaves its column unscaled, at the raw size.
        bad = ~(_float32_safe(xt_fit) & _float32_safe(xt))
        if bad.any():
            names = getattr(self, "feature_names_in_", None)
            raw_cols = sorted({feature_map(ct)[t][1] for t in np.flatnonzero(bad)})
            shown = ", ".join(_column_name(names, j) for j in raw_cols)
            raise ValueError(
                f"column(s) {shown} cannot be standardized: their values are too large "
                "for float64 arithmetic (squares overflow); rescale them, e.g. to "
                "thousands or millions of their unit.")
        tiny = _columns_lost_by_scaling(ct, raw, xt_fit)
        if tiny:
            names = getattr(self, "feature_names_in_", None)
            shown = ", ".join(_column_name(names, j) for j in tiny)
            raise ValueError(
                f"column(s) {shown} cannot be standardized: their spread is too small "
                "for float64 arithmetic (squares underflow, below ~1e-150), so they would "
                "read as constant; rescale them, e.g. multiply by a power of ten.")
        if xt.shape[1] == 0:
            raise ValueError("No usable feature after preprocessing.")

        tr_idx, va_idx = self._split(y_task, task, split_seed)
        w_tr, w_va = ((None, None) if sample_weight is None
                      else (sample_weight[tr_idx], sample_weight[va_idx]))
        bs = (training.auto_batch_size(tr_idx.size) if self.batch_size == "auto"
              else int(self.batch_size))
        cfg = training.TrainConfig(
            depth=self.max_depth, n_branches=self.n_branches,
            leaf_budget=None if self.leaf_budget is None else float(self.leaf_budget),
            n_restarts=int(self.n_restarts), stage1_epochs=int(self.stage1_epochs),
            max_epochs=int(self.max_epochs), patience=int(self.patience),
            tau=float(self.temperature), lr_features=float(self.lr_features),
            lr_thresholds=float(self.lr_thresholds), lr_masks=float(self.lr_masks),
            lr_leaves=float(self.lr_leaves), batch_size=bs,
            feature_init=self.feature_init, device=str(device),
            verbose=self.verbose)
        state, info = training.train_mbndt(
            xt_fit[tr_idx], y_task[tr_idx], xt_fit[va_idx], y_task[va_idx], task, n_outputs,
            cfg, torch_seed, w_tr, w_va)
        if not np.isfinite(info["val_loss"]):
            warnings.warn(
                f"{type(self).__name__} training diverged (the validation loss was never "
                "finite), so the tree is its random initialization; lower the learning "
                "rates (lr_features, lr_thresholds, lr_masks, lr_leaves).",
                ConvergenceWarning, stacklevel=user_stacklevel())

        from ._model import torch_hard_branches
        from ._prune import build_tree

        branches = torch_hard_branches(state, xt, self.max_depth, self.n_branches,
                                       self.temperature)
        impute = {int(k): float(v) for k, v in numeric_impute_values(ct).items()}
        self.tree_ = build_tree(state, branches, xt, raw, feature_map(ct), ct, kinds,
                                impute, self.max_depth, self.n_branches, self.temperature,
                                leaf_value, len(kinds))
        self.preprocessor_ = ct
        self.model_state_ = state
        held_out = not np.array_equal(tr_idx, va_idx)
        self.train_info_ = {**info, "device": cfg.device, "n_train_rows": int(tr_idx.size),
                            "n_validation_rows": int(va_idx.size) if held_out else 0}
        self.n_leaves_ = self.tree_.n_leaves
        self.n_nominal_leaves_ = int(self.n_branches)**int(self.max_depth)
        return self

    def _split(self, y_task, task, seed):
        n = y_task.shape[0]
        idx = np.arange(n)
        n_val = int(round(self.validation_fraction * n))
        stratify = None if task == "regression" else y_task
        alone = np.empty(0, dtype=idx.dtype)
        if stratify is not None:
            # A class of one row cannot be stratified: it trains, and the
            # other classes are split as usual.
            counts = np.bincount(stratify)
            single = counts[stratify] == 1
            alone, idx, stratify = idx[single], idx[~single], stratify[~single]
            n_val = int(round(self.validation_fraction * idx.shape[0]))
            counts = counts[counts > 1]
            too_small = (counts.size == 0 or n_val < counts.size
                         or idx.shape[0] - n_val < counts.size)
        else:
            too_small = n_val < 2 or n - n_val < 2
        if self.validation_fraction == 0 or too_small:
            # Tiny data: early-stop on the training rows themselves.
            return np.arange(n), np.arange(n)
        tr, va = train_test_split(idx, test_size=n_val, random_state=seed, stratify=stratify)
        return np.sort(np.r_[tr, alone]), np.sort(va)

    # ------------------------------------------------------------- inference
    def apply(self, X):
        """Index of the leaf (node id in ``tree_``) reached by every sample.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        ndarray of int, shape (n_samples,)
        """
        raw = self._validate_predict_input(X)
        return self.tree_.apply(raw)

    def decision_path(self, X):
        """Node indicator of the root-to-leaf path of every sample.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_samples, n_nodes)
            ``indicator[i, j]`` is 1 when sample ``i`` visits node ``j``.
        """
        raw = self._validate_predict_input(X)
        return self.tree_.decision_path(raw)

    def decision_path_length(self, X):
        """Number of tests evaluated for every sample (the paper's path length).

        Nodes whose training rows all took one branch were collapsed, so every
        counted test can send inputs to at least two children.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        ndarray of int, shape (n_samples,)
        """
        raw = self._validate_predict_input(X)
        return self.tree_.path_length(raw)

    def get_n_leaves(self):
        """Number of realized leaves of the exported (pruned) tree.

        Returns
        -------
        n_leaves : int
        """
        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    def get_depth(self):
        """Longest root-to-leaf path of the exported tree, in tests.

        Returns
        -------
        depth : int
        """
        check_is_fitted(self, "tree_")
        return self.tree_.max_depth


_COMMON_PARAMS_DOC = """
    Parameters
    ----------
    max_depth : int, default=4
        Depth D of the nominal tree (maximum number of tests per prediction).
    n_branches : int, default=3
        Maximum arity B of an internal node (B - 1 ordered thresholds).
    leaf_budget : float or None, default=16
        Target K of the soft effective leaf count; exceeding it is penalized by an
        augmented Lagrangian on ``[log L_soft - log K]_+``.  ``None`` disables it.
    n_restarts : int, default=5
        Random initializations trained together in stage 1; the one with the
        lowest validation loss continues in stage 2.
    max_epochs : int, default=500
        Maximum number of stage-2 epochs.
    stage1_epochs : int, default=40
        Length of the restart-selection stage, in which each restart stops
        on its own patience, ``max(1, patience // 3)`` epochs without a lower
        validation loss, and the restart with the lowest one continues.
        0 skips it: the first initialization continues, whatever
        ``n_restarts``.
    patience : int, default=25
        Stage-2 epochs without validation improvement before stopping.
    temperature : float, default=0.3
        Temperature tau of the cumulative-sigmoid soft binning, in units of the
        standardized (or rank-Gauss) features; positive and finite in float32
        (the network's precision).
    lr_features, lr_thresholds, lr_masks, lr_leaves : float
        Adam learning rates of the four parameter groups (by default 0.05,
        0.02, 0.05 and 0.05); positive, and at most float32's maximum / 10
        (Adam's first step).  A rate so large that training never reaches a
        finite validation loss leaves the random initialization, with a
        ``ConvergenceWarning``.
    batch_size : int or "auto", default="auto"
        Minibatch size; "auto" is a power of two near n/4, between 32 and 512,
        and at most the number of training rows.
    validation_fraction : float in [0, 1), default=0.2
        Fraction of the training rows held out (stratified for classification;
        the row of a class seen once trains) for restart selection and early
        stopping.  0, or data too small to split, early-stops on the training
        rows.
    rank_gauss : bool, default=False
        Map numeric columns through ``QuantileTransformer(output_distribution=
        "normal")`` instead of standard scaling.
    max_onehot_levels : int, default=10
        Categorical columns with at most this many levels (missing cells, one
        more indicator column, not counted) are one-hot encoded, others are
        target encoded, cross-fitted over 5 folds (fewer when there are
        fewer rows, or for classes fewer rows in the largest class; one-hot
        when not even two).
    feature_init : {"gain", "random"}, default="gain"
        Initial feature of every node.  "random" draws random feature logits;
        "gain" grows the initial tree top-down on the training rows, giving
        each node the feature whose B-way quantile split most reduces the
        (class-balanced Gini / squared-error) impurity: the best one for the
        first restart, a random one among the ~sqrt(p) best for the others.
        Gradient training then revises features, thresholds, masks and leaves
        jointly either way.
    device : str, default="cpu"
        Torch device used for training ("cpu", "cuda", ...; "auto": "cuda"
        when torch sees a GPU, else "cpu"; the one used is in
        ``train_info_["device"]``).  Prediction never uses torch.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, initialization and minibatch order
        (fits are reproducible on CPU).
    verbose : int, default=0
        1 prints a summary, 2 one line per epoch.
"""

_NOTES_DOC = """
    Notes
    -----
    Implementation choices where the paper leaves room:

    - Leaf budget: ``L_soft`` is the inverse Simpson index of the mean soft
      mass reaching each leaf (equal to ``B**D`` for a full tree with uniform
      routing); the paper's printed node-wise sum undercounts full trees.  The
      multiplier update (EMA 0.5, step 0.003, rho 0.03) follows the appendix and
      the multiplier carries over from stage 1 to stage 2.
    - Exported cut points are the boundaries of the masked hard routing
      (bisection on the masked argmax, not the learned thresholds), after
      train-path pruning, mapped to raw units through the inverse scaler and
      kept between the raw values of the training rows on either side, so the
      exported tree reproduces the network's hard routing on every training
      row.  Nodes left with one surviving branch are collapsed; path length
      counts real tests only.
    - Target-encoded columns are cross-fitted for training and use the
      deployment encoding (full-training-set encodings) for pruning and export.
    - On CPU, training runs single-threaded (restoring the torch setting).
    - ``sample_weight`` multiplies each row's loss term (normalized by the
      weight sum; for classification the class balancing uses weighted class
      totals) and weights the validation metrics used for restart selection
      and early stopping.  Rows of weight 0 are left out of preprocessing,
      training and pruning, as if dropped (the input checks and the reading
      of each column's kind, numeric or categorical, still see them).
      Preprocessing (imputation, scaling, encoders), the "gain" feature
      initialization and the validation split are otherwise unweighted.
"""

_COMMON_ATTRS_DOC = """
    tree_ : MultiwayTree
        The exported, pruned multiway tree (numpy arrays, raw feature units).
    n_leaves_ : int
        Realized leaves of ``tree_``.
    n_nominal_leaves_ : int
        ``n_branches ** max_depth``.
    preprocessor_ : ColumnTransformer
        Fitted preprocessing (imputation, scaling, encoders).
    model_state_ : dict of ndarray
        Trained network parameters (float64 numpy arrays).
    train_info_ : dict
        Diagnostics of training (epochs, selected restart, validation score,
        ``n_train_rows`` and ``n_validation_rows``: 0 when early stopping
        watched the training rows).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` had string column names.
"""


def _resolve_device(device):
    """The torch device name to train on: ``"auto"`` picks a GPU when there is one."""
    if device == "auto":
        import torch  # fit has imported it (see _import_training)

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


class MBNDTClassifier(ClassifierMixin, _BaseMBNDT):
    __doc__ = (
        """Multi-branch neural decision tree classifier (MBNDT).

    Binary problems use one logit per leaf and class-balanced binary cross
    entropy (as in the paper); multiclass problems use a logit vector per leaf
    and class-balanced cross entropy.  Early stopping monitors validation
    balanced accuracy.

    The balancing weighs each class by the inverse of its (weighted) total,
    so the leaf probabilities are those of classes made equally frequent, not
    the class frequencies of the data: on imbalanced data a rare class gets
    more probability than its share, and ``sample_weight`` that is constant
    within each class (e.g. from ``compute_sample_weight``) changes nothing.
    Wrap the classifier in ``CalibratedClassifierCV`` for probabilities of
    the data's own frequencies.
""" + _COMMON_PARAMS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, in the order of ``predict_proba``'s columns.
""" + _COMMON_ATTRS_DOC + _NOTES_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from clarytree.mbndt import MBNDTClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = MBNDTClassifier(random_state=0).fit(X, y)  # doctest: +SKIP
    >>> clf.predict(X[:3])  # doctest: +SKIP
""")

    _is_regressor = False

    @forgets_unfinished_fit
    def fit(self, X, y, sample_weight=None):
        """Train the tree on ``(X, y)`` and export it.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric and/or categorical features; missing values allowed.
            Categorical: a DataFrame's ``category`` and string columns (a
            category column whatever its levels' type, so integer codes can
            be declared levels) and object columns holding text.  Object
            columns of numbers, bools or ``Decimal`` values are numeric.
            polars DataFrames and pyarrow Tables are read as pandas ones.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative, finite row weights (None: all 1); see Notes.

        Returns
        -------
        self : MBNDTClassifier
        """
        validate_params(self)
        X, y = self._validate_fit_input(X, y)
        sample_weight = validate_sample_weight(sample_weight, X.shape[0])
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError("MBNDTClassifier requires at least two classes in y; got 1 class.")
        if n_classes == 2:
            task, n_out, target_type = "binary", 1, "binary"

            def leaf_value(logit):
                # exp(-logit) overflows to inf for a logit below about -709:
                # p is then exactly 0, as it should be.
                with np.errstate(over="ignore"):
                    p = 1.0 / (1.0 + np.exp(-logit[0]))
                return np.array([1.0 - p, p])
        else:
            task, n_out, target_type = "multiclass", n_classes, "multiclass"

            def leaf_value(logit):
                e = np.exp(logit - logit.max())
                return e / e.sum()
        return self._fit(X, y_idx, task, n_out, leaf_value, target_type, y_idx,
                         sample_weight)

    def predict_proba(self, X):
        """Class probabilities of the leaf each sample reaches.

        They are learned with the classes balanced (see the class notes), so
        a rare class reads more probable than its share of the data.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        leaves = self.apply(X)     # validates and checks fitted first
        return self.tree_.value[leaves]

    def predict(self, X):
        """Predicted class of every sample.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class MBNDTRegressor(RegressorMixin, _BaseMBNDT):
    __doc__ = (
        """Multi-branch neural decision tree regressor (extension of MBNDT).

    Scalar leaves trained with mean squared error on the standardized target;
    early stopping monitors validation R^2.
""" + _COMMON_PARAMS_DOC + """
    Attributes
    ----------
    y_mean_, y_std_ : float
        Mean and standard deviation used to standardize the target.
""" + _COMMON_ATTRS_DOC + _NOTES_DOC)

    _is_regressor = True

    @forgets_unfinished_fit
    def fit(self, X, y, sample_weight=None):
        """Train the tree on ``(X, y)`` and export it.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            As for :meth:`MBNDTClassifier.fit`.
        y : array-like of shape (n_samples,)
            Real-valued target (finite).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative, finite row weights (None: all 1); see Notes.

        Returns
        -------
        self : MBNDTRegressor
        """
        validate_params(self)
        X, y = self._validate_fit_input(X, y)
        sample_weight = validate_sample_weight(sample_weight, X.shape[0])
        y = np.asarray(y, dtype=np.float64)
        if np.isnan(y).any():
            # None in an object y passes scikit-learn's check and becomes NaN here.
            raise ValueError("Input y contains NaN (a missing target, e.g. None); "
                             "drop those rows")
        # Standardize on the rows that are trained on (weight > 0).
        y_fit = y if sample_weight is None else y[sample_weight > 0]
        mean, std = _target_moments(y_fit)
        self.y_mean_, self.y_std_ = mean, std
        z = (y - mean) / std

        def leaf_value(logit):
            return np.array([logit[0] * std + mean])

        return self._fit(X, z, "regression", 1, leaf_value, "continuous", z, sample_weight)

    def predict(self, X):
        """Value of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The columns of fit (by name for a DataFrame); missing values and
            unseen levels take the branches the tree sends them to.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        leaves = self.apply(X)
        return self.tree_.value[leaves, 0]
