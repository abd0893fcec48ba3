"""Column typing and the scikit-learn preprocessing pipeline of MBNDT (no torch).

Raw inputs (numpy arrays or pandas DataFrames with mixed types) are turned into
a *raw table*: numeric columns as float64 (NaN = missing) and categorical
columns as strings (missing = ``MISSING``).  A ``ColumnTransformer`` fitted on
training rows then builds the network input: median imputation (+ standard
scaling, or rank-Gauss), one-hot encoding of categoricals with at most
``max_onehot_levels`` levels and target encoding above.  ``feature_map`` records,
for every transformed column, the raw column it comes from, which is what lets
the exported tree test raw values.
"""

import decimal
import inspect
import numbers
import sys

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    QuantileTransformer,
    StandardScaler,
    TargetEncoder,
)

from .._preparation import (
    _column_name,
    complex_error,
    dates_error,
    holds_dates,
    is_period_dtype,
    refuse_unhashable,
    warn_numeric_text,
)

MISSING = "__missing__"
# A present level whose text is MISSING (refused in fit) reads as this at
# predict: an unseen level, not a missing value.
_RESERVED_AT_PREDICT = "\x00" + MISSING

_NUMERIC_TEXT_ADVICE = (
    "it is a categorical column (one level per value). To split it as a number, convert "
    "it first, e.g. X[{name}] = pd.to_numeric(X[{name}], errors='coerce') (entries that "
    "are not numbers become missing values); to keep it categorical and silence this, "
    "make it a pandas 'category' column.")


def _is_missing(v):
    if v is None:
        return True
    pd = sys.modules.get("pandas")
    if pd is not None and (v is pd.NA or v is pd.NaT):
        # pd.NA compares to NA (its truth value raises), so test it first.
        return True
    try:
        return bool(v != v)  # NaN of any float type
    except (TypeError, ValueError):
        return False


def _as_float(a):
    return np.asarray(a, dtype=np.float64)


def _column_is_numeric(col):
    """True when every non-missing entry of an object column is a real number.

    Bools count as the numbers 0 and 1, as a ``bool`` column does (a bool
    column with missing cells is an object column), and ``Decimal`` values
    (pandas' reading of SQL NUMERIC columns) as numbers, as they do for a
    pyarrow-backed column.
    """
    for v in col:
        if _is_missing(v):
            continue
        if not isinstance(v, (numbers.Real, np.bool_, decimal.Decimal)):
            return False
    return True


def _to_str_column(col, name=None, fitting=False):
    """``str`` of every value, ``MISSING`` for missing ones (an object array).

    ``col`` is a pandas Series or a 1-D array.  A present value whose text
    is ``MISSING`` must not read as a missing value: in fit (``fitting``)
    it is an error naming column ``name``, at predict an unseen level.
    """
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(col, pd.Series) \
            and isinstance(col.dtype, pd.CategoricalDtype):
        # Each category's own text, through the codes: converting the values
        # casts integer categories to float where a cell is missing ('1.0'
        # for 1), so a row's level would depend on the rest of its batch.
        codes = col.cat.codes.to_numpy()
        texts = np.array([str(c) for c in col.cat.categories] + [MISSING],
                         dtype=object)[codes]
        clash = (codes >= 0) & (texts == MISSING)
        if clash.any():
            texts[clash] = _present_text(MISSING, name, fitting)
        return texts
    if pd is not None and len(col) >= _FACTORIZE_MIN_ROWS:
        # Text columns: convert each distinct value once (a typed Series,
        # e.g. arrow strings, factorized as it is).  Only when every distinct
        # value is text, since factorizing equates 1, 1.0 and True, whose
        # texts differ.
        typed = isinstance(col, pd.Series) and col.dtype != object
        try:
            codes, uniques = pd.factorize(col.array if typed else np.asarray(col, dtype=object),
                                          use_na_sentinel=True)
        except TypeError:
            refuse_unhashable(col, name)
            raise
        uniques = list(uniques)
        if all(isinstance(u, str) for u in uniques):
            texts = [_present_text(str(u), name, fitting) for u in uniques]
            return np.array(texts + [MISSING], dtype=object)[codes]
    col = col.to_numpy(dtype=object) if hasattr(col, "to_numpy") else \
        np.asarray(col, dtype=object)
    # Refused at any length, as the factorizing branch does: str() of a
    # list would make it a level, and a longer batch would then fail.
    refuse_unhashable(col, name)
    out = np.empty(len(col), dtype=object)
    for i, v in enumerate(col):
        out[i] = MISSING if _is_missing(v) else _present_text(str(v), name, fitting)
    return out


def _present_text(text, name, fitting):
    # The text of a present value, kept apart from MISSING (see _to_str_column).
    if text != MISSING:
        return text
    if fitting:
        raise ValueError(f"column {name} has the level {MISSING!r}, which MBNDT uses for "
                         "missing values; rename that level")
    return _RESERVED_AT_PREDICT


# Columns from this many rows are converted per distinct value.
_FACTORIZE_MIN_ROWS = 256


def _is_text_dtype(dtype):
    # pandas' string dtypes ("string", and "str" of pandas >= 3): text only.
    return type(dtype).__name__ == "StringDtype"


def infer_column_kinds(X, estimator_name=None):
    """Return a list with ``"num"`` or ``"cat"`` for every column of ``X``.

    ``X`` is a 2-D numpy array (any dtype) or a pandas DataFrame.  Numeric dtypes
    are numeric; pandas string and category columns categorical (a category
    column whatever its levels' type, as HistGradientBoosting's "from_dtype"
    and CLARITree's read it: integer codes made categorical are meant as
    levels); an object column is numeric only when every non-missing value is
    a real number, a bool or a ``Decimal``.  A text column of a DataFrame whose
    values are (mostly) numbers written as text is categorical, with a warning
    (``warn_numeric_text``).
    """
    if hasattr(X, "dtypes") and hasattr(X, "iloc"):
        kinds = []
        for j in range(X.shape[1]):
            col = X.iloc[:, j]
            kind = col.dtype.kind
            name = _column_name(X.columns, j)
            _reject_non_real(kind, col.dtype, name)
            if kind in "iuf" or kind == "b":
                kinds.append("num")
            elif _is_text_dtype(col.dtype):
                kinds.append("cat")     # text even where every value is missing
                warn_numeric_text(col, name, estimator_name, _NUMERIC_TEXT_ADVICE.format(
                    name=name))
            elif hasattr(col, "cat"):
                kinds.append("cat")     # declared categorical by its dtype
            else:
                vals = col.to_numpy(dtype=object)
                if col.dtype == object:
                    _reject_dates(vals, name)
                kinds.append("num" if _column_is_numeric(vals) else "cat")
                if kinds[-1] == "cat":
                    warn_numeric_text(col, name, estimator_name, _NUMERIC_TEXT_ADVICE.format(
                        name=name))
        return kinds
    X = np.asarray(X)
    _reject_non_real(X.dtype.kind, X.dtype, "x[0]")
    if X.dtype.kind in "iufb":
        return ["num"] * X.shape[1]
    if X.dtype == object:
        for j in range(X.shape[1]):
            _reject_dates(X[:, j], _column_name(None, j))
    kinds = ["num" if _column_is_numeric(X[:, j]) else "cat" for j in range(X.shape[1])]
    _warn_numeric_text_array(X, kinds, estimator_name)
    return kinds


_NUMERIC_TEXT_ARRAY_ADVICE = (
    "it is a categorical column (one level per value). To split it as a number, pass "
    "the array as numbers, e.g. X.astype(float), with NaN where a value is missing.")


def _warn_numeric_text_array(X, kinds, estimator_name):
    # An array of numbers stored as text (np.loadtxt(..., dtype=str)) is
    # categorical by the rule above: say so, as for a DataFrame's text column.
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas ships with the test extras
        return
    for j, kind in enumerate(kinds):
        if kind == "cat":
            name = _column_name(None, j)
            warn_numeric_text(pd.Series(X[:, j], dtype=object), name, estimator_name,
                              _NUMERIC_TEXT_ARRAY_ADVICE)


_DATES_ESCAPE = " (or make it a pandas 'category' column to keep its values as levels)"


def _reject_non_real(kind, dtype, name):
    # Dates and durations are neither numbers nor levels: as levels every
    # timestamp would be its own category and new dates would all be unseen.
    if kind in "mM" or is_period_dtype(dtype):
        raise dates_error(name, f"has dtype {dtype}, which is not numeric", _DATES_ESCAPE)
    if kind == "c":
        raise complex_error(name, dtype)


def _reject_dates(values, name):
    # An object column of dates (datetime.date from a database, Timestamps,
    # Periods), as a datetime64 column.
    kind = holds_dates(values)
    if kind is not None:
        raise dates_error(name, f"holds {kind} objects, not numbers", _DATES_ESCAPE)


def raw_table(X, kinds, fitting=False):
    """Normalize ``X`` to a 2-D array with float numeric and str categorical columns.

    Returns a float64 array when every column is numeric, else an object array.
    ``fitting``: the training table, where a level spelled as ``MISSING`` is
    an error.
    """
    is_df = hasattr(X, "dtypes") and hasattr(X, "iloc")
    n, p = X.shape
    if all(k == "num" for k in kinds):
        if is_df:
            cols = [_numeric_column(_frame_column(X, j), _column_name(X.columns, j))
                    for j in range(p)]
            return np.column_stack(cols) if p else np.zeros((n, 0))
        X = np.asarray(X)
        if X.dtype.kind == "O":
            return np.column_stack([_numeric_column(X[:, j], _column_name(None, j))
                                    for j in range(p)])
        return X.astype(np.float64)
    out = np.empty((n, p), dtype=object)
    names = X.columns if is_df else None
    for j in range(p):
        if kinds[j] == "num":
            col = _frame_column(X, j) if is_df else np.asarray(X)[:, j]
            out[:, j] = _numeric_column(col, _column_name(names, j))
        else:
            col = X.iloc[:, j] if is_df else np.asarray(X)[:, j]
            out[:, j] = _to_str_column(col, _column_name(names, j), fitting)
    return out


def _frame_column(X, j):
    """Column ``j`` of a DataFrame: float64 for numeric dtypes, else objects.

    pandas' nullable dtypes (``Int64``, ``Float64``, ``boolean``) hold ``pd.NA``
    for missing entries; they become NaN here like any missing number.
    """
    col = X.iloc[:, j]
    if col.dtype.kind in "iufb":
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    return col.to_numpy(dtype=object)


def _numeric_column(col, name):
    col = np.asarray(col)
    if col.dtype.kind in "iufb":
        return col.astype(np.float64)
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        if _is_missing(v):
            out[i] = np.nan
        else:
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                raise ValueError(
                    f"column {name} was numeric in fit but holds a value that is not a "
                    f"number ({v!r} in row {i}); give it as numbers, with NaN or None "
                    "where it is missing") from None
            if np.isinf(out[i]):
                # text such as "inf" or "1e999", which the check for infinite
                # numbers does not read
                raise ValueError(
                    f"column {name} holds an infinite value ({v!r} in row {i}); missing "
                    "values must be NaN, infinite values are not supported")
    return out


def build_preprocessor(kinds, raw, y, max_onehot_levels, rank_gauss, target_type,
                       random_state):
    """Unfitted ``ColumnTransformer`` for a raw table with the given column
    kinds; ``y`` is the encoded target the target encoder will be fitted on."""
    num_idx = [j for j, k in enumerate(kinds) if k == "num"]
    cat_idx = [j for j, k in enumerate(kinds) if k == "cat"]
    if target_type == "multiclass" and np.unique(y).size <= 2:
        # The encoder knows only the classes its rows hold (those of weight
        # > 0): two of them are a binary target.
        target_type = "binary"
    folds = _cross_fit_folds(y, target_type)
    low, high = [], []
    for j in cat_idx:
        # Missing cells are encoded as one more category, but they are not a
        # level the user counts.
        levels = np.setdiff1d(np.unique(raw[:, j].astype(str)), [MISSING])
        # A target encoding needs two folds to cross-fit: where no class has
        # two rows, the column is one-hot encoded whatever its levels.
        (low if levels.size <= max_onehot_levels or folds < 2 else high).append(j)
    n = raw.shape[0]
    transformers = []
    if num_idx:
        steps = [("float", FunctionTransformer(_as_float)),
                 ("impute", SimpleImputer(strategy="median", keep_empty_features=True))]
        if rank_gauss:
            # Standardized first: the quantile transformer treats values
            # within 1e-7 (absolute) of a column's bounds as the bounds, so a
            # column whose spread is below that (a measurement in small
            # units) came out constant.  Ranks are unchanged by the scaling.
            steps.append(("scale", Pipeline([
                ("standardize", StandardScaler()),
                ("quantile", QuantileTransformer(
                    output_distribution="normal", n_quantiles=max(2, min(1000, n)),
                    random_state=random_state))])))
        else:
            steps.append(("scale", StandardScaler()))
        transformers.append(("num", Pipeline(steps), num_idx))
    if low:
        transformers.append(("onehot", OneHotEncoder(handle_unknown="ignore",
                                                     sparse_output=False), low))
    if high:
        transformers.append(("target", _target_encoder(target_type, folds, random_state),
                             high))
    # Arrays whatever the user's set_config(transform_output=...): training
    # reads numbers, and the inner steps name no output columns.
    return ColumnTransformer(transformers, sparse_threshold=0.0,
                             remainder="drop").set_output(transform="default")


def _cross_fit_folds(y, target_type):
    """Folds of the target encoder's cross fitting: 5, or as many as there are
    rows (for classes, rows of the largest class) where those are fewer."""
    y = np.asarray(y)
    largest = y.shape[0] if target_type == "continuous" else \
        np.unique(y, return_counts=True)[1].max(initial=0)
    return int(min(5, largest))


def _target_encoder(target_type, folds, random_state):
    """Cross-fitting ``TargetEncoder`` with ``folds`` shuffled, seeded folds on
    every sklearn version (stratified for classes)."""
    params = inspect.signature(TargetEncoder).parameters
    if params["random_state"].default == "deprecated":
        # scikit-learn >= 1.9 takes the shuffling through a CV splitter.
        from sklearn.model_selection import KFold, StratifiedKFold

        cls = KFold if target_type == "continuous" else StratifiedKFold
        cv = cls(n_splits=folds, shuffle=True, random_state=random_state)
        return TargetEncoder(target_type=target_type, cv=cv)
    return TargetEncoder(target_type=target_type, cv=folds, shuffle=True,
                         random_state=random_state)


def feature_map(ct):
    """Describe every output column of the fitted ``ColumnTransformer``.

    Returns a list of tuples ``(kind, raw_column, info)`` where ``kind`` is
    ``"num"`` (info: position inside the numeric block), ``"onehot"`` (info: the
    category) or ``"target"`` (info: ``(encoder_feature, class_index)``).
    """
    out = []
    for name, trans, cols in ct.transformers_:
        if name == "num":
            out.extend(("num", j, pos) for pos, j in enumerate(cols))
        elif name == "onehot":
            for j, cats in zip(cols, trans.categories_, strict=True):
                out.extend(("onehot", j, c) for c in cats)
        elif name == "target":
            n_cls = len(trans.classes_) if trans.target_type_ == "multiclass" else 1
            for f, j in enumerate(cols):
                out.extend(("target", j, (f, c)) for c in range(n_cls))
    return out


def onehot_levels(ct, raw_column):
    """Training levels of one-hot encoded raw column ``raw_column`` (missing as MISSING)."""
    for name, trans, cols in ct.transformers_:
        if name == "onehot" and raw_column in cols:
            return list(trans.categories_[list(cols).index(raw_column)])
    raise KeyError(f"raw column {raw_column} is not one-hot encoded")


def numeric_impute_values(ct):
    """Median used for missing values of every numeric raw column: {raw_col: value}."""
    for name, trans, cols in ct.transformers_:
        if name == "num":
            return dict(zip(cols, trans.named_steps["impute"].statistics_, strict=True))
    return {}


def numeric_forward(ct, pos, values):
    """Map raw (present) values of numeric block column ``pos`` to transformed units."""
    for name, trans, cols in ct.transformers_:
        if name == "num":
            scale = trans.named_steps["scale"]
            arr = np.zeros((len(values), len(cols)))
            arr[:, pos] = values
            return scale.transform(arr)[:, pos]
    raise KeyError("no numeric block")


def numeric_inverse(ct, pos, values):
    """Map transformed values of numeric block column ``pos`` back to raw units."""
    for name, trans, cols in ct.transformers_:
        if name == "num":
            scale = trans.named_steps["scale"]
            arr = np.zeros((len(values), len(cols)))
            arr[:, pos] = values
            return scale.inverse_transform(arr)[:, pos]
    raise KeyError("no numeric block")


def target_encoding_table(ct, info):
    """(categories, encoded values, value for unknown categories) of a target-encoded column."""
    f, c = info
    for name, trans, _ in ct.transformers_:
        if name == "target":
            if trans.target_type_ == "multiclass":
                n_cls = len(trans.classes_)
                enc = trans.encodings_[f * n_cls + c]
                default = float(np.asarray(trans.target_mean_)[c])
            else:
                enc = trans.encodings_[f]
                default = float(trans.target_mean_)
            return np.asarray(trans.categories_[f], dtype=object), np.asarray(enc), default
    raise KeyError("no target block")
