"""The exported MBNDT tree: an explicit multiway tree in plain numpy arrays.

No torch here.  Nodes are numbered in depth-first preorder, so every child has
a larger id than its parent and one pass over the ids routes all samples.
An internal node tests one *raw* input column:

* numeric node: ``n_children - 1`` increasing cut points ``c``; a value ``x``
  goes to child ``k`` when ``c[k-1] < x <= c[k]`` (missing values are first
  replaced by the training median, exactly as the fitted imputer does);
* categorical node: a table ``category -> child``; any category not in the
  table (unseen or missing-but-unseen) goes to ``default_child``.
"""

import sys

import numpy as np
from scipy import sparse

from .._tree import TREE_UNDEFINED, _int_array

# Categorical nodes reached by this many rows look levels up in a hash index.
_INDEX_MIN_ROWS = 256


class MultiwayTree:
    """Deterministic multiway tree with interval / category-set tests.

    Attributes
    ----------
    feature : ndarray of int, shape (n_nodes,)
        Raw input column tested at each node, ``TREE_UNDEFINED`` (-2) for
        leaves, as in :class:`clarytree._tree.Tree`.
    is_categorical : ndarray of bool, shape (n_nodes,)
    children_ptr, children : ndarray of int
        CSR layout: the children of node ``i`` are
        ``children[children_ptr[i]:children_ptr[i + 1]]``, in threshold order.
    cuts_ptr, cuts : ndarray
        CSR layout of the cut points of numeric nodes (raw units).
    cut_lower, cut_upper : ndarray of float, parallel to ``cuts``
        Largest raw training value routed below each cut and smallest routed
        above (missing values as imputed); exports print a short decimal from
        this gap. NaN where unknown (trees described before it was kept).
    cat_ptr, cat_values, cat_child : ndarray
        CSR layout of the category tables of categorical nodes (child positions).
    default_child : ndarray of int, shape (n_nodes,)
        Child position taken by unlisted categories (categorical nodes), else
        ``TREE_UNDEFINED``.
    value : ndarray of shape (n_nodes, n_outputs)
        Prediction stored at leaves (class probabilities or regression value).
    leaf_logit : ndarray of shape (n_nodes, n_logits)
        Raw leaf outputs of the trained network (NaN for internal nodes).
    leaf_origin : ndarray of int, shape (n_nodes,)
        Index of the leaf in the nominal full B-ary tree, ``TREE_UNDEFINED``
        for internal nodes.
    depth : ndarray of int, shape (n_nodes,)
        Number of tests on the path from the root.
    n_node_samples : ndarray of int, shape (n_nodes,)
        Training rows reaching each node.
    impute_values : dict
        Median of every numeric raw column (used for missing values).
    column_kinds : list of str
        ``"num"`` or ``"cat"`` for every raw column.
    """

    def __init__(self, nodes, column_kinds, impute_values, n_features):
        n = len(nodes)
        if n < 1:
            raise ValueError("a tree needs at least one node")
        self.column_kinds = list(column_kinds)
        self.impute_values = dict(impute_values)
        self.n_features = n_features
        # Any negative feature marks a leaf (descriptions written before the
        # shared sentinel used -1); stored as TREE_UNDEFINED.
        feature = _int_array([nd["feature"] for nd in nodes], "feature", np.intp)
        self.feature = np.where(feature < 0, TREE_UNDEFINED, feature)
        self.is_categorical = np.array([nd.get("categorical", False) for nd in nodes], bool)
        self.depth = _int_array([nd["depth"] for nd in nodes], "depth", np.intp)
        self.n_node_samples = _int_array([nd["n_samples"] for nd in nodes], "n_samples",
                                         np.intp)
        undefined = TREE_UNDEFINED
        self.leaf_origin = _int_array([nd.get("origin", undefined) for nd in nodes],
                                      "origin", np.intp)
        self.default_child = _int_array([nd.get("default", undefined) for nd in nodes],
                                        "default", np.intp)
        leaves = [nd for nd in nodes if nd["feature"] < 0]
        if not leaves:
            raise ValueError("a tree needs at least one leaf")
        n_out = len(leaves[0]["value"])
        n_logit = len(leaves[0]["logit"])
        self.value = np.zeros((n, n_out))
        self.leaf_logit = np.full((n, n_logit), np.nan)
        for i, nd in enumerate(nodes):
            if nd["feature"] < 0:
                # Every leaf holds as many values (and logits) as the first:
                # no broadcasting of a short list.
                if len(nd["value"]) != n_out or len(nd["logit"]) != n_logit:
                    raise ValueError(f"leaf {i} has {len(nd['value'])} values and "
                                     f"{len(nd['logit'])} logits, the first leaf {n_out} "
                                     f"and {n_logit}")
                self.value[i] = nd["value"]
                self.leaf_logit[i] = nd["logit"]
        children = [nd.get("children", []) for nd in nodes]
        _int_array([c for kids in children for c in kids], "children", np.intp)
        self.children_ptr, self.children = _csr(children, np.intp)
        self.cuts_ptr, self.cuts = _csr([nd.get("cuts", []) for nd in nodes], np.float64)
        gaps = [nd.get("cut_gaps") or [[np.nan, np.nan]] * len(nd.get("cuts", []))
                for nd in nodes]
        _, self.cut_lower = _csr([[np.nan if g[0] is None else g[0] for g in gs]
                                  for gs in gaps], np.float64)
        _, self.cut_upper = _csr([[np.nan if g[1] is None else g[1] for g in gs]
                                  for gs in gaps], np.float64)
        for i, nd in enumerate(nodes):
            if len(nd.get("cat_values", [])) != len(nd.get("cat_child", [])):
                raise ValueError(f"node {i} needs one cat_child entry per cat_values level")
            if nd.get("cut_gaps") and len(nd["cut_gaps"]) != len(nd.get("cuts", [])):
                raise ValueError(f"node {i} needs one cut_gaps pair per cut point")
        # Levels as to_dict writes them, text: a number would match no level.
        self.cat_ptr, self.cat_values = _csr(
            [[v if v is None or isinstance(v, str) else str(v) for v in nd.get("cat_values", [])]
             for nd in nodes], object)
        _, self.cat_child = _csr([nd.get("cat_child", []) for nd in nodes], np.intp)
        self._validate()

    def _validate(self):
        """Reject a description that would route rows wrongly (or not at all)."""
        n = self.node_count
        if len(self.column_kinds) != self.n_features:
            raise ValueError(f"column_kinds must have {self.n_features} entries")
        if any(kind not in ("num", "cat") for kind in self.column_kinds):
            raise ValueError("column_kinds entries must be 'num' or 'cat'")
        if not all(np.isfinite(v) for v in self.impute_values.values()):
            raise ValueError("impute_values must be finite numbers")
        parents = np.zeros(n, dtype=np.intp)
        for node in range(n):
            kids = self.children[self.children_ptr[node]:self.children_ptr[node + 1]]
            f = self.feature[node]
            if f < 0:
                if kids.size:
                    raise ValueError(f"leaf {node} has children")
                if not np.all(np.isfinite(self.value[node])):
                    raise ValueError(f"leaf {node} has a non-finite value")
                continue
            if f >= self.n_features:
                raise ValueError("split features must index the input columns")
            if kids.size < 2 or np.any(kids <= node) or np.any(kids >= n):
                raise ValueError(f"node {node} needs at least two children, all later "
                                 "nodes of the tree")
            np.add.at(parents, kids, 1)     # a repeated child counts twice
            if np.any(self.depth[kids] != self.depth[node] + 1):
                raise ValueError(f"the children of node {node} must be one level deeper")
            if self.is_categorical[node] != (self.column_kinds[f] == "cat"):
                raise ValueError(f"node {node} tests column {f} as "
                                 f"{'categorical' if self.is_categorical[node] else 'numeric'}"
                                 f", but its kind is {self.column_kinds[f]!r}")
            if self.is_categorical[node]:
                table = self.cat_child[self.cat_ptr[node]:self.cat_ptr[node + 1]]
                default = self.default_child[node]
                if np.any((table < 0) | (table >= kids.size)) or not 0 <= default < kids.size:
                    raise ValueError(f"the category table of node {node} must name child "
                                     f"positions 0 to {kids.size - 1}")
                continue
            cuts = self.cuts[self.cuts_ptr[node]:self.cuts_ptr[node + 1]]
            if (cuts.size != kids.size - 1 or not np.all(np.isfinite(cuts))
                    or np.any(np.diff(cuts) <= 0)):
                raise ValueError(f"node {node} needs {kids.size - 1} finite, increasing "
                                 "cut points, one fewer than its children")
            if int(f) not in self.impute_values:
                raise ValueError(f"numeric column {f} has no imputation value")
        if self.depth[0] != 0 or parents[0] != 0 or np.any(parents[1:] != 1):
            raise ValueError("every node but the root (depth 0) must be the child of "
                             "exactly one node")

    # ------------------------------------------------------------ properties
    @property
    def node_count(self):
        return self.feature.shape[0]

    @property
    def n_leaves(self):
        return int(np.sum(self.feature < 0))

    @property
    def max_depth(self):
        return int(self.depth.max())

    # ------------------------------------------------------------- traversal
    def _child_positions(self, node, col):
        """Child position (not id) taken at ``node`` by the raw values ``col``."""
        if self.is_categorical[node]:
            s, e = self.cat_ptr[node], self.cat_ptr[node + 1]
            default = self.default_child[node]
            if len(col) >= _INDEX_MIN_ROWS and "pandas" in sys.modules:
                # One hashed lookup in C per row rather than a dict.get in Python.
                levels = sys.modules["pandas"].Index(
                    np.asarray(self.cat_values[s:e], dtype=object), dtype=object)
                if levels.is_unique:
                    at = levels.get_indexer(np.asarray(col, dtype=object))
                    child = np.append(np.asarray(self.cat_child[s:e], dtype=np.intp),
                                      default)
                    return child[at]        # -1 (not a level of the node): default
            table = dict(zip(self.cat_values[s:e], self.cat_child[s:e], strict=True))
            return np.fromiter((table.get(v, default) for v in col), dtype=np.intp,
                               count=len(col))
        x = np.asarray(col, dtype=np.float64)
        x = np.where(np.isnan(x), self.impute_values[self.feature[node]], x)
        cuts = self.cuts[self.cuts_ptr[node]:self.cuts_ptr[node + 1]]
        return np.searchsorted(cuts, x, side="left")

    def _walk(self, raw, record_path=False):
        n = raw.shape[0]
        node_of = np.zeros(n, dtype=np.intp)
        visits = [] if record_path else None
        if record_path:
            visits.append((np.arange(n), np.zeros(n, dtype=np.intp)))
        for node in np.flatnonzero(self.feature >= 0):  # parents before children
            rows = np.flatnonzero(node_of == node)
            if rows.size == 0:
                continue
            pos = self._child_positions(node, raw[rows, self.feature[node]])
            kids = self.children[self.children_ptr[node] + pos]
            node_of[rows] = kids
            if record_path:
                visits.append((rows, kids))
        return node_of, visits

    def apply(self, raw):
        """Leaf id reached by every row of a raw table."""
        return self._walk(raw)[0]

    def decision_path(self, raw):
        """Sparse (n_samples, n_nodes) indicator of the nodes each row visits."""
        n = raw.shape[0]
        _, visits = self._walk(raw, record_path=True)
        rows = np.concatenate([v[0] for v in visits])
        cols = np.concatenate([v[1] for v in visits])
        data = np.ones(rows.shape[0], dtype=np.intp)
        return sparse.csr_matrix((data, (rows, cols)), shape=(n, self.node_count))

    def path_length(self, raw):
        """Number of tests on the path of every row (depth of its leaf)."""
        return self.depth[self.apply(raw)]


def _csr(lists, dtype):
    ptr = np.zeros(len(lists) + 1, dtype=np.intp)
    ptr[1:] = np.cumsum([len(v) for v in lists])
    flat = np.empty(ptr[-1], dtype=dtype)
    k = 0
    for v in lists:
        for item in v:
            flat[k] = item
            k += 1
    return ptr, flat
