"""Tree construction: the TreeBuilder template, greedy and lookahead strategies.

``TreeBuilder.grow`` is the template every strategy shares: stopping rules,
node output, partition and children statistics, recursion and post-pruning.
A strategy only decides how a node with at least two levels left picks its
split (``choose``):

- ``GreedyBuilder``: the splitter's best split by the children's leaf losses
  (CholeskyTree).
- ``LookaheadBuilder``: every candidate split is scored by the objective of
  the trees its inner builder grows on both children (a ``GreedyBuilder``
  for lookahead depth 1, the paper's CLARITree; a ``LookaheadBuilder`` of
  depth k - 1 for depth k), and the committed children are refined by the
  lookahead builder itself.

With one level left every strategy takes the best split: both children are
leaves, so the split score is their objective (no partition needed).
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memcpy, memset

from ._criterion cimport Criterion
from ._memo cimport (
    MEMO_WAVE, MemoKey, MemoScope, memo_table_init, memo_table_free, memo_table_clear,
    memo_scope_init, memo_scope_free, memo_key_hashed, memo_lookup, memo_store,
    memo_row_hashes,
    memo_open, memo_close, memo_merge,
)
from ._splitter cimport (
    Splitter, SplitRecord, Candidate, CarryState, enough_weight, improves, tie_floor,
    SET_WORDS, monotonic_now, poll_signals,
)
from ._tree cimport TREE_LEAF, TREE_UNDEFINED


cdef inline bint pays(double value, double leaf_objective, double floor) noexcept nogil:
    # Whether a split whose subtree's objective is ``value`` is kept at a node
    # with ``leaf_objective``: only when it improves on it beyond the tie
    # tolerance (``improves``, ``floor`` the node's tie_floor).  A gain within
    # rounding noise (a node that is already an exact fit, at a zero leaf
    # penalty) must not decide the tree: it depends on the summation route,
    # e.g. integer weights against repeated rows.
    return improves(value, leaf_objective, floor)


cdef inline bint cannot_pay(double cost, double leaf_objective, double floor) noexcept nogil:
    # A node whose leaf objective is within 2 * cost (beyond the tie
    # tolerance) cannot pay for a split: a split's subtree costs at least
    # its two leaves' penalties.
    return not pays(2.0 * cost, leaf_objective, floor)

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int clarytree_openmp_enabled(void) { return 1; }
    static int clarytree_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int clarytree_openmp_enabled(void) { return 0; }
    static int clarytree_omp_max_threads(void) { return 1; }
    #endif
    """
    int clarytree_openmp_enabled() noexcept nogil
    int clarytree_omp_max_threads() noexcept nogil


def openmp_enabled():
    """Whether the core was compiled with OpenMP (parallel ``n_jobs``)."""
    return bool(clarytree_openmp_enabled())


def omp_max_threads():
    """OpenMP's current thread budget (OMP_NUM_THREADS, threadpoolctl limits)."""
    return int(clarytree_omp_max_threads())


def workspace_bytes(Splitter splitter, Py_ssize_t max_depth, bint own_order=True):
    """Bytes of one thread's workspace (without its candidate lists).

    With ``own_order`` it includes the thread's copy of the row orders.
    """
    cdef Py_ssize_t n = splitter.n_samples, levels = max_depth + 2
    cdef Py_ssize_t n_stats = splitter.n_stats, h = splitter.hist_size
    cdef Py_ssize_t block = splitter.gram_block
    cdef Py_ssize_t sides = 4 if splitter.has_missing else 2
    size = (levels * sides * (h + 1) * n_stats * 8 + levels * sides * h * 8
            + n * (4 + 1) + 4 * (splitter.n_orders + 1) * n
            # the search sums' blocks of rows' packed statistics
            + 8 * (block + 1) * ((n_stats + 7) // 8 * 8) + 64
            + 4 * block * (splitter.n_features + 1)
            + 8 * block + 40 * (splitter.max_bins + 1))
    if block * ((n_stats + 7) // 8 * 8) >= splitter.wide_min:
        # wide blocks: every histogram feature's bin order at once
        size += 4 * block * splitter.n_features + 8 * h
    if own_order:
        size += 4 * splitter.n_orders * n
    if splitter.n_swept == 0:
        # carried children (see TreeBuilder._carried_children)
        size += 2 * CHILD_CACHE_WAYS * 8 * ((h + 1) * n_stats + h)
    return size


# Candidates per thread below which a node is scored serially: a parallel
# region and the copies of the node's rows into each thread's workspace
# must pay for themselves.
cdef Py_ssize_t MIN_CANDIDATES_PER_THREAD = 2
cdef Py_ssize_t MIN_PARALLEL_ROWS = 64

# Carried children (TreeBuilder._carried_children): the splits remembered
# per side of a candidate's child (each one node's statistics).
cdef Py_ssize_t CHILD_CACHE_WAYS = 2


cdef class BuildContext:
    """Shared state of one fit: parameters, workspaces, output nodes.

    Parameters
    ----------
    splitter : Splitter
    criterion : Criterion
    max_depth : int
    leaf_cost : float
        Penalty of one leaf in the criterion's units (lambda * TSS).
    min_samples_leaf : float
        Least training weight of a child (its row count when unweighted); > 0.
    progress : callable or None, default=None
        ``progress(done, total)`` after each candidate of the root; an
        exception it raises stops the build and propagates.
    time_limit : float or None, default=None
        Seconds after which lookahead nodes stop scoring candidates and
        choose greedily (see ``LookaheadBuilder``); None: no limit.
    n_threads : int, default=1
        Threads scoring a lookahead node's candidates; each has its own
        workspace (see ``workspace_bytes``).  Results do not depend on it.
    memo : bool, default=True
        Reuse search-subtree objectives by row set in lookahead searches of
        depth >= 2 with regression leaves (see ``_memo.pxd``).  The fitted
        tree does not depend on it; False is for tests and benchmarks.
    carry_children : bool, default=True
        Let a candidate's child with two levels left update its children's
        statistics from the previous candidate's instead of summing them
        afresh (see ``TreeBuilder._carried_children``; each thread keeps
        ``2 * CHILD_CACHE_WAYS`` nodes' statistics for it).  Search sums
        differ only in rounding; False is for tests and benchmarks.
    """

    def __cinit__(self):
        self.ws = NULL
        self.n_workspaces = 0
        self.nodes = NULL
        self.coefs = NULL

    def __init__(self, Splitter splitter, Criterion criterion, Py_ssize_t max_depth,
                 double leaf_cost, double min_samples_leaf, object progress=None,
                 object time_limit=None, Py_ssize_t n_threads=1, *, bint memo=True,
                 bint carry_children=True):
        cdef Py_ssize_t t
        self.memo_allowed = memo
        self.carry_children = carry_children and splitter.n_swept == 0
        if splitter.criterion is not criterion:
            raise ValueError("the splitter must search with the same criterion")
        if max_depth < 0:
            raise ValueError("max_depth must be >= 0")
        self.splitter = splitter
        self.criterion = criterion
        self.max_depth = max_depth
        self.leaf_cost = leaf_cost
        if not min_samples_leaf > 0:
            raise ValueError(f"min_samples_leaf must be > 0, got {min_samples_leaf}")
        self.min_samples_leaf = min_samples_leaf
        self.n_stats = criterion.n_stats
        self.levels = max_depth + 2
        self.hist_size = splitter.hist_size
        # Per depth: the node's statistics on each side, and with missing
        # bins two more slots for the carried sweeps of that depth's parent.
        self.n_sides = 4 if splitter.has_missing else 2
        if time_limit is not None:
            time_limit = float(time_limit)
            if not time_limit >= 0:
                raise ValueError(f"time_limit must be >= 0 or None, got {time_limit!r}")
        self.time_limit = time_limit
        self.anytime = time_limit is not None
        self.deadline = INFINITY
        self.progress = progress
        self.node_count = 0
        self.node_capacity = 0
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        if not clarytree_openmp_enabled():
            n_threads = 1
        self.ws = <Workspace*>calloc(n_threads, sizeof(Workspace))
        if self.ws == NULL:
            raise MemoryError("could not allocate the build workspaces")
        self.n_workspaces = n_threads
        self.n_threads = n_threads
        for t in range(n_threads):
            # The first thread works on the splitter's row orders, the
            # others on copies of the node being scored.
            self._init_workspace(&self.ws[t], t > 0)
            self.ws[t].is_main = t == 0
            # A slow node's search stops when the build is abandoned; the
            # main thread's also looks at signals (see Splitter.best_split).
            self.ws[t].sw.abort = &self.abort
            self.ws[t].sw.last_poll = &self.last_signal_check if t == 0 else NULL

    def __dealloc__(self):
        cdef Py_ssize_t t
        if self.ws != NULL:
            for t in range(self.n_workspaces):
                self._free_workspace(&self.ws[t])
        free(self.ws)
        free(self.nodes)
        free(self.coefs)
        memo_table_free(&self.memo)
        free(self.memo_scopes)
        free(self.row_hashes)

    def _enable_memo(self, Py_ssize_t lookahead_depth):
        """Switch the search memo on or off for the next build (allocated once).

        Memory: the shared table (2^19 entries of 48 bytes, 25 MB; it stops
        taking entries at half capacity) and per workspace a scope of 2^13
        entries plus 2^16 pending (3.5 MB).
        """
        cdef Py_ssize_t t
        # Depth-1 searches revisit few row sets (a few percent of the work),
        # and constant leaves' subtrees cost about as little as hashing
        # their rows: the memo pays for depth >= 2 with regression leaves.
        self.memo_on = (self.memo_allowed and lookahead_depth >= 2
                        and self.criterion.q >= 3)
        if not self.memo_on or self.memo.slots != NULL:
            return
        self.memo_scopes = <MemoScope**>calloc(self.n_workspaces, sizeof(MemoScope*))
        if self.memo_scopes == NULL:
            raise MemoryError("could not allocate the search memo")
        memo_table_init(&self.memo, 1 << 19)
        self.row_hashes = memo_row_hashes(self.splitter.n_samples)
        for t in range(self.n_workspaces):
            memo_scope_init(&self.ws[t].memo, 1 << 13, 1 << 16)
            self.memo_scopes[t] = &self.ws[t].memo

    cdef void memo_merge_all(self) noexcept nogil:
        """Merge every workspace's pending memo entries (a wave boundary)."""
        memo_merge(&self.memo, self.memo_scopes, self.n_workspaces)

    cdef int _init_workspace(self, Workspace* ws, bint own_order) except -1:
        cdef Py_ssize_t L = self.levels, n_stats = self.n_stats, h = self.hist_size
        cdef int side
        self.splitter.init_work(&ws.sw, own_order)
        ws.totals = <double*>calloc(L * self.n_sides * n_stats, sizeof(double))
        ws.hists = <double*>calloc(L * self.n_sides * h * n_stats, sizeof(double))
        ws.keys = <unsigned long long*>calloc(L * self.n_sides * h,
                                              sizeof(unsigned long long))
        ws.best_left = <double*>calloc(L * n_stats + n_stats, sizeof(double))
        ws.cand = <Candidate**>calloc(L, sizeof(Candidate*))
        ws.score = <double**>calloc(L, sizeof(double*))
        ws.cand_capacity = <Py_ssize_t*>calloc(L, sizeof(Py_ssize_t))
        ws.saved = <int**>calloc(L, sizeof(int*))
        ws.saved_capacity = <Py_ssize_t*>calloc(L, sizeof(Py_ssize_t))
        ws.n_evaluations = 0
        if (ws.totals == NULL or ws.hists == NULL or ws.keys == NULL
                or ws.best_left == NULL or ws.cand == NULL or ws.score == NULL
                or ws.cand_capacity == NULL or ws.saved == NULL
                or ws.saved_capacity == NULL):
            raise MemoryError("could not allocate the build workspaces")
        ws.right_acc = ws.best_left + L * n_stats
        ws.carried = <CarryState**>calloc(L, sizeof(CarryState*))
        ws.split_hints = <Py_ssize_t*>malloc(4 * L * sizeof(Py_ssize_t))
        if ws.carried == NULL or ws.split_hints == NULL:
            raise MemoryError("could not allocate the build workspaces")
        for side in range(4 * L):
            ws.split_hints[side] = -1
        if self.carry_children:
            # The carried children's statistics, CHILD_CACHE_WAYS per side.
            ws.child_cache_block = calloc(2 * CHILD_CACHE_WAYS * (n_stats + h * n_stats + h),
                                          sizeof(double))
            if ws.child_cache_block == NULL:
                raise MemoryError("could not allocate the build workspaces")
            for side in range(2 * CHILD_CACHE_WAYS):
                ws.child_cache[side].total = (<double*>ws.child_cache_block
                                              + side * (n_stats + h * n_stats + h))
                ws.child_cache[side].hist = ws.child_cache[side].total + n_stats
                ws.child_cache[side].keys = <unsigned long long*>(
                    ws.child_cache[side].hist + h * n_stats)
        return 0

    cdef void _free_workspace(self, Workspace* ws) noexcept nogil:
        cdef Py_ssize_t d
        memo_scope_free(&ws.memo)
        self.splitter.free_work(&ws.sw)
        for d in range(self.levels):
            if ws.cand != NULL:
                free(ws.cand[d])
            if ws.score != NULL:
                free(ws.score[d])
            if ws.saved != NULL:
                free(ws.saved[d])
        free(ws.totals)
        free(ws.hists)
        free(ws.keys)
        free(ws.best_left)
        free(ws.cand)
        free(ws.score)
        free(ws.cand_capacity)
        free(ws.saved)
        free(ws.saved_capacity)
        free(ws.carried)
        free(ws.split_hints)
        ws.split_hints = NULL
        free(ws.child_cache_block)
        ws.carried = NULL
        ws.child_cache_block = NULL

    cdef double* total(self, Workspace* ws, Py_ssize_t depth, int side) noexcept nogil:
        return ws.totals + (self.n_sides * depth + side) * self.n_stats

    cdef double* hist(self, Workspace* ws, Py_ssize_t depth, int side) noexcept nogil:
        return ws.hists + (self.n_sides * depth + side) * self.hist_size * self.n_stats

    cdef unsigned long long* keys(self, Workspace* ws, Py_ssize_t depth,
                                  int side) noexcept nogil:
        return ws.keys + (self.n_sides * depth + side) * self.hist_size

    cdef void start_carry(self, Workspace* ws, CarryState* carry, Py_ssize_t depth,
                          int side, Py_ssize_t m) noexcept nogil:
        """A fresh carried sweep over the candidates of the node ``(depth, side)``.

        Its bin-sorted rows follow the saved orders in ``ws.saved[depth]``
        (and a wide categorical feature's level order follows them); with
        missing bins its scratch is the children's extra slots.
        """
        carry.feature = -1
        carry.bin = -1
        carry.pos = 0
        carry.rows = ws.saved[depth] + self.splitter.n_orders * m
        carry.node_hist = self.hist(ws, depth, side)
        carry.level_perm = carry.rows + m
        carry.with_missing = False
        if self.n_sides == 4:
            carry.missing_total = self.total(ws, depth + 1, 2)
            carry.missing_hist = self.hist(ws, depth + 1, 2)
            carry.missing_keys = self.keys(ws, depth + 1, 2)
            carry.prefix_total = self.total(ws, depth + 1, 3)
            carry.prefix_hist = self.hist(ws, depth + 1, 3)
            carry.prefix_keys = self.keys(ws, depth + 1, 3)
        else:
            carry.missing_total = carry.prefix_total = NULL
            carry.missing_hist = carry.prefix_hist = NULL
            carry.missing_keys = carry.prefix_keys = NULL

    cdef Py_ssize_t saved_size(self, Py_ssize_t m) noexcept nogil:
        # ints of ws.saved[depth] for a node of m rows: its saved row orders,
        # the carried sweep's bin-sorted rows and, with wide categorical
        # features, one level order.
        return ((self.splitter.n_orders + 1) * m
                + (self.splitter.set_bins if self.splitter.has_wide else 0))

    cdef int copy_node(self, Workspace* dst, Workspace* src, Py_ssize_t start,
                       Py_ssize_t end, Py_ssize_t depth, int side) except -1 nogil:
        """Give another thread's workspace ``dst`` the node's rows and statistics.

        The segment ``[start, end)`` of the row orders (saved for restoring
        after each candidate) and the node's total, histogram and keys.
        """
        cdef Py_ssize_t m = end - start, n_stats = self.n_stats, h = self.hist_size
        self.reserve(dst, depth, 0, self.saved_size(m))
        self.splitter.copy_segment(&dst.sw, &src.sw, start, end)
        self.splitter.save(&dst.sw, start, end, dst.saved[depth])
        memcpy(self.total(dst, depth, side), self.total(src, depth, side),
               n_stats * sizeof(double))
        memcpy(self.hist(dst, depth, side), self.hist(src, depth, side),
               h * n_stats * sizeof(double))
        memcpy(self.keys(dst, depth, side), self.keys(src, depth, side),
               h * sizeof(unsigned long long))
        return 0

    cdef int reserve(self, Workspace* ws, Py_ssize_t depth, Py_ssize_t n_cand,
                     Py_ssize_t n_saved) except -1 nogil:
        cdef Candidate* c
        cdef double* s
        cdef int* r
        if n_cand > ws.cand_capacity[depth]:
            c = <Candidate*>realloc(ws.cand[depth], n_cand * sizeof(Candidate))
            if c != NULL:
                ws.cand[depth] = c
            s = <double*>realloc(ws.score[depth], n_cand * sizeof(double))
            if s != NULL:
                ws.score[depth] = s
            if c == NULL or s == NULL:
                self.abort = True
                with gil:
                    raise MemoryError("could not allocate candidate lists")
            ws.cand_capacity[depth] = n_cand
        if n_saved > ws.saved_capacity[depth]:
            r = <int*>realloc(ws.saved[depth], n_saved * sizeof(int))
            if r == NULL:
                self.abort = True
                with gil:
                    raise MemoryError("could not allocate row-order buffers")
            ws.saved[depth] = r
            ws.saved_capacity[depth] = n_saved
        return 0

    cdef Py_ssize_t push_node(self, Py_ssize_t depth, Py_ssize_t n_samples,
                              double loss, const double* acc,
                              Workspace* ws) except -1 nogil:
        cdef Py_ssize_t p = self.criterion.p, capacity, node
        cdef NodeRecord* nodes
        cdef double* coefs
        if self.node_count == self.node_capacity:
            capacity = max(2 * self.node_capacity, 64)
            nodes = <NodeRecord*>realloc(self.nodes, capacity * sizeof(NodeRecord))
            if nodes != NULL:
                self.nodes = nodes
            coefs = <double*>realloc(self.coefs, capacity * p * sizeof(double))
            if coefs != NULL:
                self.coefs = coefs
            if nodes == NULL or coefs == NULL:
                with gil:
                    raise MemoryError("could not allocate tree nodes")
            self.node_capacity = capacity
        node = self.node_count
        self.node_count += 1
        self.nodes[node].left_child = TREE_LEAF
        self.nodes[node].right_child = TREE_LEAF
        self.nodes[node].feature = TREE_UNDEFINED
        self.nodes[node].bin = TREE_UNDEFINED
        self.nodes[node].n_samples = n_samples
        self.nodes[node].depth = depth
        self.nodes[node].loss = loss
        memset(self.nodes[node].set_words, 0, SET_WORDS * sizeof(unsigned long long))
        self.criterion.coef(acc, &self.coefs[node * p], &ws.sw.crit)
        return node

    cdef int check(self) except -1 nogil:
        """Note the deadline; raise a pending KeyboardInterrupt every few ms.

        Called from the main thread only (signals are handled there).
        """
        cdef double now = monotonic_now()
        if now >= self.deadline:
            self.time_up = True
        if poll_signals(&self.last_signal_check, now) != 0:
            self.abort = True
            return -1
        return 0

    def _start(self):
        """Reset the per-build state: output, counters, clock."""
        cdef Py_ssize_t t
        cdef double now = monotonic_now()
        self.node_count = 0
        if self.memo_on:
            memo_table_clear(&self.memo)
        for t in range(self.n_workspaces):
            self.ws[t].memo.open = False
            self.ws[t].memo.n_pending = 0
            self.ws[t].memo.n_hits = 0
            self.ws[t].memo.n_stored = 0
            self.ws[t].n_evaluations = 0
            self.ws[t].sw.n_bulk_sweeps = 0
            self.ws[t].sw.n_incremental_sweeps = 0
            self.ws[t].n_carried_children = 0
            self.ws[t].sw.signalled = False
            for k in range(2 * CHILD_CACHE_WAYS):
                self.ws[t].child_cache[k].valid = False
            self.ws[t].sw.n_thresholds_scanned = 0
            self.ws[t].sw.n_thresholds_skipped = 0
            self.ws[t].sw.crit.n_refactor = 0
            self.ws[t].sw.crit.n_factorizations = 0
            self.ws[t].sw.crit.n_singular = 0
        self.last_signal_check = now
        self.deadline = INFINITY if self.time_limit is None else now + self.time_limit
        self.time_up = self.time_limit is not None and self.time_limit <= 0
        self.truncated = False
        self.abort = False
        self.in_parallel = False
        self.n_root_candidates = 0
        self.n_root_scored = 0
        self.n_searched = 0
        self.n_completed = 0

    def search_report(self):
        """How far the last build's lookahead search got (for time limits)."""
        return {"complete": not self.truncated, "time_up": self.time_up,
                "root_candidates": self.n_root_candidates,
                "root_scored": self.n_root_scored,
                "nodes_searched": self.n_searched,
                "nodes_completed_greedily": self.n_completed}

    def counters(self):
        """Engine counters of the last build, summed over the workspaces."""
        cdef Py_ssize_t t
        out = {"n_evaluations": 0, "n_bulk_sweeps": 0, "n_incremental_sweeps": 0,
               "n_refactor": 0, "memo_hits": 0, "memo_stored": 0,
               "n_thresholds_scanned": 0, "n_thresholds_skipped": 0,
               "n_carried_children": 0, "n_factorizations": 0, "n_singular": 0}
        for t in range(self.n_workspaces):
            out["memo_hits"] += self.ws[t].memo.n_hits
            out["memo_stored"] += self.ws[t].memo.n_stored
            out["n_evaluations"] += self.ws[t].n_evaluations
            out["n_bulk_sweeps"] += self.ws[t].sw.n_bulk_sweeps
            out["n_incremental_sweeps"] += self.ws[t].sw.n_incremental_sweeps
            out["n_refactor"] += self.ws[t].sw.crit.n_refactor
            out["n_factorizations"] += self.ws[t].sw.crit.n_factorizations
            out["n_singular"] += self.ws[t].sw.crit.n_singular
            out["n_thresholds_scanned"] += self.ws[t].sw.n_thresholds_scanned
            out["n_thresholds_skipped"] += self.ws[t].sw.n_thresholds_skipped
            out["n_carried_children"] += self.ws[t].n_carried_children
        out["n_evaluations_per_thread"] = [self.ws[t].n_evaluations
                                           for t in range(self.n_workspaces)]
        return out

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
            "set_words": np.empty((count, SET_WORDS), dtype=np.uint64),
        }
        for i in range(count):
            for j in range(SET_WORDS):
                out["set_words"][i, j] = self.nodes[i].set_words[j]
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


cdef class PathState:
    """The leaf-penalty path's state: several leaf costs searched at once.

    Parameters
    ----------
    leaf_costs : ndarray of float64
        The leaf costs (lambda * TSS, in the criterion's units), one tree
        each, in the order the results are returned.
    max_depth : int
        That of the build context the path runs in.
    """

    def __cinit__(self):
        self.scores = NULL
        self.score_capacity = NULL
        self.nodes = NULL
        self.coefs = NULL
        self.node_count = NULL
        self.node_capacity = NULL

    def __init__(self, const double[::1] leaf_costs, Py_ssize_t max_depth,
                 Py_ssize_t n_threads=1):
        cdef Py_ssize_t n = leaf_costs.shape[0], levels = max_depth + 2
        if n < 1:
            raise ValueError("the path needs at least one leaf cost")
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.n_costs = n
        self.n_threads = n_threads
        self.levels = levels
        self.costs = np.array(leaf_costs, dtype=np.float64)
        self.leaf_objective = np.zeros((n_threads, levels, n))
        self.values = np.zeros((n_threads, levels, 2, n))
        self.bound = np.zeros((n_threads, levels, n))
        self.winner = np.zeros((n_threads, levels, n), dtype=np.intp)
        self.node_id = np.zeros((levels, n), dtype=np.intp)
        self.right_id = np.zeros((levels, n), dtype=np.intp)
        self.groups = np.zeros((n_threads, levels, 3, n), dtype=np.intp)
        self.scores = <double**>calloc(n_threads * levels, sizeof(double*))
        self.score_capacity = <Py_ssize_t*>calloc(n_threads * levels, sizeof(Py_ssize_t))
        self.nodes = <NodeRecord**>calloc(n, sizeof(NodeRecord*))
        self.coefs = <double**>calloc(n, sizeof(double*))
        self.node_count = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
        self.node_capacity = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
        if (self.scores == NULL or self.score_capacity == NULL or self.nodes == NULL
                or self.coefs == NULL or self.node_count == NULL
                or self.node_capacity == NULL):
            raise MemoryError("could not allocate the path's buffers")

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.scores != NULL:
            for i in range(self.n_threads * self.levels):
                free(self.scores[i])
        if self.nodes != NULL and self.coefs != NULL:
            for i in range(self.n_costs):
                free(self.nodes[i])
                free(self.coefs[i])
        free(self.scores)
        free(self.score_capacity)
        free(self.nodes)
        free(self.coefs)
        free(self.node_count)
        free(self.node_capacity)

    cdef double* reserve_scores(self, Py_ssize_t t, Py_ssize_t depth,
                                Py_ssize_t n_cand) except NULL nogil:
        cdef double* s
        cdef Py_ssize_t slot = t * self.levels + depth
        if n_cand > self.score_capacity[slot]:
            s = <double*>realloc(self.scores[slot], n_cand * self.n_costs * sizeof(double))
            if s == NULL:
                with gil:
                    raise MemoryError("could not allocate the path's candidate scores")
            self.scores[slot] = s
            self.score_capacity[slot] = n_cand
        return self.scores[slot]

    cdef Py_ssize_t push_node(self, Py_ssize_t g, Criterion criterion, Py_ssize_t depth,
                              Py_ssize_t n_samples, double loss, const double* acc,
                              Workspace* ws) except -1 nogil:
        cdef Py_ssize_t p = criterion.p, capacity, node
        cdef NodeRecord* nodes
        cdef double* coefs
        if self.node_count[g] == self.node_capacity[g]:
            capacity = max(2 * self.node_capacity[g], 64)
            nodes = <NodeRecord*>realloc(self.nodes[g], capacity * sizeof(NodeRecord))
            if nodes != NULL:
                self.nodes[g] = nodes
            coefs = <double*>realloc(self.coefs[g], capacity * p * sizeof(double))
            if coefs != NULL:
                self.coefs[g] = coefs
            if nodes == NULL or coefs == NULL:
                with gil:
                    raise MemoryError("could not allocate tree nodes")
            self.node_capacity[g] = capacity
        node = self.node_count[g]
        self.node_count[g] += 1
        nodes = self.nodes[g]
        nodes[node].left_child = TREE_LEAF
        nodes[node].right_child = TREE_LEAF
        nodes[node].feature = TREE_UNDEFINED
        nodes[node].bin = TREE_UNDEFINED
        nodes[node].n_samples = n_samples
        nodes[node].depth = depth
        nodes[node].loss = loss
        memset(nodes[node].set_words, 0, SET_WORDS * sizeof(unsigned long long))
        criterion.coef(acc, &self.coefs[g][node * p], &ws.sw.crit)
        return node

    cdef void set_split(self, Py_ssize_t g, Py_ssize_t node, Py_ssize_t feature,
                        Py_ssize_t bin, Py_ssize_t left, Py_ssize_t right,
                        const unsigned long long* words) noexcept nogil:
        # ``words``: a wide categorical split's set (see NodeRecord), or NULL.
        cdef NodeRecord* rec = &self.nodes[g][node]
        rec.feature = feature
        rec.bin = bin
        if words != NULL:
            memcpy(rec.set_words, words, SET_WORDS * sizeof(unsigned long long))
        rec.left_child = left
        rec.right_child = right

    def _arrays(self, Py_ssize_t g, Py_ssize_t p):
        cdef Py_ssize_t i, j, count = self.node_count[g]
        cdef NodeRecord* nodes = self.nodes[g]
        cdef double* coefs = self.coefs[g]
        out = {
            "children_left": np.empty(count, dtype=np.intp),
            "children_right": np.empty(count, dtype=np.intp),
            "feature": np.empty(count, dtype=np.intp),
            "bin": np.empty(count, dtype=np.intp),
            "n_node_samples": np.empty(count, dtype=np.intp),
            "depth": np.empty(count, dtype=np.intp),
            "node_objective": np.empty(count, dtype=np.float64),
            "coef": np.empty((count, p), dtype=np.float64),
            "set_words": np.empty((count, SET_WORDS), dtype=np.uint64),
        }
        for i in range(count):
            for j in range(SET_WORDS):
                out["set_words"][i, j] = nodes[i].set_words[j]
            out["children_left"][i] = nodes[i].left_child
            out["children_right"][i] = nodes[i].right_child
            out["feature"][i] = nodes[i].feature
            out["bin"][i] = nodes[i].bin
            out["n_node_samples"][i] = nodes[i].n_samples
            out["depth"][i] = nodes[i].depth
            out["node_objective"][i] = nodes[i].loss
            for j in range(p):
                out["coef"][i, j] = coefs[i * p + j]
        return out

cdef class TreeBuilder:
    """Template: grows the tree minimizing sum of leaf losses + leaf_cost * n_leaves.

    A node is a leaf at ``remaining == 0`` levels, when its leaf objective
    (loss plus its own leaf cost) is at most ``2 * leaf_cost``, or when it has
    fewer than ``2 * min_samples_leaf`` rows.  Otherwise the strategy's
    ``choose`` picks a split, both children are grown by this builder, and
    the split is kept only if the subtree objective is strictly below the
    node's leaf objective.

    Parameters
    ----------
    context : BuildContext
    """

    def __init__(self, BuildContext context):
        self.ctx = context
        self.splitter = context.splitter
        self.criterion = context.criterion
        self.memo_level = 0

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
        cdef BuildContext ctx = self.ctx
        cdef Workspace* ws = &ctx.ws[0]
        cdef Py_ssize_t n = ctx.splitter.n_samples
        cdef double objective = INFINITY
        ctx._enable_memo(self.memo_level)
        ctx._start()
        with nogil:
            ctx.splitter.node_stats(&ws.sw, 0, n, ctx.total(ws, 0, 0),
                                    ctx.hist(ws, 0, 0), ctx.keys(ws, 0, 0), True)
            self.grow(ws, 0, n, 0, 0, ctx.max_depth, True, &objective)
        return objective, ctx._arrays()

    cdef int grow(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                  Py_ssize_t depth, int side, Py_ssize_t remaining, bint emit,
                  double* objective) except -1 nogil:
        """``_grow`` behind the memo of search subtrees.

        A search subtree's objective is a function of its row set, the
        levels left and this builder, so one scored before (by this
        candidate, or by a candidate of an earlier wave) is reused.  Values
        reached after the time limit may be cut short and are not stored.
        """
        cdef MemoKey key
        if (emit or not ws.memo.open or remaining < 1
                or end - start < 2 * self.ctx.min_samples_leaf):
            return self._grow(ws, start, end, depth, side, remaining, emit, objective)
        memo_key_hashed(&key, self.ctx.row_hashes, ws.sw.order + start, end - start,
                        remaining, self.memo_level)
        if memo_lookup(&self.ctx.memo, &ws.memo, &key, objective):
            return 0
        self._grow(ws, start, end, depth, side, remaining, emit, objective)
        if not self.ctx.time_up:
            memo_store(&ws.memo, &key, objective[0])
        return 0

    cdef int _grow_stored(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                          Py_ssize_t depth, int side, Py_ssize_t remaining,
                          const MemoKey* key, double* objective) except -1 nogil:
        # ``grow`` of a search subtree whose lookup under ``key`` missed.
        self._grow(ws, start, end, depth, side, remaining, False, objective)
        if not self.ctx.time_up:
            memo_store(&ws.memo, key, objective[0])
        return 0

    cdef int _grow(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                   Py_ssize_t depth, int side, Py_ssize_t remaining, bint emit,
                   double* objective) except -1 nogil:
        """Objective of the subtree grown on rows [start, end).

        The node's statistics are in ws's slot ``(depth, side)``.  With
        ``emit`` the nodes are appended to the output in preorder (a pruned
        subtree is truncated away again).
        """
        cdef const double* total = self.ctx.total(ws, depth, side)
        cdef Py_ssize_t m = end - start, node = -1, mid, right_node = -1
        cdef double leaf_loss = self.criterion.loss(total, &ws.sw.crit)
        cdef double leaf_objective = leaf_loss + self.ctx.leaf_cost
        cdef double left_objective, right_objective, value
        cdef double floor = tie_floor(total, self.ctx.n_stats)
        cdef SplitRecord split
        cdef MemoKey left_key, right_key
        cdef bint keyed, left_hit = False, right_hit = False
        objective[0] = leaf_objective
        if ws.is_main:
            self.ctx.check()
        elif self.ctx.abort:
            return 0        # the main thread is raising: stop quickly
        if emit:
            node = self.ctx.push_node(depth, m, leaf_loss, total, ws)
        # The node's objective as a leaf includes its own penalty: a node
        # whose leaf objective is within 2 * leaf_cost cannot pay for a split.
        if (remaining <= 0 or cannot_pay(self.ctx.leaf_cost, leaf_objective, floor)
                or not enough_weight(total[0], 2.0 * self.ctx.min_samples_leaf)):
            return 0
        if remaining == 1:
            return self._last_level(ws, start, end, depth, side, node, emit,
                                    leaf_objective, objective)
        if self.choose(ws, start, end, depth, side, remaining, &split) == 0:
            return 0
        mid = self.splitter.partition(&ws.sw, start, end, split.feature, split.bin,
                                      self.ctx.hist(ws, depth, side))
        # The committed tree's statistics are summed row by row (the
        # reference rounding); the search's may be grouped, so scores can
        # differ in rounding but the output does not.
        # In a memo scope both children are looked up first: when both were
        # grown before, their statistics (a histogram pass) are not needed.
        keyed = (not emit and ws.memo.open and remaining >= 2
                 and mid - start >= 2 * self.ctx.min_samples_leaf
                 and end - mid >= 2 * self.ctx.min_samples_leaf)
        if keyed:
            memo_key_hashed(&left_key, self.ctx.row_hashes, ws.sw.order + start,
                            mid - start, remaining - 1, self.memo_level)
            memo_key_hashed(&right_key, self.ctx.row_hashes, ws.sw.order + mid,
                            end - mid, remaining - 1, self.memo_level)
            left_hit = memo_lookup(&self.ctx.memo, &ws.memo, &left_key, &left_objective)
            right_hit = memo_lookup(&self.ctx.memo, &ws.memo, &right_key, &right_objective)
        if not (left_hit and right_hit):
            self._split_children(ws, start, mid, end, depth, side, remaining, split.feature,
                                 split.bin, emit, True)
            if not keyed:
                self.grow(ws, start, mid, depth + 1, 0, remaining - 1, emit,
                          &left_objective)
                if emit:
                    right_node = self.ctx.node_count
                self.grow(ws, mid, end, depth + 1, 1, remaining - 1, emit,
                          &right_objective)
            else:
                if not left_hit:
                    self._grow_stored(ws, start, mid, depth + 1, 0, remaining - 1,
                                      &left_key, &left_objective)
                if not right_hit:
                    self._grow_stored(ws, mid, end, depth + 1, 1, remaining - 1,
                                      &right_key, &right_objective)
        value = left_objective + right_objective
        if pays(value, leaf_objective, floor):
            if emit:
                self.ctx.nodes[node].feature = split.feature
                self.ctx.nodes[node].bin = split.bin
                if self.splitter.wide[split.feature]:
                    self.splitter.set_words(&ws.sw, split.feature, split.bin,
                                            self.ctx.hist(ws, depth, side),
                                            self.ctx.nodes[node].set_words)
                self.ctx.nodes[node].left_child = node + 1
                self.ctx.nodes[node].right_child = right_node
            objective[0] = value
        elif emit:
            self.ctx.node_count = node + 1       # prune: drop the subtree
        return 0

    cdef int _last_level(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t depth, int side, Py_ssize_t node, bint emit,
                         double leaf_objective, double* objective) except -1 nogil:
        # Both children are leaves: their objectives are the best split's
        # score, so no partition and no child statistics are needed.
        cdef Py_ssize_t s, left, right, n_stats = self.ctx.n_stats
        cdef const double* total = self.ctx.total(ws, depth, side)
        cdef double* left_acc = ws.best_left + depth * n_stats
        cdef double* right_acc = ws.right_acc
        cdef double value
        cdef SplitRecord split
        if not self._last_split(ws, start, end, depth, side, emit, &split, left_acc):
            return 0
        value = split.score + 2.0 * self.ctx.leaf_cost
        if not pays(value, leaf_objective, tie_floor(total, n_stats)):
            return 0
        if emit:
            for s in range(n_stats):
                right_acc[s] = total[s] - left_acc[s]
            left = self.ctx.push_node(depth + 1, split.n_left,
                                      self.criterion.loss(left_acc, &ws.sw.crit),
                                      left_acc, ws)
            right = self.ctx.push_node(depth + 1, end - start - split.n_left,
                                       self.criterion.loss(right_acc, &ws.sw.crit),
                                       right_acc, ws)
            self.ctx.nodes[node].feature = split.feature
            self.ctx.nodes[node].bin = split.bin
            if self.splitter.wide[split.feature]:
                self.splitter.set_words(&ws.sw, split.feature, split.bin,
                                        self.ctx.hist(ws, depth, side),
                                        self.ctx.nodes[node].set_words)
            self.ctx.nodes[node].left_child = left
            self.ctx.nodes[node].right_child = right
        objective[0] = value
        return 0

    cdef int choose(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    SplitRecord* split) except -1 nogil:
        with gil:
            raise NotImplementedError("TreeBuilder is abstract: use a strategy")

    cdef void _split_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                              Py_ssize_t end, Py_ssize_t depth, int side,
                              Py_ssize_t remaining, Py_ssize_t feature, Py_ssize_t bin,
                              bint emit, bint may_carry) noexcept nogil:
        # The children's statistics of a node split at (feature, bin): a
        # search node with two levels left under a carried candidate takes
        # them along its sweep (``may_carry``), any other sums them.
        if may_carry and not emit and remaining == 2 and ws.carried[depth] != NULL:
            self._carried_children(ws, start, mid, end, depth, side, feature, bin,
                                   ws.carried[depth])
        else:
            self.prepare_children(ws, start, mid, end, depth, self.ctx.total(ws, depth, side),
                                  self.ctx.hist(ws, depth, side),
                                  self.ctx.keys(ws, depth, side), emit)

    cdef void _carried_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                                Py_ssize_t end, Py_ssize_t depth, int side,
                                Py_ssize_t feature, Py_ssize_t bin,
                                const CarryState* carry) noexcept nogil:
        """``prepare_children`` of a search node that is a candidate's child.

        The node is the left (side 0) or right child of a candidate whose
        left child is carried along its feature's thresholds: it holds the
        first ``carry.pos`` of the carried rows, or all but them.  When it
        takes the same split as at the previous candidate of that sweep,
        its left child differs from that one's by the rows that crossed the
        candidate's threshold since, and only those are added (or removed);
        the right child is the node minus the left one.  The sums differ
        from fresh ones only in rounding.
        """
        cdef ChildCache* ways = &ws.child_cache[side * CHILD_CACHE_WAYS]
        cdef ChildCache* cache = NULL
        cdef Py_ssize_t d = depth + 1, n_stats = self.ctx.n_stats, h = self.ctx.hist_size
        cdef Py_ssize_t moved = -1, k, n_missing = 0
        # A wide categorical split's set depends on the node's level order,
        # which changes with its rows: not carried.
        cdef bint plain = not self.splitter.wide[feature]
        cdef double sign = 1.0 if side == 0 else -1.0
        ws.child_cache_clock += 1
        # The way holding this split, else the least recently used one.
        for k in range(CHILD_CACHE_WAYS):
            if ways[k].valid and ways[k].feature == feature and ways[k].bin == bin:
                cache = &ways[k]
                break
        if cache == NULL:
            cache = &ways[0]
            for k in range(1, CHILD_CACHE_WAYS):
                if not ways[k].valid or (cache.valid and ways[k].used < cache.used):
                    cache = &ways[k]
        elif cache.gen == carry.gen:
            moved = carry.pos - cache.pos
            if cache.with_missing != carry.with_missing:
                # The carried candidates differ in their missing rows'
                # side: those rows (last of the carried ones) moved too.
                n_missing = carry.n_rows - carry.missing_start
        cache.used = ws.child_cache_clock
        if plain and 0 <= moved and moved + n_missing < min(mid - start, end - mid):
            self.splitter.add_rows_going_left(
                &ws.sw, carry.rows + cache.pos, moved, feature, bin,
                sign, cache.total, cache.hist, cache.keys)
            if n_missing > 0:
                self.splitter.add_rows_going_left(
                    &ws.sw, carry.rows + carry.missing_start, n_missing, feature, bin,
                    sign if carry.with_missing else -sign, cache.total, cache.hist,
                    cache.keys)
                cache.with_missing = carry.with_missing
            cache.pos = carry.pos
            memcpy(self.ctx.total(ws, d, 0), cache.total, n_stats * sizeof(double))
            memcpy(self.ctx.hist(ws, d, 0), cache.hist, h * n_stats * sizeof(double))
            memcpy(self.ctx.keys(ws, d, 0), cache.keys, h * sizeof(unsigned long long))
            self.splitter.subtract_stats(
                self.ctx.total(ws, depth, side), self.ctx.hist(ws, depth, side),
                self.ctx.keys(ws, depth, side),
                cache.total, cache.hist, cache.keys,
                self.ctx.total(ws, d, 1), self.ctx.hist(ws, d, 1), self.ctx.keys(ws, d, 1))
            ws.n_carried_children += 1
            return
        self.prepare_children(ws, start, mid, end, depth, self.ctx.total(ws, depth, side),
                              self.ctx.hist(ws, depth, side), self.ctx.keys(ws, depth, side),
                              False)
        if plain:
            cache.valid = True
            memcpy(cache.total, self.ctx.total(ws, d, 0), n_stats * sizeof(double))
            memcpy(cache.hist, self.ctx.hist(ws, d, 0), h * n_stats * sizeof(double))
            memcpy(cache.keys, self.ctx.keys(ws, d, 0), h * sizeof(unsigned long long))
            cache.gen = carry.gen
            cache.pos = carry.pos
            cache.with_missing = carry.with_missing
            cache.feature = feature
            cache.bin = bin

    cdef void prepare_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                               Py_ssize_t end, Py_ssize_t depth,
                               const double* parent_total, const double* parent_hist,
                               const unsigned long long* parent_keys,
                               bint exact) noexcept nogil:
        """Statistics of both children in ws's slots of depth + 1.

        The smaller child is summed from its rows, the larger one is the
        parent minus the smaller (histogram subtraction).
        """
        cdef int small = 0 if mid - start <= end - mid else 1
        cdef Py_ssize_t s0 = start if small == 0 else mid
        cdef Py_ssize_t s1 = mid if small == 0 else end
        cdef Py_ssize_t d = depth + 1
        self.splitter.node_stats(&ws.sw, s0, s1, self.ctx.total(ws, d, small),
                                 self.ctx.hist(ws, d, small), self.ctx.keys(ws, d, small),
                                 exact)
        self.splitter.subtract_stats(
            parent_total, parent_hist, parent_keys,
            self.ctx.total(ws, d, small), self.ctx.hist(ws, d, small), self.ctx.keys(ws, d, small),
            self.ctx.total(ws, d, 1 - small), self.ctx.hist(ws, d, 1 - small),
            self.ctx.keys(ws, d, 1 - small))

    # ------------------------------------------------------------------
    # The leaf-penalty path
    #
    # The leaf cost never changes which splits a node admits, its greedy
    # split, its candidate list or how a completion partitions rows: it only
    # decides the stop test, the candidates' scores, the winner and the
    # keep-or-prune test.  So the path runs this template once for a group
    # of costs, each cost keeping its own decisions with the very
    # arithmetic of a single-cost build, and costs that pick the same split
    # recurse together.

    def build_path(self, PathState path):
        """Grow the tree of every leaf cost of ``path`` in one search.

        Returns
        -------
        results : list of (objective, nodes)
            Per leaf cost, in ``path``'s order, what :meth:`build` returns
            for a context with that leaf cost.
        """
        cdef BuildContext ctx = self.ctx
        cdef Workspace* ws = &ctx.ws[0]
        cdef Py_ssize_t n = ctx.splitter.n_samples, g
        cdef Py_ssize_t* group = &path.groups[0, 0, 0, 0]
        cdef double[::1] out = np.full(path.n_costs, INFINITY)
        if path.levels != ctx.levels:
            raise ValueError("the path state was made for another max_depth")
        if path.n_threads < ctx.n_threads:
            raise ValueError("the path state has fewer threads than the build context")
        for g in range(path.n_costs):
            path.node_count[g] = 0
            group[g] = g
        ctx._enable_memo(0)         # the path scores per cost group: no memo
        ctx._start()
        with nogil:
            ctx.splitter.node_stats(&ws.sw, 0, n, ctx.total(ws, 0, 0),
                                    ctx.hist(ws, 0, 0), ctx.keys(ws, 0, 0), True)
            self.grow_path(ws, path, 0, n, 0, 0, ctx.max_depth, True, group,
                           path.n_costs, &out[0])
        return [(out[g], path._arrays(g, self.criterion.p)) for g in range(path.n_costs)]

    cdef int grow_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                       Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                       bint emit, const Py_ssize_t* group, Py_ssize_t n_group,
                       double* out) except -1 nogil:
        """:meth:`grow` for each cost ``g`` of ``group``: its objective in ``out[g]``.

        Writes only ``group``'s entries of ``out`` and the path's buffers of
        this depth and below.
        """
        cdef const double* total = self.ctx.total(ws, depth, side)
        cdef Py_ssize_t m = end - start, k, j, g, w, mid, n_active = 0, n_win, n_won
        cdef double leaf_loss = self.criterion.loss(total, &ws.sw.crit)
        cdef double cost, value
        cdef double floor = tie_floor(total, self.ctx.n_stats)
        cdef Py_ssize_t t = ws - self.ctx.ws       # the thread's path buffers
        cdef double* leaf_objective = &path.leaf_objective[t, depth, 0]
        cdef Py_ssize_t* winner = &path.winner[t, depth, 0]
        cdef Py_ssize_t* node_id = &path.node_id[depth, 0]
        cdef Py_ssize_t* right_id = &path.right_id[depth, 0]
        cdef Py_ssize_t* active = &path.groups[t, depth + 1, 0, 0]
        cdef Py_ssize_t* won = &path.groups[t, depth + 1, 1, 0]
        cdef Py_ssize_t* same = &path.groups[t, depth + 1, 2, 0]
        cdef double* left_objective = &path.values[t, depth + 1, 0, 0]
        cdef double* right_objective = &path.values[t, depth + 1, 1, 0]
        cdef bint splittable = remaining > 0 and enough_weight(
            total[0], 2.0 * self.ctx.min_samples_leaf)
        cdef bint one_winner = True     # every cost that won took the one split
        cdef Candidate* split
        cdef unsigned long long words[SET_WORDS]
        cdef const unsigned long long* split_words
        if ws.is_main:
            self.ctx.check()
        elif self.ctx.abort:
            return 0        # the main thread is raising: stop quickly
        for k in range(n_group):
            g = group[k]
            cost = path.costs[g]
            leaf_objective[g] = leaf_loss + cost
            out[g] = leaf_objective[g]
            if emit:
                node_id[g] = path.push_node(g, self.criterion, depth, m, leaf_loss, total, ws)
            # A node whose leaf objective is within 2 * cost cannot pay for a split.
            if splittable and not cannot_pay(cost, leaf_objective[g], floor):
                active[n_active] = g
                n_active += 1
        if n_active == 0:
            return 0
        if remaining == 1:
            return self._last_level_path(ws, path, start, end, depth, side, emit, active,
                                         n_active, out)
        if self.choose_path(ws, path, start, end, depth, side, remaining, active,
                            n_active) == 0:
            return 0
        n_win = 0
        for k in range(n_active):
            if winner[active[k]] >= 0:
                won[n_win] = active[k]
                if n_win > 0 and winner[active[k]] != winner[won[0]]:
                    one_winner = False
                n_win += 1
        for k in range(n_win):
            w = winner[won[k]]
            if w < 0:
                continue            # recursed with an earlier cost of its group
            n_won = 0
            for j in range(k, n_win):
                if winner[won[j]] == w:
                    same[n_won] = won[j]
                    n_won += 1
                    winner[won[j]] = -1
            if k > 0:
                # The row orders as choose left them (a single-cost build
                # partitions these); ws.saved[depth] holds them.
                self.splitter.restore(&ws.sw, start, end, ws.saved[depth])
            split = &ws.cand[depth][w]
            split_words = NULL
            if emit and self.splitter.wide[split.feature]:
                self.splitter.set_words(&ws.sw, split.feature, split.bin,
                                        self.ctx.hist(ws, depth, side), words)
                split_words = words
            mid = self.splitter.partition(&ws.sw, start, end, split.feature, split.bin,
                                          self.ctx.hist(ws, depth, side))
            # As grow; children carried only where all its costs took the
            # one split (as a greedy node's do).
            self._split_children(ws, start, mid, end, depth, side, remaining,
                                 split.feature, split.bin, emit, one_winner)
            self.grow_path(ws, path, start, mid, depth + 1, 0, remaining - 1, emit,
                           same, n_won, left_objective)
            if emit:
                for j in range(n_won):
                    right_id[same[j]] = path.node_count[same[j]]
            self.grow_path(ws, path, mid, end, depth + 1, 1, remaining - 1, emit,
                           same, n_won, right_objective)
            for j in range(n_won):
                g = same[j]
                value = left_objective[g] + right_objective[g]
                if pays(value, leaf_objective[g], floor):
                    if emit:
                        path.set_split(g, node_id[g], split.feature, split.bin,
                                       node_id[g] + 1, right_id[g], split_words)
                    out[g] = value
                elif emit:
                    path.node_count[g] = node_id[g] + 1      # prune: drop the subtree
        return 0

    cdef int _best(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                   Py_ssize_t depth, int side, SplitRecord* split, double* left_acc,
                   Py_ssize_t* hint) except -1 nogil:
        cdef const double* total = self.ctx.total(ws, depth, side)
        cdef const double* hist = self.ctx.hist(ws, depth, side)
        cdef bint found
        if hint == NULL:
            found = self.splitter.best_split(&ws.sw, start, end, total, hist, split,
                                             left_acc)
        else:
            found = self.splitter.best_split_hinted(&ws.sw, start, end, total, hist,
                                                    split, left_acc, hint)
        if ws.sw.signalled:
            return -1       # the search gave up on a Ctrl-C: raise it
        return found

    cdef int _last_split(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t depth, int side, bint emit, SplitRecord* split,
                         double* left_acc) except -1 nogil:
        # A last-level node's best split.  Search nodes guess it from the
        # last one at this depth and side (the next candidate's grandchild
        # is usually alike); the committed tree's nodes search without one.
        if emit:
            return self._best(ws, start, end, depth, side, split, left_acc, NULL)
        return self._best(ws, start, end, depth, side, split, left_acc,
                          ws.split_hints + 4 * depth + 2 * (side & 1))

    cdef int _last_level_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                              Py_ssize_t end, Py_ssize_t depth, int side, bint emit,
                              const Py_ssize_t* group, Py_ssize_t n_group,
                              double* out) except -1 nogil:
        cdef Py_ssize_t s, k, g, left, right, n_stats = self.ctx.n_stats
        cdef const double* total = self.ctx.total(ws, depth, side)
        cdef double* left_acc = ws.best_left + depth * n_stats
        cdef double* right_acc = ws.right_acc
        cdef double value, left_loss = 0.0, right_loss = 0.0
        cdef double* leaf_objective = &path.leaf_objective[ws - self.ctx.ws, depth, 0]
        cdef Py_ssize_t* node_id = &path.node_id[depth, 0]
        cdef SplitRecord split
        cdef unsigned long long words[SET_WORDS]
        cdef const unsigned long long* split_words = NULL
        if not self._last_split(ws, start, end, depth, side, emit, &split, left_acc):
            return 0
        if emit:
            for s in range(n_stats):
                right_acc[s] = total[s] - left_acc[s]
            left_loss = self.criterion.loss(left_acc, &ws.sw.crit)
            right_loss = self.criterion.loss(right_acc, &ws.sw.crit)
            if self.splitter.wide[split.feature]:
                self.splitter.set_words(&ws.sw, split.feature, split.bin,
                                        self.ctx.hist(ws, depth, side), words)
                split_words = words
        for k in range(n_group):
            g = group[k]
            value = split.score + 2.0 * path.costs[g]
            if not pays(value, leaf_objective[g], tie_floor(total, n_stats)):
                continue
            if emit:
                left = path.push_node(g, self.criterion, depth + 1, split.n_left,
                                      left_loss, left_acc, ws)
                right = path.push_node(g, self.criterion, depth + 1,
                                       end - start - split.n_left, right_loss, right_acc, ws)
                path.set_split(g, node_id[g], split.feature, split.bin, left, right,
                               split_words)
            out[g] = value
        return 0

    cdef int choose_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Py_ssize_t* group, Py_ssize_t n_group) except -1 nogil:
        with gil:
            raise NotImplementedError("TreeBuilder is abstract: use a strategy")

cdef class GreedyBuilder(TreeBuilder):
    """CholeskyTree: a node takes the split with the smallest children's losses."""

    cdef int choose(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    SplitRecord* split) except -1 nogil:
        # Guessed from the last node at this depth and side (the same split,
        # see Splitter.best_split_hinted).
        return self._best(ws, start, end, depth, side, split,
                          ws.best_left + depth * self.ctx.n_stats,
                          ws.split_hints + 4 * depth + 2 * (side & 1))

    cdef int choose_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Py_ssize_t* group, Py_ssize_t n_group) except -1 nogil:
        # The greedy split does not depend on the leaf cost: one for all.
        cdef SplitRecord split
        cdef Py_ssize_t k
        if self.choose(ws, start, end, depth, side, remaining, &split) == 0:
            return 0
        self.ctx.reserve(ws, depth, 1, 0)
        ws.cand[depth][0].feature = split.feature
        ws.cand[depth][0].bin = split.bin
        ws.cand[depth][0].n_left = split.n_left
        for k in range(n_group):
            path.winner[ws - self.ctx.ws, depth, group[k]] = 0
        return 1

cdef class LookaheadBuilder(TreeBuilder):
    """CLARITree: candidates scored by the inner builder's completions.

    Every admissible split of a node (one per distinct partition) is scored
    by the objective of the subtrees ``inner`` grows on its two children;
    the best one (ties to the first in feature, then threshold order) is
    kept and both children are refined by this builder.

    Parameters
    ----------
    context : BuildContext
    inner : TreeBuilder
        A ``GreedyBuilder`` for lookahead depth 1, a ``LookaheadBuilder`` of
        depth k - 1 for depth k; it must share ``context``.
    """

    def __init__(self, BuildContext context, TreeBuilder inner):
        if inner.ctx is not context:
            raise ValueError("the inner builder must share the build context")
        super().__init__(context)
        self.inner = inner
        self.inner_is_lookahead = isinstance(inner, LookaheadBuilder)
        if self.inner_is_lookahead:
            self.lookahead_depth = (<LookaheadBuilder>inner).lookahead_depth + 1
        else:
            self.lookahead_depth = 1
        self.memo_level = self.lookahead_depth

    cdef int choose(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    SplitRecord* split) except -1 nogil:
        cdef Py_ssize_t m = end - start, i, t, n_cand, winner = -1, first = -1
        cdef const double* hist = self.ctx.hist(ws, depth, side)
        cdef Candidate* cand
        cdef double* score
        cdef double best, bound = INFINITY
        cdef CarryState carry
        cdef bint report = depth == 0 and ws.is_main and self.ctx.progress is not None
        cdef bint root = depth == 0, cut = False, exact_inner
        cdef Py_ssize_t done = 0
        # A node outside any candidate's memo scope (a committed node) gives
        # each of its candidates a scope and merges them in waves.  Then the
        # pruning bound (which decides whose right completion runs, hence
        # what the memo learns) also moves only at wave boundaries, so the
        # memo's content does not depend on how threads share a wave.
        cdef bint waves = self.ctx.memo_on and not ws.memo.open
        cdef double wave_bound = INFINITY
        cdef double floor = tie_floor(self.ctx.total(ws, depth, side), self.ctx.n_stats)

        if self.ctx.time_up:
            # Out of time: this node and everything below it is greedy.
            self.ctx.truncated = True
            self.ctx.n_completed += 1
            return self._greedy(ws, start, end, depth, side, split)
        n_cand = self.splitter.max_candidates(m)
        # Saved orders, then the rows sorted by bin for the carried sweep.
        self.ctx.reserve(ws, depth, n_cand, self.ctx.saved_size(m))
        cand = ws.cand[depth]
        score = ws.score[depth]
        n_cand = self.splitter.candidates(&ws.sw, start, end,
                                          self.ctx.total(ws, depth, side), hist,
                                          self.ctx.keys(ws, depth, side), cand)
        if root:
            self.ctx.n_root_candidates = n_cand
        if n_cand == 0:
            return 0
        self.splitter.save(&ws.sw, start, end, ws.saved[depth])
        self.ctx.start_carry(ws, &carry, depth, side, m)
        for i in range(n_cand):
            score[i] = INFINITY
        # Anytime search: the greedy split is scored first, so that whenever
        # the time runs out the best scored candidate is at least as good as
        # the greedy tree (the tie rule below still goes by candidate order).
        if self.ctx.anytime:
            first = self._greedy_first(ws, start, end, depth, side, cand, n_cand)
        # A greedy inner builder's completions do not depend on the clock;
        # a lookahead one's are cut short when the time runs out.
        exact_inner = not self.inner_is_lookahead
        if first >= 0:
            if ws.is_main:
                self.ctx.check()
            if waves:
                memo_open(&ws.memo, first)
            self._score(ws, start, end, depth, side, remaining, &cand[first], &carry,
                        bound, &score[first])
            if waves:
                memo_close(&ws.memo)
                self.ctx.memo_merge_all()
            done = 1
            bound = score[first]
            wave_bound = bound
            if root:
                self.ctx.n_root_scored = done
            if report:
                self._report(done, n_cand)
        if (self.ctx.n_threads > 1 and ws.is_main and not self.ctx.in_parallel
                and n_cand >= MIN_CANDIDATES_PER_THREAD * self.ctx.n_threads
                and m >= MIN_PARALLEL_ROWS):
            done += self._score_parallel(ws, start, end, depth, side, remaining,
                                         cand, score, n_cand, first, bound, report,
                                         waves)
            for t in range(self.ctx.n_threads):
                cut = cut or self.ctx.ws[t].cut
            if root:
                self.ctx.n_root_scored = done
            if report:
                self._report(done, n_cand)
        else:
            for i in range(n_cand):
                if i == first:
                    if waves and (i + 1) % MEMO_WAVE == 0:
                        self.ctx.memo_merge_all()
                        bound = wave_bound
                    continue
                if ws.is_main:
                    self.ctx.check()
                if self.ctx.time_up and done > 0:
                    cut = True
                    break
                if waves:
                    memo_open(&ws.memo, i)
                self._score(ws, start, end, depth, side, remaining, &cand[i], &carry,
                            bound, &score[i])
                if waves:
                    memo_close(&ws.memo)
                    if score[i] < wave_bound:
                        wave_bound = score[i]
                    if (i + 1) % MEMO_WAVE == 0:
                        self.ctx.memo_merge_all()
                        bound = wave_bound
                if self.ctx.time_up and not exact_inner and done > 0:
                    # Scored by a search that the limit cut short: the
                    # committed children would be refined differently.
                    score[i] = INFINITY
                    cut = True
                    break
                done += 1
                if score[i] < bound and not waves:
                    bound = score[i]
                if root:
                    self.ctx.n_root_scored = done
                if report:
                    self._report(done, n_cand)
        if waves:
            self.ctx.memo_merge_all()
        if cut:
            self.ctx.truncated = True
        else:
            self.ctx.n_searched += 1
        # The tie rule, applied in candidate order to the per-candidate slots.
        best = INFINITY
        for i in range(n_cand):
            if improves(score[i], best, floor):
                best = score[i]
                winner = i
        if winner < 0:
            return 0
        split.feature = cand[winner].feature
        split.bin = cand[winner].bin
        split.n_left = cand[winner].n_left
        split.score = best
        return 1

    cdef int _report(self, Py_ssize_t done, Py_ssize_t total) except -1 with gil:
        try:
            self.ctx.progress(done, total)
        except BaseException:
            self.ctx.abort = True       # stop the other threads, then raise
            raise
        return 0

    cdef Py_ssize_t _score_parallel(self, Workspace* ws, Py_ssize_t start,
                                    Py_ssize_t end, Py_ssize_t depth, int side,
                                    Py_ssize_t remaining, const Candidate* cand,
                                    double* score, Py_ssize_t n_cand, Py_ssize_t skip,
                                    double bound, bint report, bint waves) except -1 nogil:
        """Score the candidates (all but ``skip``) on ``n_threads`` threads.

        Each thread scores contiguous chunks of the candidate list on its own
        workspace: a copy of the node's segment of the row orders and of the
        node's statistics, its own splitter and criterion scratch and the
        per-depth buffers below the node.  Every candidate's score goes to its
        own slot; the caller applies the tie rule in candidate order, so the
        chosen split does not depend on the number of threads (a thread's
        pruning bound only decides which losing candidates skip their right
        completion).  Only the calling thread (thread 0) looks at signals and
        reports progress.  Returns the number of candidates scored.
        """
        cdef Py_ssize_t t, k, m = end - start, n_threads = self.ctx.n_threads
        cdef Py_ssize_t chunk, scored = 0
        cdef Py_ssize_t w0 = 0, w1, wave = MEMO_WAVE if waves else n_cand
        cdef Workspace* wt
        for t in range(n_threads):
            wt = &self.ctx.ws[t]
            if t > 0:
                self.ctx.copy_node(wt, ws, start, end, depth, side)
            self.ctx.start_carry(wt, &wt.carry, depth, side, m)
            wt.bound = bound
            wt.done = 0
            wt.cut = False
        # Chunks of contiguous candidates keep most carried sweeps going;
        # several chunks per thread even out candidates of unequal cost.
        # With the memo, candidates go in waves of MEMO_WAVE (the serial
        # loop's boundaries), each wave's entries merged in candidate order.
        self.ctx.in_parallel = True
        while w0 < n_cand:
            w1 = min(w0 + wave, n_cand)
            chunk = max(1, (w1 - w0) // (4 * n_threads))
            for k in prange(w0, w1, schedule="static", chunksize=chunk,
                            num_threads=n_threads):
                t = threadid()
                wt = &self.ctx.ws[t]
                if k != skip and not self.ctx.abort and not wt.cut:
                    if t == 0:
                        self.ctx.check()
                    if self.ctx.time_up:
                        wt.cut = True
                    else:
                        if waves:
                            memo_open(&wt.memo, k)
                        self._score(wt, start, end, depth, side, remaining, &cand[k],
                                    &wt.carry, wt.bound, &score[k])
                        if waves:
                            memo_close(&wt.memo)
                        if self.ctx.time_up and self.inner_is_lookahead:
                            score[k] = INFINITY     # scored by a search cut short
                            wt.cut = True
                        else:
                            if score[k] < wt.bound and not waves:
                                wt.bound = score[k]
                            wt.done = wt.done + 1
                    if t == 0 and report:
                        self._report(self._done(skip), n_cand)
            if waves:
                self.ctx.memo_merge_all()
                for k in range(w0, w1):
                    if k != skip and score[k] < bound:
                        bound = score[k]
                for t in range(n_threads):
                    self.ctx.ws[t].bound = bound
            w0 = w1
        self.ctx.in_parallel = False
        for t in range(n_threads):
            scored = scored + self.ctx.ws[t].done
        return scored

    cdef Py_ssize_t _done(self, Py_ssize_t skip) noexcept nogil:
        # Progress: candidates finished by all threads so far (a racy but
        # monotone read of the other threads' counters).
        cdef Py_ssize_t t, done = 1 if skip >= 0 else 0
        for t in range(self.ctx.n_threads):
            done = done + self.ctx.ws[t].done
        return done

    cdef int _greedy(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t depth, int side, SplitRecord* split) except -1 nogil:
        return self._best(ws, start, end, depth, side, split,
                          ws.best_left + depth * self.ctx.n_stats, NULL)

    cdef Py_ssize_t _greedy_first(self, Workspace* ws, Py_ssize_t start,
                                  Py_ssize_t end, Py_ssize_t depth, int side,
                                  const Candidate* cand,
                                  Py_ssize_t n_cand) except -2 nogil:
        """Index of the candidate inducing the greedy split's partition, or -1."""
        cdef SplitRecord greedy
        cdef Py_ssize_t i, found = -1
        if self._greedy(ws, start, end, depth, side, &greedy) == 0:
            return -1
        for i in range(n_cand):
            if cand[i].feature == greedy.feature and cand[i].bin == greedy.bin:
                found = i
                break
        if found < 0 or not cand[found].duplicate:
            return found
        # Another feature induces the same partition first: score that one.
        for i in range(found):
            if (not cand[i].duplicate and cand[i].n_left == cand[found].n_left
                    and cand[i].key == cand[found].key):
                return i
        return -1

    cdef Py_ssize_t _split_candidate(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                                     Py_ssize_t depth, int side, Py_ssize_t remaining,
                                     const Candidate* c, CarryState* carry) except -2 nogil:
        """Partition the node's rows by ``c`` and prepare its children's sums.

        Returns the first row of the right child, or -1 for a duplicate
        partition (nothing to score; the carried sums still move past it).
        The children's statistics are at ``depth + 1``; the caller restores
        the node's row orders once the candidate is scored.
        """
        cdef Py_ssize_t mid, d = depth + 1
        cdef bint carried = self.splitter.n_swept == 0
        # With histogram features only, the left child's statistics are
        # carried along each feature's threshold sweep (adding the rows
        # that cross) and the right child's are the parent's minus them.
        if carried:
            self.splitter.carry_left(&ws.sw, start, end, c, carry, self.ctx.total(ws, d, 0),
                                     self.ctx.hist(ws, d, 0), self.ctx.keys(ws, d, 0),
                                     self.ctx.hist(ws, depth, side),
                                     self.ctx.keys(ws, depth, side))
        if c.duplicate:
            return -1
        mid = self.splitter.take_carried(&ws.sw, start, end, c, carry) if carried else -1
        if mid < 0:
            mid = self.splitter.partition(&ws.sw, start, end, c.feature, c.bin,
                                          self.ctx.hist(ws, depth, side))
        if carried:
            self.splitter.subtract_stats(
                self.ctx.total(ws, depth, side), self.ctx.hist(ws, depth, side),
                self.ctx.keys(ws, depth, side),
                self.ctx.total(ws, d, 0), self.ctx.hist(ws, d, 0), self.ctx.keys(ws, d, 0),
                self.ctx.total(ws, d, 1), self.ctx.hist(ws, d, 1), self.ctx.keys(ws, d, 1))
        else:
            self.prepare_children(ws, start, mid, end, depth,
                                  self.ctx.total(ws, depth, side), self.ctx.hist(ws, depth, side),
                                  self.ctx.keys(ws, depth, side), False)
        # Children with two levels left carry their own children's sums
        # along this sweep (see _carried_children); the caller clears it.
        if (carried and remaining == 3 and self.ctx.carry_children
                and not self.splitter.categorical[c.feature]):
            ws.carried[d] = carry
        return mid

    cdef int _score(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    const Candidate* c, CarryState* carry, double bound,
                    double* score) except -1 nogil:
        """Objective of the inner builder's completions of candidate ``c``.

        Writes INFINITY for a duplicate partition, and for a candidate whose
        left completion alone cannot beat ``bound`` (a score already known):
        the right completion's objective is non-negative, and a candidate
        whose score exceeds another's beyond the tie tolerance never wins
        the tie rule, wherever that other candidate stands in the order.
        The node's row orders are restored afterwards.
        """
        cdef Py_ssize_t mid, d = depth + 1
        cdef double left, right
        cdef double floor = tie_floor(self.ctx.total(ws, depth, side), self.ctx.n_stats)
        score[0] = INFINITY
        mid = self._split_candidate(ws, start, end, depth, side, remaining, c, carry)
        if mid < 0:
            return 0
        self.inner.grow(ws, start, mid, d, 0, remaining - 1, False, &left)
        if not improves(bound, left, floor):
            self.inner.grow(ws, mid, end, d, 1, remaining - 1, False, &right)
            score[0] = left + right
        ws.carried[d] = NULL
        ws.n_evaluations += 1
        self.splitter.restore(&ws.sw, start, end, ws.saved[depth])
        return 0

    cdef int choose_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Py_ssize_t* group, Py_ssize_t n_group) except -1 nogil:
        """:meth:`choose` for each cost of ``group``: its winner in ``path.winner``.

        Every candidate's completions are grown once for the costs that
        need them, and each cost applies the tie rule to its own scores.  A
        time limit bounds the whole path: once it is reached, nodes choose
        greedily for all their costs, as :meth:`choose` does for one.
        """
        cdef Py_ssize_t m = end - start, i, k, g, n_cand, n = path.n_costs, found = 0
        cdef Py_ssize_t first = -1, done = 0, j
        cdef const double* hist = self.ctx.hist(ws, depth, side)
        cdef Candidate* cand
        cdef double* score
        cdef Py_ssize_t t = ws - self.ctx.ws
        cdef double* bound = &path.bound[t, depth, 0]
        cdef Py_ssize_t* winner = &path.winner[t, depth, 0]
        cdef double best
        cdef CarryState carry
        cdef SplitRecord greedy
        cdef bint report = depth == 0 and ws.is_main and self.ctx.progress is not None
        cdef bint root = depth == 0, cut = False, exact_inner
        cdef double floor = tie_floor(self.ctx.total(ws, depth, side), self.ctx.n_stats)

        for k in range(n_group):
            winner[group[k]] = -1
        if self.ctx.time_up:
            # Out of time: this node and everything below it is greedy.
            self.ctx.truncated = True
            self.ctx.n_completed += 1
            if self._greedy(ws, start, end, depth, side, &greedy) == 0:
                return 0
            self.ctx.reserve(ws, depth, 1, 0)
            ws.cand[depth][0].feature = greedy.feature
            ws.cand[depth][0].bin = greedy.bin
            ws.cand[depth][0].n_left = greedy.n_left
            for k in range(n_group):
                winner[group[k]] = 0
            return 1
        n_cand = self.splitter.max_candidates(m)
        self.ctx.reserve(ws, depth, n_cand, self.ctx.saved_size(m))
        cand = ws.cand[depth]
        n_cand = self.splitter.candidates(&ws.sw, start, end,
                                          self.ctx.total(ws, depth, side), hist,
                                          self.ctx.keys(ws, depth, side), cand)
        if root:
            self.ctx.n_root_candidates = n_cand
        if n_cand == 0:
            return 0
        score = path.reserve_scores(t, depth, n_cand)
        self.splitter.save(&ws.sw, start, end, ws.saved[depth])
        self.ctx.start_carry(ws, &carry, depth, side, m)
        for k in range(n_group):
            bound[group[k]] = INFINITY
            for i in range(n_cand):
                score[i * n + group[k]] = INFINITY
        if self.ctx.anytime:
            first = self._greedy_first(ws, start, end, depth, side, cand, n_cand)
        exact_inner = not self.inner_is_lookahead
        if first >= 0:
            if ws.is_main:
                self.ctx.check()
            self._score_path(ws, path, start, end, depth, side, remaining, &cand[first],
                             &carry, group, n_group, score + first * n)
            done = 1
            for j in range(n_group):
                g = group[j]
                bound[g] = score[first * n + g]
            if root:
                self.ctx.n_root_scored = done
            if report:
                self._report(done, n_cand)
        if (self.ctx.n_threads > 1 and ws.is_main and not self.ctx.in_parallel
                and n_cand >= MIN_CANDIDATES_PER_THREAD * self.ctx.n_threads
                and m >= MIN_PARALLEL_ROWS):
            done += self._score_path_parallel(ws, path, start, end, depth, side, remaining,
                                              cand, score, n_cand, first, group, n_group,
                                              report)
            for j in range(self.ctx.n_threads):
                cut = cut or self.ctx.ws[j].cut
            if root:
                self.ctx.n_root_scored = done
            if report:
                self._report(done, n_cand)
        else:
            for i in range(n_cand):
                if i == first:
                    continue
                if ws.is_main:
                    self.ctx.check()
                elif self.ctx.abort:
                    break
                if self.ctx.time_up and done > 0:
                    cut = True
                    break
                self._score_path(ws, path, start, end, depth, side, remaining, &cand[i],
                                 &carry, group, n_group, score + i * n)
                if self.ctx.time_up and not exact_inner and done > 0:
                    # Scored by a search that the limit cut short.
                    for g in range(n):
                        score[i * n + g] = INFINITY
                    cut = True
                    break
                done += 1
                for j in range(n_group):
                    g = group[j]
                    if score[i * n + g] < bound[g]:
                        bound[g] = score[i * n + g]
                if root:
                    self.ctx.n_root_scored = done
                if report:
                    self._report(done, n_cand)
        if cut:
            self.ctx.truncated = True
        else:
            self.ctx.n_searched += 1
        # The tie rule, per cost, in candidate order.
        for k in range(n_group):
            g = group[k]
            best = INFINITY
            for i in range(n_cand):
                if improves(score[i * n + g], best, floor):
                    best = score[i * n + g]
                    winner[g] = i
            if winner[g] >= 0:
                found = 1
        return found

    cdef int _score_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Candidate* c, CarryState* carry, const Py_ssize_t* group,
                         Py_ssize_t n_group, double* score) except -1 nogil:
        """:meth:`_score` for each cost of ``group`` (``score[g]``).

        The left completion is grown once for the group, the right one for
        the costs whose bound the left objective alone does not already
        beat.
        """
        cdef Py_ssize_t mid, d = depth + 1, k, g, n_right = 0
        cdef Py_ssize_t t = ws - self.ctx.ws
        cdef double* left = &path.values[t, d, 0, 0]
        cdef double* right = &path.values[t, d, 1, 0]
        cdef double* bound = &path.bound[t, depth, 0]
        cdef Py_ssize_t* need_right = &path.groups[t, d, 1, 0]
        cdef double floor = tie_floor(self.ctx.total(ws, depth, side), self.ctx.n_stats)
        for k in range(n_group):
            score[group[k]] = INFINITY
        mid = self._split_candidate(ws, start, end, depth, side, remaining, c, carry)
        if mid < 0:
            return 0
        self.inner.grow_path(ws, path, start, mid, d, 0, remaining - 1, False, group,
                             n_group, left)
        for k in range(n_group):
            g = group[k]
            if not improves(bound[g], left[g], floor):
                need_right[n_right] = g
                n_right += 1
        if n_right > 0:
            self.inner.grow_path(ws, path, mid, end, d, 1, remaining - 1, False, need_right,
                                 n_right, right)
        for k in range(n_right):
            g = need_right[k]
            score[g] = left[g] + right[g]
        ws.carried[d] = NULL
        ws.n_evaluations += 1
        self.splitter.restore(&ws.sw, start, end, ws.saved[depth])
        return 0

    cdef Py_ssize_t _score_path_parallel(
            self, Workspace* ws, PathState path, Py_ssize_t start, Py_ssize_t end,
            Py_ssize_t depth, int side, Py_ssize_t remaining, const Candidate* cand,
            double* score, Py_ssize_t n_cand, Py_ssize_t skip, const Py_ssize_t* group,
            Py_ssize_t n_group, bint report) except -1 nogil:
        """:meth:`_score_parallel` for each cost of ``group``.

        Each thread scores contiguous chunks of candidates on its workspace
        (as in ``_score_parallel``) and its own path buffers below the node,
        starting from the caller's bounds; every candidate writes its own row
        of ``score`` and the caller applies the tie rule per cost.  Returns
        the number of candidates scored.
        """
        cdef Py_ssize_t t, k, j, m = end - start, n_threads = self.ctx.n_threads
        cdef Py_ssize_t chunk, scored = 0, g
        cdef Py_ssize_t n = path.n_costs
        cdef Workspace* wt
        for t in range(n_threads):
            wt = &self.ctx.ws[t]
            if t > 0:
                self.ctx.copy_node(wt, ws, start, end, depth, side)
                for j in range(n_group):
                    g = group[j]
                    path.bound[t, depth, g] = path.bound[0, depth, g]
            self.ctx.start_carry(wt, &wt.carry, depth, side, m)
            wt.done = 0
            wt.cut = False
        chunk = max(1, n_cand // (4 * n_threads))
        self.ctx.in_parallel = True
        for k in prange(n_cand, schedule="static", chunksize=chunk,
                        num_threads=n_threads):
            t = threadid()
            wt = &self.ctx.ws[t]
            if k != skip and not self.ctx.abort and not wt.cut:
                if t == 0:
                    self.ctx.check()
                if self.ctx.time_up:
                    wt.cut = True
                else:
                    self._score_path(wt, path, start, end, depth, side, remaining, &cand[k],
                                     &wt.carry, group, n_group, score + k * n)
                    if self.ctx.time_up and self.inner_is_lookahead:
                        for j in range(n):
                            score[k * n + j] = INFINITY     # scored by a search cut short
                        wt.cut = True
                    else:
                        for j in range(n_group):
                            g = group[j]
                            if score[k * n + g] < path.bound[t, depth, g]:
                                path.bound[t, depth, g] = score[k * n + g]
                        wt.done = wt.done + 1
                if t == 0 and report:
                    self._report(self._done(skip), n_cand)
        self.ctx.in_parallel = False
        for t in range(n_threads):
            scored = scored + self.ctx.ws[t].done
        return scored
