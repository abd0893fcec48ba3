"""The fitted tree: plain node arrays, prediction without the GIL."""

import numpy as np
from scipy import sparse


_ARRAYS = ("children_left", "children_right", "feature", "threshold",
           "n_node_samples", "node_objective", "intercept", "coef")
# Keyword-only arrays with a default (older call sites and descriptions lack
# them): the training-value gap around each threshold, NaN where unknown.
_OPTIONAL_ARRAYS = ("gap_lower", "gap_upper")


def _rebuild(arrays):
    """Unpickle a :class:`Tree` (any set of optional arrays)."""
    return Tree.from_arrays(arrays)


cdef class Tree:
    """Binary tree with a linear model in every node.

    Parameters
    ----------
    n_features : int
        Number of input columns.
    children_left, children_right : ndarray of shape (node_count,), intp
        Child node ids, ``-1`` for leaves.
    feature : ndarray of shape (node_count,), intp
        Split feature, ``-2`` for leaves.
    threshold : ndarray of shape (node_count,), float64
        Rows with ``x[feature] <= threshold`` go left.
    n_node_samples : ndarray of shape (node_count,), intp
        Training rows reaching each node.
    node_objective : ndarray of shape (node_count,), float64
        Leaf objective (loss plus ridge penalty) of each node's training rows.
    intercept : ndarray of shape (node_count,), float64
    coef : ndarray of shape (node_count, n_features), float64
        Each node's own leaf model in original units: the prediction of a row
        reaching leaf ``l`` is ``intercept[l] + x @ coef[l]``.
    gap_lower, gap_upper : ndarray of shape (node_count,), float64, optional
        At a split, the largest training value of the split feature that went
        left and the smallest that went right: any threshold in
        ``[gap_lower, gap_upper)`` routes the node's training rows like
        ``threshold``. Exports print a short decimal from this gap. NaN for
        leaves and where unknown (the default).
    """

    def __init__(self, Py_ssize_t n_features, children_left, children_right,
                 feature, threshold, n_node_samples, node_objective,
                 intercept, coef, *, gap_lower=None, gap_upper=None):
        self.n_features = n_features
        self.children_left = np.ascontiguousarray(children_left, dtype=np.intp)
        self.node_count = self.children_left.shape[0]
        self.children_right = np.ascontiguousarray(children_right, dtype=np.intp)
        self.feature = np.ascontiguousarray(feature, dtype=np.intp)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.n_node_samples = np.ascontiguousarray(n_node_samples, dtype=np.intp)
        self.node_objective = np.ascontiguousarray(node_objective, dtype=np.float64)
        self.intercept = np.ascontiguousarray(intercept, dtype=np.float64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64).reshape(
            self.node_count, n_features)
        self.gap_lower = self._optional(gap_lower)
        self.gap_upper = self._optional(gap_upper)
        self._validate()
        for name in _ARRAYS + _OPTIONAL_ARRAYS:
            getattr(self, name).setflags(write=False)
        self._left = self.children_left
        self._right = self.children_right
        self._feature = self.feature
        self._threshold = self.threshold
        self._intercept = self.intercept
        self._coef = self.coef

    def _optional(self, values):
        if values is None:
            return np.full(self.node_count, np.nan)
        return np.ascontiguousarray(
            [np.nan if v is None else v for v in values], dtype=np.float64)

    def _validate(self):
        count = self.node_count
        if count < 1:
            raise ValueError("a tree needs at least one node")
        for name in _ARRAYS + _OPTIONAL_ARRAYS:
            if getattr(self, name).shape[0] != count:
                raise ValueError(f"{name} must have {count} entries")
        left, right = self.children_left, self.children_right
        internal = left != TREE_LEAF
        if np.any((right != TREE_LEAF) != internal):
            raise ValueError("a node must have both children or none")
        ids = np.arange(count)
        if np.any(internal & ((left <= ids) | (right <= ids) | (left >= count)
                              | (right >= count))):
            raise ValueError("children must be later nodes of the tree")
        feat = self.feature[internal]
        if np.any((feat < 0) | (feat >= self.n_features)):
            raise ValueError("split features must index the input columns")
        if not np.all(np.isfinite(self.threshold[internal])):
            raise ValueError("split thresholds must be finite")

    def __reduce__(self):
        return (_rebuild, (self.to_arrays(),))

    def to_arrays(self):
        """Dict of the node arrays (copies) and ``n_features``."""
        out = {name: np.array(getattr(self, name)) for name in _ARRAYS + _OPTIONAL_ARRAYS}
        out["n_features"] = self.n_features
        return out

    @classmethod
    def from_arrays(cls, arrays):
        """Rebuild a tree from :meth:`to_arrays` output (lists are accepted).

        Optional arrays that ``arrays`` lacks get their defaults.
        """
        optional = {name: arrays[name] for name in _OPTIONAL_ARRAYS
                    if arrays.get(name) is not None}
        return cls(int(arrays["n_features"]),
                   *(np.asarray(arrays[name]) for name in _ARRAYS), **optional)

    @property
    def n_leaves(self):
        return int(np.count_nonzero(self.children_left == TREE_LEAF))

    @property
    def max_depth(self):
        depth = np.zeros(self.node_count, dtype=np.intp)
        for node in range(self.node_count):
            if self.children_left[node] != TREE_LEAF:
                depth[self.children_left[node]] = depth[node] + 1
                depth[self.children_right[node]] = depth[node] + 1
        return int(depth.max())

    def _check_input(self, X):
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_features}), got {X.shape}")
        return X

    cdef void _apply(self, const double[:, ::1] X, Py_ssize_t[::1] out) noexcept nogil:
        cdef Py_ssize_t i, node
        for i in range(X.shape[0]):
            node = 0
            while self._left[node] != TREE_LEAF:
                if X[i, self._feature[node]] <= self._threshold[node]:
                    node = self._left[node]
                else:
                    node = self._right[node]
            out[i] = node

    def apply(self, X):
        """Leaf id of each row of ``X`` (float64, shape (n, n_features))."""
        X = self._check_input(X)
        out = np.empty(X.shape[0], dtype=np.intp)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t[::1] outv = out
        with nogil:
            self._apply(Xv, outv)
        return out

    def predict(self, X):
        """``intercept[leaf] + x @ coef[leaf]`` for each row."""
        X = self._check_input(X)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t[::1] leaves = np.empty(X.shape[0], dtype=np.intp)
        out = np.empty(X.shape[0], dtype=np.float64)
        cdef double[::1] outv = out
        cdef Py_ssize_t i, j, leaf, nf = self.n_features
        cdef double acc
        with nogil:
            self._apply(Xv, leaves)
            for i in range(Xv.shape[0]):
                leaf = leaves[i]
                acc = self._intercept[leaf]
                for j in range(nf):
                    acc = acc + Xv[i, j] * self._coef[leaf, j]
                outv[i] = acc
        return out

    def decision_path(self, X):
        """CSR indicator matrix (n_samples, node_count) of the nodes visited."""
        X = self._check_input(X)
        cdef const double[:, ::1] Xv = X
        cdef Py_ssize_t n = X.shape[0], i, node, k = 0
        indptr = np.zeros(n + 1, dtype=np.intp)
        indices = np.empty(n * (self.max_depth + 1), dtype=np.intp)
        cdef Py_ssize_t[::1] ip = indptr, ind = indices
        with nogil:
            for i in range(n):
                node = 0
                while True:
                    ind[k] = node
                    k += 1
                    if self._left[node] == TREE_LEAF:
                        break
                    if Xv[i, self._feature[node]] <= self._threshold[node]:
                        node = self._left[node]
                    else:
                        node = self._right[node]
                ip[i + 1] = k
        data = np.ones(k, dtype=np.intp)
        return sparse.csr_matrix((data, indices[:k], indptr),
                                 shape=(n, self.node_count))
