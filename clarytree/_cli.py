"""The ``clarytree`` command line: demo, fit, predict, export and mbndt.

Mistakes a user can make (a missing file, an unknown column, a bad option
value...) end with one line on stderr and exit status 2, never a traceback.
"""

import argparse
import codecs
import contextlib
import csv
import io
import json
import os
import re
import shlex
import sys
import time
import warnings
import zipfile
from collections import Counter

import numpy as np

EXIT_USAGE = 2
# The CV grids' defaults (kept here so that --help needs no estimator import).
_PAPER_LEAF_PENALTIES = (1e-1, 8e-2, 5e-2, 3e-2, 1e-2, 8e-3, 5e-3, 3e-3, 1e-3, 5e-4, 1e-4)
_PAPER_RIDGE_ALPHAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
EXIT_BROKEN_PIPE = 128 + 13  # as when killed by SIGPIPE


class UsageError(Exception):
    """A problem with the user's input, reported as one line with exit status 2."""


class _HelpFormatter(argparse.HelpFormatter):
    """Show each option's default after its help (unless it has none to show)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        # Identity checks: a default of 0 is worth showing (0 == False).
        hidden = default is None or default is False or default is argparse.SUPPRESS
        if ("%(default)" not in text and "(default:" not in text and not hidden
                and action.option_strings and action.nargs != 0):
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line (with a pointer to --help)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        # Options without their own help still list their default.
        kwargs.setdefault("help", "")
        return super().add_argument(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------
# Argument types
# --------------------------------------------------------------------------


def _checked(cast, accept, expected):
    """argparse type: ``cast(text)`` that must satisfy ``accept``."""

    def convert(text):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return convert


_positive_int = _checked(int, lambda v: v >= 1, "a positive integer")
_non_negative_int = _checked(int, lambda v: v >= 0, "an integer >= 0")
_non_negative_float = _checked(float, lambda v: bool(np.isfinite(v)) and v >= 0,
                               "a finite number >= 0")
_test_size = _checked(float, lambda v: 0.0 <= v < 1.0, "a fraction in [0, 1)")
_positive_float = _checked(float, lambda v: bool(np.isfinite(v)) and v > 0,
                           "a finite number > 0")


def _min_samples_leaf(text):
    """'auto', an integer >= 1 (rows) or a fraction in (0, 1) of the rows."""
    if text.strip().lower() == "auto":
        return "auto"
    for cast, accept in ((int, lambda v: v >= 1), (float, lambda v: 0.0 < v < 1.0)):
        try:
            value = cast(text)
        except ValueError:
            continue
        if accept(value):
            return value
    raise argparse.ArgumentTypeError(
        f"expected 'auto', an integer >= 1 or a fraction in (0, 1), got {text!r}")


def _grid(text):
    """A comma-separated list of numbers >= 0 (a CV grid)."""
    values = [_non_negative_float(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return values
def _significant_digits(text):
    if text.lower() in ("all", "none", "exact"):
        return None
    return _positive_int(text)


def _n_thresholds(text):
    if text.lower() in ("all", "none"):
        return None
    return _positive_int(text)


# --------------------------------------------------------------------------
# Data input / output
# --------------------------------------------------------------------------


# pandas' default missing-value markers.  Empty cells are missing in every
# column; these only where the rest of the column is numbers (an R or
# database export's "NA" among numbers): in a text column "NA" or "None" is
# a level as written (a basement grade, Namibia).
_MISSING_MARKERS = frozenset({
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


# pandas' spellings of bools in a CSV.
_BOOL_TEXT = {"True": True, "TRUE": True, "true": True,
              "False": False, "FALSE": False, "false": False}
_COMMA_NUMBER = re.compile(r"^-?\d*,?\d+$")


def _numbers_with_markers(frame, decimal, text_columns=(), semicolons=False):
    """Columns read as text only because of missing markers, as pandas would type them.

    Numbers (or bools) among markers become numbers (bools) with missing
    values, a column of markers only a column of missing values.  In a
    semicolon file read with a decimal point, a column of numbers written
    with a decimal comma (first seen after the head that chose the decimal
    mark) becomes numbers.  ``text_columns`` (read as text on purpose) stay
    as they are.
    """
    import pandas as pd

    for name in frame.columns:
        column = frame[name]
        if name in text_columns or not (column.dtype == object
                                        or pd.api.types.is_string_dtype(column)):
            continue
        present = column[column.notna()]
        marked = present.isin(_MISSING_MARKERS)
        text = present[~marked]
        if marked.all():
            if marked.any():
                frame[name] = np.full(len(column), np.nan)
            continue
        blank = column.isin(_MISSING_MARKERS) | column.isna()
        texts = pd.api.types.infer_dtype(text, skipna=True) == "string"
        if marked.any() and texts and text.isin(_BOOL_TEXT.keys()).all():
            frame[name] = pd.Series([None if b else _BOOL_TEXT[v]
                                     for v, b in zip(column, blank, strict=True)],
                                    index=column.index, dtype=object)
            continue
        comma = (semicolons and decimal is None and texts
                 and text.str.contains(",", regex=False).any()
                 and text.str.match(_COMMA_NUMBER).all())
        if not (marked.any() or comma):
            continue
        values = column.where(~blank)
        if decimal == "," or comma:
            values = values.str.replace(",", ".", regex=False)
        numbers = pd.to_numeric(values, errors="coerce")
        # Every present value that is no marker must be a number.
        if numbers[~blank].notna().all():
            frame[name] = numbers
    return frame


def _exact_integers(frame, source, dialect):
    """Integer columns with empty cells beyond float64's 2**53, exactly.

    pandas reads a column of integers with an empty cell as float64, which
    rounds IDs and nanosecond times beyond 2**53: two IDs became one level of
    a categorical column.  Such a column is read again as its text and kept
    as a nullable integer column, as the Python API keeps one.
    """
    import pandas as pd

    from ._frames import exact_integer_array

    wide = _wide_float_columns(frame)
    if not wide:
        return frame
    options = {**dialect, "dtype": str}
    text = pd.read_csv(source(), index_col=False, keep_default_na=False, na_values=[""],
                       usecols=wide, low_memory=False, **options)
    for name in wide:
        present = text[name].notna().to_numpy()
        written = text[name][present].str.strip()
        if not written.str.fullmatch(r"[+-]?\d+").all():
            continue
        values = exact_integer_array([int(v) for v in written])
        if values is not None:
            exact = np.zeros(len(present), dtype=values.dtype)
            exact[present] = values
            frame[name] = pd.arrays.IntegerArray(exact, ~present)
    return frame


def _wide_float_columns(frame):
    """float64 columns with a missing value and a magnitude of 2**53 or more."""
    return [name for name, column in frame.items()
            if column.dtype == np.float64 and column.isna().any()
            and (column.abs() >= 2.0 ** 53).any()]


def _exact_parquet_integers(frame, path):
    """Parquet integer columns with nulls, which pandas reads as float64
    (see :func:`_exact_integers`), as nullable integer columns."""
    wide = _wide_float_columns(frame)
    if not wide:
        return frame
    try:
        import pyarrow.parquet as pq
    except ImportError:         # read by fastparquet: left as it read them
        return frame
    from ._frames import as_pandas

    exact = as_pandas(pq.read_table(path, columns=wide))
    for name in wide:
        if isinstance(exact[name].dtype, type(frame[name].dtype)):
            continue            # a float column in the file
        frame[name] = exact[name].array
    return frame


def _read_table(path, encoding=None, text_columns=(), as_written=None):
    """Read a CSV (optionally compressed) or Parquet file into a DataFrame.

    CSV text is decoded as ``encoding``; when None, as UTF-16 or UTF-32 if
    the file starts with their byte order mark (Excel's "Unicode text"),
    else as UTF-8 (with or without one).  ``text_columns`` of a CSV are read
    as text as written (``"01"`` stays ``"01"``), whatever they look like.
    Empty cells are missing values; pandas' markers such as ``NA`` are too,
    in a column of numbers only.  The ``as_written`` columns (names, or a
    ``COL,...`` option read against the header) of a CSV are also read as their
    text exactly, empty cells as ``""``, into ``frame.attrs["as_written"]``
    (``predict --keep``).
    """
    import pandas as pd

    if not os.path.exists(path):
        raise UsageError(f"file not found: {path}")
    if os.path.isdir(path):
        raise UsageError(f"expected a data file, got a directory: {path}")
    parquet = path.lower().endswith((".parquet", ".pq"))
    try:
        if parquet:
            try:
                import pyarrow.parquet as pq
            except ImportError:
                pass        # read_parquet says what is missing
            else:
                _refuse_duplicate_names(path, pq.read_schema(path).names)
            frame = _exact_parquet_integers(pd.read_parquet(path), path)
        else:
            dialect = _csv_dialect(path, encoding)
            source = _csv_source(path, dialect)
            header = pd.read_csv(source(), header=None, nrows=1, dtype=str,
                                 keep_default_na=False, na_values=[""], **dialect)
            _refuse_duplicate_names(path, header.iloc[0] if header.shape[0] else [])
            if text_columns:
                dialect["dtype"] = dict.fromkeys(text_columns, str)
            # index_col=False: a trailing separator on the data rows must not
            # turn the first column into the index and shift every name.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", pd.errors.ParserWarning)
                # low_memory=False: one type per column, not one per chunk of
                # 262,144 rows (a marker or text first seen in a later chunk
                # would mix floats and strings in one column).
                frame = pd.read_csv(source(), index_col=False, keep_default_na=False,
                                    na_values=[""], low_memory=False, **dialect)
            if any("does not match length of data" in str(w.message) for w in caught):
                _refuse_longer_rows(path, source, frame.shape[1], dialect)
            frame = _numbers_with_markers(frame, dialect.get("decimal"), set(text_columns),
                                          dialect.get("sep") == ";")
            frame = _exact_integers(frame, source, dialect)
            if isinstance(as_written, str):
                as_written = _column_list(as_written, frame.columns)
            as_written = [name for name in as_written or () if name in frame.columns]
            if as_written:
                dialect["dtype"] = str
                written = pd.read_csv(source(), index_col=False, keep_default_na=False,
                                      usecols=as_written, low_memory=False, **dialect)
                frame.attrs["as_written"] = written
    except ImportError as exc:
        if parquet:
            # pandas' message lists each engine's import error on its own line.
            raise UsageError(f"cannot read {path}: reading Parquet needs pyarrow (or "
                             "fastparquet): pip install pyarrow") from None
        raise UsageError(f"cannot read {path}: {str(exc).strip().splitlines()[0]}") from None
    except UnicodeError as exc:
        # pandas decodes in chunks, so its byte position is not the file's.
        used = encoding or "UTF-8"
        hint = ("pass its encoding with --encoding, e.g. --encoding cp1252 (Excel on "
                "Windows) or --encoding latin-1" if encoding is None
                else "pass the file's encoding with --encoding")
        raise UsageError(f"cannot read {path}: it is not {used} text "
                         f"({getattr(exc, 'reason', exc)}); "
                         f"{hint}") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, pd.errors.ParserError) as exc:
        # EOFError, BadZipFile (and lzma's, an OSError): a cut-off archive.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"cannot read {path}: {first}") from None
    if frame.shape[0] == 0:
        raise UsageError(f"{path} has no data rows")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _csv_source(path, dialect):
    """A function giving a fresh ``read_csv`` source for each read of ``path``.

    A zip archive's one file is opened here and read as a stream (pandas
    refuses an archive that also lists the file's folder), so ``dialect``
    loses its ``compression`` then.
    """
    if dialect.get("compression") != "zip":
        return lambda: path
    del dialect["compression"]
    return lambda: _open_zip(path, "rb")


def _refuse_longer_rows(path, source, n_names, dialect):
    """Rows with more fields than the header: only empty ones are dropped.

    A trailing separator on every data row ("1,2,") is common and harmless;
    fields beyond the header that hold values would be lost (or, without
    ``index_col=False``, turn the first column into the index and shift
    every name by one), so they are an error.
    """
    import pandas as pd

    options = {k: v for k, v in dialect.items() if k != "dtype"}
    rows = pd.read_csv(source(), header=None, skiprows=1, dtype=str, keep_default_na=False,
                       **options)
    extra = rows.iloc[:, n_names:]
    filled = extra.ne("") & extra.notna()
    if filled.to_numpy().any():
        # Counted among the data rows: blank lines are not rows.
        row = int(np.flatnonzero(filled.to_numpy().any(axis=1))[0]) + 1
        raise UsageError(f"cannot read {path}: data row {row} has more fields than the "
                         f"header's {n_names} column names; name every column in the header")


def _refuse_duplicate_names(path, names):
    """A header naming two columns alike is an error, not pandas' ``a.1``.

    Renamed silently, a second ``price`` column of a CSV would become a
    feature named ``price.1`` next to the target ``price`` (or the other way
    round); pyarrow refuses to read such a Parquet file with a message about
    field references.
    """
    counts = Counter(v for v in names if isinstance(v, str))
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        which = _list([repr(name) for name in repeated], 5)
        raise UsageError(f"cannot read {path}: its header gives more than one column the "
                         f"name{'s' if len(repeated) > 1 else ''} {which}; give each "
                         "column its own name")


_DELIMITERS = (",", ";", "\t", "|")
_UNICODE_MARKS = (("utf-32", (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)),
                  ("utf-16", (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)))
_COMPRESSION_MARKS = (("gzip", b"\x1f\x8b"), ("bz2", b"BZh"), ("xz", b"\xfd7zXZ\x00"),
                      ("zip", b"PK\x03\x04"), ("zip", b"PK\x05\x06"))
# Names pandas opens itself (tar archives of one table, zstd).
_PANDAS_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz",
                    ".zst", ".tar.zst")
_DECIMAL_COMMA = re.compile(r"^-?\d+,\d+$")
_DECIMAL_POINT = re.compile(r"^-?\d*\.\d+$")


def _open_zip(path, mode="rb", encoding=None, errors=None, newline=None):
    """The one file of a zip archive (as pandas reads it), as a binary or text stream."""
    archive = zipfile.ZipFile(path)
    names = [name for name in archive.namelist() if not name.endswith("/")]
    if len(names) != 1:
        archive.close()
        raise UsageError(f"cannot read {path}: a zip archive must hold exactly one file, "
                         f"it holds {len(names)}")
    raw = archive.open(names[0])
    if "b" in mode:
        return raw
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline=newline)


def _csv_dialect(path, encoding=None, size=1 << 16):
    """``read_csv`` options for the file's encoding, separator and decimal comma.

    The separator is a comma when it splits the first rows into the same
    number (> 1) of fields, else the one of ``;``, tab and ``|`` that does
    with the most fields; a semicolon-separated file whose numbers are
    written ``1,5`` (never ``1.5``) reads them with a decimal comma.  The
    encoding, when not given, is UTF-16 or UTF-32 after their byte order
    mark, else UTF-8; NUL bytes in an encoding other than those are an error
    (UTF-16 without a mark reads as UTF-8 into names full of NULs).  Files
    whose head cannot be read here (other compressions) keep pandas'
    defaults.
    """
    import bz2
    import gzip
    import lzma

    if path.lower().endswith(_PANDAS_ARCHIVES):
        # A tar archive (its stream is not the table) or zstd: pandas' own
        # reading, by the name.
        return {} if encoding is None else {"encoding": encoding}
    # The compression from the file's first bytes, not its name: pandas
    # infers it from the extension only (a gzip file named data.csv).
    with open(path, "rb") as f:
        magic = f.read(6)
    compression = next((kind for kind, mark in _COMPRESSION_MARKS if magic.startswith(mark)),
                       None)
    opener = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open, "zip": _open_zip}.get(
        compression, open)
    # Explicit, None too: pandas would otherwise guess from the name (a text
    # file named .gz).
    options = {"compression": compression}
    try:
        with opener(path, "rb") as f:
            head = f.read(4096)
        if encoding is None:
            # UTF-32's little-endian mark starts with UTF-16's: test it first.
            encoding = next((name for name, marks in _UNICODE_MARKS if head.startswith(marks)),
                            "utf-8")
        if b"\0" in head and not encoding.startswith(("utf-16", "utf-32")):
            # Text has no NUL bytes; UTF-16 without a byte order mark has many.
            raise UsageError(
                f"cannot read {path}: it holds NUL bytes, so it is not {encoding} text "
                "(UTF-16 without a byte order mark?); pass its encoding with --encoding, "
                "e.g. --encoding utf-16-le")
        with opener(path, "rt", encoding=encoding, errors="replace", newline="") as f:
            text = f.read(size)
            complete = not f.read(1)
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile):
        return options if encoding is None else {**options, "encoding": encoding}
    best, best_fields, best_rows = ",", 1, []
    for sep in _DELIMITERS:
        try:
            rows = [r for r in csv.reader(io.StringIO(text), delimiter=sep) if r][:50]
        except csv.Error:
            continue
        if not complete and len(rows) > 1:
            rows = rows[:-1]        # the last one may be cut off
        # A trailing separator on the data rows ("1;2;") adds an empty field.
        width = len(rows[0]) if rows else 0
        fields = {len(r) - (len(r) == width + 1 and r[-1] == "") for r in rows}
        if len(fields) == 1 and (n := fields.pop()) > best_fields:
            best, best_fields, best_rows = sep, n, rows
            if sep == ",":
                break       # a consistent comma file is one, whatever its text holds
    if best_fields == 1:
        # One column (a header without separators): read it whole, so that
        # numbers written "1,5" are not split at their decimal comma.
        header = text.splitlines()[0] if text else ""
        if not any(sep in header for sep in _DELIMITERS):
            best = ";"
    options["encoding"] = encoding
    if best != ",":
        options["sep"] = best
    if best == ";":
        # The decimal comma from every row of the head, not only the first
        # 50: a column may show its first "1,5" later.
        best_rows = [r for r in csv.reader(io.StringIO(text), delimiter=";") if r]
        if not complete and len(best_rows) > 1:
            best_rows = best_rows[:-1]
    cells = [c.strip() for r in best_rows[1:] for c in r]
    if (best == ";" and any(_DECIMAL_COMMA.match(c) for c in cells)
            and not any(_DECIMAL_POINT.match(c) for c in cells)):
        options["decimal"] = ","
    return options


def _not_numeric_target_advice(y, target, path):
    """What a target that is not numeric more likely is: classes, or
    numbers with a few stray entries."""
    import pandas as pd

    present = y[y.notna()]
    numbers = pd.to_numeric(present.astype(object), errors="coerce")
    if present.shape[0] and numbers.notna().mean() >= 0.9 \
            and not pd.api.types.is_bool_dtype(y):
        stray = pd.unique(present[numbers.isna()].astype(str))
        return (f": it holds numbers and some text ({_list(stray, 5)}); fix or remove "
                "those rows")
    classes = pd.unique(present.astype(str))
    if 2 <= len(classes) <= 20:
        return (f" (its values are classes: {_list(sorted(classes), 5)}); fit trees are "
                "regression trees, so for classification use 'clarytree mbndt "
                f"{shlex.quote(str(path))} --target {shlex.quote(str(target))}'")
    return ""


def _split_target(frame, target, path):
    """Return (X DataFrame, y array) with clear errors for bad columns."""

    if target not in frame.columns:
        raise UsageError(
            f"column {target!r} not found in {path}; columns: "
            f"{_names(frame.columns)}")
    y = frame[target]
    if not _is_number_column(y):
        raise UsageError(f"target column {target!r} is not numeric"
                         + _not_numeric_target_advice(y, target, path))
    y = y.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.all(np.isfinite(y)):
        bad = int(np.sum(~np.isfinite(y)))
        raise UsageError(f"target column {target!r} has {bad} missing or infinite value(s)")
    X = frame.drop(columns=[target])
    if X.shape[1] == 0:
        raise UsageError(f"{path} has no feature columns besides the target {target!r}")
    return X, y


def _is_number_column(column):
    """Numbers (not bools), or the ``decimal.Decimal`` objects of a Parquet decimal."""
    import pandas as pd

    from ._preparation import holds_decimals

    if pd.api.types.is_bool_dtype(column):
        return False
    return pd.api.types.is_numeric_dtype(column) or (
        column.dtype == object and holds_decimals(column.array))


def _take_weights_and_drop(frame, args):
    """The table without ``--drop`` columns and ``--weight``'s column, and the weights.

    Returns ``(frame, weights)``: ``weights`` is None without ``--weight``.
    """

    drop = _column_list(args.drop, frame.columns)
    unknown = [c for c in drop if c not in frame.columns]
    if unknown:
        raise UsageError(f"--drop: column(s) not in {args.data}: {_list(unknown)}; "
                         f"columns: {_names(frame.columns)}")
    if args.target in drop:
        raise UsageError(f"--drop: {args.target!r} is the target column")
    weights = None
    name = args.weight
    if name is not None:
        if name not in frame.columns:
            raise UsageError(f"--weight: column {name!r} not found in {args.data}; columns: "
                             f"{_list(frame.columns)}")
        if name == args.target:
            raise UsageError(f"--weight: {name!r} is the target column")
        column = frame[name]
        if not _is_number_column(column):
            raise UsageError(f"--weight: column {name!r} is not numeric")
        weights = column.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = int(np.sum(~np.isfinite(weights) | (weights < 0)))
        if bad:
            raise UsageError(f"--weight: column {name!r} has {bad} missing, negative or "
                             "infinite value(s); weights must be finite and >= 0")
        if not np.any(weights > 0):
            raise UsageError(f"--weight: every weight in column {name!r} is 0")
        if name not in drop:
            drop.append(name)
    return frame.drop(columns=drop), weights


def _column_list(spec, columns=None):
    """The column names of a ``COL,...`` option (none for None), each once.

    Names are stripped of surrounding spaces, except that, given the table's
    ``columns``, a name is taken as written where the table has it so (a
    header written ``a, b`` names its second column " b"), commas included
    (a column "price, EUR").
    """
    if not spec:
        return []

    def column(text):
        # text as written, else stripped, where the table has that column
        return next((t for t in (text, text.strip()) if t in columns), None)

    parts, names, i = spec.split(","), [], 0
    # a run of parts joins at most as many commas as a column's name holds
    longest = 1 + max((str(c).count(",") for c in columns), default=0) \
        if columns is not None else 0
    while i < len(parts):
        # the longest run of parts that, joined back, names a column
        run = next((j for j in range(min(len(parts), i + longest), i, -1)
                    if column(",".join(parts[i:j]))), None)
        names.append(column(",".join(parts[i:run])) if run else parts[i].strip())
        i = run or i + 1
    return list(dict.fromkeys(c for c in names if c))


def _check_proba(model):
    """``--proba`` needs a classifier."""
    if not hasattr(model, "classes_"):
        raise UsageError(f"--proba: {type(model).__name__} is a regressor; only classifiers "
                         "give probabilities")


def _categorical_columns(X, args, table_columns):
    """Columns to treat as categorical: text, bool and category columns plus
    those ``--categorical COL,...`` names (numeric codes declared categorical).
    The names are read against ``table_columns``, the file's (the target
    and dropped columns included, so that naming one is told so).
    """
    columns = [c for c in X.columns if not _is_number_column(X[c])]
    named = _column_list(args.categorical, table_columns)
    dropped = _column_list(args.drop, table_columns)
    for c in named:
        if c == args.target:
            raise UsageError(f"--categorical: {c!r} is the target column")
        if c == args.weight:
            raise UsageError(f"--categorical: {c!r} is the --weight column")
        if c in dropped:
            raise UsageError(f"--categorical: {c!r} is dropped by --drop")
    unknown = [c for c in named if c not in X.columns]
    if unknown:
        raise UsageError(f"--categorical: column(s) not in {args.data}: {_list(unknown)}; "
                         f"columns: {_names(X.columns)}")
    for c in columns:
        if c not in named:
            _reject_dates(X[c], c)
            _warn_numeric_text(X[c], c, f"to keep it categorical and silence this, pass "
                                        f"--categorical {shlex.quote(c)}")
    columns += [c for c in named if c not in columns]
    return [c for c in X.columns if c in columns]


def _reject_dates(column, name, levels_option=True):
    """A column of dates or times (a Parquet date or timestamp column) is
    neither numbers nor levels: as levels each date would be its own and new
    dates all unseen.  The estimators refuse them too."""
    from ._preparation import date_column_description

    quoted = shlex.quote(name)
    what = date_column_description(column)
    if what is None:
        what = _date_text_description(column)
        if what is None:
            return
        if not levels_option:
            # mbndt keeps a text column as levels (it has no --categorical
            # to say so): a word, not a refusal
            warnings.warn(f"column {name!r} {what}: each date is its own level, so new "
                          "dates are all unseen; store them as numbers in the file (e.g. "
                          f"days since a date, or the month) or pass --drop {quoted}",
                          UserWarning, stacklevel=2)
            return
    raise UsageError(f"column {name!r} {what}: dates and times are neither numbers nor "
                     "levels; store them as numbers in the file (e.g. days since a date, or "
                     "the month)" + (f", pass --drop {quoted}, or pass --categorical "
                                     f"{quoted} to split on each date as a level"
                                     if levels_option else f" or pass --drop {quoted}"))


# ISO 8601 dates and times as a CSV writes them: 2024-03-01, 2024-03-01 12:30,
# 2024-03-01T12:30:05.5+01:00, 12:30:05.
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
                        r"(Z|[+-]\d{2}:?\d{2})?)?")


def _date_text_description(column):
    """"holds dates written as text (e.g. ...)" for a text column whose every
    entry is an ISO date (a CSV's dates: 2024-03-01, 2024-03-01 12:30), a
    real one, else None.  Times of day alone (shift starts) are left as
    levels."""
    import pandas as pd

    if column.dtype.kind != "O" and type(column.dtype).__name__ != "StringDtype":
        return None
    values = column.dropna().unique()
    if len(values) == 0 or not all(isinstance(v, str) and _DATE_TEXT.fullmatch(v.strip())
                                   for v in values):
        return None
    try:
        real = pd.to_datetime(pd.Series(values), format="ISO8601", errors="coerce",
                              utc=True).notna().all()
    except (ValueError, TypeError, OverflowError):
        real = False
    return f"holds dates written as text (e.g. {values[0]!r})" if real else None


def _warn_numeric_text(column, name, keep):
    """The CLI's word on a text column of (mostly) numbers (see warn_numeric_text)."""
    from ._preparation import warn_numeric_text

    warn_numeric_text(column, repr(name), None,
                      "it is read as a categorical column (one level per value). To use it "
                      "as a number, fix those entries in the file or leave them empty "
                      f"(missing); {keep}.")


def _names(columns):
    """A table's column names, quoted, for messages."""
    return _list([repr(c) for c in columns])


def _list(items, limit=8):
    items = [str(i) for i in items]
    text = ", ".join(items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items) - limit} more)"
    return text


def _check_writable(path, option, model_outputs=False):
    """Refuse an output path before the work: a missing folder, and with
    ``model_outputs`` (fit, mbndt) a model/JSON/plot name of the wrong kind."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: folder does not exist: {folder}")
    if not model_outputs:
        return
    lower = path.lower()
    # Before the fit, not after it: a model is loaded by its content, but a
    # name that promises the other format is a slip.
    if option == "--out" and lower.endswith(".json"):
        raise UsageError(f"--out writes a joblib pickle, not JSON: {path}; write the "
                         "JSON tree with --json, or name the model file e.g. model.joblib")
    if option == "--json" and lower.endswith((".joblib", ".pkl", ".pickle")):
        raise UsageError(f"--json writes the tree as JSON, not a pickle: {path}; save the "
                         "model with --out, or name the JSON file e.g. tree.json")
    if option == "--plot":
        try:
            import matplotlib
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        kinds = Figure().canvas.get_supported_filetypes()
        extension = os.path.splitext(lower)[1].lstrip(".")
        if extension not in kinds:
            raise UsageError(f"--plot: {path} needs an image extension, one of "
                             f"{_list(sorted(kinds), 20)}")


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def _r2_label(weights):
    return "R2" if weights is None else "R2 (weighted)"


def _r2(y, pred, weights=None):
    w = np.ones_like(y) if weights is None else weights
    if not np.sum(w) > 0:
        return float("nan")
    resid = float(np.sum(w * (y - pred) ** 2))
    total = float(np.sum(w * (y - np.average(y, weights=w)) ** 2))
    return 1.0 - resid / total if total > 0 else float("nan")


def _r2_text(y, pred, weights=None):
    """R2 to 4 decimals, or why it is undefined (instead of printing nan)."""
    value = _r2(y, pred, weights)
    if not np.isnan(value):
        return f"{value:.4f}"
    if weights is not None and not np.sum(weights) > 0:
        return "n/a (no row with positive weight)"
    return "n/a (one row)" if len(y) < 2 else "n/a (constant target)"


def _print(*args, **kwargs):
    print(*args, **kwargs, flush=True)


def _verbose(args):
    """Progress display: on when asked, or when stderr is a terminal."""
    if args.quiet:
        return 0
    if args.verbose:
        return args.verbose
    return 1 if sys.stderr.isatty() else 0


def _report_fit(model, name, X_train, y_train, X_test, y_test, seconds, *,
                significant_digits=4, exact_thresholds=False, max_terms=None,
                feature_names=None, weights=(None, None)):
    from ._export import export_text

    _print(f"== {name} ==")
    _print(export_text(model, feature_names=feature_names,
                       significant_digits=significant_digits,
                       exact_thresholds=exact_thresholds, max_terms=max_terms), end="")
    r2 = _r2_label(weights[0])
    line = f"leaves: {model.get_n_leaves()}  depth: {model.get_depth()}  " \
           f"train {r2}: {_r2_text(y_train, model.predict(X_train), weights[0])}"
    if X_test is not None:
        line += f"  test {r2}: {_r2_text(y_test, model.predict(X_test), weights[1])}"
    line += f"  fit time: {seconds:.3f}s"
    _print(line)


def _save_outputs(model, args):
    if args.out:
        import joblib

        joblib.dump(model, args.out)
        _print(f"model saved to {args.out}")
    if args.json:
        from ._export import to_dict

        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(to_dict(model), fh, indent=1)
        _print(f"tree saved as JSON to {args.json}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from ._export import plot_tree

        n_leaves = model.get_n_leaves()
        fig, ax = plt.subplots(figsize=(max(6.0, 2.6 * n_leaves), 2.2 * (model.get_depth() + 2)))
        plot_tree(model, ax=ax)
        try:
            fig.savefig(args.plot, bbox_inches="tight", dpi=100)
        except ValueError as exc:  # unknown image format
            raise UsageError(f"--plot: {exc}") from None
        finally:
            plt.close(fig)
        _print(f"tree plot saved to {args.plot}")


# --------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------


def _cmd_demo(args):
    from . import CholeskyTreeRegressor, CLARITreeRegressor
    from .datasets import make_greedy_trap

    if args.max_depth < 2:
        # g then h: the signal needs two splits to show.
        raise UsageError(f"--max-depth must be >= 2 for the trap (the signal needs two "
                         f"splits), got {args.max_depth}")
    if args.n_nuisance <= args.max_depth:
        raise UsageError("--n-nuisance must be greater than --max-depth for the trap to hold")
    kw = {"epsilon": args.epsilon, "n_nuisance": args.n_nuisance, "depth": args.max_depth}
    X, y = make_greedy_trap(n_samples=args.n_samples, random_state=args.seed, **kw)
    X_test, y_test = make_greedy_trap(n_samples=args.n_samples, random_state=args.seed + 1,
                                      **kw)
    names = ["g", "h"]
    for j in range(1, args.n_nuisance + 1):
        names += [f"m{j}a", f"m{j}b"]
    names.append("z")
    _print(
        "The greedy trap (CLARITree paper, appendix B.2): y = g*h*z for most rows,\n"
        f"a product of one random nuisance pair for a fraction eps={args.epsilon} of them.\n"
        "No single split on g, h or z helps a linear leaf, so a greedy tree chases\n"
        "what only looks useful (nuisance bits, cuts of z that fit noise); one-step\n"
        "lookahead sees that g then h makes y = +-z in every leaf.\n"
        f"{args.n_samples} training rows, {args.n_samples} test rows, "
        f"features: g, h, m1a..m{args.n_nuisance}b, z.\n"
        "Leaf equations show their 3 largest terms.\n"
    )
    verbose = _verbose(args)
    results = {}
    for label, cls in (("CholeskyTree (greedy)", CholeskyTreeRegressor),
                       ("CLARITree (one-step lookahead)", CLARITreeRegressor)):
        model = cls(max_depth=args.max_depth, verbose=verbose)
        start = time.perf_counter()
        # Plain arrays: the demo needs nothing beyond the core dependencies.
        model.fit(X, y)
        seconds = time.perf_counter() - start
        _report_fit(model, label, X, y, X_test, y_test, seconds, max_terms=3,
                    feature_names=names)
        results[label] = np.mean((model.predict(X_test) - y_test) ** 2)
        _print()
    greedy, lookahead = results.values()
    _print(f"test MSE: greedy {greedy:.4f}, lookahead {lookahead:.4f} "
           f"(ratio {greedy / lookahead:.1f}; the population ratio is at least "
           f"1/(4 eps) = {1 / (4 * args.epsilon):.1f})")
    return 0


def _holdout(X, y, test_size, seed, stratify=None, weights=None):
    """``(X_train, X_test, y_train, y_test, w_train, w_test)``; tests None at size 0."""
    if test_size == 0:
        return X, None, y, None, weights, None
    from sklearn.model_selection import train_test_split

    n_test = int(np.ceil(test_size * len(y)))
    if n_test < 1 or len(y) - n_test < 2:
        raise UsageError(f"--test-size {test_size} leaves too few rows for training or "
                         f"testing ({len(y)} rows)")
    arrays = (X, y) if weights is None else (X, y, weights)
    try:
        parts = train_test_split(*arrays, test_size=test_size, random_state=seed,
                                 stratify=stratify)
    except ValueError as exc:
        text = str(exc)
        if len(text) > 300:
            # scikit-learn lists every class with too few rows: thousands of
            # them for a numeric target taken for classes.
            text = text[:300].rstrip() + " ..."
        hint = ""
        if stratify is not None:
            classes = np.unique(stratify)
            if len(classes) > len(y) // 2 and np.issubdtype(classes.dtype, np.number):
                hint = "; a numeric target is fitted with --task regression"
            if "least populated class" in text:
                hint += ("; --test-size 0 fits on every row (the test split keeps each "
                         "class's share, so each class needs two rows)")
        raise UsageError(f"cannot split the data: {text}{hint}") from None
    return tuple(parts) if weights is not None else (*parts, None, None)


def _cmd_fit(args):
    from . import CholeskyTreeRegressor, CLARITreeRegressor

    for path, option in ((args.out, "--out"), (args.json, "--json"), (args.plot, "--plot")):
        _check_writable(path, option, model_outputs=True)
    if args.time_limit is not None and args.lookahead_depth == 0:
        raise UsageError("--time-limit bounds the lookahead search; the greedy tree "
                         "(--lookahead-depth 0) has none")
    if _column_list(args.regression_features) and args.leaf_model != "linear":
        raise UsageError("--regression-features chooses the columns of linear leaves; "
                         "constant leaves (--leaf-model constant) have none")
    table = _read_table(args.data, args.encoding)
    frame, weights = _take_weights_and_drop(table, args)
    X, y = _split_target(frame, args.target, args.data)
    regression = _column_list(args.regression_features, X.columns)
    categorical = _categorical_columns(X, args, table.columns)
    X_train, X_test, y_train, y_test, w_train, w_test = _holdout(
        X, y, args.test_size, args.random_state, weights=weights)
    params = {
        "categorical_features": categorical or None,
        "max_depth": args.max_depth,
        "leaf_model": args.leaf_model,
        "leaf_penalty": args.leaf_penalty,
        "ridge_alpha": args.ridge_alpha,
        "n_thresholds": args.n_thresholds,
        "min_category_weight": args.min_category_weight,
        "min_samples_leaf": args.min_samples_leaf,
        "regression_features": regression or "auto",
        "verbose": _verbose(args),
    }
    if args.lookahead_depth > 0:
        params["time_limit"] = args.time_limit
    if args.cv is not None:
        return _fit_cv(args, params, X_train, X_test, y_train, y_test, (w_train, w_test))
    if args.lookahead_depth == 0:
        model = CholeskyTreeRegressor(n_jobs=args.n_jobs, **params)
    else:
        model = CLARITreeRegressor(lookahead_depth=args.lookahead_depth,
                                   n_jobs=args.n_jobs, **params)
    start = time.perf_counter()
    _fit_categorical(model, X_train, y_train, w_train)
    seconds = time.perf_counter() - start
    _report_fit(model, type(model).__name__, X_train, y_train, X_test, y_test, seconds,
                significant_digits=args.significant_digits,
                exact_thresholds=args.exact_thresholds, weights=(w_train, w_test))
    _save_outputs(model, args)
    return 0


def _fit_categorical(model, X, y, sample_weight=None):
    """``model.fit(X, y, sample_weight)``; too many levels in a column is a usage error."""
    from ._preparation import TooManyLevelsError
    from ._tree import MAX_CATEGORIES

    try:
        model.fit(X, y, sample_weight=sample_weight)
    except TooManyLevelsError as exc:
        raise UsageError(
            f"categorical column {exc.column} has {exc.n_levels} levels, more than the "
            f"{MAX_CATEGORIES} supported; pass --min-category-weight W to merge the levels "
            f"with less than W training rows, and those beyond the {MAX_CATEGORIES - 1} "
            "most frequent, into one '<other>' level (W = 0: only those beyond)"
            + (". " + exc.hint.format(drop=f"pass --drop {exc.column}")
               if exc.hint else "")) from None


def _fit_cv(args, params, X_train, X_test, y_train, y_test, weights=(None, None)):
    """``fit --cv K``: tune (leaf_penalty, ridge_alpha), refit, report the pair."""
    from sklearn.model_selection import KFold

    from ._path import CholeskyTreeRegressorCV, CLARITreeRegressorCV

    if len(y_train) < 2 * args.cv:
        raise UsageError(f"--cv {args.cv} needs at least {2 * args.cv} training rows, "
                         f"got {len(y_train)}")
    params = {k: v for k, v in params.items() if k not in ("leaf_penalty", "ridge_alpha")}
    folds = KFold(args.cv, shuffle=True, random_state=args.random_state)
    cv_params = {"leaf_penalties": args.leaf_penalties, "ridge_alphas": args.ridge_alphas,
                 "cv": folds, "n_jobs": args.n_jobs}
    if args.lookahead_depth == 0:
        model = CholeskyTreeRegressorCV(**cv_params, **params)
    else:
        model = CLARITreeRegressorCV(lookahead_depth=args.lookahead_depth, **cv_params,
                                     **params)
    n_pairs = len(args.leaf_penalties) * len(args.ridge_alphas)
    _print(f"tuning leaf_penalty x ridge_alpha ({n_pairs} pairs) by {args.cv}-fold CV ...")
    start = time.perf_counter()
    # The estimator's progress and its own line on the chosen pair (which
    # the report below gives in full) go where the progress display goes.
    with contextlib.redirect_stdout(sys.stderr):
        _fit_categorical(model, X_train, y_train, weights[0])
    seconds = time.perf_counter() - start
    best = model.best_index_
    leaves = model.cv_results_["mean_n_leaves"][best]
    _print(f"chosen by {args.cv}-fold CV: leaf_penalty={model.leaf_penalty_:g} "
           f"ridge_alpha={model.ridge_alpha_:g}  mean CV "
           f"{_r2_label(weights[0])}: {model.best_score_:.4f}  "
           f"mean CV leaves: {leaves:.3g}")
    tree = model.best_estimator_
    _report_fit(tree, type(tree).__name__, X_train, y_train, X_test, y_test, seconds,
                significant_digits=args.significant_digits,
                exact_thresholds=args.exact_thresholds, weights=weights)
    _save_outputs(tree, args)
    return 0


def _cmd_mbndt(args):
    for path, option in ((args.out, "--out"), (args.json, "--json"), (args.plot, "--plot")):
        _check_writable(path, option, model_outputs=True)
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError("clarytree mbndt needs PyTorch: pip install 'clarytree[torch]'") \
            from None
    from .mbndt import MBNDTClassifier, MBNDTRegressor

    frame = _read_table(args.data, args.encoding)
    if args.target not in frame.columns:
        raise UsageError(
            f"column {args.target!r} not found in {args.data}; columns: "
            f"{_names(frame.columns)}")
    frame, weights = _take_weights_and_drop(frame, args)
    y = frame[args.target]
    if y.isna().any():
        raise UsageError(f"target column {args.target!r} has missing values")
    X = frame.drop(columns=[args.target])
    if X.shape[1] == 0:
        raise UsageError(f"{args.data} has no feature columns besides the target")
    for c in X.columns:
        _reject_dates(X[c], c, levels_option=False)
        _warn_numeric_text(X[c], c, "to keep it categorical, leave it as it is")
    task = args.task
    numbers = _is_number_column(y)
    if numbers:
        values = y.to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.all(np.isfinite(values)):
            bad = int(np.sum(~np.isfinite(values)))
            raise UsageError(f"target column {args.target!r} has {bad} infinite value(s)")
    # Numbers with a fraction are amounts, not class codes (2.5, 0.5).
    fractions = numbers and not np.all(np.mod(values, 1.0) == 0.0)
    if task == "auto":
        task = ("regression" if numbers and (fractions or y.nunique() > 10)
                else "classification")
    if task == "regression" and not numbers:
        raise UsageError(f"--task regression: target column {args.target!r} is not "
                         "numeric; leave --task auto (or pass --task classification) to "
                         "predict its values as classes")
    # Classes of numbers with a fraction are named by their text (scikit-learn
    # takes float labels only when they are whole numbers).
    y = y.astype(str).to_numpy() if task == "classification" and fractions else y.to_numpy()
    if task == "classification" and numbers and not fractions and y.dtype == object:
        # Decimals (a database's NUMERIC class codes): scikit-learn takes no
        # Decimal labels. Whole ones are the integers they are, read exactly
        # (not through float64); others are named by their text.
        codes = [int(v) for v in y]
        if any(c != v for c, v in zip(codes, y, strict=True)):
            y = y.astype(str)
        elif all(-(2**63) <= c < 2**63 for c in codes):
            y = np.array(codes, dtype=np.int64)
        else:
            y = np.array([str(c) for c in codes], dtype=object)
    cls = MBNDTClassifier if task == "classification" else MBNDTRegressor
    if task == "regression":
        y = y.astype(np.float64)
    params = {"max_depth": args.max_depth, "n_branches": args.n_branches,
              "leaf_budget": args.leaf_budget, "n_restarts": args.n_restarts,
              "max_epochs": args.max_epochs, "random_state": args.random_state,
              "device": args.device, "verbose": _verbose(args)}
    model = cls(**params)
    stratify = y if task == "classification" else None
    X_train, X_test, y_train, y_test, w_train, w_test = _holdout(
        X, y, args.test_size, args.random_state, stratify, weights)
    start = time.perf_counter()
    with warnings.catch_warnings():
        # Said above in the command's words.
        warnings.filterwarnings("ignore", message=r".*holds (text|numbers stored as text)")
        model.fit(X_train, y_train, sample_weight=w_train)
    seconds = time.perf_counter() - start
    from ._export import export_text

    _print(f"== {cls.__name__} ({task}) ==")
    _print(export_text(model, significant_digits=args.significant_digits,
                       exact_thresholds=args.exact_thresholds), end="")
    line = f"leaves: {model.get_n_leaves()}  depth: {model.get_depth()}"
    weighted = " (weighted)" if weights is not None else ""
    for part, Xp, yp, wp in (("train", X_train, y_train, w_train),
                             ("test", X_test, y_test, w_test)):
        if Xp is None:
            continue
        if task == "classification":
            from sklearn.metrics import balanced_accuracy_score

            if wp is not None and not np.sum(wp) > 0:
                line += (f"  {part} balanced accuracy{weighted}: n/a (no row with "
                         "positive weight)")
            else:
                score = balanced_accuracy_score(yp, model.predict(Xp), sample_weight=wp)
                line += f"  {part} balanced accuracy{weighted}: {score:.4f}"
        else:
            line += f"  {part} R2{weighted}: {_r2_text(yp, model.predict(Xp), wp)}"
    _print(line + f"  fit time: {seconds:.3f}s")
    _save_outputs(model, args)
    return 0


def _load_model(path):
    """A fitted model from a joblib file (``--out``) or a JSON tree (``--json``)."""
    if not os.path.exists(path):
        raise UsageError(f"file not found: {path}")
    # By content: a JSON tree starts with "{", a pickle never does (whatever
    # the file is named).
    with open(path, "rb") as fh:
        start = fh.read(64).lstrip(codecs.BOM_UTF8 + b" \t\r\n")
    if start.startswith(b"{"):
        from ._export import from_dict

        try:
            with open(path, encoding="utf-8-sig") as fh:     # with or without a BOM
                model = from_dict(json.load(fh))
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise UsageError(f"cannot load a model from {path}: {first}") from None
    else:
        import joblib

        try:
            model = joblib.load(path)
        except Exception as exc:  # any unpickling failure means "not a model file"
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            detail = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            raise UsageError(f"cannot load a model from {path}: it is not a model file "
                             "written by --out of 'clarytree fit' or 'clarytree mbndt' "
                             f"(or a tree written by --json) ({detail[:200]})") from None
    if not (hasattr(model, "predict") and hasattr(model, "tree_")):
        raise UsageError(f"{path} does not hold a fitted clarytree model")
    return model


def _level_types(model):
    """Names of the categorical columns whose levels of fit are text, and of
    those whose levels are numbers."""
    text, numbers = [], []
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return text, numbers
    kinds = getattr(model, "_column_kinds", None)
    if kinds is not None:
        # MBNDT: its categorical columns came from text columns of the
        # training file, their levels the text as written ("1.0" is not "1")
        return [str(n) for n, kind in zip(names, kinds, strict=True) if kind == "cat"], []
    preparation = getattr(model, "_preparation", None)
    if preparation is None:
        return text, numbers
    for j, name in enumerate(names):
        levels = preparation.levels_of_fit(j)
        if not levels:
            continue
        if all(isinstance(v, str) for v in levels):
            text.append(str(name))
        elif not any(isinstance(v, (str, bool, np.bool_)) for v in levels):
            numbers.append(str(name))
    return text, numbers


def _cmd_predict(args):
    import pandas as pd

    _check_writable(args.out, "--out")
    model = _load_model(args.model)
    # A file has no column types: read each categorical column as the type
    # its levels had in fit, or a column that was text in the training file
    # (a stray "?") but is all numbers here would match none of its levels.
    text, numbers = _level_types(model)
    frame = _read_table(args.data, args.encoding, text_columns=text,
                        as_written=args.keep)
    for name in numbers:
        if name in frame.columns and frame[name].dtype.kind not in "iuf":
            # numeric codes: a code written as text reads as that number, an
            # entry that is no number is an unseen level (missing) either way
            frame[name] = pd.to_numeric(frame[name], errors="coerce")
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        missing = [str(n) for n in names if str(n) not in frame.columns]
        if missing:
            raise UsageError(f"column(s) the model needs are missing from {args.data}: "
                             f"{_list(missing)}")
        # Extra columns (the target, ids) are ignored.
        X = frame[[str(n) for n in names]]
    else:
        X = frame
        if X.shape[1] != model.n_features_in_:
            raise UsageError(f"{args.data} has {X.shape[1]} columns but the model expects "
                             f"{model.n_features_in_}")
    keep = _column_list(args.keep, frame.columns)
    unknown = [c for c in keep if c not in frame.columns]
    if unknown:
        raise UsageError(f"--keep: column(s) not in {args.data}: {_list(unknown)}")
    own = ("prediction", "leaf", "rule", "intercept") if args.explain else ("prediction",)
    clash = [c for c in keep if c in own or c.startswith(("proba[", "term["))]
    if clash:
        raise UsageError(f"--keep: column(s) {_list(clash)} would clash with the output's own")
    if args.proba:
        _check_proba(model)
    # Identifiers as written ("00123" stays "00123"), not as parsed numbers.
    written = frame.attrs.get("as_written")
    out = (written if written is not None else frame)[keep].reset_index(drop=True)
    if args.explain:
        if hasattr(model, "classes_"):
            raise UsageError(f"--explain: {type(model).__name__} is a classifier; --explain "
                             "breaks a regression tree's predictions into their terms")
        from ._explain import explain

        table = explain(model, X).reset_index(drop=True)
        for column in ("leaf", "rule", "intercept"):
            out[column] = table[column]
        for name in table.columns:
            if name not in ("leaf", "rule", "intercept", "prediction"):
                out[f"term[{name}]"] = table[name]
    out["prediction"] = model.predict(X)
    if args.proba:
        proba = model.predict_proba(X)
        for k, label in enumerate(model.classes_):
            out[f"proba[{label}]"] = proba[:, k]
    if args.out:
        if args.out.lower().endswith((".parquet", ".pq")):
            # As the input files: Parquet by its extension.
            try:
                out.to_parquet(args.out, index=False)
            except ImportError:
                raise UsageError(f"cannot write {args.out}: writing Parquet needs pyarrow "
                                 "(or fastparquet): pip install pyarrow") from None
        else:
            out.to_csv(args.out, index=False)
        _print(f"{len(out)} predictions saved to {args.out}")
    else:
        out.to_csv(sys.stdout, index=False)
    return 0


def _cmd_export(args):
    from ._explain import export_python, export_sql

    _check_writable(args.out, "--out")
    model = _load_model(args.model)
    if args.extrapolation is not None:
        if not hasattr(model, "extrapolation"):
            raise UsageError("--extrapolation applies to CLARITree models only")
        model.set_params(extrapolation=args.extrapolation)
    if args.proba and not args.sql:
        raise UsageError("--proba goes with --sql (the Python source of a classifier always "
                         "defines predict_proba)")
    if args.proba:
        _check_proba(model)
    if args.sql:
        text = export_sql(model, table=args.table, dialect=args.dialect,
                          proba=args.proba) + "\n"
    else:
        text = export_python(model, function_name=args.function_name)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        _print(f"{'SQL' if args.sql else 'Python'} written to {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def _identifier(text):
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"expected a Python identifier, got {text!r}")
    return text


# --------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------


def _add_common_output(p):
    p.add_argument("--out", metavar="MODEL.joblib", help="save the fitted model (joblib)")
    p.add_argument("--json", metavar="TREE.json", help="save the tree as JSON (to_dict)")
    p.add_argument("--plot", metavar="TREE.png", help="save a drawing of the tree")
    p.add_argument("--significant-digits", "--decimals", dest="significant_digits",
                   type=_significant_digits, default=4, metavar="N",
                   help="significant digits of leaf coefficients and values, or 'all' "
                        "(--decimals is its former name)")
    p.add_argument("--exact-thresholds", action="store_true",
                   help="print the model's own thresholds instead of the shortest decimals "
                        "that route the training rows the same way")


def _add_table_columns(p):
    p.add_argument("--weight", metavar="COLUMN",
                   help="column of row weights (sample_weight; finite, >= 0), not a "
                        "feature; the reported scores are weighted too")
    p.add_argument("--drop", metavar="COL,...",
                   help="columns that are not features (ids, leaks); 'predict' ignores "
                        "them too")


def _add_verbosity(p):
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="show progress of long fits (default: when stderr is a terminal)")
    p.add_argument("-q", "--quiet", action="store_true", help="never show progress")


def _encoding(text):
    try:
        return codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None


def _add_encoding(p):
    p.add_argument("--encoding", type=_encoding, metavar="CODEC",
                   help="text encoding of a CSV file, e.g. cp1252 or latin-1 (default: "
                        "UTF-8)")


_DATA_HELP = ("CSV (optionally gzip, bz2, xz or zip compressed; separated by commas, "
              "semicolons, tabs or |, detected) or Parquet file")


def build_parser():
    """The argument parser of the ``clarytree`` command."""
    from . import __version__

    parser = _Parser(
        prog="clarytree",
        description="Interpretable shallow trees: piecewise-linear CLARITree regression "
                    "trees and multi-branch MBNDT trees.",
    )
    parser.add_argument("--version", action="version", version=f"clarytree {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser("demo", help="greedy vs lookahead on the greedy-trap data (no files)",
                          description="Fit CholeskyTree (greedy) and CLARITree (lookahead) on "
                                      "generated greedy-trap data and compare them.")
    demo.add_argument("--n-samples", type=_positive_int, default=1000,
                      help="training rows (and as many test rows)")
    demo.add_argument("--epsilon", type=float, default=0.05,
                      help="fraction of nuisance rows, in (0, 0.5)")
    demo.add_argument("--n-nuisance", type=_positive_int, default=8,
                      help="number of nuisance feature pairs")
    demo.add_argument("--max-depth", type=_positive_int, default=4,
                      help="tree depth (at least 2)")
    demo.add_argument("--seed", type=_non_negative_int, default=0,
                      help="seed of the generated data")
    _add_verbosity(demo)
    demo.set_defaults(func=_cmd_demo)

    fit = sub.add_parser("fit", help="fit a CLARITree on a CSV/Parquet file",
                         description="Fit a piecewise-linear tree on DATA (CSV or Parquet), "
                                     "print it and its metrics. Text and bool columns are "
                                     "categorical, empty cells (and NA, null, ... among "
                                     "numbers) are missing values.")
    fit.add_argument("data", metavar="DATA", help=_DATA_HELP)
    fit.add_argument("--target", required=True, metavar="COLUMN", help="target column")
    fit.add_argument("--max-depth", type=_non_negative_int, default=4,
                     help="maximum depth of the tree")
    fit.add_argument("--lookahead-depth", type=_non_negative_int, default=1,
                     help="0 = greedy CholeskyTree, 1 = CLARITree, k = exhaustive to depth k")
    fit.add_argument("--leaf-model", choices=["linear", "constant"], default="linear",
                     help="ridge regression or a constant in each leaf")
    fit.add_argument("--leaf-penalty", type=_non_negative_float, default=1e-3,
                     help="lambda: cost of a leaf as a fraction of the total sum of squares")
    fit.add_argument("--ridge-alpha", type=_non_negative_float, default=1e-5,
                     help="kappa: per-sample ridge strength on standardized features")
    fit.add_argument("--n-thresholds", type=_n_thresholds, default=20,
                     help="candidate thresholds per feature, or 'all'")
    fit.add_argument("--cv", type=_checked(int, lambda v: v >= 2, "an integer >= 2"),
                     metavar="K", help="choose --leaf-penalty and --ridge-alpha by K-fold "
                     "CV (shuffled with --random-state) over the grids below, then refit "
                     "(default: no CV, the given --leaf-penalty and --ridge-alpha)")
    fit.add_argument("--leaf-penalties", type=_grid, metavar="L1,L2,...",
                     default=list(_PAPER_LEAF_PENALTIES),
                     help="lambda grid for --cv (default: the paper's 11 values)")
    fit.add_argument("--ridge-alphas", type=_grid, metavar="K1,K2,...",
                     default=list(_PAPER_RIDGE_ALPHAS),
                     help="kappa grid for --cv (default: 1e-1,1e-2,1e-3,1e-4,1e-5)")
    fit.add_argument("--n-jobs", type=_checked(int, lambda v: v == -1 or v >= 1,
                                               "a positive integer or -1"),
                     default=None, help="with --cv: parallel CV tasks; otherwise threads "
                     "of the fit (the lookahead search, the nodes' sums and the per-column "
                     "preparation; -1: all cores; the tree does not depend on it) (default: 1)")
    fit.add_argument("--test-size", type=_test_size, default=0.2,
                     help="held-out fraction for the test R2 (0 to train on all rows)")
    fit.add_argument("--random-state", type=_non_negative_int, default=0,
                     help="seed of the train/test split")
    fit.add_argument("--categorical", metavar="COL,...",
                     help="also treat these (numeric) columns as categorical; text and "
                          "bool columns always are")
    fit.add_argument("--min-category-weight", type=_non_negative_float, metavar="W",
                     help="merge the levels of a categorical column with less than W "
                          "training rows, and those beyond the 255 most frequent, into one "
                          "'<other>' level (default: never; then more than 256 levels are "
                          "an error)")
    fit.add_argument("--regression-features", metavar="COL,...",
                     help="the numeric columns the leaf regressions use (default: every "
                          "numeric column that is not all 0/1); the others only split")
    fit.add_argument("--min-samples-leaf", type=_min_samples_leaf, default="auto",
                     metavar="N", help="least rows per leaf: an integer, a fraction of the "
                     "training rows in (0, 1), or 'auto' (5 per regression feature for "
                     "linear leaves, 1 for constant ones); with --weight, weight")
    fit.add_argument("--time-limit", type=_positive_float, metavar="SECONDS",
                     help="stop the lookahead search after this many seconds and finish "
                          "the tree greedily (with --cv: each search of a fold and ridge "
                          "strength, and the refit) (default: no limit)")
    _add_table_columns(fit)
    _add_encoding(fit)
    _add_common_output(fit)
    _add_verbosity(fit)
    fit.set_defaults(func=_cmd_fit, reads_tables=True)

    predict = sub.add_parser("predict", help="predict with a saved model",
                             description="Predict DATA with a model saved by 'fit --out'.")
    predict.add_argument("model", metavar="MODEL", help="model file written by --out")
    predict.add_argument("data", metavar="DATA",
                         help="CSV or Parquet file with the features (as for fit)")
    predict.add_argument("--proba", action="store_true",
                         help="also write each class's probability, as columns "
                              "proba[CLASS] (classifiers)")
    predict.add_argument("--explain", action="store_true",
                         help="also write each row's leaf, rule, intercept and one "
                              "term[FEATURE] column per feature (coefficient times value): "
                              "the intercept plus the terms is the prediction (regressors)")
    predict.add_argument("--keep", metavar="COL,...",
                         help="copy these columns of DATA into the output, before the "
                              "predictions (e.g. an id)")
    _add_encoding(predict)
    predict.add_argument("--out", metavar="PREDICTIONS.csv",
                         help="write predictions here, as Parquet when the name ends in "
                              ".parquet or .pq, else as CSV (default: standard output)")
    predict.set_defaults(func=_cmd_predict, reads_tables=True)

    export = sub.add_parser(
        "export", help="turn a saved model into SQL or Python code",
        description="Write MODEL (joblib file from --out, or JSON from --json) as one SQL "
                    "CASE expression or as a dependency-free Python function; both "
                    "reproduce the model's predictions.")
    export.add_argument("model", metavar="MODEL", help="model file (.joblib or .json)")
    what = export.add_mutually_exclusive_group(required=True)
    what.add_argument("--sql", action="store_true", help="SELECT ... FROM TABLE")
    what.add_argument("--python", action="store_true", help="a Python function")
    export.add_argument("--table", default="t", help="table of the SQL query (default: t)")
    export.add_argument("--dialect", choices=["sqlite", "postgres", "ansi"], default="sqlite")
    export.add_argument("--proba", action="store_true",
                        help="with --sql, also select each class's probability as columns "
                             "proba[CLASS] (classifiers)")
    export.add_argument("--function-name", type=_identifier, default="predict",
                        help="name of the Python function (default: predict)")
    export.add_argument("--extrapolation", choices=["none", "clip"],
                        help="override the model's extrapolation setting")
    export.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    export.set_defaults(func=_cmd_export)

    mb = sub.add_parser("mbndt", help="fit an MBNDT multi-branch tree (needs torch)",
                        description="Fit an MBNDT classifier or regressor on DATA, print the "
                                    "exported rules and metrics.")
    mb.add_argument("data", metavar="DATA", help=_DATA_HELP)
    mb.add_argument("--target", required=True, metavar="COLUMN", help="target column")
    mb.add_argument("--task", choices=["auto", "classification", "regression"], default="auto",
                    help="auto: regression for numeric targets with more than 10 values "
                         "or with fractions")
    mb.add_argument("--max-depth", type=_positive_int, default=4,
                    help="depth of the nominal tree (tests per prediction)")
    mb.add_argument("--n-branches", type=_positive_int, default=3,
                    help="maximum children of a node")
    mb.add_argument("--leaf-budget", type=_non_negative_float, default=16.0,
                    help="target number of effective leaves")
    mb.add_argument("--n-restarts", type=_positive_int, default=5,
                    help="random initializations trained together")
    mb.add_argument("--max-epochs", type=_positive_int, default=500,
                    help="maximum training epochs")
    mb.add_argument("--test-size", type=_test_size, default=0.2,
                    help="held-out fraction for the test metrics (0 to train on all rows)")
    mb.add_argument("--random-state", type=_non_negative_int, default=0,
                    help="seed of the split, the initialization and the minibatches")
    mb.add_argument("--device", default="cpu",
                    help="torch device to train on: cpu, cuda, cuda:1, ..., or auto (a GPU "
                         "when torch sees one)")
    _add_table_columns(mb)
    _add_encoding(mb)
    _add_common_output(mb)
    _add_verbosity(mb)
    mb.set_defaults(func=_cmd_mbndt, reads_tables=True)
    return parser


def main(argv=None):
    """Run the ``clarytree`` command; return its exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; defaults to ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success, 2 for a usage or input error.

    Notes
    -----
    Set the environment variable ``CLARYTREE_DEBUG=1`` to see the traceback of
    an error the estimators raise instead of its one-line message.
    """
    parser = build_parser()
    with warnings.catch_warnings():
        # Warnings read as the command's own messages, not as source lines.
        warnings.showwarning = _show_warning
        return _run(parser, argv)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    sys.stdout.flush()
    print(f"clarytree: warning: {message}", file=sys.stderr, flush=True)


def _require_pandas(command):
    # pandas reads the data files; it is not a dependency of the estimators.
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise UsageError(f"'clarytree {command}' reads its tables with pandas: "
                         "pip install pandas") from None


def _run(parser, argv):
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if getattr(args, "reads_tables", False):
            _require_pandas(args.command)
        return args.func(args)
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``clarytree predict ... | head``): stop quietly,
        # with the status of a program ended by SIGPIPE, and keep the final
        # flush at exit from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (ValueError, TypeError, OSError):
        if os.environ.get("CLARYTREE_DEBUG"):
            raise
        return _report_error(sys.exc_info()[1])
    except KeyboardInterrupt:
        _error("interrupted")
        return 130


def _report_error(exc):
    if isinstance(exc, OSError):
        _error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
    else:
        # Parameter validation in the estimators speaks to the user directly.
        _error(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    return EXIT_USAGE


def _error(message):
    sys.stdout.flush()
    print(f"clarytree: error: {message}", file=sys.stderr, flush=True)
