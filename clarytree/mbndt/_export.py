"""The MBNDT multiway tree's family for the export functions of :mod:`clarytree`.

:func:`clarytree.export_text`, :func:`~clarytree.leaf_table`,
:func:`~clarytree.to_dict` / :func:`~clarytree.from_dict`,
:func:`~clarytree.export_graphviz` and the plots dispatch on the class of a
fitted ``tree_``; importing :mod:`clarytree.mbndt` registers
:class:`MultiwayFamily` for :class:`~clarytree.mbndt._tree.MultiwayTree`.
"""

import numpy as np

from .._export import TreeFamily, _exact, _json_value, _num, register_tree_family
from ._classes import MBNDTClassifier, MBNDTRegressor
from ._tree import MultiwayTree


def _children(tree, node):
    return [int(c) for c in tree.children[tree.children_ptr[node]:tree.children_ptr[node + 1]]]


def _branch_labels(tree, node, name, fmt=_exact):
    """Condition of every child of a multiway node, in child order.

    With ``name=None`` the labels omit the feature (``<= a``, ``(a, b]``,
    ``> b``, ``in {...}``), for drawings where the node shows it.
    """
    kids = _children(tree, node)
    if tree.is_categorical[node]:
        s, e = tree.cat_ptr[node], tree.cat_ptr[node + 1]
        values, positions = tree.cat_values[s:e], tree.cat_child[s:e]
        labels = []
        for k in range(len(kids)):
            members = [str(v) for v, p in zip(values, positions, strict=True) if p == k]
            if k == tree.default_child[node]:
                members.append("<other>")
            prefix = "" if name is None else f"{name} "
            labels.append(f"{prefix}in {{{', '.join(members)}}}")
        return labels
    cuts = tree.cuts[tree.cuts_ptr[node]:tree.cuts_ptr[node + 1]]
    labels = []
    for k in range(len(kids)):
        if k == 0:
            labels.append(f"{name} <= {fmt(cuts[0])}" if name is not None
                          else f"<= {fmt(cuts[0])}")
        elif k == len(kids) - 1:
            labels.append(f"{name} > {fmt(cuts[-1])}" if name is not None
                          else f"> {fmt(cuts[-1])}")
        elif name is not None:
            labels.append(f"{fmt(cuts[k - 1])} < {name} <= {fmt(cuts[k])}")
        else:
            labels.append(f"({fmt(cuts[k - 1])}, {fmt(cuts[k])}]")
    return labels


def _leaf_text(estimator, node, decimals):
    value = estimator.tree_.value[node]
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        k = int(np.argmax(value))
        probs = ", ".join(_num(p, decimals) for p in value)
        return f"class {classes[k]} (proba [{probs}])"
    return f"y = {_num(value[0], decimals)}"


def _preorder(tree):
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if tree.feature[node] >= 0:
            stack.extend(reversed(_children(tree, node)))
    return order


def _rules(tree, names):
    rules = {0: []}
    for node in _preorder(tree):
        if tree.feature[node] < 0:
            continue
        name = names[int(tree.feature[node])]
        labels = _branch_labels(tree, node, name)
        for child, label in zip(_children(tree, node), labels, strict=True):
            rules[child] = rules[node] + [label]
    return rules


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
                cuts = tree.cuts[tree.cuts_ptr[node]:tree.cuts_ptr[node + 1]]
                entry["cuts"] = [float(c) for c in cuts]
        nodes.append(entry)
    return {
        "nodes": nodes,
        "n_features": int(tree.n_features),
        "impute_values": {str(k): float(v) for k, v in tree.impute_values.items()},
    }


class MultiwayFamily(TreeFamily):
    """MBNDT: multiway interval / category-set tests, a value or class probabilities per leaf."""

    tests_in_nodes = False

    def view(self, estimator, names, decimals, sep=" ", max_terms=None, short_edges=False,
             threshold_format=None):
        fmt = threshold_format or _exact
        tree = estimator.tree_
        children, edges, texts = [], [], []
        for node in range(tree.node_count):
            if tree.feature[node] < 0:
                children.append([])
                edges.append([])
                texts.append(f"leaf {node}{sep}{_leaf_text(estimator, node, decimals)}")
            else:
                name = names[int(tree.feature[node])]
                children.append(_children(tree, node))
                edges.append(_branch_labels(tree, node, None if short_edges else name, fmt))
                texts.append(name)
        return children, edges, texts

    def leaf_rows(self, estimator, names):
        tree = estimator.tree_
        rules = _rules(tree, names)
        classes = getattr(estimator, "classes_", None)
        value_cols = ["value"] if classes is None else [f"proba[{c}]" for c in classes]
        records = []
        for leaf in _preorder(tree):
            if tree.feature[leaf] >= 0:
                continue
            row = {
                "leaf": int(leaf),
                "rule": " and ".join(rules[leaf]) if rules[leaf] else "(all rows)",
                "n_samples": int(tree.n_node_samples[leaf]),
            }
            row.update(zip(value_cols, (float(v) for v in tree.value[leaf]), strict=True))
            records.append(row)
        return records, ["leaf", "rule", "n_samples", *value_cols]

    def to_dict(self, estimator):
        data = {
            "tree": _tree_to_dict(estimator.tree_),
            "column_kinds": list(estimator._column_kinds),
        }
        if hasattr(estimator, "classes_"):
            data["classes"] = _json_value(np.asarray(estimator.classes_))
        return data

    def restore(self, estimator, data):
        spec = data["tree"]
        impute = {int(k): float(v) for k, v in spec["impute_values"].items()}
        tree = MultiwayTree(spec["nodes"], data["column_kinds"], impute, int(spec["n_features"]))
        estimator.tree_ = tree
        estimator._column_kinds = list(data["column_kinds"])
        estimator.n_leaves_ = tree.n_leaves
        if "classes" in data:
            estimator.classes_ = np.asarray(data["classes"])


register_tree_family(MultiwayTree, MultiwayFamily(), (MBNDTClassifier, MBNDTRegressor))
