"""Greedy and lookahead tree construction over a Splitter."""

import numpy as np

from libc.math cimport INFINITY

from libc.stdlib cimport malloc, realloc, free

from ._criterion cimport Criterion
from ._splitter cimport Splitter, SplitRecord, Candidate, improves
from ._builder cimport NodeRecord


cdef class TreeBuilder:
    """Builds the tree minimizing sum of leaf losses + leaf_cost * n_leaves.

    ``lookahead=0`` is the greedy CholeskyTree: a node takes the split with
    the smallest sum of children's leaf losses.  ``lookahead=k >= 1`` scores
    every candidate split of a node by the objective of the trees that
    ``lookahead=k-1`` builds on its two children (k = 1: greedy completions,
    the paper's CLARITree), keeps the best, and refines both children with
    the same lookahead.  Every split is kept only if its subtree objective is
    strictly below the node's leaf objective.

    Workspaces are allocated once per fit and indexed by node depth: at any
    time at most one node per depth is being worked on, so a completion run
    inside a candidate never clobbers its caller's buffers.
    """

    def __cinit__(self):
        self.cand = NULL
        self.cand_capacity = NULL
        self.saved = NULL
        self.saved_capacity = NULL
        self.nodes = NULL
        self.coefs = NULL

    def __init__(self, Splitter splitter, Criterion criterion,
                 Py_ssize_t max_depth, Py_ssize_t lookahead_depth,
                 double leaf_cost, Py_ssize_t min_samples_leaf,
                 object progress=None):
        cdef Py_ssize_t levels = max_depth + 2, i
        self.splitter = splitter
        self.criterion = criterion
        self.max_depth = max_depth
        self.lookahead_depth = lookahead_depth
        self.leaf_cost = leaf_cost
        self.min_samples_leaf = max(min_samples_leaf, 1)
        self.n_stats = criterion.n_stats
        self.levels = levels
        self.totals = np.zeros((levels, 2, self.n_stats))
        self.hists = np.zeros((levels, 2, splitter.hist_size * self.n_stats))
        self.keys = np.zeros((levels, 2, splitter.hist_size), dtype=np.uint64)
        self.cand = <Candidate**>malloc(levels * sizeof(Candidate*))
        self.cand_capacity = <Py_ssize_t*>malloc(levels * sizeof(Py_ssize_t))
        self.saved = <int**>malloc(levels * sizeof(int*))
        self.saved_capacity = <Py_ssize_t*>malloc(levels * sizeof(Py_ssize_t))
        if (self.cand == NULL or self.cand_capacity == NULL or self.saved == NULL
                or self.saved_capacity == NULL):
            raise MemoryError()
        for i in range(levels):
            self.cand[i] = NULL
            self.cand_capacity[i] = 0
            self.saved[i] = NULL
            self.saved_capacity[i] = 0
        self.node_capacity = 0
        self.node_count = 0
        self.progress = progress
        self.n_evaluations = 0

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.cand != NULL:
            for i in range(self.levels):
                free(self.cand[i])
                free(self.saved[i])
        free(self.cand)
        free(self.cand_capacity)
        free(self.saved)
        free(self.saved_capacity)
        free(self.nodes)
        free(self.coefs)

    def build(self):
        """Grow the tree on all rows.

        Returns
        -------
        objective : float
        nodes : dict of ndarray
            Node arrays in preorder (see ``clarytree._tree.Tree``), with
            ``bin`` the threshold index of each split and ``coef`` the leaf
            model of every node in the criterion's coordinates.
        """
        cdef Py_ssize_t n = self.splitter.n_samples
        cdef double objective
        self.node_count = 0
        with nogil:
            self.splitter.node_stats(0, n, &self.totals[0, 0, 0],
                                     &self.hists[0, 0, 0], &self.keys[0, 0, 0])
            objective = self.grow(0, n, 0, 0, self.max_depth,
                                  self.lookahead_depth, True)
        if self.node_count < 0:
            raise MemoryError("could not allocate tree nodes")
        return objective, self._arrays()

    def _arrays(self):
        cdef Py_ssize_t i, j, count = self.node_count, p = self.criterion.p
        out = {
            "children_left": np.empty(count, dtype=np.intp),
            "children_right": np.empty(count, dtype=np.intp),
            "feature": np.empty(count, dtype=np.intp),
            "bin": np.empty(count, dtype=np.intp),
            "n_node_samples": np.empty(count, dtype=np.intp),
            "depth": np.empty(count, dtype=np.intp),
            "node_objective": np.empty(count, dtype=np.float64),
            "coef": np.empty((count, p), dtype=np.float64),
        }
        for i in range(count):
            out["children_left"][i] = self.nodes[i].left_child
            out["children_right"][i] = self.nodes[i].right_child
            out["feature"][i] = self.nodes[i].feature
            out["bin"][i] = self.nodes[i].bin
            out["n_node_samples"][i] = self.nodes[i].n_samples
            out["depth"][i] = self.nodes[i].depth
            out["node_objective"][i] = self.nodes[i].loss
            for j in range(p):
                out["coef"][i, j] = self.coefs[i * p + j]
        return out

    cdef void emit_leaf_children(self, Py_ssize_t node, Py_ssize_t depth,
                                 Py_ssize_t m, const double* total,
                                 SplitRecord* record) noexcept nogil:
        cdef Py_ssize_t s, left, right
        cdef double* left_acc = &self.splitter.best_left[0]
        cdef double* right_acc = &self.splitter.acc_right[0]
        for s in range(self.n_stats):
            right_acc[s] = total[s] - left_acc[s]
        left = self.push_node(depth + 1, record.n_left,
                              self.criterion.loss(left_acc), left_acc)
        right = self.push_node(depth + 1, m - record.n_left,
                               self.criterion.loss(right_acc), right_acc)
        if left < 0 or right < 0:
            return
        self.nodes[node].feature = record.feature
        self.nodes[node].bin = record.bin
        self.nodes[node].left_child = left
        self.nodes[node].right_child = right

    cdef Py_ssize_t push_node(self, Py_ssize_t depth, Py_ssize_t n_samples,
                              double loss, const double* acc) noexcept nogil:
        cdef Py_ssize_t p = self.criterion.p, capacity, node
        cdef NodeRecord* nodes
        cdef double* coefs
        if self.node_count < 0:
            return -1
        if self.node_count == self.node_capacity:
            capacity = max(2 * self.node_capacity, 64)
            nodes = <NodeRecord*>realloc(self.nodes, capacity * sizeof(NodeRecord))
            if nodes == NULL:
                self.node_count = -1
                return -1
            self.nodes = nodes
            coefs = <double*>realloc(self.coefs, capacity * p * sizeof(double))
            if coefs == NULL:
                self.node_count = -1
                return -1
            self.coefs = coefs
            self.node_capacity = capacity
        node = self.node_count
        self.node_count += 1
        self.nodes[node].left_child = -1
        self.nodes[node].right_child = -1
        self.nodes[node].feature = -2
        self.nodes[node].bin = -1
        self.nodes[node].n_samples = n_samples
        self.nodes[node].depth = depth
        self.nodes[node].loss = loss
        self.criterion.coef(acc, &self.coefs[node * p])
        return node

    cdef void prepare_children(self, Py_ssize_t start, Py_ssize_t mid,
                               Py_ssize_t end, Py_ssize_t depth,
                               int side) noexcept nogil:
        """Statistics of both children in the slots of depth + 1.

        The smaller child is summed from its rows, the larger one is the
        parent minus the smaller (histogram subtraction).
        """
        cdef int small = 0 if mid - start <= end - mid else 1
        cdef Py_ssize_t s0 = start if small == 0 else mid
        cdef Py_ssize_t s1 = mid if small == 0 else end
        cdef Py_ssize_t d = depth + 1
        self.splitter.node_stats(s0, s1, &self.totals[d, small, 0],
                                 &self.hists[d, small, 0], &self.keys[d, small, 0])
        self.splitter.subtract_stats(
            &self.totals[depth, side, 0], &self.hists[depth, side, 0],
            &self.keys[depth, side, 0],
            &self.totals[d, small, 0], &self.hists[d, small, 0],
            &self.keys[d, small, 0],
            &self.totals[d, 1 - small, 0], &self.hists[d, 1 - small, 0],
            &self.keys[d, 1 - small, 0])

    cdef bint _reserve(self, Py_ssize_t depth, Py_ssize_t n_cand,
                       Py_ssize_t n_saved) noexcept nogil:
        cdef Candidate* c
        cdef int* s
        if n_cand > self.cand_capacity[depth]:
            c = <Candidate*>realloc(self.cand[depth], n_cand * sizeof(Candidate))
            if c == NULL:
                return False
            self.cand[depth] = c
            self.cand_capacity[depth] = n_cand
        if n_saved > self.saved_capacity[depth]:
            s = <int*>realloc(self.saved[depth], n_saved * sizeof(int))
            if s == NULL:
                return False
            self.saved[depth] = s
            self.saved_capacity[depth] = n_saved
        return True

    cdef double grow(self, Py_ssize_t start, Py_ssize_t end, Py_ssize_t depth,
                     int side, Py_ssize_t remaining, Py_ssize_t lookahead,
                     bint emit) noexcept nogil:
        """Objective of the subtree grown on rows [start, end).

        The node's statistics are in the slot ``(depth, side)``.  With ``emit`` the
        nodes are appended to the output in preorder (a pruned subtree is
        truncated away again).
        """
        cdef const double* total = &self.totals[depth, side, 0]
        cdef const double* hist = &self.hists[depth, side, 0]
        cdef const unsigned long long* keys = &self.keys[depth, side, 0]
        cdef bint restore = self.splitter.n_swept > 0
        cdef Py_ssize_t m = end - start, msl = self.min_samples_leaf
        cdef Py_ssize_t node = -1, mid, i, n_cand, feature = -1, bin = -1
        cdef double leaf_loss = self.criterion.loss(total)
        cdef double leaf_objective = leaf_loss + self.leaf_cost
        cdef double objective, score, best
        cdef SplitRecord record
        cdef Candidate* cand
        cdef bint report, carried
        cdef Py_ssize_t current, pos, first
        cdef int* sorted_rows

        if emit:
            node = self.push_node(depth, m, leaf_loss, total)
            if node < 0:
                return leaf_objective
        # The node's objective as a leaf includes its own penalty: a node
        # whose leaf objective is within 2 * leaf_cost cannot pay for a split.
        if remaining <= 0 or leaf_objective <= 2.0 * self.leaf_cost or m < 2 * msl:
            return leaf_objective

        if lookahead == 0 or remaining == 1:
            if not self.splitter.best_split(start, end, total, hist, &record):
                return leaf_objective
            feature = record.feature
            bin = record.bin
            if remaining == 1:
                # Both children are leaves: their objectives are the split
                # score, so no partition and no child statistics are needed.
                objective = record.score + 2.0 * self.leaf_cost
                if not objective < leaf_objective:
                    return leaf_objective
                if emit:
                    self.emit_leaf_children(node, depth, m, total, &record)
                return objective
        else:
            n_cand = self.splitter.max_candidates(m)
            # Saved orders (swept features) or the bin-sorted rows (histograms).
            if not self._reserve(depth, n_cand, self.splitter.n_orders * m):
                self.node_count = -1
                return leaf_objective
            cand = self.cand[depth]
            n_cand = self.splitter.candidates(start, end, hist, keys, cand)
            if n_cand == 0:
                return leaf_objective
            report = depth == 0 and self.progress is not None
            if restore:
                self.splitter.save(start, end, self.saved[depth])
            best = INFINITY
            # With histogram features only, the left child's statistics are
            # carried along each feature's threshold sweep (adding the rows
            # that cross) and the right child's are the parent's minus them.
            carried = not restore
            sorted_rows = self.saved[depth]
            current = -1
            pos = 0
            for i in range(n_cand):
                if carried:
                    if cand[i].feature != current:
                        current = cand[i].feature
                        self.splitter.sort_by_bin(start, end, current, sorted_rows)
                        self.splitter.clear_stats(&self.totals[depth + 1, 0, 0],
                                                  &self.hists[depth + 1, 0, 0],
                                                  &self.keys[depth + 1, 0, 0])
                        pos = 0
                    first = pos
                    while pos < m and self.splitter.bins[sorted_rows[pos], current] <= cand[i].bin:
                        pos += 1
                    self.splitter.add_stats(sorted_rows + first, pos - first,
                                            &self.totals[depth + 1, 0, 0],
                                            &self.hists[depth + 1, 0, 0],
                                            &self.keys[depth + 1, 0, 0])
                if not cand[i].duplicate:
                    mid = self.splitter.partition(start, end, cand[i].feature,
                                                  cand[i].bin)
                    if carried:
                        self.splitter.subtract_stats(
                            total, hist, keys,
                            &self.totals[depth + 1, 0, 0], &self.hists[depth + 1, 0, 0],
                            &self.keys[depth + 1, 0, 0],
                            &self.totals[depth + 1, 1, 0], &self.hists[depth + 1, 1, 0],
                            &self.keys[depth + 1, 1, 0])
                    else:
                        self.prepare_children(start, mid, end, depth, side)
                    score = self.grow(start, mid, depth + 1, 0, remaining - 1,
                                      lookahead - 1, False)
                    # Objectives are non-negative: a left completion that is
                    # already no better than the incumbent cannot win.
                    if improves(score, best):
                        score += self.grow(mid, end, depth + 1, 1, remaining - 1,
                                           lookahead - 1, False)
                    self.n_evaluations += 1
                    if restore:
                        self.splitter.restore(start, end, self.saved[depth])
                    if improves(score, best):
                        best = score
                        feature = cand[i].feature
                        bin = cand[i].bin
                if report:
                    with gil:
                        self.progress(i + 1, n_cand)
            if feature < 0:
                return leaf_objective

        mid = self.splitter.partition(start, end, feature, bin)
        self.prepare_children(start, mid, end, depth, side)
        objective = self.grow(start, mid, depth + 1, 0, remaining - 1,
                              lookahead, emit)
        if emit:
            i = self.node_count
        objective += self.grow(mid, end, depth + 1, 1, remaining - 1,
                               lookahead, emit)
        if objective < leaf_objective:
            if emit and self.node_count >= 0:
                self.nodes[node].feature = feature
                self.nodes[node].bin = bin
                self.nodes[node].left_child = node + 1
                self.nodes[node].right_child = i
            return objective
        if emit and self.node_count >= 0:
            self.node_count = node + 1      # prune: drop the subtree
        return leaf_objective
