"""The MBNDT multiway tree's family for the export functions of :mod:`clarytree`.

:func:`clarytree.export_text`, :func:`~clarytree.leaf_table`,
:func:`~clarytree.to_dict` / :func:`~clarytree.from_dict`,
:func:`~clarytree.export_graphviz` and the plots dispatch on the class of a
fitted ``tree_``; importing :mod:`clarytree.mbndt` registers
:class:`MultiwayFamily` for :class:`~clarytree.mbndt._tree.MultiwayTree`.
"""

from collections import namedtuple

import numpy as np

from .._export import (
    TreeFamily,
    _display,
    _json_value,
    _level_text,
    _num,
    _rounded,
    _threshold_text,
    register_tree_family,
)
from .._frames import exact_integer_array
from ._classes import MBNDTClassifier, MBNDTRegressor
from ._preprocess import MISSING
from ._tree import MultiwayTree

# How rules name what a category table does not list, and missing values.
OTHER_LEVELS = "<other or unseen>"
MISSING_LEVEL = "<missing>"


def _children(tree, node):
    return [int(c) for c in tree.children[tree.children_ptr[node]:tree.children_ptr[node + 1]]]


def _branch_tests(tree, node, exact_thresholds=False):
    """The test of every child of a multiway node, in child order.

    A categorical child's test is a :class:`_Levels`, its members (level
    labels, ``<other or unseen>`` and ``<missing>`` where those go) among
    the node's; a numeric one's an :data:`_Interval`, ``low < x <= high``
    (infinite where unbounded; the texts as :func:`_threshold_text` prints
    the cut points).
    """
    kids = _children(tree, node)
    if tree.is_categorical[node]:
        s, e = tree.cat_ptr[node], tree.cat_ptr[node + 1]
        values, positions = tree.cat_values[s:e], tree.cat_child[s:e]
        missing_listed = any(v == MISSING for v in values)
        tests = []
        for k in range(len(kids)):
            members = [MISSING_LEVEL if v == MISSING else _level_text(v)
                       for v, p in zip(values, positions, strict=True) if p == k]
            if k == tree.default_child[node]:
                members.append(OTHER_LEVELS)
                if not missing_listed:
                    members.append(MISSING_LEVEL)
            tests.append(members)
        # Every child's members, in the node's order: what "not in" counts from.
        universe = [m for members in tests for m in members]
        return [_Levels(members, universe) for members in tests]
    s, e = tree.cuts_ptr[node], tree.cuts_ptr[node + 1]
    cuts = [float(c) for c in tree.cuts[s:e]]
    texts = [_threshold_text(c, lo, hi, exact_thresholds) for c, lo, hi in
             zip(tree.cuts[s:e], tree.cut_lower[s:e], tree.cut_upper[s:e], strict=True)]
    feature = int(tree.feature[node])
    missing_to = (int(np.searchsorted(tree.cuts[s:e], tree.impute_values[feature],
                                      side="left"))
                  if feature in tree.impute_values else None)
    bounds = [(-np.inf, None)] + list(zip(cuts, texts, strict=True)) + [(np.inf, None)]
    return [_Interval(*bounds[k], *bounds[k + 1], k == missing_to) for k in range(len(kids))]


# A numeric child's test: low < x <= high (texts None where unbounded).
_Interval = namedtuple("_Interval", "low low_text high high_text takes_missing")


class _Levels:
    """A categorical test: the members a child takes, among all the node's."""

    def __init__(self, members, universe):
        self.members = members
        self.universe = universe

    def text(self):
        # The shorter of the two lists: a child taking most of a column's
        # many levels reads "not in" the few that go elsewhere (with
        # <missing> among them when missing values go elsewhere, else
        # "or missing" said outright).
        kept = set(self.members)
        others = [m for m in self.universe if m not in kept]
        if others and len(others) < len(self.members):
            text = f"not in {{{', '.join(others)}}}"
            return f"{text} or missing" if MISSING_LEVEL in kept else text
        return f"in {{{', '.join(self.members)}}}"


def _test_text(test, name):
    """A test of :func:`_branch_tests` as text (``name=None``: without the feature)."""
    prefix = "" if name is None else f"{name} "
    if isinstance(test, _Levels):
        return prefix + test.text()
    low, high = test.low_text, test.high_text
    if low is None:
        text = f"{prefix}<= {high}"
    elif high is None:
        text = f"{prefix}> {low}"
    elif name is not None:
        text = f"{low} < {name} <= {high}"
    else:
        text = f"({low}, {high}]"
    return f"{text} or missing" if test.takes_missing else text


def _branch_labels(tree, node, name, exact_thresholds=False):
    """Condition of every child of a multiway node, in child order.

    Each label says where missing values go: a numeric node sends them with
    the training median (its imputation), a categorical node to the child
    listing ``<missing>`` (seen in training) or else with unlisted levels.
    With ``name=None`` the labels omit the feature (``<= a``, ``(a, b]``,
    ``> b``, ``in {...}``), for drawings where the node shows it.
    """
    return [_test_text(t, name) for t in _branch_tests(tree, node, exact_thresholds)]


def _merge_tests(first, second):
    """Both tests of one feature as one (a path's later test within the earlier)."""
    if isinstance(first, _Levels):
        kept = set(first.members)
        return _Levels([m for m in second.members if m in kept], second.universe)
    low = first[:2] if first.low >= second.low else second[:2]
    high = first[2:4] if first.high <= second.high else second[2:4]
    return _Interval(*low, *high, first.takes_missing and second.takes_missing)


def _leaf_text(estimator, node, digits):
    value = estimator.tree_.value[node]
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        k = int(np.argmax(value))
        probs = ", ".join(_num(p, digits) for p in value)
        return f"class {_display(classes[k])} (proba [{probs}])"
    return f"y = {_num(value[0], digits)}"


def _preorder(tree):
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if tree.feature[node] >= 0:
            stack.extend(reversed(_children(tree, node)))
    return order


def _rules(tree, names, exact_thresholds=False):
    """Every node's rule: the tests on its path, one per feature, joined by ``and``.

    Repeated tests of a feature merge into one (an interval, or the levels
    every test admits; missing values pass only where every test lets them),
    in the order the features first appear.  A test that takes missing
    values (``x > 2 or missing``) is parenthesized among others, where
    ``and`` would otherwise bind its ``or missing`` to the next test.
    """
    paths = {0: {}}
    for node in _preorder(tree):
        if tree.feature[node] < 0:
            continue
        f = int(tree.feature[node])
        for child, test in zip(_children(tree, node), _branch_tests(tree, node,
                                                                   exact_thresholds),
                               strict=True):
            path = dict(paths[node])
            path[f] = _merge_tests(path[f], test) if f in path else test
            paths[child] = path
    rules = {}
    for node, path in paths.items():
        texts = [_test_text(test, _display(names[f])) for f, test in path.items()]
        rules[node] = " and ".join(
            f"({t})" if len(texts) > 1 and t.endswith(" or missing") else t
            for t in texts) or "(all rows)"
    return rules


def _classes_to_json(classes):
    """``{"classes": [...]}`` of JSON values (and ``"classes_dtype"`` for
    dates and durations, written as ISO text and microsecond counts)."""
    if classes.dtype.kind == "M":
        return {"classes": np.datetime_as_string(classes).tolist(),
                "classes_dtype": str(classes.dtype)}
    if classes.dtype.kind == "m":
        return {"classes": classes.astype(np.int64).tolist(),
                "classes_dtype": str(classes.dtype)}
    values = _json_value(classes)
    for label in values:
        if not isinstance(label, (str, int, float, bool)):
            raise TypeError(
                f"the class label {label!r} (of type {type(label).__name__}) cannot be "
                "written as JSON; fit on labels that are text, numbers, bools or a "
                "datetime64 array (e.g. y.astype(str), or pd.to_datetime(y))")
    return {"classes": values}


def _classes_from_json(classes, dtype):
    if dtype is None:
        if (isinstance(classes, list) and classes
                and all(type(label) is int for label in classes)):
            # Integer labels exactly (uint64 ones beyond int64 too).
            exact = exact_integer_array(classes)
            if exact is not None:
                return exact
        return np.asarray(classes)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "mM":
        raise ValueError("classes_dtype must name a datetime64 or timedelta64 dtype")
    try:
        if dtype.kind == "M":
            return np.array(classes, dtype=dtype)
        return np.array(classes, dtype=np.int64).astype(dtype)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"classes must be {dtype} values (ISO text for dates, "
                         "integer counts for durations)") from None


def _tree_to_dict(tree):
    nodes = []
    for node in range(tree.node_count):
        entry = {
            "feature": int(tree.feature[node]),
            "depth": int(tree.depth[node]),
            "n_samples": int(tree.n_node_samples[node]),
        }
        if tree.feature[node] < 0:
            entry["value"] = [float(v) for v in tree.value[node]]
            entry["logit"] = [float(v) for v in tree.leaf_logit[node]]
            entry["origin"] = int(tree.leaf_origin[node])
        else:
            entry["children"] = _children(tree, node)
            if tree.is_categorical[node]:
                s, e = tree.cat_ptr[node], tree.cat_ptr[node + 1]
                entry["categorical"] = True
                entry["cat_values"] = [str(v) for v in tree.cat_values[s:e]]
                entry["cat_child"] = [int(c) for c in tree.cat_child[s:e]]
                entry["default"] = int(tree.default_child[node])
            else:
                s, e = tree.cuts_ptr[node], tree.cuts_ptr[node + 1]
                entry["cuts"] = [float(c) for c in tree.cuts[s:e]]
                entry["cut_gaps"] = [[None if np.isnan(lo) else float(lo),
                                      None if np.isnan(hi) else float(hi)]
                                     for lo, hi in zip(tree.cut_lower[s:e], tree.cut_upper[s:e],
                                                       strict=True)]
        nodes.append(entry)
    return {
        "nodes": nodes,
        "n_features": int(tree.n_features),
        "impute_values": {str(k): float(v) for k, v in tree.impute_values.items()},
    }


class MultiwayFamily(TreeFamily):
    """MBNDT: multiway interval / category-set tests, a value or class probabilities per leaf."""

    tests_in_nodes = False

    def view(self, estimator, names, digits, sep=" ", max_terms=None, short_edges=False,
             exact_thresholds=False):
        tree = estimator.tree_
        children, edges, texts = [], [], []
        for node in range(tree.node_count):
            if tree.feature[node] < 0:
                children.append([])
                edges.append([])
                texts.append(f"leaf {node}{sep}{_leaf_text(estimator, node, digits)}")
            else:
                name = names[int(tree.feature[node])]
                children.append(_children(tree, node))
                edges.append(_branch_labels(tree, node, None if short_edges else name,
                                            exact_thresholds))
                texts.append(name)
        return children, edges, texts

    def leaf_rows(self, estimator, names, digits, exact_thresholds=False):
        tree = estimator.tree_
        rules = _rules(tree, names, exact_thresholds)
        classes = getattr(estimator, "classes_", None)
        value_cols = ["value"] if classes is None else [f"proba[{c}]" for c in classes]
        records = []
        for leaf in _preorder(tree):
            if tree.feature[leaf] >= 0:
                continue
            row = {
                "leaf": int(leaf),
                "rule": rules[leaf],
                "n_samples": int(tree.n_node_samples[leaf]),
            }
            row.update(zip(value_cols, (_rounded(v, digits) for v in tree.value[leaf]),
                           strict=True))
            records.append(row)
        return records, ["leaf", "rule", "n_samples", *value_cols]

    def to_dict(self, estimator):
        data = {
            "tree": _tree_to_dict(estimator.tree_),
            "column_kinds": list(estimator._column_kinds),
        }
        if hasattr(estimator, "classes_"):
            data.update(_classes_to_json(np.asarray(estimator.classes_)))
        return data

    def restore(self, estimator, data):
        spec = data["tree"]
        if not isinstance(spec.get("impute_values"), dict):
            raise ValueError("tree.impute_values must map numeric columns to numbers")
        impute = {int(k): float(v) for k, v in spec["impute_values"].items()}
        tree = MultiwayTree(spec["nodes"], data["column_kinds"], impute, int(spec["n_features"]))
        if tree.n_features != estimator.n_features_in_:
            raise ValueError(f"tree.n_features ({tree.n_features}) must equal n_features_in "
                             f"({estimator.n_features_in_})")
        estimator.tree_ = tree
        estimator._column_kinds = list(data["column_kinds"])
        estimator.n_leaves_ = tree.n_leaves
        if hasattr(estimator, "predict_proba"):
            # A classifier's leaves hold one probability per class.
            classes = data.get("classes")
            if not isinstance(classes, list) or len(classes) != tree.value.shape[1] \
                    or len(set(map(repr, classes))) != len(classes):
                raise ValueError(f"classes must list the {tree.value.shape[1]} distinct "
                                 "classes of the leaves' probabilities")
            leaves = tree.value[tree.feature < 0]
            if np.any(leaves < 0) or not np.allclose(leaves.sum(axis=1), 1.0):
                raise ValueError("a classifier's leaf values must be probabilities "
                                 "summing to 1")
            estimator.classes_ = _classes_from_json(classes, data.get("classes_dtype"))
        elif tree.value.shape[1] != 1:
            raise ValueError(f"a regressor's leaves hold one value each, not "
                             f"{tree.value.shape[1]}")


    def contributions(self, estimator, X, names):
        from ._codegen import contributions

        return contributions(estimator, X, names,
                             _rules(estimator.tree_, names, exact_thresholds=True))

    def sql_cases(self, estimator, names, dialect, proba_of=None):
        from ._codegen import sql_cases

        return sql_cases(estimator, names, proba_of)

    def python_source(self, estimator, names, function_name, doc):
        from ._codegen import python_source

        return python_source(estimator, names, function_name, doc)


register_tree_family(MultiwayTree, MultiwayFamily(), (MBNDTClassifier, MBNDTRegressor))
