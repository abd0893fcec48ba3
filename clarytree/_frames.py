"""Tables other than pandas DataFrames, read as pandas DataFrames.

The estimators read a table's column names and dtypes (which columns are
categorical, how missing values are marked) through pandas' interface.  A
polars DataFrame or a pyarrow Table carries the same information; numpy
would turn its string columns into an object array and lose its
categorical dtypes, so such a table is converted to pandas here, once, at
the entry of ``fit``, ``predict`` and the functions that take ``X``.

polars is converted column by column with its own ``to_numpy`` (so pyarrow
is not needed), with these dtypes:

- ``Enum``: pandas ``category`` with its categories in their declared
  order; ``Categorical``: pandas ``category`` of the levels present;
- ``String``: ``object`` with ``None`` for null;
- ``Boolean``: ``bool``, or ``object`` with ``None`` when it has nulls;
- numeric: float (decimals and 128-bit integers too) or integer
  (integers with nulls: pandas' nullable ``Int64`` and kin, exact, as a
  pyarrow Table's integers are read);
- dates and durations: numpy's ``datetime64``/``timedelta64``, which the
  estimators reject with a message naming the column, as for pandas;
- ``Null`` (a column of nulls only): ``object`` of ``None``, missing
  everywhere (the pandas twin of such a column);
- nested types (``List``, ``Struct``, ``Array``, ``Object``): a
  ``TypeError`` naming the column.

pyarrow tables use pyarrow's own ``to_pandas``, with decimal columns cast
to float first (``to_pandas`` makes them ``object`` columns of
``decimal.Decimal``); any other object with the
Arrow C stream or dataframe interchange protocol and column names goes
through pandas' readers of those protocols.
"""

import numpy as np


def _module(X):
    return type(X).__module__.split(".", 1)[0]


def _is_pandas_like(X):
    # pandas and the libraries that copy its interface (modin, cudf).
    return hasattr(X, "iloc") and hasattr(X, "dtypes") and hasattr(X, "columns")


def is_foreign_table(X):
    """Whether ``X`` is a table that is not pandas-like (polars, pyarrow, ...)."""
    if isinstance(X, np.ndarray) or _is_pandas_like(X):
        return False
    if _module(X) == "polars":
        return hasattr(X, "get_column")          # a DataFrame, not a Series
    if not (hasattr(X, "columns") or hasattr(X, "column_names")):
        return False
    return hasattr(X, "__arrow_c_stream__") or hasattr(X, "__dataframe__")


def _import_pandas(X):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            f"reading a {_module(X)} table with its column types needs pandas: "
            "pip install pandas (or pass a numpy array of numbers)") from None
    return pd


def as_pandas(X):
    """``X`` as a pandas DataFrame when it is a polars or Arrow table.

    Anything else (pandas DataFrames, numpy arrays, lists, sparse matrices)
    is returned as it is, for the estimators' own validation.

    Parameters
    ----------
    X : object

    Returns
    -------
    X : pandas.DataFrame or object
    """
    module = _module(X)
    if module == "polars" and hasattr(X, "collect") and not hasattr(X, "get_column"):
        raise TypeError("X is a polars LazyFrame: collect it first (X.collect())")
    if not is_foreign_table(X):
        return X
    if module == "polars":
        wide = [X.get_column(name).cast(float)
                for name, dtype in zip(X.columns, X.dtypes, strict=True)
                if _dtype_name(dtype) in _WIDE_INTEGERS]
        if wide:
            # numpy has no 128-bit integers, and the splits read float64
            # anyway (as they do an int64 column)
            X = X.with_columns(wide)
        if all(_polars_kind(dtype) == "number" for dtype in X.dtypes):
            # numbers only: numpy reads it (no pandas needed), NaN and null
            # both becoming NaN
            try:
                import pandas  # noqa: F401
            except ImportError:
                return X.to_numpy()
        return _polars_to_pandas(X, _import_pandas(X))
    pd = _import_pandas(X)
    if module == "pyarrow" and hasattr(X, "to_pandas"):
        # Integers as pandas' nullable integers (exact where there are nulls,
        # as for polars above).
        return _decimals_as_float(X).to_pandas(types_mapper=_nullable_integer(pd))
    if hasattr(X, "__arrow_c_stream__") and hasattr(pd.DataFrame, "from_arrow"):
        return pd.DataFrame.from_arrow(X)
    return pd.api.interchange.from_dataframe(X)


def exact_integer_array(values):
    """Python ints as an int64 array, or uint64 where they pass int64's
    maximum; None where neither holds them all.  (numpy reads such a list
    holding an int beyond int64 as float64, which rounds beyond 2**53.)"""
    for dtype in (np.int64, np.uint64):
        info = np.iinfo(dtype)
        if info.min <= min(values) and max(values) <= info.max:
            return np.array(values, dtype=dtype)
    return None


def _nullable_integer(pd):
    """A pyarrow ``types_mapper``: integer types to pandas' nullable integers."""
    import pyarrow as pa

    dtypes = {getattr(pa, name.lower())(): pd.api.types.pandas_dtype(name)
              for name in _INTEGERS}
    return dtypes.get


def _decimals_as_float(table):
    """A pyarrow Table with its decimal columns cast to float64.

    Through their decimal text: Arrow's direct cast can land an ulp off the
    nearest double (28.58 as 28.580000000000002), where parsing the text
    rounds correctly, as ``float(Decimal)``, polars and a CSV reader do.
    """
    import pyarrow as pa

    for j, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type):
            values = table.column(j).cast(pa.string()).cast(pa.float64())
            table = table.set_column(j, field.with_type(pa.float64()), values)
    return table


_WIDE_INTEGERS = ("Int128", "UInt128")
_INTEGERS = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")


def _dtype_name(dtype):
    """The name of a polars dtype, given as an instance or as a class."""
    return dtype.__name__ if isinstance(dtype, type) else type(dtype).__name__


def _polars_kind(dtype):
    """'category', 'text', 'bool', 'number', 'time', 'null' or 'nested' for a
    polars dtype."""
    name = _dtype_name(dtype)
    if name in ("Categorical", "Enum"):
        return "category"
    if name in ("String", "Utf8"):
        return "text"
    if name == "Boolean":
        return "bool"
    if name in ("Date", "Datetime", "Duration", "Time"):
        return "time"
    if name == "Null":
        return "null"
    if name in ("List", "Array", "Struct", "Object", "Binary", "Unknown"):
        return "nested"
    if getattr(dtype, "is_numeric", lambda: False)():
        return "number"
    return "nested"


def _polars_to_pandas(X, pd):
    data = {}
    for name, dtype in zip(X.columns, X.dtypes, strict=True):
        column = X.get_column(name)
        kind = _polars_kind(dtype)
        if kind == "nested":
            raise TypeError(f"column {name!r} has polars dtype {dtype}, which is neither "
                            "numeric nor categorical; convert it (e.g. to String) or "
                            "drop it")
        if kind == "null":
            data[name] = np.full(len(column), None, dtype=object)
            continue
        if kind == "number" and _dtype_name(dtype) in _INTEGERS and column.null_count():
            # Integers with nulls as pandas' nullable integers, exact: numpy
            # makes them float64, which merges IDs beyond 2**53 and reads a
            # level 1 as 1.0 only in a batch that holds a null.
            data[name] = pd.arrays.IntegerArray(column.fill_null(0).to_numpy(),
                                                column.is_null().to_numpy())
            continue
        values = column.to_numpy()
        if kind == "category":
            # An Enum declares its categories; a Categorical (polars >= 2
            # keeps no fixed list) has the levels present, sorted as
            # pandas sorts a new categorical's.
            categories = list(dtype.categories) if _dtype_name(dtype) == "Enum" else None
            values = pd.Categorical(values, categories=categories)
        elif kind == "number" and values.dtype == object:
            # Decimal
            values = column.cast(float).to_numpy()
        data[name] = values
    return pd.DataFrame(data, columns=list(X.columns))
