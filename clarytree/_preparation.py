"""From a user's table to the arrays the Cython core reads.

:class:`Preparation` plays the part of HistGradientBoosting's ``_BinMapper``:
fitted once per ``fit``, it turns ``(X, y, sample_weight)`` and the
estimator's parameters into

- column roles: regression features (numeric columns entering the leaf
  regressions), split-only features, categorical features;
- the *encoded matrix* that ``Tree.apply``/``Tree.predict`` read: float64,
  numeric columns as given (NaN where missing), a categorical column holding
  its level code 0..K-1 as a float, NaN for a missing or unseen level;
- the design matrix ``W = sqrt(w) * [1, z, y]`` (z the regression features
  standardized with the weighted training mean and standard deviation, a
  missing value counting as the mean, i.e. 0; y centred and divided by a
  power of two), the ridge diagonal and the leaf cost;
- the threshold pools and the bins of the *split columns*: a feature that
  has missing values in training gets one more bin, after its present
  values, for its missing rows; the splitter tries every threshold with the
  missing rows on both sides, keeps the better side with it (one candidate
  per threshold), and adds "missing versus present" as a candidate.

It is kept on the fitted estimator (small: roles, levels, pools) so that
``predict``, the exports and the path reuse its ``transform``.  Nothing in
here is needed by the core beyond plain arrays, and nothing in the core knows
pandas or parameter names.
"""

import datetime
import decimal
import numbers
import os
import sys
import warnings

import joblib
import numpy as np
import sklearn
from joblib import effective_n_jobs
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

from ._frames import as_pandas
from ._splitter import MISSING_LEFT
from ._thresholds import threshold_pool
from ._tree import MAX_CATEGORIES, TREE_UNDEFINED, Tree, bitset_codes, categories_bitset

# Ridge entry of the unpenalized intercept (times the lightest row weight when
# that is below 1): keeps the Gram matrix of an empty or one-row node positive
# definite without biasing the intercept (at any scale of sample_weight).
INTERCEPT_RIDGE = 1e-12
# Standard deviations below this fraction of a column's magnitude are treated
# as 1 (numerically constant columns).
STD_FLOOR = 1e-12
# Label of the level into which rare or excess levels are merged.
OTHER = "<other>"

# Kinds of split columns (one per feature).  PLAIN: no missing values in
# training.  MISSING_BIN: its bins are the present values' and a last bin
# for the missing rows (see the splitter's MISSING_LEFT).  A categorical
# feature is one LEVEL_SET column: its bins are the level codes plus, if it
# has missing values, a last bin for them, and the splitter searches subsets
# of them (prefixes of each node's order of its present levels, the missing
# bin tried on both sides of each: the splitter's level_missing).
PLAIN, MISSING_BIN, LEVEL_SET = 0, 1, 2
# A LEVEL_SET column with at most this many bins (levels + the missing bin)
# reports a split's set as a bit mask in its ``bin``; a wider one as the
# builder's ``set_words`` of the node (the splitter's MAX_SET_BINS).
MAX_SET_BINS = 63
# Rows per block when binning a column.
BIN_BLOCK = 1 << 16
# The most training rows: the builder's row orders are 32-bit integers.
MAX_ROWS = (1 << 31) - 1


# --------------------------------------------------------------------------
# Moments with power-of-two rescaling (unit equivariance)
# --------------------------------------------------------------------------


def _pow2_magnitude(a, axis=None):
    """Power of two near ``max |a|`` (1 where that is 0): dividing by it is exact."""
    top = np.max(np.abs(a), axis=axis, initial=0.0)
    return np.exp2(np.floor(np.log2(np.where(top > 0, top, 1.0))))


def _column_moments(X, columns):
    """Means and standard deviations of ``X[:, columns]`` (1 for constant columns).

    Computed on the columns divided by a power of two near their magnitude,
    so huge values do not overflow the squares and tiny ones do not count as
    constant, with numpy's arithmetic (a pairwise sum / n, then the pairwise
    sum of squared deviations / n): for ordinary data bitwise
    ``X[:, columns].mean(0)`` and ``.std(0)``.  One column at a time, so
    the temporaries are one column, not a copy of them all.
    """
    columns = np.asarray(columns, dtype=np.intp)
    n, k = X.shape[0], columns.shape[0]
    mean, std = np.empty(k), np.empty(k)
    for j, f in enumerate(columns):
        x = X[:, f]
        # max |x| without an |x| temporary: max(max x, -min x).
        top = max(x.max(initial=0.0), -x.min(initial=0.0))
        scale = np.exp2(np.floor(np.log2(top if top > 0 else 1.0)))
        scaled = np.divide(x, scale)            # contiguous: numpy sums pairwise
        centre = np.add.reduce(scaled) / n
        deviation = np.subtract(scaled, centre, out=scaled)
        np.multiply(deviation, deviation, out=deviation)
        spread = np.sqrt(np.add.reduce(deviation) / n)
        mean[j] = centre * scale
        std[j] = 1.0 if spread < STD_FLOOR else spread * scale
    return mean, std


def _in_threads(func, items, n_workers):
    """``[func(item) for item in items]``, on ``n_workers`` threads when > 1.

    For per-column numpy work that releases the GIL (quantiles, searches,
    sorts); every item is computed on its own, so the results are the same
    bits for any number of workers.
    """
    items = list(items)
    if n_workers <= 1 or len(items) <= 1:
        return [func(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(n_workers, len(items))) as pool:
        return list(pool.map(func, items))


def _dot(a, b):
    """``a @ b`` for 1-d float arrays as numpy's pairwise sum of the products.

    A BLAS dot product splits long sums between its threads, so its last
    bits would depend on the BLAS thread count; this does not.
    """
    return float(np.add.reduce(np.multiply(a, b)))


def _weighted_moments(x, w):
    """Weighted mean and standard deviation of one column, NaN rows left out.

    ``w=None`` weighs every row 1.  A column without present values has mean
    0 and standard deviation 1.
    """
    present = ~np.isnan(x)
    if not present.all():
        x = x[present]
        w = None if w is None else w[present]
    if x.shape[0] == 0:
        return 0.0, 1.0
    scale = float(_pow2_magnitude(x))
    scaled = x / scale
    if w is None:
        mean, std = scaled.mean(), scaled.std()
    else:
        total = w.sum()
        mean = _dot(w, scaled) / total
        std = np.sqrt(_dot(w, (scaled - mean) ** 2) / total)
    return mean * scale, (1.0 if std < STD_FLOOR else std * scale)


def _target_centre_scale(y, w=None):
    """``(mean(y), s)`` with ``s`` a power of two near ``max |y - mean(y)|``."""
    magnitude = _pow2_magnitude(y)
    scaled = y / magnitude
    centre = scaled.mean() if w is None else _dot(w, scaled) / w.sum()
    return float(centre * magnitude), float(_pow2_magnitude(scaled - centre) * magnitude)


# --------------------------------------------------------------------------
# Column specifications
# --------------------------------------------------------------------------


def _is_frame(X):
    return hasattr(X, "columns") and hasattr(X, "iloc") and hasattr(X, "dtypes")


def check_has_columns(X, estimator_name):
    """Refuse a table without columns with scikit-learn's own wording.

    ``check_array`` names the problem for a 2-d array of no columns, but a
    DataFrame of no columns fails inside numpy ("at least one array or dtype
    is required").
    """
    if _is_frame(X) and X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={tuple(X.shape)}) while a "
                         f"minimum of 1 is required by {estimator_name}.")


def check_row_count(X, estimator_name):
    """Refuse more rows than the tree builder indexes, before any copy of them.

    Its row orders are 32-bit integers.
    """
    shape = getattr(X, "shape", None)
    n_rows = shape[0] if shape is not None and len(shape) > 0 else None
    if isinstance(n_rows, numbers.Integral) and n_rows > MAX_ROWS:
        raise ValueError(f"X has {n_rows} rows; {estimator_name} fits at most {MAX_ROWS} "
                         "(2**31 - 1) rows: fit on a sample of them")


def _column_name(names, j):
    return repr(str(names[j])) if names is not None else f"x[{j}]"


def _infinity_error(columns):
    """The error for infinite values in X, naming the columns (a list of names)."""
    return ValueError(f"Input X contains infinity in column(s) {', '.join(columns)}; "
                      "missing values must be NaN, infinite values are not supported")


def _resolve_columns(spec, parameter, n_features, feature_names):
    """Indices named by a list of indices, a list of names or a boolean mask
    (or a set of indices or names: the result is sorted anyway)."""
    if isinstance(spec, (set, frozenset)):
        spec = list(spec)
    spec = np.atleast_1d(np.asarray(spec))
    if spec.size == 0:
        return np.empty(0, dtype=np.intp)
    if spec.dtype.kind in "US" or spec.dtype == object:
        if feature_names is None:
            raise ValueError(
                f"{parameter} given by name requires X with column names "
                "(a pandas DataFrame)")
        lookup = {str(name): i for i, name in enumerate(feature_names)}
        unknown = [str(s) for s in spec if str(s) not in lookup]
        if unknown:
            raise ValueError(f"{parameter} names not in X: {unknown}")
        return _unique_columns(np.array([lookup[str(s)] for s in spec], dtype=np.intp),
                               parameter, feature_names)
    if spec.dtype == bool:
        if spec.shape[0] != n_features:
            raise ValueError(f"boolean {parameter} must have {n_features} entries, "
                             f"got {spec.shape[0]}")
        return np.flatnonzero(spec)
    if spec.dtype.kind in "iu":
        idx = spec.astype(np.intp)
        if np.any((idx < -n_features) | (idx >= n_features)):
            raise ValueError(f"{parameter} indices must lie in [-{n_features}, "
                             f"{n_features}) (negative ones count from the end)")
        return _unique_columns(np.where(idx < 0, idx + n_features, idx), parameter,
                               feature_names)
    raise TypeError(
        f"{parameter} must be a list of column indices, names or a boolean mask")


def _unique_columns(idx, parameter, feature_names):
    # A column listed twice (directly, or by index and by a negative index)
    # is a mistake in the list, not a request: say which one.
    unique, counts = np.unique(idx, return_counts=True)
    if np.any(counts > 1):
        twice = [str(feature_names[i]) if feature_names is not None else int(i)
                 for i in unique[counts > 1]]
        raise ValueError(f"{parameter} lists column(s) {twice} more than once")
    return unique


def _dtype_is_categorical(dtype):
    """pandas ``category``, ``object``, ``string`` and ``bool`` columns.

    Arrow decimals (``decimal128(...)[pyarrow]``, whose numpy kind is ``O``)
    are numbers.
    """
    kind = getattr(dtype, "kind", None)
    name = str(dtype)
    return not is_period_dtype(dtype) and not name.startswith("decimal") and (
        name == "category" or name.startswith("string") or name == "boolean"
        or kind in ("O", "b", "U", "S"))


def column_is_categorical(column):
    """Whether "from_dtype" makes the pandas ``column`` categorical.

    By its dtype (see ``_dtype_is_categorical``), except an ``object`` column
    of ``decimal.Decimal`` numbers: pandas reads SQL ``NUMERIC`` and Parquet
    decimal columns so, and they are numbers.
    """
    return _dtype_is_categorical(column.dtype) and not (
        column.dtype == object and holds_decimals(column.array))


def holds_decimals(column):
    """Whether an object column's present values are all ``decimal.Decimal``
    (and there is one)."""
    return _inferred_kind(column, decimal.Decimal) == "decimal"


def _inferred_kind(column, types):
    """pandas' inferred kind of an object column's values (``infer_dtype``),
    or None when its first present values are not all of ``types``.

    The first values decide whether the whole column is looked at (in C),
    so that a text column costs little.
    """
    import pandas as pd

    head = np.asarray(column[:HEAD_VALUES], dtype=object)
    head = head[~_missing_mask(head)]
    if head.shape[0] == 0 or not all(isinstance(v, types) for v in head):
        return None
    return pd.api.types.infer_dtype(np.asarray(column, dtype=object), skipna=True)


def is_period_dtype(dtype):
    """pandas ``period[...]`` (its kind is ``O``, but its values are times)."""
    return type(dtype).__name__ == "PeriodDtype"


def dates_error(name, what, escape=" or declare it in categorical_features"):
    """The error for a column of dates or times, which is neither numbers nor levels.

    As levels every date would be its own category and new dates would all
    be unseen; ``what`` says what the column is ("has dtype ..., which is
    not numeric").
    """
    return ValueError(f"column {name} {what}; encode it as numbers (e.g. days since a "
                      f"date, or the month){escape}")


def level_without_literal(levels):
    """The first level that is neither text, a number nor a bool (an
    ``Interval`` of ``pd.cut``, a ``Period``), which JSON and generated source
    cannot write; None when there is none."""
    for v in levels:
        v = _python_scalar(v)
        if not isinstance(v, (str, int, float)):
            return v
    return None


def date_column_description(column):
    """How a pandas column is dates or times ("has dtype ...", "holds date
    objects"), or None when it is not."""
    if column.dtype.kind in "mM" or is_period_dtype(column.dtype):
        return f"has dtype {column.dtype}"
    kind = holds_dates(column.array) if column.dtype == object else None
    return None if kind is None else f"holds {kind} objects"


def holds_dates(column):
    """What kind of dates an object column holds (``'date'``, ``'datetime'``,
    ``'time'``, ``'period'``...), or None when its values are not all such."""
    import pandas as pd

    kind = _inferred_kind(column, (datetime.date, datetime.time, np.datetime64, pd.Period))
    return kind if kind in ("date", "datetime", "datetime64", "time", "period") else None


def _not_numeric_message(values, name, fitting):
    """Why a numeric column's values failed to convert, naming an offender."""
    values = np.asarray(values, dtype=object)
    example = ""
    for row in np.flatnonzero(~_missing_mask(values)):
        v = values[row]
        try:
            float(v)
        except (TypeError, ValueError):
            example = f" ({v!r} in row {row})"
            break
    if fitting:
        return (f"column {name} is not numeric{example}; declare it in "
                "categorical_features (or encode it as numbers)")
    return (f"column {name} was numeric in fit but holds a value that is not a "
            f"number{example}; give it as numbers, with NaN or None where it is missing")


# Share of a text column's present values that must read as numbers for
# the column to look like a numeric one whose dtype a few stray entries
# (a "?" or "n/a" marker, a typo) turned into text.
NUMERIC_TEXT_SHARE = 0.9
# Or: at least half of them numbers, with many distinct values, and the rest
# at most this many distinct entries (a missing-value marker used often: 19%
# "?" in a lab measurement).
MARKER_LEVELS = 2
MARKER_MIN_NUMBERS = 10


def warn_numeric_text(column, name, estimator_name, advice=None):
    """Warn when a text column inferred categorical holds (mostly) numbers.

    A CSV column with one "?" among numbers arrives as text, and "from_dtype"
    would split it as a categorical column with one level per value, which
    is rarely what was meant.  It looks numeric when at least 90% of its
    present values are numbers, or at least half are, of at least 10
    distinct values, and the rest are one or two markers repeated.  Only
    ``object`` and ``string`` columns are looked at (``category`` and
    ``bool`` are categorical by choice), first on a sample so that a text
    column costs little.  ``advice`` replaces the closing sentences (what
    to do about it).
    """
    import pandas as pd

    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype) or not (
            getattr(dtype, "kind", None) in ("O", "U", "S") or str(dtype).startswith("string")):
        return
    # Most text columns fail at once on their first values (a few
    # microseconds, where pandas' own parsing costs a millisecond a column).
    # (The head only: converting a whole arrow string column to objects
    # costs more than the check.)
    if not _head_may_be_numeric(np.asarray(column.array[:HEAD_VALUES], dtype=object)):
        return
    values = column[column.notna()]
    if values.shape[0] == 0:
        return
    objects = values.astype(object)
    # True/False (a bool column with missing values is an object column)
    # are levels, not numbers, although pandas reads them as 1 and 0.
    parsed = pd.to_numeric(objects, errors="coerce")
    numbers_ = parsed.notna().to_numpy() & ~objects.map(_is_bool).to_numpy(dtype=bool)
    n_numbers, n_present = int(numbers_.sum()), numbers_.shape[0]
    others = pd.unique(values[~numbers_].astype(str))
    if n_numbers < NUMERIC_TEXT_SHARE * n_present and not (
            2 * n_numbers >= n_present and len(others) <= MARKER_LEVELS
            and parsed[numbers_].nunique() >= MARKER_MIN_NUMBERS):
        return
    if n_numbers == n_present:
        text = objects.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        what = ("numbers stored as text" if text.any()
                else "numbers in a column of dtype object")
    else:
        shown = ", ".join(repr(v) for v in others[:3]) + (", ..." if len(others) > 3 else "")
        what = (f"text, yet {n_numbers} of its {n_present} present values are numbers "
                f"(the others: {shown})")
    if advice is None:
        advice = (
            "categorical_features='from_dtype' makes it a categorical column (one level "
            f"per value). To split it as a number, convert it first, e.g. X[{name}] = "
            f"pd.to_numeric(X[{name}], errors='coerce') (entries that are not numbers "
            "become missing values); to keep it categorical, name it in "
            "categorical_features.")
    prefix = f"{estimator_name}: " if estimator_name else ""
    warnings.warn(f"{prefix}column {name} holds {what}, so {advice}", UserWarning,
                  stacklevel=user_stacklevel())


HEAD_VALUES = 64


def _head_may_be_numeric(values):
    """Whether the head of a column could pass either rule of
    :func:`warn_numeric_text` (a text column usually fails it at once)."""
    present = values[~_missing_mask(values)]
    few = (1.0 - NUMERIC_TEXT_SHARE) * len(present)
    failures = 0
    markers = set()
    for v in present:
        try:
            if _is_bool(v):
                raise TypeError
            float(v)
        except (TypeError, ValueError):
            failures += 1
            markers.add(str(v))
            if 2 * failures > len(present) or (failures > few
                                               and len(markers) > MARKER_LEVELS):
                return False
    return True


def _package_dir(module):
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


# Frames a warning should not name: ours, scikit-learn's (its fit wrapper,
# or the model-selection helper the user called) and joblib's (the CV tasks'
# sequential runner).
_LIBRARY_DIRS = (_package_dir(sys.modules[__package__]), _package_dir(sklearn),
                 _package_dir(joblib))


def user_stacklevel():
    """``stacklevel`` that makes the caller's ``warnings.warn`` name the first
    frame outside clarytree, scikit-learn and joblib (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


def _warn_levels_matching(estimator_name, name, values, known, key, lead, consequence,
                          advice):
    """Warn that a categorical column's ``values``, none of them a level of
    fit, equal some of the ``known`` levels once both are read by ``key``
    (None: a value it does not read); nothing when none does (genuinely new
    levels).  Returns whether it warned."""
    try:
        sample = list(dict.fromkeys(values))
    except TypeError:                       # unhashable values: no level matches
        return False
    keys = {}
    for level in known:
        if (k := key(level)) is not None:
            keys[k] = level
    matched = [(v, keys[k]) for v in sample if (k := key(v)) is not None and k in keys]
    if not matched:
        return False
    shown = ", ".join(f"{v!r} for {k!r}" for v, k in matched[:3])
    warnings.warn(
        f"{estimator_name}: column {name} holds none of the levels seen in fit{lead} "
        f"({shown}{', ...' if len(matched) > 3 else ''}), {consequence}. {advice}",
        UserWarning, stacklevel=user_stacklevel())
    return True


def warn_levels_matching_as_numbers(estimator_name, name, values, known, what,
                                    consequence, advice):
    """:func:`_warn_levels_matching` of levels equal as numbers (``1`` or
    ``'1.0'`` for ``'1'``); ``what`` says how the types differ."""
    return _warn_levels_matching(
        estimator_name, name, values, known,
        lambda v: None if _is_bool(v) else _level_key(v), f": {what}", consequence, advice)


def warn_levels_spelled_otherwise(estimator_name, name, values, known, consequence,
                                  remedy):
    """:func:`_warn_levels_matching` of text levels equal up to case or
    surrounding spaces ('red ' for 'Red': another source, or a cleaning step
    applied to one file only)."""
    return _warn_levels_matching(
        estimator_name, name, values, known,
        lambda v: v.strip().casefold() if isinstance(v, str) else None,
        ", but its values equal levels of fit up to case or surrounding spaces",
        consequence, f"To use the column, {remedy}.")


def warn_levels_of_another_kind(estimator_name, name, values, known, fit_kind, now_kind,
                                consequence, advice):
    """Warn that a categorical column holds ``now_kind`` ("numbers" or
    "text") where fit saw ``fit_kind`` levels, none equal even as numbers:
    text levels given as codes 0, 1, ... (an encoding step applied to the
    new rows only) lose the column as surely as a type mismatch does."""
    shown = list(dict.fromkeys(values))
    warnings.warn(
        f"{estimator_name}: column {name} holds none of the levels seen in fit: fit saw "
        f"{fit_kind} ({_first_three(known)}), this column holds {now_kind} "
        f"({_first_three(shown)}), {consequence}. {advice}",
        UserWarning, stacklevel=user_stacklevel())


def recoded_kind(values, known):
    """How text levels of fit came back recoded, or None.

    "numbers" when every value reads as a number and no level of fit does
    (codes 0, 1, ..., also written as text, as a CSV of the encoded column
    reads), "bools" when every value is a bool and the levels are not the
    text of flags ('yes'/'no' given as True/False): either loses the column.
    """
    if all(map(reads_as_number, values)) and not any(map(reads_as_number, known)):
        return "numbers"
    if all(map(_is_bool, values)) and not _flag_text(known):
        return "bools"
    return None


def _first_three(values):
    return ", ".join(map(repr, values[:3])) + (", ..." if len(values) > 3 else "")


def reads_as_number(value):
    """Whether ``value`` (a level, often text) reads as a number."""
    if _is_bool(value):
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _level_key(value):
    """A level compared across types: as a number when it reads as one."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def complex_error(name, dtype):
    """The error for a complex column (numpy would drop its imaginary parts)."""
    return ValueError(f"column {name} has dtype {dtype}: complex data is not supported; "
                      "pass its real part or modulus")


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _flag_key(value):
    """True/False for a bool or the text of one (any case), else None."""
    if _is_bool(value):
        return bool(value)
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower())
    return None


def _flag_text(values):
    """Whether ``values`` are all text, each 'true' or 'false' in some case."""
    return bool(values) and all(isinstance(v, str) and _flag_key(v) is not None
                                for v in values)


def _missing_mask(values):
    """NaN, None, pandas NA/NaT entries of a 1-D array."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas ships with the test extras
        pd = None
    if pd is not None:
        return np.asarray(pd.isna(values), dtype=bool)
    if values.dtype.kind == "f":
        return np.isnan(values)
    return np.array([v is None or (isinstance(v, float) and v != v) for v in values],
                    dtype=bool)


def default_hist_bins(n_rows, lookahead):
    """The splitter's histogram limit (bins per feature) for ``n_rows`` rows.

    A greedy fit passes over each node once, and past 256 bins a sorted
    sweep costs it no more than a histogram.  A lookahead search sweeps a
    feature again at every completion, where a histogram is reused (siblings
    by subtraction): with up to an eighth of the rows in bins it stays
    several times faster (n_thresholds=256 on 20,000 rows: 3.6 s against
    17 s; every midpoint of values rounded to 0.01: 12 s against 41 s).
    """
    if not lookahead:
        return 256
    return max(256, min(4096, n_rows // 8))


def _pandas_missing_as_nan(X):
    """``X`` with NaN for the pandas NA and NaT of its object and text columns.

    numpy's float conversion takes None and NaN but refuses ``pd.NA``, so an
    object or ``string`` column of numbers with NA would otherwise fail where
    the same column with None works.
    """
    fixed = {}
    for j, (_, column) in enumerate(X.items()):
        if column.dtype == object or (not isinstance(column.dtype, np.dtype)
                                      and getattr(column.dtype, "kind", "O") in "OUS"):
            missing = np.asarray(column.isna(), dtype=bool)
            if missing.any():
                values = column.to_numpy(dtype=object, copy=True)
                values[missing] = np.nan
                fixed[j] = values
    if not fixed:
        return X
    X = X.copy(deep=False)
    for j, values in fixed.items():
        X.isetitem(j, values)
    return X


# Columns from this many rows look their levels up per distinct value
# (factorized first); shorter ones value by value.
FACTORIZE_MIN_ROWS = 512

def _python_scalar(v):
    return v.item() if isinstance(v, np.generic) else v


def _factorize(values):
    """``(codes, uniques)`` of a column: -1 for missing entries."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None:
        # Typed columns (category, arrow string, bool, numeric codes)
        # factorize fastest as their own arrays, several times faster than
        # as objects; missing entries are -1 either way.
        if isinstance(values, pd.Series) and values.dtype != object:
            values = values.array
        else:
            values = np.asarray(values, dtype=object)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return np.asarray(codes, dtype=np.intp), list(uniques)
    values = np.asarray(values, dtype=object)   # pragma: no cover
    missing = _missing_mask(values)
    table, codes = {}, np.full(values.shape[0], -1, dtype=np.intp)
    for i, v in enumerate(values):
        if not missing[i]:
            codes[i] = table.setdefault(_python_scalar(v), len(table))
    return codes, list(table)


def refuse_unhashable(values, name):
    """Raise a ``TypeError`` naming column ``name`` at its first unhashable
    entry (a list, dict or array: a nested cell), if there is one.

    Called after hashing the column failed, so well-formed columns never pay
    for the scan.
    """
    for i, v in enumerate(values):
        try:
            hash(v)
        except TypeError:
            text = repr(v)
            if len(text) > 40:
                text = text[:37] + "..."
            raise TypeError(
                f"column {name} holds {type(v).__name__} values ({text} in row {i}); a "
                "column is read as numbers or as categorical levels, which are single "
                "values (text, numbers, bools, dates): flatten it (e.g. join a list's "
                "items into one string) or drop it") from None


def _sorted_levels_of(unique):
    try:
        return sorted(unique)
    except TypeError:   # mixed types: group by type, then by text
        return sorted(unique, key=lambda v: (type(v).__name__, str(v)))


def _lookup_codes(values, known, codes_of_known):
    """Code of each value (-1 when it is not among ``known``)."""
    if len(known) == 0:         # a column that had no level in training
        return np.full(len(values), -1, dtype=np.intp)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None:
        position = pd.Index(known, dtype=object).get_indexer(
            pd.Index(np.asarray(values, dtype=object), dtype=object))
    else:  # pragma: no cover
        table = {v: i for i, v in enumerate(known)}
        position = np.array([table.get(_python_scalar(v), -1) for v in values],
                            dtype=np.intp)
    codes = np.where(position >= 0, np.asarray(codes_of_known, dtype=np.intp)[position], -1)
    return codes


# --------------------------------------------------------------------------
# The prepared arrays of one fit
# --------------------------------------------------------------------------


def validate_sample_weight(sample_weight, n):
    """``sample_weight`` as a float64 array of shape ``(n,)``, or None.

    A scalar is broadcast.  Raises ``ValueError`` for a wrong shape, a
    non-numeric, non-finite or negative weight, or weights summing to zero.
    Shared by the core estimators and the MBNDT estimators.
    """
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    try:
        w = np.full(n, float(w)) if w.ndim == 0 else np.asarray(w, dtype=np.float64)
    except OverflowError:
        # (a Python int beyond float64, e.g. 10**400)
        raise ValueError("sample_weight must be finite: a weight is beyond float64's "
                         "range; divide the weights by a constant") from None
    except (TypeError, ValueError):
        raise ValueError("sample_weight must be numeric") from None
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite (no NaN or inf)")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative")
    total = w.sum()
    if not total > 0:
        raise ValueError("sample_weight must not be all zero: its sum must be positive")
    if not np.isfinite(total):
        raise ValueError(f"sample_weight sums to more than float64 holds (its largest "
                         f"weight is {w.max():g}); divide the weights by a constant")
    return w


class TooManyLevelsError(ValueError):
    """A categorical column with more levels than a split can hold, none merged.

    ``column`` is the column's name as messages write it, ``n_levels`` its
    count and ``hint`` what the column looks like instead, with a ``{drop}``
    field (see :func:`too_many_levels_hint`); the command line words its own
    advice from them.
    """

    def __init__(self, column, n_levels, message, hint=""):
        super().__init__(message + (". " + hint.format(drop="leave the column out of X")
                                    if hint else ""))
        self.column = column
        self.n_levels = n_levels
        self.hint = hint

    def __reduce__(self):
        # Picklable (a CV task in another process raises it to the caller).
        return _rebuild_too_many_levels, (self.column, self.n_levels, str(self), self.hint)


def _rebuild_too_many_levels(column, n_levels, text, hint):
    error = TooManyLevelsError(column, n_levels, text)
    error.hint = hint
    return error


def too_many_levels_hint(levels, n_rows, numbers=True):
    """What a column with too many levels more likely is, as advice, or "".

    Merging rare levels is the wrong remedy for a column of dates or times
    (a number in disguise) or of identifiers (one level per row): say so.
    The advice has a ``{drop}`` field for the caller's way of dropping a
    column (``str.format``).  With ``numbers`` False, numbers stored as text
    (which fit warns of anyway) get no advice here.
    """
    import pandas as pd

    head = [_python_scalar(v) for v in levels[:200]]
    if not head:
        return ""
    dates_advice = ("Its values look like dates or times: convert them to numbers (e.g. "
                    "days since a date, or the month) or {drop}")
    sample = [v for v in head if isinstance(v, str)]
    if len(sample) >= 0.9 * len(head):
        if sum(map(reads_as_number, sample)) >= 0.9 * len(sample):
            if not numbers:
                return ""
            return ("Its values are numbers stored as text: convert them to numbers "
                    "(e.g. pd.to_numeric(..., errors='coerce')) to split on them as such, "
                    "or {drop}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # pandas' format-inference notices
            try:
                dates = pd.to_datetime(pd.Series(sample), errors="coerce", format="mixed")
            except (ValueError, TypeError, OverflowError):  # pragma: no cover
                dates = pd.Series([pd.NaT])
        if dates.notna().mean() >= 0.9:
            return dates_advice
    elif sum(map(_is_date_like, head)) >= 0.9 * len(head):
        # Date, time and duration objects (a category column of them).
        return dates_advice
    if len(levels) >= 0.9 * n_rows:
        return ("Almost every row has its own level (an identifier?): {drop}, as it "
                "cannot generalize")
    if numbers and sum(map(_is_real_number, head)) >= 0.9 * len(head):
        return ("Its levels are numbers: to split on their values, pass it as a numeric "
                "column (not in categorical_features; a category dtype converted with "
                ".astype(float)), or {drop}")
    return ""


def _is_real_number(value):
    return isinstance(value, numbers.Real) and not _is_bool(value)


def _is_date_like(value):
    """Whether ``value`` is a date, time or duration object (Python's, numpy's
    or pandas')."""
    import pandas as pd

    return isinstance(value, (datetime.date, datetime.time, datetime.timedelta,
                              np.datetime64, np.timedelta64, pd.Period))


def describe_kind(values):
    """What ``values`` are, for messages: "text", "numbers", "dates or times",
    or "values of type ..." when they are none of these alone."""
    values = [_python_scalar(v) for v in values]
    if all(isinstance(v, str) for v in values):
        return "text"
    if all(_is_date_like(v) for v in values):
        return "dates or times"
    if all(map(_is_real_number, values)):
        return "numbers"
    return "values of type " + ", ".join(sorted({type(v).__name__ for v in values}))


class PreparedData:
    """What one fit hands to the core (not kept after ``fit``).

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        The encoded matrix of the training rows (zero-weight rows dropped).
    y : ndarray of shape (n_samples,)
        The target of those rows, in its own units.
    sample_weight : ndarray of shape (n_samples,) or None
        Positive row weights, None when every weight is 1.
    n_zero_weight : int
        Rows of the input dropped for their zero weight.
    W : ndarray of shape (n_samples, p + 1)
        ``sqrt(w) * [1, z, y']`` with ``y' = (y - y_mean) / y_scale``.
    ridge : ndarray of shape (p,)
    tss : float
        Weighted total sum of squares of ``y'``.
    bins, order, n_bins : ndarray
        Bins of the split columns, their sorted orders, bins per column.
    max_hist_bins : int
        The splitter's histogram limit the bins were made for.
    """


class Preparation:
    """Column roles, encoding, scaling, pools and bins of one estimator.

    Parameters are the estimator's (see its docstring).  ``fit`` validates
    the input, learns everything and returns a :class:`PreparedData`;
    ``transform`` encodes new rows for ``Tree.apply``/``Tree.predict``.
    """

    def __init__(self, *, leaf_model="linear", regression_features="auto",
                 categorical_features="from_dtype", min_category_weight=None,
                 n_thresholds=20, threshold_strategy="quantile", ridge_alpha=1e-5):
        self.leaf_model = leaf_model
        self.regression_features = regression_features
        self.categorical_features = categorical_features
        self.min_category_weight = min_category_weight
        self.n_thresholds = n_thresholds
        self.threshold_strategy = threshold_strategy
        self.ridge_alpha = ridge_alpha

    # -- input -------------------------------------------------------------

    def _categorical_mask(self, X, n_features, feature_names, estimator_name):
        spec = self.categorical_features
        mask = np.zeros(n_features, dtype=bool)
        if spec is None:
            return mask
        if isinstance(spec, str):
            if spec != "from_dtype":
                raise ValueError("categorical_features must be 'from_dtype', None, or "
                                 f"column indices, names or a boolean mask; got {spec!r}")
            if _is_frame(X):
                columns = [column for _, column in X.items()]
                mask[:] = [column_is_categorical(column) for column in columns]
                for j, column in enumerate(columns):
                    if mask[j]:
                        name = _column_name(feature_names, j)
                        if column.dtype == object and not hasattr(column, "cat"):
                            kind = holds_dates(column.array)
                            if kind is not None:
                                raise dates_error(name, f"holds {kind} objects, not numbers")
                        warn_numeric_text(column, name, estimator_name)
            return mask
        mask[_resolve_columns(spec, "categorical_features", n_features, feature_names)] = True
        return mask

    def _columns(self, estimator, X, y=None, reset=False):
        """Validate ``X`` (and ``y``).

        Returns ``(X, columns, y)``: ``X`` as float64 when no column is
        categorical (``columns`` None), else ``X`` None and the list of raw
        columns.
        """
        X = as_pandas(X)
        check_has_columns(X, type(estimator).__name__)
        if reset:
            check_row_count(X, type(estimator).__name__)
            if not (hasattr(X, "shape") and len(X.shape) == 2):
                X = check_array(X, dtype=None, ensure_all_finite=False)
            names = [str(c) for c in X.columns] if _is_frame(X) else None
            self.is_categorical_ = self._categorical_mask(X, X.shape[1], names,
                                                          type(estimator).__name__)
        if _is_frame(X) and X.shape[1] == self.is_categorical_.shape[0]:
            # numpy's own message for these ("could not be promoted") names
            # neither the column nor what to do, and pandas turns some of
            # them into nanoseconds without a word.
            for j, dtype in enumerate(X.dtypes):
                kind = getattr(dtype, "kind", None)
                if (kind in ("M", "m") or is_period_dtype(dtype)) \
                        and not self.is_categorical_[j]:
                    raise dates_error(_column_name([str(c) for c in X.columns], j),
                                      f"has dtype {dtype}, which is not numeric")
                if kind == "c":
                    raise complex_error(_column_name([str(c) for c in X.columns], j), dtype)
        if not self.is_categorical_.any():
            if getattr(getattr(X, "dtype", None), "kind", None) in ("O", "U", "S"):
                self._name_text_column(estimator, X)
            if _is_frame(X):
                X = _pandas_missing_as_nan(X)
            try:
                if y is None:
                    X = validate_data(estimator, X, dtype=np.float64, ensure_all_finite=False,
                                      order="C", reset=reset)
                else:
                    X, y = validate_data(estimator, X, y, y_numeric=True, dtype=np.float64,
                                         ensure_all_finite=False, order="C", reset=reset)
            except (TypeError, ValueError):
                if _is_frame(X):    # (X is still the caller's table here)
                    self._name_text_frame_column(X, reset)
                raise
            self._check_finite_numeric(estimator, X)
            return X, None, y
        if not _is_frame(X):
            # First: a Series, 1-D or 3-D input gets scikit-learn's own message,
            # not a feature count read from the wrong axis.
            X = check_array(X, dtype=None, ensure_all_finite=False, estimator=estimator)
        elif X.shape[0] == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a "
                             f"minimum of 1 is required by {type(estimator).__name__}.")
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        if _is_frame(X):
            columns = [column for _, column in X.items()]   # (iloc per column is slower)
        else:
            columns = [X[:, j] for j in range(X.shape[1])]
        if len(columns) == 0:
            raise ValueError("X has no columns")
        if y is not None:
            y = column_or_1d(check_array(y, ensure_2d=False, dtype=np.float64,
                                         input_name="y"), warn=True)
            check_consistent_length(columns[0], y)
        return None, columns, y

    def _name_text_column(self, estimator, X):
        """A text column of an array, named (numpy's message names only the value)."""
        if X.ndim != 2:
            return
        names = getattr(estimator, "feature_names_in_", None)
        for j in range(X.shape[1]):
            try:
                np.asarray(X[:, j], dtype=np.float64)
            except ValueError:      # text; other objects keep numpy's TypeError
                raise ValueError(
                    f"column {_column_name(names, j)} is not numeric; declare it in "
                    "categorical_features (a numpy array's columns are numeric unless "
                    "declared) or encode it as numbers") from None

    def _name_text_frame_column(self, X, fitting):
        """A DataFrame's first column that is not numbers, named (pandas'
        message names only the value); returns when every column converts."""
        names = [str(c) for c in X.columns]
        for j, (_, column) in enumerate(X.items()):
            try:
                column.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):
                raise ValueError(_not_numeric_message(column, _column_name(names, j),
                                                      fitting)) from None

    def _check_finite_numeric(self, estimator, X):
        bad = np.isinf(X).any(axis=0)
        if bad.any():
            names = getattr(estimator, "feature_names_in_", None)
            raise _infinity_error([_column_name(names, j) for j in np.flatnonzero(bad)])

    def _numeric_column(self, estimator, values, j, fitting=False):
        names = getattr(estimator, "feature_names_in_", None)
        try:
            if hasattr(values, "to_numpy"):
                out = values.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                missing = _missing_mask(values)
                out = np.full(values.shape[0], np.nan)
                out[~missing] = np.asarray(values[~missing], dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(_not_numeric_message(values, _column_name(names, j),
                                                  fitting)) from None
        if np.isinf(out).any():
            raise _infinity_error([_column_name(names, j)])
        return out

    def _encode(self, estimator, columns):
        n = columns[0].shape[0]
        X = np.empty((n, len(columns)), dtype=np.float64)
        for j, values in enumerate(columns):
            if self.is_categorical_[j]:
                try:
                    X[:, j] = self._encode_categorical(j, values)
                except TypeError:
                    refuse_unhashable(values, _column_name(
                        getattr(estimator, "feature_names_in_", None), j))
                    raise
                if np.isnan(X[:, j]).all():
                    self._warn_levels_of_another_type(estimator, j, values)
            else:
                X[:, j] = self._numeric_column(estimator, values, j)
        return X

    def _warn_levels_of_another_type(self, estimator, j, values):
        """Warn when no value is a level of fit only because of its type.

        Unseen levels follow the missing-value direction without a word (as
        in HistGradientBoosting), but a column whose every value misses only
        because fit saw ``'1'`` and predict gets ``1`` (a CSV read once with a
        stray text entry) would silently lose the column.
        """
        values = np.asarray(values, dtype=object)
        present = values[~_missing_mask(values)]
        known = self.levels_of_fit(j)
        if present.shape[0] == 0 or not known:
            return
        sample = present[:1000].tolist()
        known_is_text = [isinstance(v, str) for v in known]
        name = _column_name(getattr(estimator, "feature_names_in_", None), j)
        consequence = "so every row takes the missing-value direction at its splits"

        def warn_recoded(kind):
            warn_levels_of_another_kind(
                type(estimator).__name__, name, sample, known, "text", kind, consequence,
                f"Pass the column as fit saw it (categories_[{j}] lists its levels).")

        if all(known_is_text) and all(isinstance(v, str) for v in sample):
            if not warn_levels_spelled_otherwise(
                    type(estimator).__name__, name, sample, known, consequence,
                    f"spell its values as fit saw them (categories_[{j}])") \
                    and recoded_kind(sample, known) == "numbers":
                warn_recoded("numbers")     # codes written as text
            return
        if any(map(_is_bool, known)) or _flag_text(known):
            self._warn_flags_of_another_type(estimator, j, sample, known)
            return
        if all(known_is_text) and recoded_kind(sample, known) == "bools":
            warn_recoded("bools")
            return
        if any(known_is_text) and not all(known_is_text):
            return                          # levels of mixed types
        fit_text = known_is_text[0]
        if any(isinstance(v, str) == fit_text or _is_bool(v) for v in sample):
            return                          # same type: genuinely new levels
        names = getattr(estimator, "feature_names_in_", None)
        fit_kind, now_kind = describe_kind(known), describe_kind(sample)
        if warn_levels_matching_as_numbers(
                type(estimator).__name__, name, sample, known,
                f"fit saw {fit_kind}, this column holds {now_kind}", consequence,
                f"Pass it as {fit_kind}, as in fit" + (
                    f" (e.g. X[{name}].astype({'str' if fit_text else 'float'}))."
                    if names is not None else ".")):
            return
        warn_levels_of_another_kind(
            type(estimator).__name__, name, sample, known, fit_kind, now_kind, consequence,
            f"Pass the column as in fit (categories_[{j}] lists its levels).")

    def _warn_flags_of_another_type(self, estimator, j, sample, known):
        # A bool column whose values come as the text 'True'/'false' (a
        # JSON or CSV source), or text flags of fit given as bools: equal
        # as flags, matched by none of fit's levels.
        fit_bool = all(map(_is_bool, known))
        if fit_bool:
            if any(map(_is_bool, sample)) or not _flag_text(sample):
                return
            fit_kind, now_kind = "bool values", "text"
        elif all(map(_is_bool, sample)):
            fit_kind, now_kind = "text", "bool values"
        else:
            return
        name = _column_name(getattr(estimator, "feature_names_in_", None), j)
        conversion = ("map the text to bools (e.g. X[{0}].str.lower().map({{'true': True, "
                      "'false': False}}))" if fit_bool else "pass the text (e.g. "
                      "X[{0}].astype(str))").format(name)
        _warn_levels_matching(
            type(estimator).__name__, name, sample, known, _flag_key,
            f": fit saw {fit_kind}, this column holds {now_kind}",
            "so every row takes the missing-value direction at its splits",
            f"To use the column, {conversion}.")

    def levels_of_fit(self, j):
        """The levels column ``j`` matches at predict (those of ``categories_``
        and the ones merged into ``<other>``), or None for a numeric column."""
        lookup = self._lookup[j]
        return None if lookup is None else list(lookup[0])

    def _encode_categorical(self, j, values):
        known, codes_of_known = self._lookup[j]
        if hasattr(values, "cat") or len(values) >= FACTORIZE_MIN_ROWS:
            # Look up each distinct value once (a category column's
            # categories): hashing every row as a Python object costs several
            # times more on long columns.
            if hasattr(values, "cat"):
                raw, distinct = values.cat.codes.to_numpy(), list(values.cat.categories)
            else:
                raw, distinct = _factorize(values)
            distinct_codes = _lookup_codes(np.array(distinct + [None], dtype=object)[:-1],
                                           known, codes_of_known)
            codes = (np.where(raw >= 0, distinct_codes[np.maximum(raw, 0)], -1)
                     if distinct_codes.size else np.full(raw.shape[0], -1, dtype=np.intp))
        else:       # a few rows (one-row predicts): factorizing costs more
            values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) \
                else values
            codes = _lookup_codes(values, known, codes_of_known)
            codes[_missing_mask(values)] = -1
        return np.where(codes >= 0, codes, np.nan)

    def _learn_levels(self, estimator, j, values, weight):
        """Levels of categorical column ``j`` from the rows of positive weight.

        Returns the column's codes (float, NaN where missing), computed in
        the same pass.
        """
        names = getattr(estimator, "feature_names_in_", None)
        dtype_categories = values.cat.categories if hasattr(values, "cat") else None
        try:
            raw, uniques = _factorize(values)   # raw: index into uniques, -1 missing
        except TypeError:
            refuse_unhashable(values, _column_name(names, j))
            raise
        uniques = [_python_scalar(v) for v in uniques]
        if any(isinstance(v, float) and v in (np.inf, -np.inf) for v in uniques):
            # As in a numeric column (and no export could write the level).
            raise _infinity_error([_column_name(names, j)])
        if dtype_categories is not None:
            seen = set(uniques)
            levels = [_python_scalar(v) for v in dtype_categories
                      if _python_scalar(v) in seen]
        else:
            levels = _sorted_levels_of(uniques)
        position = {v: i for i, v in enumerate(levels)}
        to_level = np.array([position[v] for v in uniques], dtype=np.intp)
        present = raw >= 0
        codes = to_level[raw[present]]
        w_present = None if weight is None else weight[present]
        level_weight = np.bincount(codes, weights=w_present, minlength=len(levels))
        m = self.min_category_weight
        if m is None:
            if len(levels) > MAX_CATEGORIES:
                raise TooManyLevelsError(
                    _column_name(names, j), len(levels),
                    f"categorical column {_column_name(names, j)} has {len(levels)} levels, "
                    f"more than the {MAX_CATEGORIES} supported; set min_category_weight "
                    f"to merge rare levels into one '<other>' level (0 merges only those "
                    f"beyond the {MAX_CATEGORIES - 1} heaviest)",
                    too_many_levels_hint(levels, int(present.sum())))
            merged = np.zeros(len(levels), dtype=bool)
        else:
            merged = level_weight < m
            kept = np.flatnonzero(~merged)
            limit = MAX_CATEGORIES - (1 if merged.any() or kept.size > MAX_CATEGORIES else 0)
            if kept.size > limit:
                # Keep the heaviest levels (ties: level order), merge the rest.
                heavy = kept[np.argsort(-level_weight[kept], kind="stable")[:limit]]
                merged = np.ones(len(levels), dtype=bool)
                merged[heavy] = False
            if len(levels) > 1 and merged.all():
                self._warn_all_levels_merged(estimator, _column_name(names, j), levels,
                                             int(present.sum()), not present.all())
            elif len(levels) > MAX_CATEGORIES:
                self._warn_merged_column_looks_wrong(
                    estimator, _column_name(names, j), levels, int(merged.sum()),
                    int(present.sum()))
        kept_levels = [v for v, mg in zip(levels, merged, strict=True) if not mg]
        merged_levels = [v for v, mg in zip(levels, merged, strict=True) if mg]
        self.categories_[j] = np.array(kept_levels + ([OTHER] if merged_levels else []),
                                       dtype=object)
        self.merged_categories_[j] = merged_levels
        self._set_lookup(j)
        # Level index -> code (merged levels share the last code).
        final = np.empty(len(levels), dtype=np.float64)
        final[~merged] = np.arange(len(kept_levels))
        final[merged] = len(kept_levels)
        out = np.full(raw.shape[0], np.nan)
        out[present] = final[codes]
        return out

    def _warn_all_levels_merged(self, estimator, name, levels, n_rows, has_missing):
        # Every level under min_category_weight (an identifier, dates, a
        # threshold set too high): the column collapses to one level.
        hint = too_many_levels_hint(levels, n_rows).format(drop="leave the column out of X")
        warnings.warn(
            f"{type(estimator).__name__}: each of the {len(levels)} levels of categorical "
            f"column {name} has less than min_category_weight={self.min_category_weight} "
            "training weight, so all are merged into one '<other>' level and the column "
            + ("only separates missing values from the others" if has_missing
               else "cannot split") + (f". {hint}" if hint else ""),
            UserWarning, stacklevel=user_stacklevel())

    def _warn_merged_column_looks_wrong(self, estimator, name, levels, n_merged, n_rows):
        # Past the level cap, merging keeps the heaviest levels; for an
        # identifier those are single rows, which the level-set splits (levels
        # ordered by the node's residuals) group to fit noise, and dates
        # lose their order.  Say what the column looks like, as the error
        # without merging does (numbers stored as text have their own
        # warning).
        hint = too_many_levels_hint(levels, n_rows, numbers=False).format(
            drop="leave the column out of X")
        if not hint:
            return
        warnings.warn(
            f"{type(estimator).__name__}: categorical column {name} has {len(levels)} "
            f"levels; min_category_weight={self.min_category_weight} merged {n_merged} of "
            f"them into one '<other>' level and kept {len(levels) - n_merged}. {hint}",
            UserWarning, stacklevel=user_stacklevel())

    def _set_lookup(self, j):
        kept = list(self.categories_[j])
        merged = self.merged_categories_[j]
        if merged:
            kept = kept[:-1]
        self._lookup[j] = (kept + list(merged),
                           np.r_[np.arange(len(kept)), np.full(len(merged), len(kept))])

    # -- fit ---------------------------------------------------------------

    def _validate_weight(self, sample_weight, n):
        return validate_sample_weight(sample_weight, n)

    def encode(self, estimator, X, y, sample_weight=None):
        """Validate one training set and encode its columns (levels learned).

        The first half of :meth:`fit`, without moments, pools and bins: it
        raises whatever a fit on this table would raise about its values.

        Returns
        -------
        X_enc, y, sample_weight, n_zero_weight
            The encoded rows of positive weight, their target and weights
            (None when all 1), and the count of rows dropped for weight 0.
        """
        if y is None:
            raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the "
                             "target y is None")
        X_num, columns, y = self._columns(estimator, X, y, reset=True)
        y = np.ascontiguousarray(y, dtype=np.float64)
        n_samples = y.shape[0]
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity")
        w = self._validate_weight(sample_weight, n_samples)
        n_zero_weight = 0
        if w is not None:
            keep = w > 0
            n_zero_weight = int(n_samples - np.count_nonzero(keep))
            if not keep.all():     # zero weight: the row is dropped entirely
                y, w = y[keep], w[keep]
                if X_num is not None:
                    X_num = np.ascontiguousarray(X_num[keep])
                else:
                    columns = [c[keep] for c in columns]
            if np.all(w == 1.0):
                w = None
        n_features = estimator.n_features_in_
        self.n_features_in_ = n_features
        # Threads for the per-column work (the estimator's n_jobs, if any).
        n_jobs = getattr(estimator, "n_jobs", None)
        self._n_workers = 1 if n_jobs is None else int(effective_n_jobs(n_jobs))

        self.categories_ = [None] * n_features
        self.merged_categories_ = [None] * n_features
        self._lookup = [None] * n_features
        if X_num is None:
            X_enc = np.empty((y.shape[0], n_features))
            for j in range(n_features):
                if self.is_categorical_[j]:
                    X_enc[:, j] = self._learn_levels(estimator, j, columns[j], w)
                else:
                    X_enc[:, j] = self._numeric_column(estimator, columns[j], j,
                                                       fitting=True)
        else:
            X_enc = X_num
        return X_enc, y, w, n_zero_weight

    def fit(self, estimator, X, y, sample_weight=None, max_hist_bins=None, lookahead=False):
        """Validate and prepare one training set.

        Sets ``n_features_in_`` (and ``feature_names_in_``) on ``estimator``;
        ``max_hist_bins`` is the splitter's (see :meth:`bins`), None for
        :func:`default_hist_bins` of the rows and ``lookahead`` (kept in
        ``data.max_hist_bins``).

        Returns
        -------
        data : PreparedData
        """
        X_enc, y, w, n_zero_weight = self.encode(estimator, X, y, sample_weight)
        self._feature_names = getattr(estimator, "feature_names_in_", None)
        missing = np.isnan(X_enc).any(axis=0)
        n_features = self.n_features_in_
        self.missing_features_ = np.flatnonzero(missing)
        self._missing_set = set(self.missing_features_.tolist())
        self._split_columns = []
        for f in range(n_features):
            if self.is_categorical_[f]:
                self._split_columns.append((f, LEVEL_SET))
            elif missing[f]:
                self._split_columns.append((f, MISSING_BIN))
            else:
                self._split_columns.append((f, PLAIN))

        reg = self._regression_features(estimator, X_enc)
        self.regression_features_ = reg
        self.split_only_features_ = np.setdiff1d(np.arange(n_features), reg)

        if w is None and not missing[reg].any():
            mean, std = _column_moments(X_enc, reg)
        else:
            moments = [_weighted_moments(X_enc[:, f], w) for f in reg]
            mean = np.array([m for m, _ in moments], dtype=np.float64)
            std = np.array([s for _, s in moments], dtype=np.float64)
        self.mean_, self.std_ = mean, std
        # The builder sees (y - y_mean) / y_scale with y_scale a power of two:
        # every objective is homogeneous of degree 2 in y, so this is exact
        # and only keeps squares of very large or very small targets finite.
        y_mean, y_scale = _target_centre_scale(y, w)
        self.y_mean_, self.y_scale_ = y_mean, y_scale
        y_centred = (y - y_mean) / y_scale

        data = PreparedData()
        data.X = X_enc
        data.y = y
        data.sample_weight = w
        data.n_zero_weight = n_zero_weight
        data.W, data.ridge, data.tss = self._design(X_enc, y_centred, w, reg, mean, std)
        self._pools(X_enc, w)
        if max_hist_bins is None:
            max_hist_bins = default_hist_bins(X_enc.shape[0], lookahead)
        data.max_hist_bins = max_hist_bins
        data.bins, data.order, data.n_bins = self.bins(X_enc, max_hist_bins)
        return data

    def _regression_features(self, estimator, X):
        n_features = X.shape[1]
        names = getattr(estimator, "feature_names_in_", None)
        spec = self.regression_features
        if self.leaf_model != "linear":
            return np.empty(0, dtype=np.intp)
        if isinstance(spec, str) and spec == "auto":
            binary = np.all((X == 0.0) | (X == 1.0) | np.isnan(X), axis=0)
            return np.flatnonzero(~binary & ~self.is_categorical_)
        if spec is None:
            return np.empty(0, dtype=np.intp)
        if isinstance(spec, str):
            raise ValueError("regression_features must be 'auto', None, or column "
                             f"indices, names or a boolean mask; got {spec!r}")
        idx = _resolve_columns(spec, "regression_features", n_features, names)
        cat = idx[self.is_categorical_[idx]]
        if cat.size:
            cols = ", ".join(_column_name(names, j) for j in cat)
            raise ValueError(f"regression_features contains categorical column(s) {cols}: "
                             "categorical features are split-only")
        return idx

    def _design(self, X, y_centred, w, reg, mean, std):
        n = X.shape[0]
        p = 1 + reg.shape[0]
        W = np.empty((n, p + 1))
        root = None if w is None else np.sqrt(w)
        W[:, 0] = 1.0 if w is None else root
        for j, f in enumerate(reg):
            col = W[:, 1 + j]
            # (x - mean) / std column by column: no temporary copy of X.
            np.subtract(X[:, f], mean[j], out=col)
            col /= std[j]
            if root is not None:
                col *= root
            # A missing regression feature counts as its mean: 0 standardized.
            col[np.isnan(col)] = 0.0
        if w is None:
            W[:, p] = y_centred
            tss = _dot(y_centred, y_centred)
            total = n
        else:
            W[:, p] = y_centred * root
            tss = _dot(w, y_centred * y_centred)
            total = float(w.sum())
        ridge = np.full(p, total * float(self.ridge_alpha))
        # At most the lightest row's weight times 1e-12 (a leaf's Gram entry is
        # its weight): a fixed 1e-12 would penalize the intercept of rows
        # weighing 1e-9 each.  Weights of 1 and more keep 1e-12, so integer
        # weights still prepare exactly the repeated rows' problem.
        ridge[0] = INTERCEPT_RIDGE if w is None else INTERCEPT_RIDGE * min(1.0, float(w.min()))
        if not np.isfinite(ridge).all():
            raise ValueError(
                f"ridge_alpha={float(self.ridge_alpha):g} times the total sample weight "
                f"({total:g}) overflows float64; a ridge that strong leaves only the "
                "intercepts: use leaf_model='constant'")
        return W, ridge, tss

    def _pools(self, X, w):
        def pool(f):
            if self.is_categorical_[f]:
                return np.empty(0, dtype=np.float64)
            x = X[:, f]
            wf = w
            present = ~np.isnan(x)
            if not present.all():
                x = x[present]
                wf = None if w is None else w[present]
            return threshold_pool(x, self.n_thresholds, self.threshold_strategy, wf)

        self.thresholds_ = _in_threads(pool, range(X.shape[1]), self._n_workers)

    # -- split columns -----------------------------------------------------

    def split_columns(self):
        """``(feature, kind)`` of every split column, in search order."""
        return list(self._split_columns)

    def split_categorical(self):
        """1 for each split column searched by level sets (the splitter's flag)."""
        return np.array([kind == LEVEL_SET for _, kind in self._split_columns],
                        dtype=np.uint8)

    def split_missing(self):
        """1 for each split column with a missing bin (the splitter's flag)."""
        return np.array([kind == MISSING_BIN for _, kind in self._split_columns],
                        dtype=np.uint8)

    def split_level_missing(self):
        """1 for each level-set column whose last bin holds missing rows."""
        return np.array([kind == LEVEL_SET and f in self._missing_set
                         for f, kind in self._split_columns], dtype=np.uint8)

    def _n_values(self, f):
        """Number of present-value bins of feature ``f``."""
        if self.is_categorical_[f]:
            return len(self.categories_[f])
        return len(self.thresholds_[f]) + 1

    def bins(self, X, max_hist_bins=256):
        """Bins of the split columns of the encoded rows ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Encoded rows.
        max_hist_bins : int, default=256
            The splitter's histogram limit: sorted row orders are kept for
            every column only when some column has more bins (it is swept).

        Returns
        -------
        bins : ndarray of shape (n_samples, n_columns)
            uint8 when every column has at most 256 bins (the default pools
            and level sets), else uint16 up to 65536 bins, else int32.
        order : ndarray of shape (n_columns, n_samples) or (1, n_samples), int32
            Rows sorted by each column's bin, ties by row index (only the
            first column's when no column is swept).
        n_bins : ndarray of shape (n_columns,), int32
        """
        columns = self._split_columns
        n = X.shape[0]
        n_bins = np.empty(len(columns), dtype=np.int32)
        for c, (f, kind) in enumerate(columns):
            if kind == LEVEL_SET:
                n_bins[c] = self._n_values(f) + int(f in self._missing_set)
            else:
                n_bins[c] = self._n_values(f) + (1 if kind == MISSING_BIN else 0)
        most = int(n_bins.max(initial=1))
        dtype = np.uint8 if most <= 1 << 8 else np.uint16 if most <= 1 << 16 else np.int32
        bins = np.empty((n, len(columns)), dtype=dtype)
        order = np.empty((len(columns) if np.any(n_bins > max_hist_bins) else 1, n),
                         dtype=np.int32)
        n_workers = getattr(self, "_n_workers", 1)

        def column(c):
            f, kind = columns[c]
            out = np.empty(n, dtype=dtype) if n_workers > 1 else bins[:, c]
            if kind != LEVEL_SET and self.n_thresholds is None and n_bins[c] > max_hist_bins:
                self._swept_column_bins(X[:, f], f, kind, out, order[c])
                return out
            # In blocks of rows: the temporaries stay small beside the bins.
            for lo in range(0, n, BIN_BLOCK):
                hi = min(n, lo + BIN_BLOCK)
                out[lo:hi] = self._column_bins(X[lo:hi, f], f, kind)
            if c < order.shape[0]:
                order[c] = np.argsort(out, kind="stable")
            return out

        # With threads each column is binned on its own (contiguous) and
        # copied into the shared matrix afterwards, so no two threads write
        # the same cache lines.
        for c, out in enumerate(_in_threads(column, range(len(columns)), n_workers)):
            if n_workers > 1:
                bins[:, c] = out
        return bins, order, n_bins

    def _swept_column_bins(self, x, f, kind, out, order):
        """Bins (into ``out``) and bin order (into ``order``) of a swept column.

        With every midpoint a threshold (``n_thresholds=None``) a column has
        as many bins as distinct values, so a binary search of each row's
        value in the whole pool misses the caches on every row, and so does
        sorting the bins afterwards.  Instead the values are sorted once
        (NaN last, ties by row) and binned in that order, where consecutive
        searches touch the same part of the pool.  The value order is the
        bin order with ties by row index (what ``bins`` promises) unless a
        bin holds distinct values whose rows are out of index order; then
        the bins are sorted as the other columns' are.
        """
        x = np.ascontiguousarray(x)
        by_value = np.argsort(x, kind="stable")
        in_order = True
        last_bin = last_row = -1
        for lo in range(0, x.shape[0], BIN_BLOCK):
            rows = by_value[lo:lo + BIN_BLOCK]
            values = x[rows]
            value_bin = self._column_bins(values, f, kind)
            out[rows] = value_bin
            if in_order:
                # Bins ascend along the value order; rows must ascend within a bin.
                same_bin = np.r_[value_bin[0] == last_bin, value_bin[1:] == value_bin[:-1]]
                rows_down = np.r_[rows[0] < last_row, rows[1:] < rows[:-1]]
                in_order = not np.any(same_bin & rows_down)
                last_bin, last_row = value_bin[-1], rows[-1]
        order[:] = by_value if in_order else np.argsort(out, kind="stable")

    def _column_bins(self, x, f, kind):
        """Bins of the values ``x`` of feature ``f`` in a split column of ``kind``."""
        missing = np.isnan(x)
        if kind == LEVEL_SET:
            # Level codes; missing (and unseen) values in the last bin.
            return np.where(missing, len(self.categories_[f]), x)
        value_bin = np.searchsorted(self.thresholds_[f], x, side="left")
        if kind == PLAIN:
            return value_bin
        return np.where(missing, self._n_values(f), value_bin)

    def split(self, column, b, set_words=None):
        """The tree test of a split at bin ``b`` of split column ``column``.

        ``set_words`` (the builder's node record) holds the level set of a
        split on a categorical column with more than ``MAX_SET_BINS`` bins,
        whose ``b`` refers to its node's level order.

        Returns
        -------
        feature : int
        threshold : float
            ``TREE_UNDEFINED`` for categorical splits.
        missing_go_left : int
            Where the training rows with a missing value went (for a plain
            column, which had none, a provisional 0).  "Missing versus
            present" reads ``+inf`` with the missing rows right.
        is_categorical : int
        categories_left : ndarray of 8 uint32
        """
        f, kind = self._split_columns[column]
        words = np.zeros(MAX_CATEGORIES // 32, dtype=np.uint32)
        if kind == LEVEL_SET:
            k = len(self.categories_[f])
            n_bins = k + int(f in self._missing_set)
            if n_bins > MAX_SET_BINS:
                bits = np.unpackbits(np.asarray(set_words, dtype="<u8").view(np.uint8),
                                     bitorder="little")[:n_bins]
            else:
                bits = (b >> np.arange(n_bins)) & 1
            left = np.flatnonzero(bits[:k])
            missing_left = int(bits[k]) if n_bins > k else 0
            return f, float(TREE_UNDEFINED), missing_left, 1, categories_bitset(left)
        missing_left = 1 if kind == MISSING_BIN and b & MISSING_LEFT else 0
        # Bin index of the last present-value bin that goes left.
        last = b & ~MISSING_LEFT if kind == MISSING_BIN else b
        pool = self.thresholds_[f]
        if last >= pool.shape[0]:
            threshold = np.inf           # every present value left, missing right
        else:
            threshold = float(pool[last])
        return f, threshold, missing_left, 0, words

    # -- the fitted tree ---------------------------------------------------

    def resolve_splits(self, nodes, data):
        """The builder's node arrays with their splits in the input's terms.

        Replaces ``feature`` (a split column) by the input feature and adds
        ``threshold``, ``missing_go_left``, ``is_categorical``,
        ``categories_left``, ``weighted_n_node_samples`` and the
        training-value gaps ``gap_lower``/``gap_upper`` of numeric splits (the
        largest present value going left, the smallest going right).  Where a split
        saw no missing values in training, missing values go to the child
        with more training weight (left on a tie).  Every added array is
        per node, so pruning a subtree (the leaf-penalty path) keeps the
        others valid.
        """
        count = nodes["feature"].shape[0]
        feature = np.full(count, TREE_UNDEFINED, dtype=np.intp)
        threshold = np.full(count, float(TREE_UNDEFINED))
        missing_left = np.zeros(count, dtype=np.uint8)
        is_cat = np.zeros(count, dtype=np.uint8)
        words = np.zeros((count, MAX_CATEGORIES // 32), dtype=np.uint32)
        internal = np.flatnonzero(nodes["feature"] >= 0)
        for node in internal:
            (feature[node], threshold[node], missing_left[node], is_cat[node],
             words[node]) = self.split(int(nodes["feature"][node]), int(nodes["bin"][node]),
                                       nodes["set_words"][node] if "set_words" in nodes
                                       else None)
        out = dict(nodes, feature=feature, threshold=threshold, missing_go_left=missing_left,
                   is_categorical=is_cat, categories_left=words)
        left, right = nodes["children_left"], nodes["children_right"]
        provisional = self.make_tree(out)
        X, w = data.X, data.sample_weight
        leaves = provisional.apply(X)
        weight = np.bincount(leaves, weights=w, minlength=count).astype(np.float64)
        saw_missing = {f: np.bincount(leaves, weights=np.isnan(X[:, f]), minlength=count)
                       for f in self.missing_features_}
        # Per node and numeric split feature, the range of the present
        # training values reaching it: the exports print a short threshold
        # inside the gap between the two children's ranges.
        numeric = np.unique(feature[internal][is_cat[internal] == 0])
        lo = {f: np.full(count, np.inf) for f in numeric}
        hi = {f: np.full(count, -np.inf) for f in numeric}
        for f in numeric:
            x, at = X[:, f], leaves
            if f in self._missing_set:
                present = ~np.isnan(x)
                x, at = x[present], leaves[present]
            np.minimum.at(lo[f], at, x)
            np.maximum.at(hi[f], at, x)
        # Children follow their parent in preorder: sum subtrees bottom-up.
        for node in internal[::-1]:
            a, b = left[node], right[node]
            weight[node] = weight[a] + weight[b]
            for counts in saw_missing.values():
                counts[node] = counts[a] + counts[b]
            for f in numeric:
                lo[f][node] = min(lo[f][a], lo[f][b])
                hi[f][node] = max(hi[f][a], hi[f][b])
        gap_lower = np.full(count, np.nan)
        gap_upper = np.full(count, np.nan)
        for node in internal:
            if is_cat[node]:
                continue
            f = feature[node]
            below, above = hi[f][left[node]], lo[f][right[node]]
            gap_lower[node] = below if np.isfinite(below) else np.nan
            gap_upper[node] = above if np.isfinite(above) else np.nan
        out["gap_lower"], out["gap_upper"] = gap_lower, gap_upper
        missing_left = missing_left.copy()
        for node in internal:
            f = feature[node]
            if f not in saw_missing or saw_missing[f][node] == 0:
                missing_left[node] = weight[left[node]] >= weight[right[node]]
        # A level without training rows at a categorical node follows the
        # node's missing-value direction, as a level unseen in training does.
        for f in np.unique(feature[internal][is_cat[internal] == 1]):
            k = len(self.categories_[f])
            x = X[:, f]
            present = ~np.isnan(x)
            seen = np.zeros((count, k), dtype=bool)
            seen[leaves[present], x[present].astype(np.intp)] = True
            for node in internal[::-1]:
                seen[node] = seen[left[node]] | seen[right[node]]
            for node in internal:
                if feature[node] != f or not is_cat[node]:
                    continue
                absent = np.flatnonzero(~seen[node])
                if absent.size == 0:
                    continue
                codes = set(bitset_codes(words[node]).tolist()) - set(absent.tolist())
                if missing_left[node]:
                    codes |= set(absent.tolist())
                words[node] = categories_bitset(sorted(codes))
        out["categories_left"] = words
        out["missing_go_left"] = missing_left
        out["weighted_n_node_samples"] = weight
        # Rows per node (the builder's leaf counts on histogram routes come
        # from the weight sums).
        rows = np.bincount(leaves, minlength=count).astype(np.intp)
        for node in internal[::-1]:
            rows[node] = rows[left[node]] + rows[right[node]]
        out["n_node_samples"] = rows
        return out

    def _unrepresentable_leaves(self, coef, mean):
        """The error for leaf equations that overflow float64 in X's units.

        The search runs on standardized columns, so it finishes; a column
        whose values are tiny against y's (1e-300 of them) has a slope in y
        per unit of it beyond float64's range.
        """
        reg = self.regression_features_
        names = getattr(self, "_feature_names", None)
        slope = ~np.isfinite(coef[:, reg]).all(axis=0)
        if slope.any():
            listed = ", ".join(_column_name(names, int(j)) for j in reg[slope])
            return ValueError(
                f"the leaf equations overflow float64 in the units of column(s) {listed}: "
                "their values are too small against y's (a slope in y per unit of them "
                "beyond 1.8e308). Express those columns in a larger unit (multiply them by "
                "a power of ten) or y in a smaller one, or leave them out of "
                "regression_features.")
        with np.errstate(over="ignore", invalid="ignore"):
            offset = ~np.isfinite(coef[:, reg] * mean).all(axis=0)
        listed = ", ".join(_column_name(names, int(j)) for j in reg[offset]) or "of X"
        return ValueError(
            f"the leaf equations' intercepts overflow float64: y is near float64's limit and "
            f"column(s) {listed} far from 0 (their slope times their mean passes 1.8e308). "
            "Express y in a smaller unit, or centre those columns (subtract their mean).")

    def make_tree(self, nodes):
        """The :class:`~clarytree._tree.Tree` of resolved node arrays.

        ``nodes["coef"]`` is in the criterion's (standardized) coordinates and
        already multiplied by ``y_scale``; the splits are those of
        :meth:`resolve_splits`.
        """
        n_features = self.n_features_in_
        reg, mean, std = self.regression_features_, self.mean_, self.std_
        count = nodes["feature"].shape[0]
        # beta0 + sum_j b_j (x_j - m_j) / s_j = intercept + x @ coef.
        beta = nodes["coef"]
        coef = np.zeros((count, n_features))
        with np.errstate(over="ignore", invalid="ignore"):
            coef[:, reg] = beta[:, 1:] / std
            intercept = beta[:, 0] + self.y_mean_ - coef[:, reg] @ mean
        if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
            raise self._unrepresentable_leaves(coef, mean)
        fill = np.zeros(n_features)
        fill[reg] = mean
        return Tree(n_features, nodes["children_left"], nodes["children_right"],
                    nodes["feature"], np.array(nodes["threshold"]), nodes["n_node_samples"],
                    nodes["node_objective"], intercept, coef,
                    missing_go_left=np.array(nodes["missing_go_left"]),
                    is_categorical=np.array(nodes["is_categorical"]),
                    categories_left=np.array(nodes["categories_left"]),
                    weighted_n_node_samples=(
                        None if "weighted_n_node_samples" not in nodes
                        else np.array(nodes["weighted_n_node_samples"])),
                    gap_lower=nodes.get("gap_lower"), gap_upper=nodes.get("gap_upper"),
                    fill_value=fill)

    # -- predict -----------------------------------------------------------

    def transform(self, estimator, X):
        """The encoded matrix of new rows (columns checked against training)."""
        X_num, columns, _ = self._columns(estimator, X)
        if X_num is not None:
            return X_num
        return self._encode(estimator, columns)

    def predict_state(self, feature_names=None):
        """What ``transform`` needs, as plain Python values (JSON-ready).

        Raises a ``TypeError`` naming the column when a categorical column has
        levels JSON cannot hold (anything but text, numbers and bools, e.g.
        the ``Interval`` levels of ``pd.cut`` or ``Period`` levels).
        """
        for j, c in enumerate(self.categories_):
            if c is None:
                continue
            v = level_without_literal(list(c) + list(self.merged_categories_[j]))
            if v is not None:
                raise TypeError(
                    f"categorical column {_column_name(feature_names, j)} has levels of "
                    f"type {type(v).__name__} (e.g. {v!r}), which JSON cannot hold: "
                    "only text, number and bool levels can be written. Convert the "
                    f"column before fit (e.g. X[{_column_name(feature_names, j)}]"
                    ".astype(str)), or keep the model with pickle, which holds any "
                    "level")
        return {
            "is_categorical": [bool(v) for v in self.is_categorical_],
            "categories": [None if c is None else
                           [_python_scalar(v) for v in
                            (c[:-1] if self.merged_categories_[j] else c)]
                           for j, c in enumerate(self.categories_)],
            "merged_categories": [None if m is None else [_python_scalar(v) for v in m]
                                  for m in self.merged_categories_],
            "missing_features": [int(f) for f in self.missing_features_],
        }

    @classmethod
    def from_predict_state(cls, state, **params):
        """Rebuild a preparation that can ``transform`` from :meth:`predict_state`."""
        prep = cls(**params)
        prep.is_categorical_ = np.asarray(state["is_categorical"], dtype=bool)
        if prep.is_categorical_.ndim != 1:
            raise ValueError("preparation.is_categorical must be a list of bools")
        n = prep.is_categorical_.shape[0]
        prep.n_features_in_ = n
        prep.categories_ = [None] * n
        prep.merged_categories_ = [None] * n
        prep._lookup = [None] * n
        merged_all = state.get("merged_categories") or [None] * n
        categories = state["categories"]
        for field, values in (("categories", categories), ("merged_categories", merged_all)):
            if not isinstance(values, (list, tuple)) or len(values) != n:
                raise ValueError(f"preparation.{field} must be a list of {n} entries "
                                 "(one per column)")
        for j, levels in enumerate(categories):
            if (levels is None) != (not prep.is_categorical_[j]):
                raise ValueError(f"preparation.categories[{j}] must be a list of levels "
                                 "exactly when the column is categorical")
            if levels is None:
                continue
            merged = list(merged_all[j] or [])
            if not isinstance(levels, (list, tuple)):
                raise ValueError(f"preparation.categories[{j}] must be a list of levels")
            try:
                distinct = len(set(levels) | set(merged)) == len(levels) + len(merged)
            except TypeError:
                raise ValueError(f"preparation.categories[{j}] holds a level that is not "
                                 "a number, text or bool") from None
            if not distinct:
                raise ValueError(f"preparation.categories[{j}] and merged_categories[{j}] "
                                 "must list each level once")
            prep.categories_[j] = np.array(list(levels) + ([OTHER] if merged else []),
                                           dtype=object)
            prep.merged_categories_[j] = merged
            prep._set_lookup(j)
        prep.missing_features_ = np.asarray(state.get("missing_features", []), dtype=np.intp)
        return prep


def check_min_category_weight(value):
    """Validate ``min_category_weight`` (None or a finite number >= 0)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not np.isfinite(value) or value < 0:
        raise ValueError(f"min_category_weight must be None or a number >= 0, got {value!r}")
    return float(value)

