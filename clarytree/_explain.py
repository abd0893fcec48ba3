"""Explain and deploy fitted trees: exact contributions, importances, code export.

A CLARITree prediction is one leaf's intercept plus a short sum of terms
``coef[j] * x[j]``.  :class:`~clarytree._tree.Tree` evaluates it in one fixed
order (the intercept, then the terms of the nonzero coefficients added one by
one in column order, with no fused multiply-add), and everything here writes
the same operations in the same order: :func:`explain` returns the very terms
``Tree.predict`` adds, and :func:`export_sql` / :func:`export_python` emit the
same sum with every number as its shortest round-trip literal
(``repr(float)``), so the generated code reproduces ``predict`` bit for bit in
any language whose floats are IEEE doubles.

Also here: the training boxes that ``extrapolation="clip"`` uses and the
definition of ``feature_importances_``, both computed once at fit time.
"""

import builtins
import keyword
import numbers

import numpy as np

from ._frames import as_pandas

__all__ = ["explain", "export_python", "export_sql"]

_DIALECTS = ("sqlite", "postgres", "ansi")
_RESERVED_COLUMNS = ("leaf", "rule", "intercept", "prediction")


# --------------------------------------------------------------------------
# Fit-time helpers (called by the estimators)
# --------------------------------------------------------------------------


def node_statistics(tree, X, y, features, scale=1.0, sample_weight=None):
    """Training statistics of every node of a freshly fitted binary tree.

    Parameters
    ----------
    tree : clarytree._tree.Tree
    X : ndarray of shape (n_samples, n_features)
        The training matrix as the tree reads it (encoded, NaN for missing).
    y : ndarray of shape (n_samples,)
    features : array of int
        Columns whose box is recorded (the regression features); every other
        column stays unbounded.
    scale : float, default=1.0
        A power of two near the magnitude of ``y``: shares are computed on
        ``y / scale`` and scaled back, so huge targets do not overflow
        inside (the result may still be infinite, like ``node_objective``).
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    stats : dict of ndarray
        The optional :class:`~clarytree._tree.Tree` arrays ``box_lower`` and
        ``box_upper`` (smallest and largest non-missing training value of
        each tracked feature among the node's rows, +-inf elsewhere and for
        all-missing columns), ``target_lower``, ``target_upper`` and
        ``model_share`` (see :func:`feature_importances`), for every node.
    """
    lower, upper, y_lower, y_upper, share = tree.training_statistics(
        X, y, features, scale, sample_weight)
    unit = scale * scale  # a Python float: inf rather than an overflow error
    with np.errstate(over="ignore", invalid="ignore"):  # 0 * inf stays 0 below
        share = np.where(share == 0.0, 0.0, share * unit)
    return {"box_lower": lower, "box_upper": upper, "target_lower": y_lower,
            "target_upper": y_upper, "model_share": share}


def with_node_statistics(tree, data, prep):
    """``tree`` with the :func:`node_statistics` of a fit's prepared data."""
    from ._tree import Tree

    stats = node_statistics(tree, data.X, data.y, prep.regression_features_,
                            prep.y_scale_, data.sample_weight)
    return Tree.from_arrays({**tree.to_arrays(), **stats})


def feature_importances(tree):
    """Normalized importance of every input column of a fitted binary tree.

    The importance of feature ``j`` is the sum of two parts, both sums of
    squares in units of ``y**2``:

    * split credit: for every internal node splitting on ``j``, the decrease
      of the fitted objective, ``node_objective[node] - node_objective[left]
      - node_objective[right]`` (the node's leaf objective minus its
      children's; never negative for ridge leaves, clipped at 0 against
      rounding);
    * leaf credit: in every leaf, ``j``'s share of the variation of the leaf
      model's fitted values over the leaf's training rows,
      ``sum_i w_i (t_ij - mean t_j) * (yhat_i - mean yhat)`` with ``t_ij``
      the term ``coef[j] * x_ij`` (a missing ``x_ij`` as its fill value) and
      weighted means (``tree.model_share``).  The shares of one leaf add up
      to its ``sum_i w_i (yhat_i - mean yhat)**2`` (the Pratt product
      measure); a negative share (a suppressor) counts as 0.

    The vector is divided by its sum (all zeros for a one-leaf constant
    model). With constant leaves only split credits remain and the result is
    scikit-learn's impurity-based importance of the same tree.
    """
    imp = np.zeros(tree.n_features)
    left, right = np.asarray(tree.children_left), np.asarray(tree.children_right)
    obj = np.asarray(tree.node_objective)
    internal = np.flatnonzero(left >= 0)
    gain = obj[internal] - obj[left[internal]] - obj[right[internal]]
    # A node whose ridge system could not be factorized at all has an
    # infinite objective: no credit rather than NaN.
    gain[~np.isfinite(gain)] = 0.0
    np.add.at(imp, np.asarray(tree.feature)[internal], np.maximum(gain, 0.0))
    imp += np.maximum(np.asarray(tree.model_share)[left < 0], 0.0).sum(axis=0)
    total = imp.sum()
    return imp / total if total > 0 else imp


# --------------------------------------------------------------------------
# Recognizing estimators
# --------------------------------------------------------------------------


def _family(estimator):
    """The export family of a fitted estimator (see ``clarytree._export``)."""
    from ._export import _family

    return _family(estimator)


def _names(estimator, feature_names):
    from ._export import _feature_names

    return _feature_names(estimator, feature_names)


# The values of the estimators' ``extrapolation`` parameter.
EXTRAPOLATIONS = ("none", "clip")


def clips(estimator):
    """Whether ``estimator`` clips leaf-model inputs to its leaves' boxes.

    ``extrapolation`` acts at predict time only, so ``set_params`` may change
    it after fit, past fit's parameter validation: it is checked here.
    """
    value = getattr(estimator, "extrapolation", "none")
    if not (isinstance(value, str) and value in EXTRAPOLATIONS):
        raise ValueError(
            f"The 'extrapolation' parameter of {type(estimator).__name__} must be a str "
            f"among {{'clip', 'none'}}. Got {value!r} instead.")
    return value == "clip"


def _missing_left(tree, node):
    return bool(tree.missing_go_left[node])


def _split_levels(estimator, tree, node):
    """Raw levels going left and going right at a categorical binary node.

    Level code ``c`` is ``categories_[f][c]``; the code of the merged rare
    levels (``<other>``) stands for every level in ``merged_categories_[f]``.
    """
    from ._tree import bitset_codes

    f = int(tree.feature[node])
    levels = list(estimator.categories_[f])
    merged = list((getattr(estimator, "merged_categories_", None) or [None] * (f + 1))[f]
                  or [])
    left_codes = set(bitset_codes(tree.categories_left[node]).tolist())
    sides = ([], [])
    for code, level in enumerate(levels):
        raw = merged if merged and code == len(levels) - 1 else [level]
        sides[0 if code in left_codes else 1].extend(raw)
    return sides


def _fill(tree, j):
    return float(tree.fill_value[j])


# --------------------------------------------------------------------------
# Contributions
# --------------------------------------------------------------------------


def explain(estimator, X, feature_names=None):
    """Break every prediction into its leaf, rule, intercept and feature terms.

    A CLARITree prediction is ``intercept + sum_j coef_j * x_j`` of the leaf
    the row reaches. This returns those numbers as ``predict`` computes them:
    for every row, ``intercept`` plus the term columns added one at a time,
    left to right, is ``prediction`` exactly (bit for bit), and
    ``prediction`` is ``estimator.predict(X)``. With
    ``extrapolation="clip"`` the terms use the values clipped to the leaf's
    training box, as ``predict`` does (a missing value's fill, the training
    mean, is not clipped).

    Parameters
    ----------
    estimator : CLARITreeRegressor, CholeskyTreeRegressor or MBNDTRegressor
        A fitted regressor. For MBNDT (constant leaves) the intercept is the
        leaf value and every term is 0.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Rows to explain, as accepted by ``predict``.
    feature_names : sequence of str, optional
        Names of the term columns; defaults to ``feature_names_in_`` or
        ``x[0]``, ``x[1]``, ...

    Returns
    -------
    table : pandas.DataFrame or dict of ndarray
        Columns ``leaf`` (node id, as ``apply``), ``rule`` (the tests that
        lead to the leaf, thresholds exact), ``intercept``, one term column per input feature
        (``coef_j * x_j``; 0 where the feature is not in the leaf model) and
        ``prediction``; one row per row of ``X``, with ``X``'s index when it
        is a DataFrame. Without pandas, a dict of arrays with the same keys.

    Examples
    --------
    >>> from clarytree import CLARITreeRegressor, explain
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, n_features=2, random_state=0)
    >>> model = CLARITreeRegressor(max_depth=2).fit(X, y)
    >>> table = explain(model, X[:3])
    >>> total = table["intercept"] + table["x[0]"] + table["x[1]"]
    >>> bool((total == model.predict(X[:3])).all())
    True
    """
    family = _family(estimator)
    names = _names(estimator, feature_names)
    clash = sorted(set(names) & set(_RESERVED_COLUMNS))
    if clash:
        raise ValueError(f"feature names {clash} clash with the columns of explain(); "
                         "pass feature_names= to rename them")
    X = as_pandas(X)
    index = X.index if hasattr(X, "index") and hasattr(X, "columns") else None
    leaves, rules, intercept, terms, prediction = family.contributions(estimator, X, names)
    columns = {
        "leaf": np.asarray(leaves, dtype=np.intp),
        # Per leaf, or per row where a row's rule differs from its leaf's.
        "rule": (rules if isinstance(rules, np.ndarray)
                 else np.array([rules[int(leaf)] for leaf in leaves], dtype=object)),
        "intercept": intercept,
    }
    for j, name in enumerate(names):
        columns[name] = terms[:, j]
    columns["prediction"] = prediction
    try:
        import pandas as pd
    except ImportError:
        return columns
    return pd.DataFrame(columns, index=index)


def binary_contributions(estimator, X, names):
    """``(leaves, rules, intercept, terms, prediction)`` of a CLARITree-family model.

    ``rules`` maps each leaf id to its rule text.
    """
    from ._export import _binary_threshold_texts, _BinaryView

    Xv = estimator._validate_X_predict(X)
    tree = estimator.tree_
    leaves, terms, prediction = tree.contributions(Xv, clip=clips(estimator))
    # Exact thresholds: the rule holds for every row, not only the training rows.
    thresholds = _binary_threshold_texts(tree, exact_thresholds=True)
    view = _BinaryView(estimator)
    paths = view.conditions()
    rules = {int(leaf): view.rule(paths[leaf], names, thresholds)
             for leaf in np.unique(leaves)}
    # A row missing a value that training never missed took its split's
    # side for missing values (the heavier child), which the leaf's rule
    # does not show: such a row's rule shows every missing side.
    unseen = np.setdiff1d(np.flatnonzero(~np.asarray(estimator.is_categorical_, bool)),
                          sorted(view.missing))
    odd = np.isnan(Xv[:, unseen]).any(axis=1) if unseen.size else np.zeros(len(leaves), bool)
    if odd.any():
        shown = _BinaryView(estimator, every_missing_side=True)
        per_row = np.array([rules[int(leaf)] for leaf in leaves], dtype=object)
        full = {}
        for i in np.flatnonzero(odd):
            leaf = int(leaves[i])
            if leaf not in full:
                full[leaf] = shown.rule(paths[leaf], names, thresholds)
            per_row[i] = full[leaf]
        rules = per_row
    return leaves, rules, np.asarray(tree.intercept)[leaves], terms, prediction


# --------------------------------------------------------------------------
# Number and name formatting shared by the code generators
# --------------------------------------------------------------------------


def _lit(value):
    """Shortest round-trip literal of a finite float (always a float literal)."""
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"cannot write the non-finite number {value!r} as a literal")
    return repr(value)


def _sql_threshold(t):
    """SQL literal of a threshold ``t`` that a column is compared with.

    The model compares ``float64(x) <= t``; SQL compares an integer column
    exactly.  Beyond 2**53 the two differ: ``x = 2**53 + 1`` rounds to
    ``2**53`` and goes left of ``t = 2**53``, while SQL sends it right.  There
    the literal is the largest integer whose float64 is at most ``t``: every
    integer and every float then goes the model's way (the float64 of that
    integer is ``t`` itself, so a REAL column compares as before).
    """
    t = float(t)
    # (Beyond every 64-bit integer, or not finite: exact as a float.)
    if not (abs(t) >= 2.0 ** 53 and -(2.0 ** 63) <= t < 2.0 ** 63):
        return _lit(t)
    low, high = int(t), int(np.nextafter(t, np.inf))
    middle = (low + high) // 2      # exact: the gap between them is even or 1
    return str(middle if float(middle) <= t else middle - 1)    # ties round to even


def _signed_terms(intercept, pairs):
    """``b0 + c1 * x1 - c2 * x2``: ``a + (-c) * x`` equals ``a - c * x`` exactly."""
    parts = [_lit(intercept)]
    for coef, expr in pairs:
        sign = "-" if np.signbit(coef) else "+"
        parts.append(f"{sign} {_lit(abs(coef))} * {expr}")
    return " ".join(parts)


def _leaf_terms(tree, leaf):
    coef = np.asarray(tree.coef[leaf])
    return [(j, float(coef[j])) for j in np.flatnonzero(coef != 0.0)]


def _box(tree, leaf, j):
    return float(tree.box_lower[leaf, j]), float(tree.box_upper[leaf, j])


# --------------------------------------------------------------------------
# SQL
# --------------------------------------------------------------------------


def _sql_ident(name):
    return '"' + str(name).replace('"', '""') + '"'


def _sql_value(value):
    """SQL literal of a category level (strings quoted, numbers as numbers)."""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return _lit(value)
    return "'" + str(value).replace("'", "''") + "'"


def _sql_list(values):
    return "(" + ", ".join(_sql_value(v) for v in values) + ")"


def _sql_clip(col, lo, hi, dialect):
    if lo == -np.inf and hi == np.inf:
        return col
    if dialect == "sqlite":
        # sqlite's multi-argument MIN/MAX are scalar functions (NULL stays NULL).
        if lo != -np.inf:
            col = f"MAX({col}, {_lit(lo)})"
        if hi != np.inf:
            col = f"MIN({col}, {_lit(hi)})"
        return col
    # CASE everywhere else: postgres' LEAST/GREATEST skip NULLs, ANSI has none.
    whens = []
    if lo != -np.inf:
        whens.append(f"WHEN {col} < {_lit(lo)} THEN {_lit(lo)}")
    if hi != np.inf:
        whens.append(f"WHEN {col} > {_lit(hi)} THEN {_lit(hi)}")
    return f"(CASE {' '.join(whens)} ELSE {col} END)"


def _sql_binary_tests(estimator, tree, node, col):
    """(left test, right test) of a binary node, NULL routed as the model does."""
    mleft = _missing_left(tree, node)
    if tree.is_categorical[node]:
        # Levels unseen in training behave as missing values.
        left, right = _split_levels(estimator, tree, node)
        if mleft:
            go_left = f"({col} IS NULL OR {col} NOT IN {_sql_list(right)})" if right \
                else "1 = 1"
            go_right = f"{col} IN {_sql_list(right)}" if right else "1 = 0"
        else:
            go_left = f"{col} IN {_sql_list(left)}" if left else "1 = 0"
            go_right = f"({col} IS NULL OR {col} NOT IN {_sql_list(left)})" if left \
                else "1 = 1"
        return go_left, go_right
    t = float(tree.threshold[node])
    if t == -np.inf:  # missing left, every present value right
        return f"{col} IS NULL", f"{col} IS NOT NULL"
    if t == np.inf:   # every present value left, missing right
        return f"{col} IS NOT NULL", f"{col} IS NULL"
    t = _sql_threshold(t)
    if mleft:
        return f"({col} <= {t} OR {col} IS NULL)", f"{col} > {t}"
    return f"{col} <= {t}", f"({col} > {t} OR {col} IS NULL)"


def binary_sql_cases(estimator, names, dialect):
    """``[(tests, value)]`` per leaf of a CLARITree-family model, as SQL text."""
    tree = estimator.tree_
    clip = clips(estimator)
    cols = [_sql_ident(n) for n in names]
    paths = {0: []}
    cases = []
    for node in range(tree.node_count):  # preorder: parents first
        left = int(tree.children_left[node])
        if left >= 0:
            go_left, go_right = _sql_binary_tests(estimator, tree, node,
                                                  cols[int(tree.feature[node])])
            paths[left] = paths[node] + [go_left]
            paths[int(tree.children_right[node])] = paths[node] + [go_right]
            continue
        pairs = []
        for j, c in _leaf_terms(tree, node):
            lo, hi = _box(tree, node, j) if clip else (-np.inf, np.inf)
            # A missing value reads as the training mean in the leaf models,
            # unclipped (every dialect's clip keeps NULL).
            value = f"COALESCE({_sql_clip(cols[j], lo, hi, dialect)}, {_lit(_fill(tree, j))})"
            pairs.append((c, value))
        cases.append((paths[node], _signed_terms(tree.intercept[node], pairs)))
    return cases


def export_sql(estimator, table="t", dialect="sqlite", feature_names=None,
               column="prediction", proba=False):
    """SQL that computes the model's predictions inside a database.

    One ``CASE`` expression with a ``WHEN`` per leaf: the conjunction of the
    tests on the leaf's path, then the leaf's model. Numbers are written as
    their shortest round-trip decimal (``repr(float)``) and the leaf model as
    the intercept followed by the products ``coef * column`` in column
    order, the order in which ``predict`` adds them, so a database computing
    in IEEE double precision reproduces ``predict`` to rounding of the
    literals (bit for bit in SQLite; older releases, 3.40 among them, read
    a few literals one unit in the last place off, see the user guide).

    * Missing values are SQL ``NULL``: every test sends ``NULL`` to the side
      the model learned for missing values (``... OR col IS NULL``).
    * Categorical splits test the levels as ``col IN (...)``; levels the
      model never saw go where missing values go.
    * With ``extrapolation="clip"`` each column in a leaf model is clipped
      to the leaf's training box: ``MIN(MAX(col, lo), hi)`` in SQLite, a
      ``CASE`` elsewhere (postgres' ``GREATEST``/``LEAST`` ignore ``NULL``);
      a ``NULL`` then reads as the training mean, unclipped.
    * MBNDT trees test raw columns as the fitted tree does: numeric missing
      values are replaced by the training median (``COALESCE``), missing
      categories match the level table's missing entry (``IS NULL``) or the
      default branch, and a leaf returns its value (regressor) or its class
      label (classifier).

    Parameters
    ----------
    estimator : fitted clarytree estimator
        CLARITreeRegressor, CholeskyTreeRegressor, MBNDTRegressor or
        MBNDTClassifier.
    table : str or None, default="t"
        Table (or subquery) the rows come from, inserted verbatim after
        ``FROM``. ``None`` returns the bare ``CASE`` expression.
    dialect : {"sqlite", "postgres", "ansi"}, default="sqlite"
        Only the clipping differs (see above); identifiers are always
        double-quoted.
    feature_names : sequence of str, optional
        Column names of the table, in the model's feature order; defaults to
        ``feature_names_in_`` or ``x[0]``, ``x[1]``, ...
    column : str, default="prediction"
        Name of the output column.
    proba : bool, default=False
        For a classifier, also select each class's probability (as
        ``predict_proba``), one column ``"proba[CLASS]"`` per class after the
        prediction (as ``leaf_table`` names them); needs a ``table``.

    Returns
    -------
    sql : str
        ``SELECT CASE ... END AS "prediction" FROM table``, or the expression.

    Examples
    --------
    >>> import sqlite3
    >>> from clarytree import CholeskyTreeRegressor, export_sql
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, n_features=2, random_state=0)
    >>> model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    >>> db = sqlite3.connect(":memory:")
    >>> _ = db.execute('CREATE TABLE t ("x[0]" REAL, "x[1]" REAL)')
    >>> _ = db.executemany("INSERT INTO t VALUES (?, ?)", X.tolist())
    >>> sql_pred = [row[0] for row in db.execute(export_sql(model))]
    >>> bool((sql_pred == model.predict(X)).all())
    True
    """
    if dialect not in _DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(_DIALECTS)}; got {dialect!r}")
    if table is not None and (not isinstance(table, str) or not table.strip()):
        raise TypeError(f"table must be a non-empty string or None, got {table!r}")
    if not isinstance(column, str) or not column.strip():
        raise TypeError(f"column must be a non-empty string, got {column!r}")
    family = _family(estimator)
    names = _names(estimator, feature_names)
    outputs = [(column, family.sql_cases(estimator, names, dialect))]
    if proba:
        if not hasattr(estimator, "classes_"):
            raise TypeError(f"proba=True needs a classifier; {type(estimator).__name__} is a "
                            "regressor")
        if table is None:
            raise ValueError("proba=True selects several columns: pass a table")
        outputs += [(f"proba[{label}]", family.sql_cases(estimator, names, dialect, k))
                    for k, label in enumerate(estimator.classes_)]
    if table is None:
        return "\n".join(_case_lines(outputs[0][1], "") + ["END"])
    selected = [_case_lines(cases, "  ") + [f"  END AS {_sql_ident(name)}"]
                for name, cases in outputs]
    for lines in selected[:-1]:
        lines[-1] += ","
    return "\n".join(["SELECT", *(line for lines in selected for line in lines),
                      f"FROM {table}"])


def _case_lines(cases, pad):
    """``CASE`` and its ``WHEN ... THEN ...`` lines, each starting with ``pad``.

    Indented by whole lines: a level or a column name may hold a line break,
    and its literal must keep it as it is.
    """
    lines = [f"{pad}CASE"]
    for tests, value in cases:
        lines.append(f"{pad}  WHEN {' AND '.join(tests) if tests else '1 = 1'}")
        lines.append(f"{pad}    THEN {value}")
    return lines


# --------------------------------------------------------------------------
# Python
# --------------------------------------------------------------------------


# Names the generated source defines besides the function (see export_python).
_MISSING_HELPER = "_clarytree_missing"
_RESERVED_NAMES = {_MISSING_HELPER, "_leaf", "_PREDICTION", "_PROBA"}


def _check_function_name(name):
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"function_name must be a Python identifier, got {name!r}")
    if name in _RESERVED_NAMES or name.removesuffix("_proba") in _RESERVED_NAMES:
        raise ValueError(f"function_name {name!r} is taken by the generated source's own "
                         "definitions")
    if hasattr(builtins, name) or name == "datetime":
        # The generated code calls builtins (float, list...) and may import
        # datetime: a function of the same name would replace them.
        raise ValueError(f"function_name {name!r} would shadow Python's {name!r}, which "
                         "the generated source uses; choose another name")
    return name


# None, NaN, or a value whose self-comparison is not a truth value (pandas'
# NA): what ``predict`` reads as missing, written without any import.
_MISSING_SOURCE = [
    f"def {_MISSING_HELPER}(v):",
    '    """Whether v is a missing value (None, NaN or pandas.NA)."""',
    "    if v is None:",
    "        return True",
    "    try:",
    "        return bool(v != v)",
    "    except TypeError:",
    "        return True",
    "",
    "",
]


def _comment_text(name):
    """``name`` as it can stand in a comment: unprintable characters escaped.

    A line break in a column name would end the comment (and the generated
    source would not compile); ``\\n``, ``\\t`` and the like show it instead.
    """
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(name))


def _py_missing(var):
    return f"{_MISSING_HELPER}({var})"


def _py_clip(var, lo, hi):
    """The core's clip: below -> lo, above -> hi, NaN untouched."""
    if lo == -np.inf and hi == np.inf:
        return var
    if lo == -np.inf:
        return f"({_lit(hi)} if {var} > {_lit(hi)} else {var})"
    if hi == np.inf:
        return f"({_lit(lo)} if {var} < {_lit(lo)} else {var})"
    return (f"({_lit(lo)} if {var} < {_lit(lo)} else {_lit(hi)} if {var} > {_lit(hi)} "
            f"else {var})")


def _py_set(values, name=None):
    """A set literal of levels; ``name`` (the column) for the error on a level
    that has no literal (an ``Interval`` of ``pd.cut``, a ``Period``), whose
    ``repr`` would need an import and make the source fail to run."""
    from ._preparation import _python_scalar, level_without_literal

    values = [_python_scalar(v) for v in values]
    v = level_without_literal(values)
    if v is not None:
        raise TypeError(
            f"categorical column {name or '?'} has levels of type {type(v).__name__} "
            f"(e.g. {v!r}), which the generated Python cannot write without an "
            "import: only text, number and bool levels can be exported. Convert the "
            "column before fit (e.g. to text with .astype(str))")
    items = [repr(v) for v in values]
    return "{" + ", ".join(items) + "}" if items else "set()"


def binary_python(estimator, names, function_name, doc):
    """Source lines of the ``predict`` function of a CLARITree-family model."""
    tree = estimator.tree_
    clip = clips(estimator)
    lines = [f"def {function_name}(x):", doc]
    used = np.flatnonzero(np.any(np.asarray(tree.coef)[np.asarray(tree.children_left) < 0]
                                 != 0, axis=0))
    if used.size:
        lines.append("    # The leaf models read a missing value as its training mean"
                     + (" (not clipped)." if clip else "."))
    for j in used:
        # (float(): a numpy float32 row would otherwise compute in float32;
        # with clip a missing value stays None until its leaf's term)
        missing_as = "None" if clip else _lit(_fill(tree, j))
        lines.append(f"    z{j} = {missing_as} if {_py_missing(f'x[{j}]')} "
                     f"else float(x[{j}])  # {names[j]}")

    def emit(node, indent):
        pad = "    " * indent
        left = int(tree.children_left[node])
        if left < 0:
            pairs = []
            for j, c in _leaf_terms(tree, node):
                if clip:
                    lo, hi = _box(tree, node, j)
                    pairs.append((c, f"({_lit(_fill(tree, j))} if z{j} is None else "
                                     f"{_py_clip(f'z{j}', lo, hi)})"))
                else:
                    pairs.append((c, f"z{j}"))
            lines.append(f"{pad}return {_signed_terms(tree.intercept[node], pairs)}"
                         f"  # leaf {node}")
            return
        f = int(tree.feature[node])
        var = f"x[{f}]"
        mleft = _missing_left(tree, node)
        if tree.is_categorical[node]:
            left_levels, right_levels = _split_levels(estimator, tree, node)
            # Unseen levels and missing values take the learned missing side.
            test = (f"{var} not in {_py_set(right_levels, repr(names[f]))}" if mleft
                    else f"{var} in {_py_set(left_levels, repr(names[f]))}")
        else:
            t = float(tree.threshold[node])
            if t == -np.inf:
                test = _py_missing(var)
            elif t == np.inf:
                test = f"not {_py_missing(var)}"
            elif mleft:
                test = f"{_py_missing(var)} or float({var}) <= {_lit(t)}"
            else:
                test = f"not {_py_missing(var)} and float({var}) <= {_lit(t)}"
        lines.append(f"{pad}if {test}:  # {names[f]}")
        emit(left, indent + 1)
        lines.append(f"{pad}else:")
        emit(int(tree.children_right[node]), indent + 1)

    emit(0, 1)
    return lines


def export_python(estimator, function_name="predict", feature_names=None):
    """Source of a dependency-free Python function that reproduces ``predict``.

    The function takes one row ``x``, a sequence of raw values in the order
    of the model's input columns (missing values as ``None``,
    ``float("nan")`` or ``pandas.NA``, so that the rows of a DataFrame with
    nullable dtypes can be passed as they are; categorical values as they
    appeared in training), and
    returns what ``estimator.predict`` returns for that row, bit for bit: the
    tests and leaf models are the model's, with every number written as its
    shortest round-trip literal and the leaf sum in ``predict``'s order.
    ``extrapolation="clip"`` is reproduced. Where missing values are tested
    the source also defines ``_clarytree_missing(v)``. For MBNDT it defines
    ``_leaf(x)`` (the leaf id, as ``apply``) and, for classifiers,
    ``<function_name>_proba(x)``; the MBNDT preprocessing the tree needs
    (median imputation of numeric columns, string matching of categories) is
    written out.

    Parameters
    ----------
    estimator : fitted clarytree estimator
        CLARITreeRegressor, CholeskyTreeRegressor, MBNDTRegressor or
        MBNDTClassifier.
    function_name : str, default="predict"
        Name of the generated function: a Python identifier other than the
        source's own definitions (``_leaf``, ``_PREDICTION``, ``_PROBA``,
        ``_clarytree_missing``), a builtin's name (``float``, ``list``...) or
        ``datetime``, which the source may use.
    feature_names : sequence of str, optional
        Names shown in comments (see :func:`export_sql`).

    Returns
    -------
    source : str
        Python source; ``exec`` it or save it as a module.

    Examples
    --------
    >>> from clarytree import CholeskyTreeRegressor, export_python
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, n_features=2, random_state=0)
    >>> model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    >>> namespace = {}
    >>> exec(export_python(model), namespace)
    >>> [namespace["predict"](row) for row in X[:3].tolist()] == list(model.predict(X[:3]))
    True
    """
    function_name = _check_function_name(function_name)
    family = _family(estimator)
    names = [_comment_text(name) for name in _names(estimator, feature_names)]
    columns = ", ".join(f"x[{j}] = {name}" for j, name in enumerate(names))
    # Every quote escaped: a run of four would close the docstring early.
    columns = columns.replace("\\", "\\\\").replace('"', '\\"')
    header = [
        f'"""Generated by clarytree from a fitted {type(estimator).__name__}; '
        'needs no library."""',
        "",
        "",
    ]
    doc = f'    """Prediction for one row x ({columns})."""'
    body = family.python_source(estimator, names, function_name, doc)
    if any(f"{_MISSING_HELPER}(" in line for line in body):
        header += _MISSING_SOURCE
    return "\n".join(header + body) + "\n"
