"""Export and plot fitted trees: text, JSON-ready dicts, Graphviz, matplotlib.

Every function accepts a fitted :class:`~clarytree.CLARITreeRegressor` or
:class:`~clarytree.CholeskyTreeRegressor` (binary trees with a linear model in
each leaf) and, where it makes sense, a fitted MBNDT estimator from
:mod:`clarytree.mbndt` (multiway trees with a constant value or class
probabilities in each leaf).

The public functions are family-independent: each asks the fitted tree's
*family* (a :class:`TreeFamily` registered for the class of ``estimator.tree_``)
for node views, leaf rows and the dict conversion. The CLARITree family lives
here; MBNDT registers its own from :mod:`clarytree.mbndt` (the core never
imports that submodule's internals).

What the exports print, by default:

- thresholds: the shortest decimal inside the gap between the largest
  training value that goes left and the smallest that goes right (``z <=
  1.24`` for a model threshold of 1.2383040614463092), so the printed tree
  routes every training row exactly as the model does; the model's own
  threshold stays in ``tree_`` and in :func:`to_dict`, and
  ``exact_thresholds=True`` prints it (``repr(float)``);
- coefficients, values and probabilities: ``significant_digits=4``
  significant digits (more than 17, float64's most, print as 17);
  ``significant_digits=None`` prints them exactly.
"""

import copy
import importlib
import itertools
import numbers
import os
import warnings
from collections import namedtuple
from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._explain import _sql_threshold, clips
from ._frames import as_pandas
from ._sklearn_compat import validate_params

__all__ = [
    "export_graphviz",
    "export_text",
    "from_dict",
    "leaf_table",
    "plot_partition",
    "plot_tree",
    "to_dict",
]

FORMAT_NAME = "clarytree.tree"
FORMAT_VERSION = 1

_TREE_ARRAYS = (
    "children_left",
    "children_right",
    "feature",
    "threshold",
    "n_node_samples",
    "node_objective",
    "intercept",
    "coef",
    "missing_go_left",
    "is_categorical",
    "categories_left",
    "weighted_n_node_samples",
    "fill_value",
    # Training boxes and statistics; absent from older descriptions.
    "box_lower",
    "box_upper",
    "target_lower",
    "target_upper",
    "model_share",
)
# Value of an optional array's entries that JSON holds as null (unbounded).
_UNBOUNDED = {"box_lower": -np.inf, "box_upper": np.inf, "target_lower": -np.inf,
              "target_upper": np.inf}


# --------------------------------------------------------------------------
# The family registry
# --------------------------------------------------------------------------

def _leaf_size(value):
    # min_samples_leaf_: rows (an int), or a least leaf weight (a float) for
    # a fractional min_samples_leaf.
    return int(value) if isinstance(value, numbers.Integral) else float(value)


class TreeFamily:
    """What the export functions need to know about one kind of fitted tree.

    A family is registered with :func:`register_tree_family` for the class of
    its fitted ``tree_`` and for the estimator classes that hold such trees.
    Subclasses implement the methods below; the public functions of this
    module only call them.

    Attributes
    ----------
    tests_in_nodes : bool
        Drawings put a node's test inside the node and ``yes``/``no`` on its
        edges (binary trees); otherwise every child shows the condition that
        leads to it (multiway trees, whose sibling labels would collide).
    """

    tests_in_nodes = False

    def view(self, estimator, names, digits, sep=" ", max_terms=None, short_edges=False,
             exact_thresholds=False):
        """Return ``(children, edge_labels, node_texts)``, one entry per node.

        ``digits`` are the significant digits of numbers in leaves (None:
        exact); ``short_edges`` drops the feature name from edge labels
        (drawings show it on the node); thresholds print as
        :func:`_threshold_text` does. A leaf's text starts with
        ``"leaf {id}{sep}"``.
        """
        raise NotImplementedError

    def leaf_rows(self, estimator, names, digits, exact_thresholds=False):
        """Return ``(records, columns)`` of :func:`leaf_table`, leaves in preorder.

        Numbers are rounded to ``digits`` significant digits (None: exact).
        """
        raise NotImplementedError

    def to_dict(self, estimator):
        """Family-specific entries of :func:`to_dict` (``tree`` and any extras)."""
        raise NotImplementedError

    def restore(self, estimator, data):
        """Set the fitted attributes of ``estimator`` from :func:`to_dict` output."""
        raise NotImplementedError

    def encode(self, estimator, X):
        """``(values, levels)`` of ``X`` as the family's tree reads it, or None.

        ``values`` is a float matrix holding numeric columns as given and a
        categorical column's level code (NaN: missing or unseen); ``levels``
        gives per column None (numeric) or the levels in code order.  None
        makes :func:`plot_partition` draw from ``predict`` on grids of raw
        rows only (no exact regions).
        """
        return None

    def predict_encoded(self, estimator, values):
        """``predict`` of rows encoded as :meth:`encode` returns them."""
        raise NotImplementedError

    def regions(self, estimator, features, fixed, box):
        """Leaf regions ``(regions, splits)`` in the slice along ``features``, or None.

        ``fixed`` is a full encoded row (see :meth:`encode`) holding the
        values of the columns that are not plotted; ``box`` and the result
        are as in :func:`_binary_regions`.  None makes :func:`plot_partition`
        evaluate ``predict`` on a grid only.
        """
        return None

    def leaf_values(self, estimator, leaf, points):
        """The model of ``leaf`` evaluated at full encoded rows ``points``."""
        raise NotImplementedError

    # Explain and deploy (clarytree._explain): exact contributions and code.
    def contributions(self, estimator, X, names):
        """``(leaves, rules, intercept, terms, prediction)`` of :func:`~clarytree.explain`.

        ``rules`` maps a leaf id to its rule text; ``intercept`` plus the
        columns of ``terms`` added left to right is ``prediction`` exactly.
        """
        raise TypeError(f"explain() does not support {type(estimator).__name__}")

    def sql_cases(self, estimator, names, dialect, proba_of=None):
        """``[(tests, value)]`` per leaf for :func:`~clarytree.export_sql`.

        ``tests`` are SQL conditions whose conjunction selects the leaf's rows
        (missing values as ``NULL``), ``value`` the SQL of its prediction, or
        with ``proba_of=k`` of its probability of class ``classes_[k]``
        (classifiers only).
        """
        raise TypeError(f"export_sql() does not support {type(estimator).__name__}")

    def python_source(self, estimator, names, function_name, doc):
        """Source lines defining ``function_name(x)`` for :func:`~clarytree.export_python`.

        ``doc`` is the function's docstring line, indented.
        """
        raise TypeError(f"export_python() does not support {type(estimator).__name__}")


_FAMILIES = {}      # class of a fitted tree_ -> TreeFamily
_ESTIMATORS = {}    # estimator class name -> (estimator class, TreeFamily)
# Optional submodules that register families on import (public names only).
_OPTIONAL_FAMILIES = ("clarytree.mbndt",)


def register_tree_family(tree_class, family, estimator_classes=()):
    """Register ``family`` for fitted trees of ``tree_class``.

    Parameters
    ----------
    tree_class : type
        Class of the ``tree_`` attribute of fitted estimators of this family.
    family : TreeFamily
    estimator_classes : iterable of type
        Estimators whose :func:`to_dict` output :func:`from_dict` rebuilds
        with this family (looked up by class name).
    """
    _FAMILIES[tree_class] = family
    for cls in estimator_classes:
        _ESTIMATORS[cls.__name__] = (cls, family)


def _lookup_family(tree):
    for cls in type(tree).__mro__:
        if cls in _FAMILIES:
            return _FAMILIES[cls]
    return None


def _family(estimator):
    """The registered :class:`TreeFamily` of a fitted estimator's ``tree_``."""
    if isinstance(estimator, type):
        raise TypeError("expected a fitted estimator instance, got a class")
    if not hasattr(estimator, "fit"):
        raise TypeError(
            f"expected a fitted clarytree estimator, got {type(estimator).__name__}"
        )
    if isinstance(getattr(estimator, "steps", None), list):
        raise TypeError(
            f"got a {type(estimator).__name__}; pass its fitted tree, pipe[-1], instead "
            "(export_text, leaf_table, export_graphviz and plot_tree also accept the "
            "pipeline itself)")
    check_tree = getattr(estimator, "_check_tree", None)
    if callable(check_tree):
        # The estimator's own message (a CV fit with refit=False holds no tree).
        check_tree()
    elif not hasattr(estimator, "tree_") and not isinstance(
            estimator, tuple(cls for cls, _ in _ESTIMATORS.values())):
        # Another library's estimator, fitted or not: "not fitted yet" would
        # send the user to fit it again.
        raise TypeError(f"{type(estimator).__name__} is not a clarytree estimator")
    check_is_fitted(estimator, "tree_")
    family = _lookup_family(estimator.tree_)
    if family is None:
        raise TypeError(
            f"{type(estimator).__name__} is not a clarytree estimator: its tree_ is a "
            f"{type(estimator.tree_).__name__}"
        )
    return family


def _estimator_entry(name):
    """``(class, family)`` of an estimator class name, importing optional families."""
    if name not in _ESTIMATORS:
        for module in _OPTIONAL_FAMILIES:
            try:
                importlib.import_module(module)
            except ImportError:
                continue
    return _ESTIMATORS.get(name)


def _view(estimator, names, digits, **kwargs):
    """``(children, edges, texts, is_leaf, n_samples)`` of any registered family."""
    children, edges, texts = _family(estimator).view(estimator, names, digits, **kwargs)
    is_leaf = [not c for c in children]
    return children, edges, texts, is_leaf, np.asarray(estimator.tree_.n_node_samples)


def _feature_names(estimator, feature_names):
    n = int(estimator.n_features_in_)
    if feature_names is None:
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None:
            return [str(name) for name in names]
        return [f"x[{j}]" for j in range(n)]
    if isinstance(feature_names, (str, bytes, set, frozenset, Mapping)) \
            or not hasattr(feature_names, "__len__") or not hasattr(feature_names, "__iter__"):
        # (a set has no column order to name the columns by)
        raise TypeError("feature_names must be a sequence of strings (list, tuple or "
                        f"array), got {type(feature_names).__name__}")
    names = [str(name) for name in feature_names]
    if len(names) != n:
        raise ValueError(
            f"feature_names has {len(names)} entries but the estimator was fitted "
            f"on {n} features"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        # Exports read columns by name (SQL, tables): a repeated name would
        # stand for two columns.
        raise ValueError(f"feature_names must be distinct; repeated: {repeated}")
    return names


class _Deprecated:
    """Default of a deprecated parameter (shown as ``<deprecated>`` in signatures)."""

    def __repr__(self):
        return "<deprecated>"


_UNSET = _Deprecated()


def _check_digits(significant_digits, decimals=_UNSET, name="significant_digits"):
    """Validate ``significant_digits``; ``decimals`` is its former name.

    Both given (``significant_digits`` not at its default, 4) is an error:
    one of them would be ignored.
    """
    if decimals is not _UNSET:
        if significant_digits != 4:
            raise TypeError("pass significant_digits only: decimals is its former name, "
                            f"and both were given ({significant_digits!r} and {decimals!r})")
        warnings.warn(
            "'decimals' is renamed 'significant_digits' (it always counted significant "
            "digits, not decimal places); 'decimals' will be removed", FutureWarning,
            stacklevel=3)
        significant_digits, name = decimals, "decimals"
    if significant_digits is None:
        return None
    if isinstance(significant_digits, bool) or not isinstance(significant_digits,
                                                              numbers.Integral):
        raise TypeError(f"{name} must be an int or None, got {significant_digits!r}")
    if significant_digits < 1:
        raise ValueError(f"{name} must be >= 1, got {significant_digits}")
    # 17 digits tell every float64 apart: more only print the binary
    # expansion's noise (and a huge count fails in Python's formatting).
    return min(int(significant_digits), 17)


def _num(value, digits):
    """Format a number: shortest exact repr, or ``digits`` significant digits."""
    value = float(value)
    if digits is None:
        return repr(value)
    # The notation follows the rounded value, so that one printed number
    # (999995.3 and 1000004 to 4 digits) reads the same, 1e+06, everywhere.
    if value != 0 and 1e-4 <= abs(_rounded(value, digits)) < 1e6:
        # Positional notation reads better than 1.2e+02 in equations.
        return np.format_float_positional(value, precision=digits, unique=True,
                                          fractional=False, trim="-")
    return f"{value:.{digits}g}"


def _rounded(value, digits):
    """``value`` rounded to ``digits`` significant digits, as a float (None: as is)."""
    value = float(value)
    return value if digits is None or not np.isfinite(value) else float(f"{value:.{digits - 1}e}")


def _exact(value):
    return repr(float(value))


def _shortest_between(lower, upper, near):
    """The decimal with fewest digits that reads as a float in ``[lower, upper)``.

    ``lower`` itself qualifies: it is the largest value that goes left. Among
    equally short decimals, the one nearest ``near``. Returned as the
    ``repr`` of the float it reads as.
    """
    with localcontext() as ctx:
        ctx.prec = 800  # exact arithmetic on any pair of doubles
        # Decimals just below ``lower`` may still read as ``lower``: search from
        # the float before it (exclusive), then check each candidate as a float.
        a = Decimal(float(np.nextafter(lower, -np.inf)))
        b, t = Decimal(upper), Decimal(near)
        e = max(abs(a), abs(b), Decimal(1)).adjusted() + 1  # 10**e: only 0 can fit
        while True:
            q = Decimal(1).scaleb(e)
            first = (a / q).to_integral_value(rounding=ROUND_FLOOR) + 1
            last = (b / q).to_integral_value(rounding=ROUND_CEILING) - 1
            if first <= last:
                centre = min(max((t / q).to_integral_value(), first), last)
                ks = range(int(max(first, centre - 50)), int(min(last, centre + 50)) + 1)
                fits = [float(k * q) for k in sorted(ks, key=lambda k: abs(k - centre))]
                fits = [v for v in fits if lower <= v < upper]
                if fits:
                    return repr(fits[0])
            e -= 1


def _threshold_text(threshold, lower, upper, exact=False):
    """How a threshold prints: short and routing-exact, or the model's own.

    ``lower``/``upper`` are the largest training value of the split feature
    that went left and the smallest that went right; any decimal in
    ``[lower, upper)`` routes the training rows like ``threshold``. Without a known gap
    (NaN), or with ``exact``, the threshold's ``repr``.
    """
    threshold = float(threshold)
    if exact or not (np.isfinite(lower) and np.isfinite(upper) and lower <= threshold < upper):
        text = repr(threshold)
    else:
        text = _shortest_between(float(lower), float(upper), threshold) or repr(threshold)
    # Beyond 2**53 an integer read exactly (an ID in SQL or Python) would go
    # the other way of a float threshold than its float64 does in predict:
    # print the integer that routes both alike, as export_sql writes it.
    value = float(text)
    return _sql_threshold(value) if abs(value) >= 2.0 ** 53 else text


# --------------------------------------------------------------------------
# Binary (CLARITree) helpers
# --------------------------------------------------------------------------


def _equation(intercept, coef, names, digits, sep=" ", max_terms=None):
    """``y = b0 + b1 * x1 - b2 * x2`` with exactly-zero terms left out."""
    parts = [f"y = {_num(intercept, digits)}"]
    terms = np.flatnonzero(coef)
    hidden = 0
    if max_terms is not None and terms.size > max_terms:
        keep = np.argsort(-np.abs(coef[terms]), kind="stable")[:max_terms]
        hidden = terms.size - max_terms
        terms = np.sort(terms[keep])
    for j in terms:
        c = float(coef[j])
        sign = "-" if c < 0 else "+"
        parts.append(f"{sign} {_num(abs(c), digits)} * {names[j]}")
    if hidden:
        # Drawings (one term per line) need the short form.
        parts.append(f"+ {hidden} more" if sep == "\n" else f"+ ... ({hidden} smaller terms)")
    return sep.join(parts)


def _json_floats(array):
    """Array as nested lists, infinite entries (unbounded boxes) as None: strict JSON."""
    array = np.asarray(array)
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        obj = array.astype(object)
        obj[np.isinf(array)] = None
        return obj.tolist()
    return array.tolist()


def _binary_threshold_texts(tree, exact_thresholds=False):
    """How every node's threshold prints (None for leaves)."""
    texts = [None] * tree.node_count
    lower, upper = np.asarray(tree.gap_lower), np.asarray(tree.gap_upper)
    for node in np.flatnonzero(np.asarray(tree.children_left) >= 0):
        texts[node] = _threshold_text(tree.threshold[node], lower[node], upper[node],
                                      exact_thresholds)
    return texts


def _display(text):
    """``text`` with its unprintable characters escaped (a line break as ``\\n``).

    For the drawn and printed trees: a column name or level holding a line
    break or a tab would otherwise break the tree's lines and indentation.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _display_names(names):
    return [_display(name) for name in names]


# Text levels that bare would read as a number, a bool, nothing or a
# missing value ('1' beside the number 1 in one column, 'None', 'missing').
_WORD_LEVELS = frozenset({"true", "false", "none", "null", "na", "nan", "missing"})
# The exports' own labels: a real level spelled so is quoted.
_LABEL_LEVELS = frozenset({"<other>", "<missing>", "<other or unseen>"})


class _MergedLabel(str):
    """The ``<other>`` level of a column's merged levels: prints bare."""


def _level_text(level):
    """A level as the printed and drawn trees show it: bare, unless bare it
    would read as something else (the empty text as an empty set, spaces at
    its ends unseen, a comma or brace as the set's own punctuation, text
    that reads as a number, a bool or a missing value, quotes at its ends
    as another level quoted, a backslash or an escaped character as that
    character); such a level is quoted as Python writes it."""
    if isinstance(level, _MergedLabel):
        return _display(str(level))
    if isinstance(level, str) and (level != level.strip() or any(c in level for c in ",{}\\")
                                   or level == "" or not level.isprintable()
                                   or level[0] in "'\"" or level[-1] in "'\""
                                   or _reads_as_other(level) or level in _LABEL_LEVELS):
        return _display(repr(level))
    return _display(level)


def _reads_as_other(text):
    if text.lower() in _WORD_LEVELS:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _level_set(levels):
    return "{" + ", ".join(_level_text(v) for v in levels) + "}"


def _labelled_levels(estimator):
    """``categories_`` with each merged level as a :class:`_MergedLabel`.

    The last level of a column with merged levels stands for them and prints
    bare (``<other>``), where a real level spelled alike is quoted.
    """
    n = int(estimator.n_features_in_)
    levels = list(getattr(estimator, "categories_", None) or [None] * n)
    merged = getattr(estimator, "merged_categories_", None) or [None] * n
    for f, column in enumerate(levels):
        if column is not None and merged[f]:
            levels[f] = [*column[:-1], _MergedLabel(column[-1])]
    return levels


class _BinaryView:
    """How the splits of a binary tree read: levels and missing-value directions.

    Numeric splits on a feature that had no missing values in training read
    as before (``x <= t`` / ``x > t``); on a feature that had some, the branch
    that missing values take says so (``x <= t or missing``).  Categorical
    splits name their levels (``color in {red, blue}``); the branch that
    missing values and levels unseen in training take adds ``or missing``.
    """

    def __init__(self, estimator, every_missing_side=False):
        tree = estimator.tree_
        self.tree = tree
        self.categories = _labelled_levels(estimator)
        # Features whose splits say where missing values go: those that had
        # some in training, or every feature (a row missing a value that
        # training never missed, see explain).
        self.missing = (set(range(int(estimator.n_features_in_))) if every_missing_side
                        else {int(f) for f in getattr(estimator, "missing_features_", [])})
        self.is_categorical = np.asarray(tree.is_categorical, dtype=bool)
        self.missing_left = np.asarray(tree.missing_go_left, dtype=bool)
        # Levels of each categorical feature that the tests above a node let
        # through: a split names only those (the others cannot reach it).
        self.reachable = [None] * tree.node_count
        self.reachable[0] = {}
        for node in range(tree.node_count):  # preorder: parents come first
            left = tree.children_left[node]
            if left < 0:
                continue
            here = self.reachable[node]
            below = [dict(here), dict(here)]
            if self.is_categorical[node]:
                f = int(tree.feature[node])
                for side, codes in zip(below, self._split_levels(node), strict=True):
                    side[f] = codes
            self.reachable[left], self.reachable[tree.children_right[node]] = below

    def _split_levels(self, node):
        from ._tree import bitset_codes

        f = int(self.tree.feature[node])
        k = len(self.categories[f])
        left = bitset_codes(self.tree.categories_left[node])
        left = left[left < k]
        right = np.setdiff1d(np.arange(k), left)
        allowed = self.reachable[node].get(f)
        if allowed is not None:
            left, right = np.intersect1d(left, allowed), np.intersect1d(right, allowed)
        return left, right

    def left_levels(self, node):
        """Codes going left at a categorical node and codes going right, among
        the levels that can reach the node."""
        return self._split_levels(node)

    def shows_missing(self, node):
        f = int(self.tree.feature[node])
        return bool(self.is_categorical[node]) or f in self.missing

    def edge_labels(self, node, name, text):
        """The two branch conditions; ``name=None`` leaves the feature out.

        ``text`` is how the node's threshold prints.
        """
        tree = self.tree
        f = int(tree.feature[node])
        prefix = "" if name is None else f"{name} "
        subject = name if name is not None else "value"
        go_left = self.missing_left[node]
        missing = self.shows_missing(node)
        if self.is_categorical[node]:
            levels = self.categories[f]
            left, right = self.left_levels(node)
            parts = [f"{prefix}in {_level_set(levels[c] for c in left)}" if left.size else "",
                     f"{prefix}in {_level_set(levels[c] for c in right)}" if right.size else ""]
        else:
            t = float(tree.threshold[node])
            parts = ["" if t == -np.inf else
                     (f"{subject} is not missing" if t == np.inf else f"{prefix}<= {text}"),
                     "" if t == np.inf else
                     (f"{subject} is not missing" if t == -np.inf else f"{prefix}> {text}")]
        side = 0 if go_left else 1
        if missing or not parts[side]:
            parts[side] = f"{parts[side]} or missing" if parts[side] else f"{subject} is missing"
        return parts

    def conditions(self):
        """Per node, the tests on its path: ``(feature, node, went_left)``."""
        tree = self.tree
        paths = [None] * tree.node_count
        paths[0] = []
        for node in range(tree.node_count):  # preorder: parents come first
            left = tree.children_left[node]
            if left < 0:
                continue
            f = int(tree.feature[node])
            paths[left] = paths[node] + [(f, node, True)]
            paths[tree.children_right[node]] = paths[node] + [(f, node, False)]
        return paths

    def rule(self, conditions, names, thresholds):
        """Join path tests, merging the tests on one feature into one clause.

        The tightest numeric test on each side is kept, printed as its node
        prints it (``thresholds``): a training row meets it exactly when it
        meets the model's test, so the merged rule selects the leaf's rows.
        """
        tree = self.tree
        state, order = {}, []
        for f, node, went_left in conditions:
            if f not in state:
                order.append(f)
                if self.is_categorical[node]:
                    state[f] = {"levels": set(range(len(self.categories[f]))), "missing": True}
                else:
                    state[f] = {"lo": -np.inf, "hi": np.inf, "missing": True,
                                "lo_text": None, "hi_text": None}
            st = state[f]
            st["missing"] &= bool(self.missing_left[node]) == went_left
            if self.is_categorical[node]:
                left, right = self.left_levels(node)
                st["levels"] &= set((left if went_left else right).tolist())
            else:
                t = float(tree.threshold[node])
                if went_left and t < st["hi"]:
                    st["hi"], st["hi_text"] = t, thresholds[node]
                elif not went_left and t > st["lo"]:
                    st["lo"], st["lo_text"] = t, thresholds[node]
            st["shown"] = st.get("shown", False) or self.shows_missing(node)
        parts = [self._clause(_display(names[f]), f, state[f]) for f in order]
        parts = [p for p in parts if p]
        return " and ".join(parts) if parts else "(all rows)"

    def _clause(self, name, f, st):
        # ``present`` is None when no present value passes, "" when all do.
        if "levels" in st:
            levels = sorted(st["levels"])
            if not levels:
                present = None
            elif len(levels) == len(self.categories[f]):
                present = ""
            else:
                present = f"{name} in {_level_set(self.categories[f][c] for c in levels)}"
        else:
            lo, hi = st["lo"], st["hi"]
            if lo >= hi or hi == -np.inf or lo == np.inf:
                present = None
            elif lo > -np.inf and hi < np.inf:
                present = f"{st['lo_text']} < {name} <= {st['hi_text']}"
            elif hi < np.inf:
                present = f"{name} <= {st['hi_text']}"
            elif lo > -np.inf:
                present = f"{name} > {st['lo_text']}"
            else:
                present = ""
        if not st["shown"]:
            return present or ""
        if st["missing"]:
            if present is None:
                return f"{name} is missing"
            return f"({present} or {name} is missing)" if present else ""
        if present is None:
            return f"{name} is missing and not missing"     # reaches no row
        return present or f"{name} is not missing"


class _BinaryFamily(TreeFamily):
    """CLARITree / CholeskyTree: binary splits, a linear model in every leaf."""

    tests_in_nodes = True

    def view(self, estimator, names, digits, sep=" ", max_terms=None, short_edges=False,
             exact_thresholds=False):
        tree = estimator.tree_
        thresholds = _binary_threshold_texts(tree, exact_thresholds)
        view = _BinaryView(estimator)
        children, edges, texts = [], [], []
        for node in range(tree.node_count):
            left, right = int(tree.children_left[node]), int(tree.children_right[node])
            if left < 0:
                children.append([])
                edges.append([])
                eq = _equation(tree.intercept[node], tree.coef[node], names, digits, sep,
                               max_terms)
                texts.append(f"leaf {node}{sep}{eq}")
            else:
                f = int(tree.feature[node])
                children.append([left, right])
                edges.append(view.edge_labels(node, None if short_edges else names[f],
                                              thresholds[node]))
                texts.append(names[f])
        return children, edges, texts

    def leaf_rows(self, estimator, names, digits, exact_thresholds=False):
        clash = sorted(set(names) & {"leaf", "rule", "n_samples", "intercept"})
        if clash:
            raise ValueError(f"feature names {clash} clash with the columns of leaf_table(); "
                             "pass feature_names= to rename them")
        tree = estimator.tree_
        thresholds = _binary_threshold_texts(tree, exact_thresholds)
        view = _BinaryView(estimator)
        conditions = view.conditions()
        records = []
        for leaf in np.flatnonzero(np.asarray(tree.children_left) < 0):
            row = {
                "leaf": int(leaf),
                "rule": view.rule(conditions[leaf], names, thresholds),
                "n_samples": int(tree.n_node_samples[leaf]),
                "intercept": _rounded(tree.intercept[leaf], digits),
            }
            row.update(zip(names, (_rounded(c, digits) for c in tree.coef[leaf]), strict=True))
            records.append(row)
        return records, ["leaf", "rule", "n_samples", "intercept", *names]

    def to_dict(self, estimator):
        tree = estimator.tree_
        data = {
            "tree": {name: _json_floats(getattr(tree, name)) if name in _UNBOUNDED
                     else np.asarray(getattr(tree, name)).tolist() for name in _TREE_ARRAYS},
            "objective": float(estimator.objective_),
            "regression_features": np.asarray(estimator.regression_features_).tolist(),
        }
        # The training-value gaps (for short printed thresholds); JSON has no
        # NaN, so unknown entries are null.
        for name in ("gap_lower", "gap_upper"):
            data["tree"][name] = [None if np.isnan(v) else float(v)
                                  for v in np.asarray(getattr(tree, name))]
        # A missing-versus-present split's threshold is -inf (missing values
        # left) or +inf (right): null in JSON, restored from missing_go_left.
        data["tree"]["threshold"] = [None if np.isinf(v) else float(v)
                                     for v in np.asarray(tree.threshold)]
        prep = getattr(estimator, "_preparation", None)
        if prep is not None:
            data["preparation"] = prep.predict_state(
                getattr(estimator, "feature_names_in_", None))
        if hasattr(estimator, "min_samples_leaf_"):
            data["min_samples_leaf"] = _leaf_size(estimator.min_samples_leaf_)
        return data

    def restore(self, estimator, data):
        from ._preparation import Preparation
        from ._tree import CATEGORY_WORDS, TREE_LEAF, Tree

        n_features = int(data["n_features_in"])
        arrays = dict(data["tree"])
        arrays["n_features"] = n_features
        arrays["coef"] = np.asarray(arrays["coef"], dtype=np.float64).reshape(-1, n_features)
        if arrays.get("categories_left") is not None:
            arrays["categories_left"] = np.asarray(
                arrays["categories_left"], dtype=np.uint32).reshape(-1, CATEGORY_WORDS)
        threshold = np.asarray(arrays["threshold"], dtype=np.float64)  # null -> NaN
        if np.isnan(threshold).any():
            go_left = np.asarray(arrays.get("missing_go_left") or np.zeros(threshold.size),
                                 dtype=bool)
            threshold[np.isnan(threshold)] = np.where(go_left, -np.inf, np.inf)[
                np.isnan(threshold)]
        arrays["threshold"] = threshold
        for name, unbounded in _UNBOUNDED.items():
            if arrays.get(name) is not None:
                values = np.asarray(arrays[name], dtype=np.float64)  # null -> NaN
                arrays[name] = np.where(np.isnan(values), unbounded, values)
        estimator.tree_ = Tree.from_arrays(arrays)
        # Files written before categorical and missing-value support: numeric.
        state = data.get("preparation") or {"is_categorical": [False] * n_features,
                                            "categories": [None] * n_features}
        if not isinstance(state, Mapping):
            raise ValueError("preparation must be a mapping (as to_dict writes it)")
        prep = Preparation.from_predict_state(state)
        if prep.n_features_in_ != n_features:
            raise ValueError(f"preparation.is_categorical has {prep.n_features_in_} entries "
                             f"for {n_features} input columns")
        estimator._preparation = prep
        estimator.is_categorical_ = prep.is_categorical_
        estimator.categories_ = prep.categories_
        estimator.merged_categories_ = prep.merged_categories_
        estimator.missing_features_ = prep.missing_features_
        tree = estimator.tree_
        split = tree.children_left != TREE_LEAF
        if np.any(tree.is_categorical[split].astype(bool)
                  != prep.is_categorical_[tree.feature[split]]):
            raise ValueError("a node's split kind (is_categorical) must match its column's "
                             "in the preparation")
        estimator.objective_ = float(data["objective"])
        reg = np.asarray(data["regression_features"])
        if reg.ndim != 1 or (reg.size and (reg.dtype.kind not in "iu"
                                           or reg.min() < 0 or reg.max() >= n_features
                                           or np.unique(reg).size != reg.size)):
            raise ValueError("regression_features must be distinct indices of the input "
                             f"columns (0 to {n_features - 1})")
        estimator.regression_features_ = reg.astype(np.intp)
        # What the tree predicts with: finite, and terms only for regression
        # features (a coefficient on a categorical column would multiply its
        # internal level code).
        for name in ("intercept", "coef", "fill_value"):
            values = np.asarray(getattr(tree, name), dtype=np.float64)
            if not np.all(np.isfinite(values)):
                raise ValueError(f"tree.{name} must be finite numbers (null, NaN or "
                                 "Infinity found)")
        others = np.setdiff1d(np.arange(n_features), reg)
        if others.size and np.any(np.asarray(tree.coef)[:, others] != 0):
            raise ValueError("tree.coef must be 0 outside regression_features (a "
                             "categorical or split-only column has no term)")
        if "min_samples_leaf" in data:
            estimator.min_samples_leaf_ = _leaf_size(data["min_samples_leaf"])

    def encode(self, estimator, X):
        # The estimator's own preparation: the matrix ``Tree.apply`` reads.
        return estimator._validate_X_predict(X), _labelled_levels(estimator)

    def predict_encoded(self, estimator, values):
        return estimator.tree_.predict(values, clip=clips(estimator))

    def regions(self, estimator, features, fixed, box):
        return _binary_regions(estimator.tree_, features, fixed, box)

    def leaf_values(self, estimator, leaf, points):
        # As ``Tree.predict``: a missing value counts as its fill value, and
        # with extrapolation="clip" each value moves into the leaf's box.
        tree = estimator.tree_
        if clips(estimator):    # (NaN stays NaN: fill values are not clipped)
            points = np.clip(points, tree.box_lower[leaf], tree.box_upper[leaf])
        points = np.where(np.isnan(points), np.asarray(tree.fill_value), points)
        coef = np.asarray(tree.coef[leaf])
        used = coef != 0
        return tree.intercept[leaf] + points[:, used] @ coef[used]

    def contributions(self, estimator, X, names):
        from ._explain import binary_contributions

        return binary_contributions(estimator, X, names)

    def sql_cases(self, estimator, names, dialect, proba_of=None):
        from ._explain import binary_sql_cases

        return binary_sql_cases(estimator, names, dialect)

    def python_source(self, estimator, names, function_name, doc):
        from ._explain import binary_python

        return binary_python(estimator, names, function_name, doc)


def _register_core_family():
    from ._classes import CholeskyTreeRegressor, CLARITreeRegressor
    from ._tree import Tree

    register_tree_family(Tree, _BinaryFamily(),
                         (CLARITreeRegressor, CholeskyTreeRegressor))


# --------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------


def _pipeline_parts(estimator, feature_names, caller):
    """A fitted Pipeline's last step and the names its input columns have.

    Anything else is returned as is (with ``feature_names``).
    """
    steps = getattr(estimator, "steps", None)
    if not (isinstance(steps, list) and steps and hasattr(estimator, "named_steps")):
        return estimator, feature_names
    final = steps[-1][1]
    if feature_names is None and len(steps) > 1:
        try:
            feature_names = list(estimator[:-1].get_feature_names_out())
        except (AttributeError, ValueError, TypeError) as exc:
            if isinstance(exc, NotFittedError):
                raise       # an unfitted pipeline: say that, not "pass pipe[-1]"
            if getattr(final, "feature_names_in_", None) is not None:
                # The steps pass a DataFrame on ("passthrough", a
                # FunctionTransformer) without naming their output: the
                # tree saw the names.
                return final, None
            raise TypeError(
                f"{caller} got a Pipeline whose steps before the last give no feature "
                f"names ({exc}); pass its fitted tree, {caller}(pipe[-1], "
                "feature_names=...), instead") from None
    return final, feature_names


def _check_max_terms(max_terms):
    if max_terms is not None and (isinstance(max_terms, bool)
                                  or not isinstance(max_terms, numbers.Integral)
                                  or max_terms < 0):
        raise ValueError(f"max_terms must be a non-negative int or None, got {max_terms!r}")


def export_text(estimator, feature_names=None, *, significant_digits=4,
                exact_thresholds=False, show_samples=True, max_terms=None, decimals=_UNSET):
    """Render a fitted tree as indented rules with each leaf's model.

    Every split is printed as ``name <= threshold`` / ``name > threshold``
    with the shortest decimal that separates the node's training rows as the
    model does (any number between the largest training value going left and
    the smallest going right does), so reading the printed thresholds back
    routes every training row to the same leaf as the model. Each leaf shows
    its id and its equation ``y = intercept + coef * name ...`` in original
    units (columns that do not enter the leaf regressions are left out), or,
    for MBNDT, its value or class probabilities; MBNDT tests also say where a
    missing value or an unseen category goes. Unprintable characters in
    column names, levels and class labels (a line break, a tab) print as
    escapes (``\\n``, ``\\t``), here, in ``leaf_table``'s rules and in the
    drawings; a text level that bare would read as another (a number, a
    missing value, or text holding quotes at its ends, a backslash or such
    an escape) is quoted as Python writes it.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        A fitted CLARITreeRegressor, CholeskyTreeRegressor or MBNDT
        estimator, or a fitted :class:`~sklearn.pipeline.Pipeline` ending in
        one (its feature names then come from the steps before).
    feature_names : sequence of str, optional
        Names of the input columns. Defaults to ``feature_names_in_`` when the
        estimator was fitted on a DataFrame, else ``x[0]``, ``x[1]``, ...
    significant_digits : int or None, default=4
        Significant digits of leaf coefficients, values and probabilities.
        ``None`` prints them exactly (shortest round-trip representation).
    exact_thresholds : bool, default=False
        Print the model's own thresholds (``repr(float)``) instead of the
        shortest decimals that route the training rows the same way.
    show_samples : bool, default=True
        Append the number of training rows that reached each leaf.
    max_terms : int or None, default=None
        Show at most this many terms of each leaf equation, those with the
        largest absolute coefficients, and count the rest. Coefficient sizes
        depend on feature units, so this suits features on comparable scales.
        ``None`` shows every term.
    decimals : int or None
        Former name of ``significant_digits`` (deprecated).

    Returns
    -------
    text : str
        One line per split branch and per leaf, ending with a newline.

    See Also
    --------
    leaf_table : The leaf models as a pandas DataFrame.
    export_graphviz : The same tree in Graphviz DOT format.

    Examples
    --------
    >>> from clarytree import CLARITreeRegressor, export_text
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=300, n_features=2, n_regimes=2,
    ...                              noise=0.0, random_state=0)
    >>> model = CLARITreeRegressor(max_depth=1).fit(X, y)
    >>> print(export_text(model, significant_digits=3))  # doctest: +ELLIPSIS
    |--- x[0] <= ...
    |   |--- leaf 1: y = ... [samples: ...]
    |--- x[0] > ...
    |   |--- leaf 2: y = ... [samples: ...]
    <BLANKLINE>
    """
    estimator, feature_names = _pipeline_parts(estimator, feature_names, "export_text")
    _family(estimator)
    digits = _check_digits(significant_digits, decimals)
    _check_max_terms(max_terms)
    names = _display_names(_feature_names(estimator, feature_names))
    children, edges, texts, is_leaf, n_samples = _view(
        estimator, names, digits, max_terms=max_terms,
        exact_thresholds=bool(exact_thresholds))
    lines = []

    def leaf_line(node, indent):
        text = texts[node].replace(f"leaf {node} ", f"leaf {node}: ", 1)
        if show_samples:
            text += f" [samples: {int(n_samples[node])}]"
        lines.append(f"{indent}|--- {text}")

    # An explicit stack keeps deep trees clear of the recursion limit.
    stack = [(0, "", None)]
    while stack:
        node, indent, edge = stack.pop()
        if edge is not None:
            lines.append(f"{indent}|--- {edge}")
            indent += "|   "
        if is_leaf[node]:
            leaf_line(node, indent)
            continue
        for child, label in reversed(list(zip(children[node], edges[node], strict=True))):
            stack.append((child, indent, label))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Leaf table
# --------------------------------------------------------------------------


def leaf_table(estimator, feature_names=None, *, significant_digits=4,
               exact_thresholds=False):
    """Leaf models as a pandas DataFrame, one row per leaf.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        A fitted estimator, or a fitted Pipeline ending in one (see
        :func:`export_text`).
    feature_names : sequence of str, optional
        Names of the input columns (see :func:`export_text`).
    significant_digits : int or None, default=4
        Round coefficients, values and probabilities to this many significant
        digits for reading; ``None`` keeps them exact (then the intercept plus
        the terms ``coefficient * x``, added one at a time in column order,
        reproduces ``predict`` to the last bit; ``intercept + X @ coefficients``
        agrees to rounding).
    exact_thresholds : bool, default=False
        Write the model's own thresholds in ``rule`` instead of the shortest
        decimals that select the same training rows (see :func:`export_text`).

    Returns
    -------
    table : pandas.DataFrame
        Leaves in depth-first order with columns ``leaf`` (node id, as returned
        by ``apply``), ``rule`` (the path's tests, repeated tests on one feature
        merged into an interval or level set; a test that takes missing values
        is parenthesized among others), ``n_samples`` (training rows) and then, for
        the CLARITree family, ``intercept`` and one coefficient column per
        feature in original units (0 for columns outside the leaf
        regressions), so that ``intercept + X @ coefficients`` gives
        ``predict`` on the leaf's rows once each missing value of a
        regression feature is replaced by that feature's training mean (as
        ``predict`` reads it; the means are ``tree_.fill_value``). For
        MBNDT, ``value`` (regression) or one ``proba[class]`` column per
        class.

    See Also
    --------
    export_text : The same tree as indented text.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("leaf_table requires pandas: pip install pandas") from exc
    estimator, feature_names = _pipeline_parts(estimator, feature_names, "leaf_table")
    family = _family(estimator)
    digits = _check_digits(significant_digits)
    names = _feature_names(estimator, feature_names)
    records, columns = family.leaf_rows(estimator, names, digits, bool(exact_thresholds))
    return pd.DataFrame.from_records(records, columns=columns)


# --------------------------------------------------------------------------
# Dict / JSON round trip
# --------------------------------------------------------------------------


# The key under which a numpy RandomState parameter is written (as its state).
_RANDOM_STATE_KEY = "numpy.random.RandomState"


def _json_value(value):
    """Make a parameter value JSON-serializable (arrays and numpy scalars)."""
    if isinstance(value, np.random.RandomState):
        # Its current state (as pickle keeps it): a refit of the restored
        # model draws what a refit of this one would.
        return {_RANDOM_STATE_KEY: _json_value(value.get_state(legacy=False))}
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, range)):
        return [_json_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        # A set of columns (fit sorts the columns it names anyway); written
        # in a fixed order so one model gives one description.
        return sorted((_json_value(v) for v in value), key=lambda v: (str(type(v)), v))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "__array__") and hasattr(value, "__len__"):
        # array-likes a parameter accepts: a pandas Index (X.columns[:2]),
        # Series, or another library's array; restored as a list.
        return _json_value(np.asarray(value).tolist())
    raise TypeError(f"cannot serialize parameter value {value!r} of type "
                    f"{type(value).__name__}")


def _param_value(value):
    """A parameter value read back from :func:`_json_value` output."""
    if not (isinstance(value, dict) and list(value) == [_RANDOM_STATE_KEY]):
        return value
    state = value[_RANDOM_STATE_KEY]
    name = state.get("bit_generator") if isinstance(state, dict) else None
    bit_generator = getattr(np.random, name, None) if isinstance(name, str) else None
    if not (isinstance(bit_generator, type)
            and issubclass(bit_generator, np.random.BitGenerator)):
        raise ValueError(f"invalid RandomState description: unknown bit generator {name!r}")
    try:
        random_state = np.random.RandomState(bit_generator())
        random_state.set_state(state)
    except (KeyError, IndexError, NotImplementedError, OverflowError, TypeError,
            ValueError) as exc:
        raise ValueError(f"invalid RandomState description: {exc!r}") from None
    return random_state


def _version():
    from . import __version__

    return __version__


def to_dict(estimator):
    """Describe a fitted tree as a dict of plain Python values (JSON-ready).

    The dict holds the estimator's class and parameters, its input columns
    and every node array of the fitted tree, with floats kept exactly
    (``json.dumps`` writes the shortest round-trip representation), so
    :func:`from_dict` rebuilds an estimator with bit-identical predictions.
    A ``random_state`` given as a ``numpy.random.RandomState`` is written
    with its current state, as pickle keeps it.

    Parameters
    ----------
    estimator : CLARITreeRegressor, CholeskyTreeRegressor or MBNDT estimator
        A fitted estimator.  A fitted ``CLARITreeRegressorCV`` or
        ``CholeskyTreeRegressorCV`` is written as its refitted tree
        (``best_estimator_``, which :func:`from_dict` rebuilds); its CV
        results are not part of the description.

    Returns
    -------
    data : dict
        Keys ``format``, ``format_version``, ``estimator`` (class name),
        ``clarytree_version`` (of the writer), ``params``, ``n_features_in``,
        ``feature_names_in`` (or None) and ``tree`` (node arrays as lists);
        CLARITree models also keep ``objective``, ``regression_features``,
        ``min_samples_leaf`` and ``preparation`` (the categorical columns and
        their levels, and the columns that had missing values).

    See Also
    --------
    from_dict : The inverse.

    Examples
    --------
    >>> import json
    >>> from clarytree import CholeskyTreeRegressor, from_dict, to_dict
    >>> from clarytree.datasets import make_piecewise_linear
    >>> X, y = make_piecewise_linear(n_samples=200, random_state=0)
    >>> model = CholeskyTreeRegressor(max_depth=2).fit(X, y)
    >>> clone = from_dict(json.loads(json.dumps(to_dict(model))))
    >>> bool((clone.predict(X) == model.predict(X)).all())
    True
    """
    from ._path import _CVMixin

    if isinstance(estimator, _CVMixin) and hasattr(estimator, "best_estimator_"):
        # A fitted CV estimator is its refitted tree: write that tree (with
        # the CV estimator's current extrapolation), which from_dict rebuilds.
        tree = estimator.best_estimator_
        estimator = copy.copy(tree).set_params(extrapolation=estimator.extrapolation)
    family = _family(estimator)
    # A parameter set after fit (extrapolation) is written as it is: an
    # invalid one would only fail at the restored model's predict.
    validate_params(estimator)
    names = getattr(estimator, "feature_names_in_", None)
    data = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "estimator": type(estimator).__name__,
        "clarytree_version": _version(),
        "params": {k: _json_value(v) for k, v in estimator.get_params(deep=False).items()},
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
    }
    data.update(family.to_dict(estimator))
    return data


def from_dict(data):
    """Rebuild a fitted estimator from :func:`to_dict` output.

    Parameters
    ----------
    data : dict
        As returned by :func:`to_dict`, possibly after a trip through JSON.

    Returns
    -------
    estimator : CLARITreeRegressor, CholeskyTreeRegressor or MBNDT estimator
        A fitted estimator of the original class whose ``predict``, ``apply``
        and exports agree exactly with the original's. Training-only
        diagnostics (such as the threshold pools) are not restored.

    Raises
    ------
    TypeError
        If ``data`` is not a dict.
    ValueError
        If ``data`` is not a clarytree tree description or is inconsistent.
    """
    if not isinstance(data, dict):
        raise TypeError(f"from_dict expects a dict, got {type(data).__name__}")
    if data.get("format") != FORMAT_NAME:
        raise ValueError("not a clarytree tree description (missing 'format': "
                         f"{FORMAT_NAME!r})")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"unsupported format_version {data.get('format_version')!r}; "
                         f"this clarytree reads version {FORMAT_VERSION}")
    name = data.get("estimator")
    entry = _estimator_entry(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"unknown estimator {name!r} (known: {', '.join(sorted(_ESTIMATORS))})")
    cls, family = entry
    try:
        params = data["params"]
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict, got {type(params).__name__}")
        estimator = cls(**{k: _param_value(v) for k, v in params.items()})
        try:
            validate_params(estimator)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid params: {exc}") from None
        n_features = data["n_features_in"]
        if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) \
                or n_features < 1:
            raise ValueError(f"n_features_in must be a positive integer, got {n_features!r}")
        n_features = int(n_features)
        estimator.n_features_in_ = n_features
        if data.get("feature_names_in") is not None:
            names = np.asarray(data["feature_names_in"], dtype=object)
            if names.shape != (n_features,):
                raise ValueError("feature_names_in does not match n_features_in")
            if len(set(names.tolist())) != n_features:
                raise ValueError("feature_names_in must name each column once")
            estimator.feature_names_in_ = names
        family.restore(estimator, data)
    except KeyError as exc:
        raise ValueError(f"incomplete tree description: missing {exc}") from None
    except (IndexError, AttributeError, OverflowError, StopIteration, TypeError) as exc:
        # A field of the wrong shape or kind that the checks above do not name.
        raise ValueError(f"inconsistent tree description ({type(exc).__name__}: "
                         f"{exc or 'no detail'}); was it edited by hand?") from None
    return estimator


# --------------------------------------------------------------------------
# Graphviz
# --------------------------------------------------------------------------


def _dot_escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def export_graphviz(estimator, out_file=None, feature_names=None, *, significant_digits=4,
                    exact_thresholds=False, show_samples=True, decimals=_UNSET):
    """Export a fitted tree in Graphviz DOT format.

    Internal nodes show the tested feature, edges the condition of each
    branch (thresholds as ``exact_thresholds`` says), and leaves their id and model (equation, value
    or class probabilities). Render with ``dot -Tpng tree.dot -o tree.png`` or
    the ``graphviz`` Python package; neither is needed to export.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        A fitted estimator, or a fitted Pipeline ending in one (see
        :func:`export_text`).
    out_file : str, path-like, file object or None, default=None
        Where to write the DOT source; ``None`` returns it as a string.
    feature_names : sequence of str, optional
        Names of the input columns (see :func:`export_text`).
    significant_digits : int or None, default=4
        Significant digits of leaf coefficients and values (None: exact).
    exact_thresholds : bool, default=False
        Print the model's own thresholds (see :func:`export_text`).
    show_samples : bool, default=True
        Show the number of training rows reaching each node.
    decimals : int or None
        Former name of ``significant_digits`` (deprecated).

    Returns
    -------
    dot : str or None
        The DOT source when ``out_file`` is None.
    """
    estimator, feature_names = _pipeline_parts(estimator, feature_names, "export_graphviz")
    _family(estimator)
    digits = _check_digits(significant_digits, decimals)
    names = _display_names(_feature_names(estimator, feature_names))
    children, edges, texts, is_leaf, n_samples = _view(
        estimator, names, digits, sep="\n", exact_thresholds=bool(exact_thresholds))
    lines = [
        "digraph Tree {",
        'node [shape=box, style="rounded,filled", fillcolor="#f7f7f7", '
        'fontname="helvetica"];',
        'edge [fontname="helvetica"];',
    ]
    for node, text in enumerate(texts):
        label = text
        if show_samples:
            label += f"\nsamples = {int(n_samples[node])}"
        color = ', fillcolor="#e5f0fa"' if is_leaf[node] else ""
        label = _dot_escape(label).replace("\n", "\\n")
        lines.append(f'{node} [label="{label}"{color}];')
    for node, kids in enumerate(children):
        for child, edge in zip(kids, edges[node], strict=True):
            lines.append(f'{node} -> {child} [label="{_dot_escape(edge)}"];')
    lines.append("}")
    dot = "\n".join(lines) + "\n"
    if out_file is None:
        return dot
    if hasattr(out_file, "write"):
        out_file.write(dot)
    elif not isinstance(out_file, (str, os.PathLike)):
        # open() would take an int (or a bool) as a file descriptor to write
        # over and close.
        raise TypeError("out_file must be a path, a file object or None, got "
                        f"{type(out_file).__name__}")
    else:
        with open(out_file, "w", encoding="utf-8") as fh:
            fh.write(dot)
    return None


# --------------------------------------------------------------------------
# Matplotlib
# --------------------------------------------------------------------------


def _layout(children):
    """x (leaves spaced evenly in depth-first order, parents centred) and depth."""
    count = len(children)
    x = np.zeros(count)
    depth = np.zeros(count, dtype=int)
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        for child in children[node]:
            depth[child] = depth[node] + 1
        stack.extend(reversed(children[node]))
    next_leaf = 0
    for node in order:
        if not children[node]:
            x[node] = next_leaf
            next_leaf += 1
    for node in reversed(order):  # children before parents
        if children[node]:
            x[node] = np.mean([x[c] for c in children[node]])
    return x, depth, max(next_leaf, 1)


def plot_tree(estimator, ax=None, feature_names=None, *, significant_digits=4,
              exact_thresholds=False, fontsize=None, show_samples=True, max_terms=None,
              orientation="top-down", decimals=_UNSET):
    """Draw a fitted tree with matplotlib.

    For the binary CLARITree family, internal nodes show their test
    ``feature <= threshold`` (thresholds as :func:`export_text` prints them)
    and edges ``yes``/``no``; for MBNDT's
    multiway nodes, the node shows the feature and each child the interval or
    category set that leads to it. Leaves show their id and model: the leaf equation (one term
    per line) for the CLARITree family, the value or class probabilities for
    MBNDT.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        A fitted estimator, or a fitted Pipeline ending in one (see
        :func:`export_text`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; defaults to the current axes.
    feature_names : sequence of str, optional
        Names of the input columns (see :func:`export_text`).
    significant_digits : int or None, default=4
        Significant digits of leaf coefficients and values (None: exact).
    exact_thresholds : bool, default=False
        Draw the model's own thresholds (see :func:`export_text`).
    fontsize : float, optional
        Text size; by default it shrinks with the number of leaves and until
        neighbouring boxes no longer overlap, but not below 4 points (then
        give the figure more width, use ``orientation="left-right"`` or
        shorter ``feature_names``).
    show_samples : bool, default=True
        Show the number of training rows reaching each node.
    max_terms : int or None, default=None
        Show at most this many terms of each leaf equation (see
        :func:`export_text`).
    orientation : {"top-down", "left-right"}, default="top-down"
        Root at the top and leaves side by side, or root at the left and
        leaves stacked: the latter keeps the text of wide trees (many
        leaves) readable in a tall figure.
    decimals : int or None
        Former name of ``significant_digits`` (deprecated).

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn into.
    """
    import matplotlib.pyplot as plt

    estimator, feature_names = _pipeline_parts(estimator, feature_names, "plot_tree")
    family = _family(estimator)
    digits = _check_digits(significant_digits, decimals)
    _check_max_terms(max_terms)
    names = _display_names(_feature_names(estimator, feature_names))
    binary = family.tests_in_nodes
    children, edges, texts, is_leaf, n_samples = _view(
        estimator, names, digits, sep="\n", max_terms=max_terms, short_edges=not binary,
        exact_thresholds=bool(exact_thresholds))
    if binary:
        # As in scikit-learn: the test in the node, yes/no on the edges.
        for node, kids in enumerate(children):
            if kids:
                texts[node] = edges[node][0]
                edges[node] = ["yes", "no"]
    else:
        # Sibling intervals would collide on the edges: each child shows its own.
        texts = [t.replace(" (proba [", "\nproba [").replace("])", "]") for t in texts]
        for node, kids in enumerate(children):
            for child, label in zip(kids, edges[node], strict=True):
                texts[child] = f"{label}\n{texts[child]}"
            edges[node] = [""] * len(kids)
    if orientation not in ("top-down", "left-right"):
        raise ValueError(f"orientation must be 'top-down' or 'left-right', got {orientation!r}")
    across = orientation == "left-right"
    if ax is None:
        ax = plt.gca()
    x, depth, n_leaves = _layout(children)
    max_depth = int(depth.max())

    def at(node, other=None, f=0.0):
        """Data position of ``node`` (or a fraction ``f`` of the way to ``other``)."""
        slot, level = x[node], depth[node]
        if other is not None:
            slot, level = (1 - f) * slot + f * x[other], (1 - f) * level + f * depth[other]
        return (level, -slot) if across else (slot, -level)

    auto_size = fontsize is None
    if not auto_size and (isinstance(fontsize, bool) or not isinstance(fontsize, numbers.Real)
                          or not 0 < fontsize < np.inf):
        raise ValueError(f"fontsize must be a positive number of points or None, got "
                         f"{fontsize!r}")
    if auto_size:
        fontsize = float(np.clip(16.0 - 1.2 * n_leaves, 6.0, 10.0)) if not across else 10.0
    ax.set_axis_off()
    if across:
        ax.set_xlim(-0.5, max_depth + 0.9)
        ax.set_ylim(-n_leaves + 0.4, 0.6)
    else:
        ax.set_xlim(-0.6, n_leaves - 0.4)
        ax.set_ylim(-max_depth - 0.3, 0.3)
    artists, inner = [], []
    for node, kids in enumerate(children):
        middle = (len(kids) - 1) / 2
        for i, (child, edge) in enumerate(zip(kids, edges[node], strict=True)):
            (x0, y0), (x1, y1) = at(node), at(child)
            ax.plot([x0, x1], [y0, y1], color="0.5", linewidth=1.0, zorder=1)
            if not edge:
                continue
            # Binary labels grow away from their sibling's; interval labels sit
            # near their child, where siblings are furthest apart.
            if binary:
                ha, f = ("center" if across else "right" if i < middle else "left"), 0.5
            else:
                ha, f = "center", 0.7
            label = ax.text(
                *at(node, child, f), edge, ha=ha, va="center", fontsize=fontsize * 0.8,
                zorder=3, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                                "alpha": 0.9})
            artists.append(label)
            inner.append(label)
    leaf_boxes, placed = [], []
    for node, text in enumerate(texts):
        if show_samples:
            text += f"\nsamples = {int(n_samples[node])}"
        face = "#e5f0fa" if is_leaf[node] else "#f7f7f7"
        if across:
            ha, va = ("left" if is_leaf[node] else "center"), "center"
        else:
            ha, va = "center", ("top" if is_leaf[node] else "center")
        box = ax.text(*at(node), text, ha=ha, va=va, fontsize=fontsize, zorder=4,
                      bbox={"boxstyle": "round,pad=0.3", "fc": face, "ec": "0.3"})
        artists.append(box)
        (leaf_boxes if is_leaf[node] else inner).append(box)
        placed.append((depth[node], x[node], box))
    _fit_limits(ax, artists)
    if auto_size:
        _shrink_to_fit(ax, artists, leaf_boxes, inner if across else [], across,
                       [] if across else placed)
    return ax


def _shrink_to_fit(ax, artists, leaf_boxes, level_boxes=(), across=False, placed=()):
    """Scale the font down until neighbouring boxes no longer overlap.

    Leaves must fit their slot (its width top-down, its height left-right);
    left-right, boxes inside the tree must also fit between two levels;
    top-down, two boxes side by side on one level (``placed``: ``(level,
    slot, box)`` of every node) must fit the distance between their slots.
    The font stops shrinking at 4 points.
    """
    renderer = _renderer(ax.figure)
    (x0, y0), (x1, y1) = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
    unit_x, unit_y = abs(x1 - x0), abs(y1 - y0)  # one slot or level, in pixels

    def extent(text):  # the drawn box, padding included
        text.update_bbox_position_size(renderer)
        patch = text.get_bbox_patch()
        return (patch or text).get_window_extent(renderer=renderer)

    extents = [extent(b) for b in leaf_boxes]
    if across:
        scale = 0.95 * unit_y / max(e.height for e in extents)
        if level_boxes:
            widest = max(extent(b).width for b in level_boxes)
            scale = min(scale, 0.9 * unit_x / widest)
    else:
        scale = 0.95 * unit_x / max(e.width for e in extents)
        by_level = {}
        for level, slot, box in placed:
            by_level.setdefault(level, []).append((slot, extent(box).width))
        for row in by_level.values():
            row.sort()
            for (slot_a, width_a), (slot_b, width_b) in itertools.pairwise(row):
                if width_a + width_b > 0:
                    scale = min(scale, 0.95 * (slot_b - slot_a) * unit_x
                                / (0.5 * (width_a + width_b)))
    if scale < 1:
        for artist in artists:
            artist.set_fontsize(max(4.0, artist.get_fontsize() * scale))


def _renderer(figure):
    """A renderer to measure text with, whatever the figure's canvas.

    Agg canvases have their own; the vector backends' (svg, pdf, ps) and a
    bare ``Figure()``'s have none, so an Agg renderer of the figure's size
    measures instead (without attaching a canvas to the figure).
    """
    canvas = figure.canvas
    if hasattr(canvas, "get_renderer"):
        return canvas.get_renderer()
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(max(1, int(figure.bbox.width)), max(1, int(figure.bbox.height)),
                       figure.dpi)


def _fit_limits(ax, artists):
    """Widen the axes' limits until every text box lies inside them."""
    for _ in range(3):  # the data/point ratio changes with the limits: iterate
        renderer = _renderer(ax.figure)
        boxes = [a.get_window_extent(renderer=renderer) for a in artists]
        inverse = ax.transData.inverted()
        lo = inverse.transform((min(b.x0 for b in boxes), min(b.y0 for b in boxes)))
        hi = inverse.transform((max(b.x1 for b in boxes), max(b.y1 for b in boxes)))
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        new = (min(x0, lo[0]), max(x1, hi[0]), min(y0, lo[1]), max(y1, hi[1]))
        if np.allclose(new, (x0, x1, y0, y1)):
            break
        ax.set_xlim(new[0], new[1])
        ax.set_ylim(new[2], new[3])


def _resolve_feature(spec, names):
    if isinstance(spec, str):
        if spec not in names:
            raise ValueError(f"unknown feature {spec!r}; known: {', '.join(names)}")
        return names.index(spec)
    if isinstance(spec, bool) or not isinstance(spec, numbers.Integral):
        raise TypeError(f"features must be column indices or names, got {spec!r}")
    if not 0 <= spec < len(names):
        raise ValueError(f"feature index {spec} out of range for {len(names)} features")
    return int(spec)


# --------------------------------------------------------------------------
# Partition plots
# --------------------------------------------------------------------------


def _goes_left(tree, node, x):
    """Whether an encoded value ``x`` goes left at ``node``, as ``Tree.apply`` decides.

    NaN (a missing value or a level unseen in training) follows the node's
    missing-value direction; a categorical split tests the level code's bit
    in ``categories_left`` (a code outside the set's range counts as
    unseen); a numeric split tests ``x <= threshold``.
    """
    if np.isnan(x):
        return bool(tree.missing_go_left[node])
    if tree.is_categorical[node]:
        words = tree.categories_left[node]
        if not (0 <= x < 32 * len(words) and x == np.floor(x)):
            return bool(tree.missing_go_left[node])
        code = int(x)
        return bool((int(words[code >> 5]) >> (code & 31)) & 1)
    return bool(x <= tree.threshold[node])


_SliceSplit = namedtuple("_SliceSplit", "axis threshold text bounds missing_left levels")
_SliceSplit.__doc__ = """A split on a plotted feature met in a slice (see _binary_regions).

``threshold`` and ``text`` (how export_text prints it) are NaN and None for
a categorical split, whose ``levels`` are the codes of the box going
``(left, right)``; ``bounds`` is the box of the node.
"""


def _copy_extent(extent):
    return set(extent) if isinstance(extent, set) else list(extent)


def _binary_regions(tree, features, fixed, box):
    """Leaf regions of a binary tree in the slice along ``features`` through ``fixed``.

    ``box`` holds each plotted feature's extent: ``[lo, hi]`` for a numeric
    one, the set of level codes for a categorical one.  A split on a plotted
    feature cuts the box (a categorical split divides the code set); a
    split on any other column sends that column's held value ``fixed[f]``
    (encoded: a level code, NaN for missing) the way ``Tree.apply`` does.

    Returns ``(regions, splits)``: ``(leaf, bounds)`` per region, and a
    :class:`_SliceSplit` for every split on a plotted feature met on the way,
    whether it cuts the box or not.
    """
    texts = _binary_threshold_texts(tree)
    regions, splits = [], []
    stack = [(0, [_copy_extent(b) for b in box])]
    while stack:
        node, bounds = stack.pop()
        left = int(tree.children_left[node])
        if left < 0:
            regions.append((node, bounds))
            continue
        right = int(tree.children_right[node])
        f = int(tree.feature[node])
        if f not in features:
            stack.append((left if _goes_left(tree, node, fixed[f]) else right, bounds))
            continue
        axis = features.index(f)
        missing_left = bool(tree.missing_go_left[node])
        if tree.is_categorical[node]:
            codes = bounds[axis]
            left_part = {c for c in codes if _goes_left(tree, node, float(c))}
            right_part = codes - left_part
            splits.append(_SliceSplit(axis, np.nan, None, bounds, missing_left,
                                      (left_part, right_part)))
        else:
            t = float(tree.threshold[node])
            lo, hi = bounds[axis]
            splits.append(_SliceSplit(axis, t, texts[node], bounds, missing_left, None))
            left_part = None if t < lo else [lo, min(t, hi)]
            right_part = None if t >= hi else [max(t, lo), hi]
        for child, part in ((right, right_part), (left, left_part)):
            if part:
                below = [_copy_extent(b) for b in bounds]
                below[axis] = part
                stack.append((child, below))
    return regions, splits


def _missing_side(split, name, levels):
    """Where missing values of a plotted feature go at ``split``, in words."""
    if split.levels is not None:
        side = split.levels[0] if split.missing_left else split.levels[1]
        if not side:
            return "apart from the levels shown"
        return f"with {name} in {_level_set(levels[c] for c in sorted(side))}"
    if np.isinf(split.threshold):       # a missing-versus-present split
        return "apart from present values"
    return f"with {name} {'<=' if split.missing_left else '>'} {split.text}"


def _float_column(values, name):
    try:
        if hasattr(values, "to_numpy"):
            return values.to_numpy(dtype=np.float64, na_value=np.nan)
        from ._preparation import _missing_mask

        out = np.full(values.shape[0], np.nan)
        present = ~_missing_mask(values)
        out[present] = np.asarray(values[present], dtype=np.float64)
        return out
    except (TypeError, ValueError):
        raise ValueError(f"column {name!r} is neither numeric nor categorical") from None


def _raw_plot_columns(X, names):
    """Raw columns of ``X``, their plotted values and levels (no encoding known).

    A column is categorical when its pandas dtype is (``category``, ``object``,
    ``string``, ``bool``) or, in an array, when its entries are not numbers.
    Returns ``(columns, values, levels)``: the raw columns, a float matrix of
    the numeric values and the categorical columns' level codes (NaN where
    missing), and per column None or its levels in code order (category order
    for a pandas ``category`` column, else sorted).
    """
    from ._preparation import (
        _factorize,
        _python_scalar,
        _sorted_levels_of,
        column_is_categorical,
        refuse_unhashable,
    )

    if hasattr(X, "iloc") and hasattr(X, "dtypes"):
        columns = [X.iloc[:, j] for j in range(X.shape[1])]
        categorical = [column_is_categorical(c) for c in columns]
    else:
        A = np.asarray(X)
        columns = [A[:, j] for j in range(A.shape[1])]
        categorical = []
        for j, c in enumerate(columns):
            if c.dtype.kind in "OUS":
                try:
                    _float_column(c, names[j])
                    categorical.append(False)
                except ValueError:
                    categorical.append(True)
            else:
                categorical.append(False)
    values = np.empty((len(columns[0]), len(columns)), dtype=np.float64)
    levels = []
    for j, col in enumerate(columns):
        if not categorical[j]:
            values[:, j] = _float_column(col, names[j])
            levels.append(None)
            continue
        try:
            raw, uniques = _factorize(col)
        except TypeError:
            refuse_unhashable(col, repr(str(names[j])))
            raise
        uniques = [_python_scalar(v) for v in uniques]
        if hasattr(col, "cat"):
            seen = set(uniques)
            found = [_python_scalar(v) for v in col.cat.categories if _python_scalar(v) in seen]
        else:
            found = _sorted_levels_of(uniques)
        position = {v: i for i, v in enumerate(found)}
        to_code = np.array([position[v] for v in uniques], dtype=np.float64)
        values[:, j] = np.where(raw >= 0, to_code[np.maximum(raw, 0)] if uniques else 0, np.nan)
        levels.append(np.array(found, dtype=object))
    return columns, values, levels


def _raw_grid(X, columns, levels, held, features, points):
    """Raw rows with the held values and the plotted coordinates ``points``.

    A DataFrame with ``X``'s columns and (for categorical columns) dtypes
    when ``X`` is one, else an array.
    """
    m = points.shape[0]
    out = []
    for j in range(len(columns)):
        v = points[:, features.index(j)] if j in features else np.full(m, held[j])
        if levels[j] is None:
            out.append(v)
            continue
        raw = np.empty(m, dtype=object)
        present = ~np.isnan(v)
        raw[present] = levels[j][v[present].astype(np.intp)]
        raw[~present] = None
        out.append(raw)
    if not (hasattr(X, "iloc") and hasattr(X, "dtypes")):
        if all(lv is None for lv in levels):
            return np.column_stack(out)
        return np.column_stack([np.asarray(c, dtype=object) for c in out])
    import pandas as pd

    series = {}
    for j, (col, v) in enumerate(zip(columns, out, strict=True)):
        if levels[j] is None:
            series[j] = pd.Series(v, dtype=np.float64)
            continue
        try:
            series[j] = pd.Series(v, dtype=col.dtype)
        except (TypeError, ValueError):     # e.g. a missing value in a bool column
            series[j] = pd.Series(v, dtype=object)
    grid = pd.DataFrame(series)
    grid.columns = X.columns
    return grid


def _held_values(values, levels):
    """Held value of every column: the median of the present values of a
    numeric one, the most frequent level code of a categorical one (ties:
    the first in level order); NaN where a column has no present value."""
    held = np.full(values.shape[1], np.nan)
    for j in range(values.shape[1]):
        col = values[:, j]
        col = col[~np.isnan(col)]
        if col.size == 0:
            continue
        if levels[j] is None:
            held[j] = np.median(col)
        else:
            held[j] = float(np.argmax(np.bincount(col.astype(np.intp),
                                                  minlength=len(levels[j]))))
    return held


def _is_missing_value(value):
    if value is None:
        return True
    try:
        return bool(value != value)     # NaN, pandas NA
    except (TypeError, ValueError):
        return False


def _set_fixed(held, fixed, estimator, names, levels, features):
    """Replace held values by the user's ``fixed`` (raw values by column)."""
    if not isinstance(fixed, Mapping):
        raise TypeError("fixed must be a dict mapping column names or indices to values, "
                        f"got {type(fixed).__name__}")
    merged = getattr(estimator, "merged_categories_", None)
    held = held.copy()
    for key, value in fixed.items():
        j = _resolve_feature(key, names)
        if j in features:
            raise ValueError(f"fixed gives a value for {names[j]!r}, which is plotted; "
                             "fixed holds the columns that are not")
        if _is_missing_value(value):
            held[j] = np.nan
        elif levels[j] is None:
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not np.isfinite(value):
                raise ValueError(f"fixed value of the numeric column {names[j]!r} must be a "
                                 f"finite number or None (missing), got {value!r}")
            held[j] = float(value)
        else:
            known = [v.item() if isinstance(v, np.generic) else v for v in levels[j]]
            value = value.item() if isinstance(value, np.generic) else value
            if value in known:
                held[j] = float(known.index(value))
            elif merged is not None and merged[j] and value in merged[j]:
                held[j] = float(len(known) - 1)     # merged into the last ("other") level
            else:
                raise ValueError(
                    f"fixed value {value!r} is not a level of column {names[j]!r} "
                    f"({', '.join(map(str, known))}); pass None for a missing value")
    return held


def _cell_edges(centres):
    """pcolormesh cell edges around ``centres`` (midpoints; ends half a step out)."""
    if centres.size == 1:
        return np.array([centres[0] - 0.5, centres[0] + 0.5])
    mid = (centres[1:] + centres[:-1]) / 2
    return np.r_[2 * centres[0] - mid[0], mid, 2 * centres[-1] - mid[-1]]


def _level_axis(ax, which, levels):
    labels = [_level_text(v) for v in levels]
    ticks = np.arange(len(labels))
    # Many or long level names would overlap on a horizontal x axis.
    long = sum(len(s) + 2 for s in labels) > 48
    if which == "x":
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, rotation=45 if long else 0, ha="right" if long else "center")
        ax.set_xlim(-0.5, len(labels) - 0.5)
    else:
        ax.set_yticks(ticks)
        ax.set_yticklabels(labels)
        ax.set_ylim(-0.5, len(labels) - 0.5)


def plot_partition(estimator, X, y=None, features=None, ax=None, grid_resolution=200,
                   feature_names=None, *, fixed=None):
    """Draw the fitted piecewise model over the data for one or two features.

    With one numeric feature: the data as a scatter plot and each leaf's
    model as a line segment over its interval.  With one categorical feature:
    the levels along the x axis (in the order of ``categories_``), the data as
    a jittered strip per level, and each level's model value as a short
    horizontal segment labelled with its leaf id (a categorical column is
    split-only, so the value is constant across the level).  With two
    features: the fitted surface as a colour map (a band per level along a
    categorical axis, a level-by-level grid for two categorical ones), the
    leaf regions outlined with their ids, and the data on top, coloured by
    target with the same scale.

    The plot is a slice of the model: the columns that are not plotted are
    held at one value each, by default the median of the present values of a
    numeric column and the most frequent level (by rows; ties: the first in
    level order) of a categorical one, both over ``X``; ``fixed`` overrides
    them.  A split on a held column is resolved the way ``predict`` resolves
    it: level-set membership for a categorical column, the split's
    missing-value direction for a missing held value.  Rows whose plotted
    value is missing (or, for a categorical column, a level unseen in
    training) are left out of the scatter; the title says how many, and on
    which side of the splits on that feature missing values go.

    Parameters
    ----------
    estimator : fitted estimator
        A CLARITree-family estimator (leaf boundaries are drawn exactly), or any
        fitted clarytree estimator with ``predict`` (MBNDT classifiers show the
        probability of the last class), which is evaluated on a grid of rows
        with ``X``'s columns and dtypes.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to draw, usually the training data, in the form ``predict``
        takes (text, category and bool columns, NaN).
    y : array-like of shape (n_samples,), optional
        Target of ``X``; omitted, only the model is drawn (plus the rows'
        positions in 2-D).
    features : int, str or sequence of one or two of them, optional
        Columns to plot. Defaults to all columns when the model has one or two,
        else to its regression features when there are one or two of them.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; defaults to the current axes.
    grid_resolution : int, default=200
        Grid points per plotted numeric axis.
    feature_names : sequence of str, optional
        Names of the input columns (see :func:`export_text`).
    fixed : dict, optional
        Values of held columns, by column name or index, as they appear in
        ``X`` (a level of a categorical column; None or NaN for a missing
        value).  Columns not named keep the default above.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn into.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    family = _family(estimator)
    names = _feature_names(estimator, feature_names)
    X = as_pandas(X)
    shape = X.shape if hasattr(X, "shape") else np.shape(X)
    if len(shape) != 2 or shape[1] != len(names):
        raise ValueError(f"X must have shape (n_samples, {len(names)}), got {tuple(shape)}")
    n_rows = shape[0]
    if n_rows == 0:
        raise ValueError("X has no rows")
    if isinstance(grid_resolution, bool) or not isinstance(grid_resolution, numbers.Integral) \
            or grid_resolution < 2:
        raise ValueError(f"grid_resolution must be an int >= 2, got {grid_resolution!r}")
    target_name = str(getattr(y, "name", None) or "y")
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        # A classifier's model is P(last class): its rows as 1 or 0 beside it.
        target_name = f"P(class {classes[-1]})"
        if y is not None:
            y = (np.asarray(y, dtype=object).ravel() == classes[-1]).astype(np.float64)
    if y is not None:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim > 1 and sum(d > 1 for d in y.shape) > 1:
            raise ValueError(f"y must be 1-d (one target per row), got shape {y.shape}")
        y = y.ravel()
        if y.shape[0] != n_rows:
            raise ValueError(f"y has {y.shape[0]} entries but X has {n_rows} rows")

    if features is None:
        reg = np.asarray(getattr(estimator, "regression_features_", []))
        if len(names) <= 2:
            features = list(range(len(names)))
        elif 1 <= reg.size <= 2:
            features = [int(j) for j in reg]
        else:
            raise ValueError("the model has more than two features: pass features= "
                             "(one or two columns) to choose the slice to draw")
    elif isinstance(features, (str, numbers.Integral)) or not hasattr(features, "__iter__"):
        features = [features]       # one column; a bad one is named below
    features = [_resolve_feature(f, names) for f in features]
    if not 1 <= len(features) <= 2 or len(set(features)) != len(features):
        raise ValueError("features must name one or two distinct columns")

    # The family's own encoding where it has one (exact regions), else the
    # raw columns and a grid of raw rows for ``predict``.
    encoded = family.encode(estimator, X)
    if encoded is not None:
        values, levels = encoded
        columns = None
    else:
        columns, values, levels = _raw_plot_columns(X, names)
    held = _held_values(values, levels)
    if fixed is not None:
        held = _set_fixed(held, fixed, estimator, names, levels, features)

    def model_values(points):
        if encoded is not None:
            grid = np.tile(held, (points.shape[0], 1))
            grid[:, features] = points
            return np.asarray(family.predict_encoded(estimator, grid), dtype=np.float64)
        grid = _raw_grid(X, columns, levels, held, features, points)
        if hasattr(estimator, "predict_proba"):
            return np.asarray(estimator.predict_proba(grid), dtype=np.float64)[:, -1]
        return np.asarray(estimator.predict(grid), dtype=np.float64)

    categorical = [levels[f] is not None for f in features]
    extents = []
    for f in features:
        col = values[:, f]
        col = col[~np.isnan(col)]
        if levels[f] is not None:
            if len(levels[f]) == 0:
                raise ValueError(f"column {names[f]!r} has no levels to plot (all missing)")
            extents.append(set(range(len(levels[f]))))
            continue
        if col.size == 0:
            raise ValueError(f"column {names[f]!r} has no values to plot (all missing)")
        lo, hi = col.min(), col.max()
        pad = 0.02 * (hi - lo) if hi > lo else 0.5
        extents.append([lo - pad, hi + pad])
    shown = ~np.isnan(values[:, features]).any(axis=1)
    # Rows of a categorical axis spread over their level's width.
    jitter = np.random.default_rng(0).uniform(-0.3, 0.3, size=(n_rows, len(features)))
    coords = [values[shown, f] + (jitter[shown, k] if categorical[k] else 0.0)
              for k, f in enumerate(features)]
    found = None if encoded is None else family.regions(estimator, features, held, extents)

    if ax is None:
        ax = plt.gca()
    notes = []
    for k, f in enumerate(features):
        n_missing = int(np.isnan(values[:, f]).sum())
        if n_missing == 0:
            continue
        what = "missing or unseen" if encoded is not None and categorical[k] else "missing"
        note = f"{n_missing} rows with {names[f]} {what} not shown"
        if found is not None:
            sides = list(dict.fromkeys(_missing_side(s, names[f], levels[f])
                                       for s in found[1] if s.axis == k))
            if sides:
                note += f"; {what} {names[f]} goes " + ", ".join(sides[:3]) + \
                    (", ..." if len(sides) > 3 else "")
        notes.append(note)
    if notes:
        ax.set_title("\n".join(notes), fontsize="small")
    axes_names = [names[f] for f in features]

    if len(features) == 1:
        f = features[0]
        if y is not None:
            ax.scatter(coords[0], y[shown], s=10, color="0.6", alpha=0.6, label="data",
                       zorder=1)
        if categorical[0]:
            n_levels = len(levels[f])
            codes = np.arange(n_levels, dtype=np.float64)
            if found is not None:
                leaf_of = {c: leaf for leaf, bounds in found[0] for c in bounds[0]}
                colour = {}
                for c in range(n_levels):
                    leaf = leaf_of[c]
                    point = held.copy()
                    point[f] = c
                    value = family.leaf_values(estimator, leaf, point[None, :])[0]
                    first = leaf not in colour
                    colour.setdefault(leaf, plt.cm.tab10(len(colour) % 10))
                    ax.plot([c - 0.35, c + 0.35], [value, value], linewidth=2.5, zorder=3,
                            color=colour[leaf], label=f"leaf {leaf}" if first else "_nolegend_")
                    ax.annotate(str(leaf), (c, value), xytext=(0, 3),
                                textcoords="offset points", ha="center", va="bottom",
                                fontsize=8, zorder=4)
            else:
                leaves = None
                if hasattr(estimator, "apply"):
                    leaves = estimator.apply(
                        _raw_grid(X, columns, levels, held, features, codes[:, None]))
                for c, value in zip(codes, model_values(codes[:, None]), strict=True):
                    ax.plot([c - 0.35, c + 0.35], [value, value], linewidth=2.5, zorder=3,
                            color="C0", label="model" if c == 0 else "_nolegend_")
                    if leaves is not None:
                        ax.annotate(str(leaves[int(c)]), (c, value), xytext=(0, 3),
                                    textcoords="offset points", ha="center", va="bottom",
                                    fontsize=8, zorder=4)
            _level_axis(ax, "x", levels[f])
        elif found is not None:
            regions, splits = found
            for k, (leaf, bounds) in enumerate(sorted(regions, key=lambda r: r[1][0][0])):
                xs = np.linspace(bounds[0][0], bounds[0][1], max(2, grid_resolution // 10))
                # The leaf's own equation: evaluating the model would send the
                # segment's end point on the threshold to the left leaf.
                points = np.tile(held, (xs.shape[0], 1))
                points[:, f] = xs
                ax.plot(xs, family.leaf_values(estimator, leaf, points), linewidth=2.0,
                        zorder=3, color=plt.cm.tab10(k % 10), label=f"leaf {leaf}")
            lo, hi = extents[0]
            for s in splits:
                if lo <= s.threshold < hi:
                    ax.axvline(s.threshold, color="0.3", linestyle=":", linewidth=1.0,
                               zorder=2)
        else:
            xs = np.linspace(extents[0][0], extents[0][1], grid_resolution)
            ax.plot(xs, model_values(xs[:, None]), linewidth=2.0, label="model", zorder=3)
        ax.set_xlabel(axes_names[0])
        ax.set_ylabel(target_name if classes is not None or y is not None else "prediction")
        ax.legend(loc="best", fontsize="small")
        return ax

    centres = [np.arange(len(levels[f]), dtype=np.float64) if categorical[k]
               else np.linspace(extents[k][0], extents[k][1], grid_resolution)
               for k, f in enumerate(features)]
    mx, my = np.meshgrid(*centres)
    surface = model_values(np.column_stack([mx.ravel(), my.ravel()])).reshape(mx.shape)
    vmin, vmax = surface.min(), surface.max()
    if y is not None:
        vmin, vmax = min(vmin, y[shown].min()), max(vmax, y[shown].max())
    mesh = ax.pcolormesh(_cell_edges(centres[0]), _cell_edges(centres[1]), surface,
                         shading="flat", cmap="viridis", vmin=vmin, vmax=vmax, zorder=1)
    label = "prediction" if classes is None else f"P(class {classes[-1]})"
    # The axes' own figure (pyplot's current one may be another, or none).
    ax.figure.colorbar(mesh, ax=ax, label=label)
    if y is not None:
        ax.scatter(coords[0], coords[1], c=y[shown], cmap="viridis", vmin=vmin, vmax=vmax,
                   s=12, edgecolors="k", linewidths=0.3, zorder=3)
    else:
        ax.scatter(coords[0], coords[1], s=6, color="k", zorder=3)
    if found is not None:
        regions, splits = found
        if not any(categorical):
            for s in splits:
                if not s.bounds[s.axis][0] <= s.threshold < s.bounds[s.axis][1]:
                    continue
                if s.axis == 0:
                    ax.plot([s.threshold] * 2, s.bounds[1], color="w", linewidth=1.5,
                            zorder=2)
                else:
                    ax.plot(s.bounds[0], [s.threshold] * 2, color="w", linewidth=1.5,
                            zorder=2)
            for leaf, bounds in regions:
                ax.text(np.mean(bounds[0]), np.mean(bounds[1]), str(leaf), color="w",
                        ha="center", va="center", fontsize=9, fontweight="bold", zorder=4)
        else:
            # One cell per level (and numeric interval) of each region.
            for leaf, bounds in regions:
                spans = [[(c - 0.5, c + 0.5) for c in sorted(b)] if categorical[k]
                         else [tuple(b)] for k, b in enumerate(bounds)]
                for x0, x1 in spans[0]:
                    for y0, y1 in spans[1]:
                        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False,
                                               edgecolor="w", linewidth=1.5, zorder=2))
                        ax.text((x0 + x1) / 2, (y0 + y1) / 2, str(leaf), color="w",
                                ha="center", va="center", fontsize=9, fontweight="bold",
                                zorder=4)
    for k, which in enumerate("xy"):
        if categorical[k]:
            _level_axis(ax, which, levels[features[k]])
        else:
            (ax.set_xlim if which == "x" else ax.set_ylim)(*extents[k])
    ax.set_xlabel(axes_names[0])
    ax.set_ylabel(axes_names[1])
    return ax


_register_core_family()
