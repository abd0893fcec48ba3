"""MBNDT trees as SQL and Python code, and their (constant-leaf) explanations.

The generated code tests raw columns exactly as :class:`MultiwayTree` routes
them: a numeric value is first replaced by the training median when missing
(the fitted imputer), then compared with the node's cut points (``x <= c``
goes to the lower child); a categorical value is matched as a string (missing
values as the table's missing entry) and anything not in the node's table
goes to the default child.  Scaling and encoders only shaped training: the
exported tree reads raw values, so nothing else needs to be reproduced.
"""

import datetime

import numpy as np

from .._explain import (
    _lit,
    _py_missing,
    _py_set,
    _sql_ident,
    _sql_list,
    _sql_threshold,
    _sql_value,
)
from ._export import _children, _preorder
from ._preprocess import MISSING


def leaf_output(estimator, leaf):
    """The prediction of a leaf: its value (regressor) or class label (classifier)."""
    value = np.asarray(estimator.tree_.value[leaf])
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        return float(value[0])
    label = classes[int(np.argmax(value))]
    return label.item() if isinstance(label, np.generic) else label


def _sql_label(label):
    """SQL literal of a class label.  numpy's ``.item()`` of a date finer
    than microseconds is a bare count of nanoseconds: such a date is written
    as text like coarser ones (that of the equal ``datetime``, or numpy's ISO
    text where it is finer than datetime's microseconds).  Durations finer
    than microseconds stay counts of their unit, every label of the column
    alike."""
    if (isinstance(label, np.datetime64) and not np.isnat(label)
            and isinstance(label.item(), int)):
        micro = label.astype("M8[us]")
        if micro != label:
            return _sql_value(np.datetime_as_string(label).replace("T", " "))
        label = micro
    value = label.item() if isinstance(label, np.generic) else label
    if isinstance(value, (datetime.date, datetime.timedelta)):
        return _sql_value(str(value))
    return _lit(value) if isinstance(value, float) else _sql_value(value)


def _label_source(label):
    """Python source of a class label, and whether it needs ``import datetime``.

    Text, numbers and bools are literals; numpy dates and durations
    (``datetime64``/``timedelta64``) are written as the equal ``datetime``
    objects.  Other labels (NaT, dates finer than microseconds) have no
    source that rebuilds them: a ``TypeError`` says what to pass instead.
    """
    value = label
    if isinstance(value, (np.datetime64, np.timedelta64)) and not np.isnat(value):
        micro = value.astype("M8[us]" if isinstance(value, np.datetime64) else "m8[us]")
        if micro == value:          # else finer than datetime's microseconds
            value = micro.item()
    elif isinstance(value, np.generic):
        value = value.item()
    for kind in (bool, int, str):       # subclasses written as the plain type
        if isinstance(value, kind):
            return repr(kind(value)), False
    if isinstance(value, float):
        return _lit(float(value)), False
    if isinstance(value, (datetime.datetime, datetime.timedelta)):
        return repr(value), True
    raise TypeError(
        f"the class label {label!r} (of type {type(label).__name__}) has no Python source "
        "that export_python can write; fit on labels that are text, numbers, bools or "
        "dates of microsecond precision (e.g. y.astype(str))")


def contributions(estimator, X, names, rules):
    """Constant leaves: the intercept is the leaf value, every term is 0."""
    if hasattr(estimator, "classes_"):
        raise TypeError("explain() needs a regressor; for an MBNDT classifier use "
                        "apply() and leaf_table()")
    leaves = estimator.apply(X)
    value = np.asarray(estimator.tree_.value)[leaves, 0]
    rule = {int(leaf): rules[leaf] for leaf in np.unique(leaves)}
    return leaves, rule, value, np.zeros((leaves.shape[0], len(names))), value.copy()


def _child_tests(tree, node, col):
    """SQL condition of every child of a node, in child order."""
    kids = _children(tree, node)
    if tree.is_categorical[node]:
        s, e = tree.cat_ptr[node], tree.cat_ptr[node + 1]
        pairs = list(zip(tree.cat_values[s:e], tree.cat_child[s:e], strict=True))
        listed = [v for v, _ in pairs if v != MISSING]
        missing_child = next((p for v, p in pairs if v == MISSING), None)
        default = int(tree.default_child[node])
        tests = []
        for k in range(len(kids)):
            members = [v for v, p in pairs if p == k and v != MISSING]
            parts = [f"{col} IN {_sql_list(members)}"] if members else []
            if missing_child == k or (missing_child is None and k == default):
                parts.append(f"{col} IS NULL")
            if k == default:
                # Unlisted levels; NOT IN is NULL for NULL, which the test above
                # covers.  With no level listed, every present value: NULL only
                # when the missing values go here too (the test above).
                if listed:
                    parts.append(f"{col} NOT IN {_sql_list(listed)}")
                else:
                    parts.append(f"{col} IS NOT NULL")
            if not parts:
                tests.append("1 = 0")
            else:
                tests.append(parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")")
        return tests
    cuts = tree.cuts[tree.cuts_ptr[node]:tree.cuts_ptr[node + 1]]
    impute = tree.impute_values.get(int(tree.feature[node]))
    value = col if impute is None else f"COALESCE({col}, {_lit(impute)})"
    tests = []
    for k in range(len(kids)):
        parts = []
        if k > 0:
            parts.append(f"{value} > {_sql_threshold(cuts[k - 1])}")
        if k < len(kids) - 1:
            parts.append(f"{value} <= {_sql_threshold(cuts[k])}")
        tests.append(" AND ".join(parts))
    return tests


def sql_cases(estimator, names, proba_of=None):
    """``[(tests, value)]`` per leaf, leaves in preorder.

    ``value`` is the leaf's prediction, or with ``proba_of=k`` its probability
    of class ``classes_[k]`` (as ``predict_proba``).
    """
    tree = estimator.tree_
    cols = [_sql_ident(n) for n in names]
    paths = {0: []}
    cases = []
    for node in _preorder(tree):
        if tree.feature[node] < 0:
            if proba_of is not None:
                cases.append((paths[node], _lit(tree.value[node][proba_of])))
                continue
            classes = getattr(estimator, "classes_", None)
            if classes is None:
                cases.append((paths[node], _lit(leaf_output(estimator, node))))
            else:
                label = classes[int(np.argmax(tree.value[node]))]
                cases.append((paths[node], _sql_label(label)))
            continue
        tests = _child_tests(tree, node, cols[int(tree.feature[node])])
        for kid, test in zip(_children(tree, node), tests, strict=True):
            paths[kid] = paths[node] + [test]
    return cases


def _router(estimator, names):
    tree = estimator.tree_
    lines = ["def _leaf(x):", '    """Leaf id reached by one row x (as apply)."""']

    def emit(node, indent):
        pad = "    " * indent
        if tree.feature[node] < 0:
            lines.append(f"{pad}return {int(node)}")
            return
        f = int(tree.feature[node])
        kids = _children(tree, node)
        if tree.is_categorical[node]:
            s, e = tree.cat_ptr[node], tree.cat_ptr[node + 1]
            table = dict(zip(tree.cat_values[s:e], tree.cat_child[s:e], strict=True))
            # None for a missing value: no text, not even MISSING's, can
            # take its branch (as in predict).
            lines.append(f"{pad}v = None if {_py_missing(f'x[{f}]')} "
                         f"else str(x[{f}])  # {names[f]}")
            default = int(tree.default_child[node])
            groups = [sorted(str(v) for v, p in table.items() if p == k and v != MISSING)
                      + ([None] if table.get(MISSING, -1) == k else [])
                      for k in range(len(kids))]
            branches = [(k, kid) for k, kid in enumerate(kids) if k != default and groups[k]]
            for i, (k, kid) in enumerate(branches):
                lines.append(f"{pad}{'if' if i == 0 else 'elif'} v in {_py_set(groups[k])}:")
                emit(kid, indent + 1)
            if branches:
                lines.append(f"{pad}else:")
                emit(kids[default], indent + 1)
            else:
                emit(kids[default], indent)
            return
        cuts = tree.cuts[tree.cuts_ptr[node]:tree.cuts_ptr[node + 1]]
        impute = tree.impute_values.get(f)
        fill = "float('nan')" if impute is None else _lit(impute)
        lines.append(f"{pad}v = {fill} if {_py_missing(f'x[{f}]')} else float(x[{f}])"
                     f"  # {names[f]}")
        for k, kid in enumerate(kids):
            if k == 0:
                lines.append(f"{pad}if v <= {_lit(cuts[0])}:")
            elif k < len(kids) - 1:
                lines.append(f"{pad}elif v <= {_lit(cuts[k])}:")
            else:
                lines.append(f"{pad}else:")
            emit(kid, indent + 1)

    emit(0, 1)
    return lines


def python_source(estimator, names, function_name, doc):
    """``_leaf(x)``, the leaf tables, ``function_name(x)`` (and ``_proba`` for classifiers)."""
    tree = estimator.tree_
    leaves = [int(n) for n in np.flatnonzero(np.asarray(tree.feature) < 0)]
    out, needs_datetime = {}, False
    classes = getattr(estimator, "classes_", None)
    for leaf in leaves:
        if classes is None:
            out[leaf] = _lit(leaf_output(estimator, leaf))
        else:
            out[leaf], needs = _label_source(classes[int(np.argmax(tree.value[leaf]))])
            needs_datetime = needs_datetime or needs
    lines = (["import datetime", "", ""] if needs_datetime else []) \
        + _router(estimator, names) + ["", ""]
    lines.append("_PREDICTION = {" + ", ".join(f"{k}: {v}" for k, v in out.items()) + "}")
    classifier = hasattr(estimator, "classes_")
    if classifier:
        probs = {leaf: "[" + ", ".join(_lit(p) for p in tree.value[leaf]) + "]"
                 for leaf in leaves}
        lines.append("_PROBA = {" + ", ".join(f"{k}: {v}" for k, v in probs.items()) + "}")
    lines += ["", "", f"def {function_name}(x):", doc, "    return _PREDICTION[_leaf(x)]"]
    if classifier:
        lines += ["", "", f"def {function_name}_proba(x):",
                  '    """Class probabilities for one row x, in the order of classes_."""',
                  "    return list(_PROBA[_leaf(x)])"]
    return lines
