# Tree construction: a template (TreeBuilder) and the strategies that choose
# a node's split: greedy (CholeskyTree) and lookahead (CLARITree).

from ._criterion cimport Criterion
from ._memo cimport MemoKey, MemoScope, MemoTable
from ._splitter cimport (
    Splitter, SplitterWork, Candidate, CarryState, SplitRecord, SET_WORDS,
)


cdef struct NodeRecord:
    Py_ssize_t left_child        # TREE_LEAF for leaves
    Py_ssize_t right_child
    Py_ssize_t feature           # TREE_UNDEFINED for leaves
    Py_ssize_t bin               # threshold index (TREE_UNDEFINED for leaves)
    Py_ssize_t n_samples
    Py_ssize_t depth
    double loss                  # leaf objective of the node's rows (no penalty)
    # A split on a wide categorical feature: its bins going left (bit b <=>
    # bin b), since its ``bin`` refers to the node's level order.
    unsigned long long set_words[SET_WORDS]


cdef struct ChildCache:
    # The left child's statistics of the last split taken at a completion
    # node (see TreeBuilder._carried_children): which split, which sort of
    # the carried rows and how far along them its node reached.
    bint valid
    unsigned long long gen
    unsigned long long used     # when last used (least recently used goes)
    Py_ssize_t pos
    bint with_missing           # the carried candidate sent its missing rows left
    Py_ssize_t feature
    Py_ssize_t bin
    double* total
    double* hist
    unsigned long long* keys


cdef struct Workspace:
    # Everything one thread writes while it grows (sub)trees.  Buffers are
    # indexed by node depth: at any time at most one node per depth is
    # being worked on, so a completion run inside a candidate never
    # clobbers its caller's buffers.
    SplitterWork sw
    double* totals               # (levels, 2, n_stats): node statistics per side
    double* hists                # (levels, 2, hist_size * n_stats)
    unsigned long long* keys     # (levels, 2, hist_size)
    double* best_left            # (levels, n_stats): best split's left child
    double* right_acc            # n_stats
    Candidate** cand             # per depth: candidate list
    double** score               # per depth: one score slot per candidate
    Py_ssize_t* cand_capacity
    int** saved                  # per depth: saved orders + bin-sorted rows
    Py_ssize_t* saved_capacity
    unsigned long long n_evaluations
    # Parallel candidate scoring: this thread's carried sweep, the best
    # score it has seen, candidates done, whether the limit cut its work.
    bint is_main                 # the first workspace (the calling thread's)
    CarryState carry
    double bound
    Py_ssize_t done
    bint cut
    MemoScope memo               # this thread's memo scope (see _memo.pxd)
    # Per depth: the carried sweep whose candidate's child is being grown
    # there (NULL: none); per side of that child, its last split's left
    # child (see TreeBuilder._carried_children).
    CarryState** carried
    ChildCache child_cache[4]    # CHILD_CACHE_WAYS per side
    unsigned long long child_cache_clock
    void* child_cache_block
    unsigned long long n_carried_children
    # Per depth and side: the split the last node there took in a search
    # (feature, bin; -1: none), a guess for the next one's best_split.
    Py_ssize_t* split_hints


cdef class BuildContext:
    # What one fit shares along the builder chain: the splitter and
    # criterion (read-only), the stopping parameters, the workspaces
    # (allocated once per fit), the output nodes and the progress callback.
    cdef readonly Splitter splitter
    cdef readonly Criterion criterion
    cdef readonly Py_ssize_t max_depth
    cdef readonly double leaf_cost           # lambda * TSS
    cdef readonly object time_limit          # seconds or None
    cdef readonly double min_samples_leaf    # training weight (rows when unweighted)
    cdef Py_ssize_t n_stats
    cdef Py_ssize_t levels
    cdef Py_ssize_t hist_size
    cdef Py_ssize_t n_sides                  # statistics slots per depth (2 or 4)

    cdef Workspace* ws                       # n_workspaces, [0] the main thread's
    cdef Py_ssize_t n_workspaces
    cdef readonly Py_ssize_t n_threads       # = n_workspaces
    cdef bint abort                          # the main thread raised: others stop
    cdef bint in_parallel                    # inside a parallel candidate loop

    cdef NodeRecord* nodes
    cdef double* coefs
    cdef Py_ssize_t node_count
    cdef Py_ssize_t node_capacity

    cdef object progress                     # callable(done, total) or None

    # Memo of search-subtree objectives (lookahead builds; see _memo.pxd).
    cdef MemoTable memo
    cdef MemoScope** memo_scopes             # each workspace's scope
    cdef unsigned long long* row_hashes      # memo_row_hashes of the rows
    cdef readonly bint memo_allowed          # memo=False: never (tests, benchmarks)
    cdef readonly bint memo_on               # in use by the current build
    cdef readonly bint carry_children        # see TreeBuilder._carried_children

    # Anytime search and interrupts (checked from the main thread).
    cdef double deadline                     # monotonic seconds; INFINITY: none
    cdef readonly bint anytime               # a time limit is set
    cdef readonly bint time_up               # the limit was reached
    cdef readonly bint truncated             # ... and some lookahead work was cut
    cdef double last_signal_check
    cdef readonly Py_ssize_t n_root_candidates
    cdef readonly Py_ssize_t n_root_scored
    cdef readonly Py_ssize_t n_searched      # lookahead nodes fully searched
    cdef readonly Py_ssize_t n_completed     # lookahead nodes chosen greedily (time up)

    cdef void memo_merge_all(self) noexcept nogil
    cdef int _init_workspace(self, Workspace* ws, bint own_order) except -1
    cdef void _free_workspace(self, Workspace* ws) noexcept nogil
    cdef double* total(self, Workspace* ws, Py_ssize_t depth,
                       int side) noexcept nogil
    cdef double* hist(self, Workspace* ws, Py_ssize_t depth, int side) noexcept nogil
    cdef unsigned long long* keys(self, Workspace* ws, Py_ssize_t depth,
                                  int side) noexcept nogil
    cdef void start_carry(self, Workspace* ws, CarryState* carry, Py_ssize_t depth,
                          int side, Py_ssize_t m) noexcept nogil
    cdef Py_ssize_t saved_size(self, Py_ssize_t m) noexcept nogil
    cdef int reserve(self, Workspace* ws, Py_ssize_t depth, Py_ssize_t n_cand,
                     Py_ssize_t n_saved) except -1 nogil
    cdef int copy_node(self, Workspace* dst, Workspace* src, Py_ssize_t start,
                       Py_ssize_t end, Py_ssize_t depth, int side) except -1 nogil
    cdef int check(self) except -1 nogil
    cdef Py_ssize_t push_node(self, Py_ssize_t depth, Py_ssize_t n_samples,
                              double loss, const double* acc,
                              Workspace* ws) except -1 nogil


cdef class PathState:
    # The leaf-penalty path: the trees of several leaf costs grown in one
    # search.  Per thread, depth and cost: the node's leaf objective, the
    # subtree objectives of the (depth, side) slots, the incumbent bound and
    # winner; three cost lists per depth (active, needing a right completion,
    # sharing one winner); candidate scores per depth and cost.  The main
    # thread's node ids and one output tree per cost.  A thread is known by
    # its workspace's index in the build context.
    cdef readonly Py_ssize_t n_costs
    cdef readonly Py_ssize_t n_threads
    cdef Py_ssize_t levels
    cdef double[::1] costs                   # lambda * TSS per grid entry
    cdef double[:, :, ::1] leaf_objective    # (threads, levels, n_costs)
    cdef double[:, :, :, ::1] values         # (threads, levels, 2, n_costs)
    cdef double[:, :, ::1] bound             # (threads, levels, n_costs)
    cdef Py_ssize_t[:, :, ::1] winner        # (threads, levels, n_costs)
    cdef Py_ssize_t[:, ::1] node_id          # (levels, n_costs)
    cdef Py_ssize_t[:, ::1] right_id         # (levels, n_costs)
    cdef Py_ssize_t[:, :, :, ::1] groups     # (threads, levels, 3, n_costs)
    cdef double** scores                     # per thread and depth: (candidates, n_costs)
    cdef Py_ssize_t* score_capacity
    cdef NodeRecord** nodes                  # per cost
    cdef double** coefs
    cdef Py_ssize_t* node_count
    cdef Py_ssize_t* node_capacity

    cdef double* reserve_scores(self, Py_ssize_t t, Py_ssize_t depth,
                                Py_ssize_t n_cand) except NULL nogil
    cdef Py_ssize_t push_node(self, Py_ssize_t g, Criterion criterion, Py_ssize_t depth,
                              Py_ssize_t n_samples, double loss, const double* acc,
                              Workspace* ws) except -1 nogil
    cdef void set_split(self, Py_ssize_t g, Py_ssize_t node, Py_ssize_t feature,
                        Py_ssize_t bin, Py_ssize_t left, Py_ssize_t right,
                        const unsigned long long* words) noexcept nogil


cdef class TreeBuilder:
    cdef readonly BuildContext ctx
    cdef Splitter splitter                   # the context's, for short access
    cdef Criterion criterion
    cdef readonly Py_ssize_t memo_level      # 0 greedy, k: lookahead depth k

    # Objective of the subtree grown on rows [start, end) whose statistics
    # are in ws's slot (depth, side); with emit the nodes are appended.
    # Search subtrees (not emit) inside a candidate's memo scope are looked
    # up and stored by row set, levels left and memo_level.
    cdef int grow(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                  Py_ssize_t depth, int side, Py_ssize_t remaining, bint emit,
                  double* objective) except -1 nogil
    cdef int _grow(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                   Py_ssize_t depth, int side, Py_ssize_t remaining, bint emit,
                   double* objective) except -1 nogil
    cdef int _grow_stored(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                          Py_ssize_t depth, int side, Py_ssize_t remaining,
                          const MemoKey* key, double* objective) except -1 nogil
    # The split of a node with remaining >= 2 levels: 1 found, 0 none.
    cdef int choose(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    SplitRecord* split) except -1 nogil
    cdef int _last_level(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t depth, int side, Py_ssize_t node, bint emit,
                         double leaf_objective, double* objective) except -1 nogil
    cdef void _split_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                              Py_ssize_t end, Py_ssize_t depth, int side,
                              Py_ssize_t remaining, Py_ssize_t feature, Py_ssize_t bin,
                              bint emit, bint may_carry) noexcept nogil
    cdef void _carried_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                                Py_ssize_t end, Py_ssize_t depth, int side,
                                Py_ssize_t feature, Py_ssize_t bin,
                                const CarryState* carry) noexcept nogil
    cdef void prepare_children(self, Workspace* ws, Py_ssize_t start, Py_ssize_t mid,
                               Py_ssize_t end, Py_ssize_t depth,
                               const double* parent_total, const double* parent_hist,
                               const unsigned long long* parent_keys,
                               bint exact) noexcept nogil

    # The leaf-penalty path: grow for the costs ``group`` of ``path`` at
    # once, writing each cost g's objective to out[g]; choose_path writes
    # each active cost's winner (an index into ws.cand[depth], -1: none).
    cdef int grow_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                       Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                       bint emit, const Py_ssize_t* group, Py_ssize_t n_group,
                       double* out) except -1 nogil
    cdef int choose_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Py_ssize_t* group, Py_ssize_t n_group) except -1 nogil
    # The splitter's best split of a node, guessed from ``hint`` unless it
    # is NULL: 1 found, 0 none; -1 raises a Ctrl-C caught during the search.
    cdef int _best(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                   Py_ssize_t depth, int side, SplitRecord* split, double* left_acc,
                   Py_ssize_t* hint) except -1 nogil
    cdef int _last_split(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t depth, int side, bint emit, SplitRecord* split,
                         double* left_acc) except -1 nogil
    cdef int _last_level_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                              Py_ssize_t end, Py_ssize_t depth, int side, bint emit,
                              const Py_ssize_t* group, Py_ssize_t n_group,
                              double* out) except -1 nogil


cdef class GreedyBuilder(TreeBuilder):
    pass


cdef class LookaheadBuilder(TreeBuilder):
    cdef readonly TreeBuilder inner
    cdef readonly Py_ssize_t lookahead_depth
    cdef bint inner_is_lookahead

    cdef int _greedy(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                     Py_ssize_t depth, int side, SplitRecord* split) except -1 nogil
    cdef Py_ssize_t _greedy_first(self, Workspace* ws, Py_ssize_t start,
                                  Py_ssize_t end, Py_ssize_t depth, int side,
                                  const Candidate* cand,
                                  Py_ssize_t n_cand) except -2 nogil
    cdef int _report(self, Py_ssize_t done, Py_ssize_t total) except -1 with gil
    cdef Py_ssize_t _score_parallel(self, Workspace* ws, Py_ssize_t start,
                                    Py_ssize_t end, Py_ssize_t depth, int side,
                                    Py_ssize_t remaining, const Candidate* cand,
                                    double* score, Py_ssize_t n_cand, Py_ssize_t skip,
                                    double bound, bint report, bint waves) except -1 nogil
    cdef Py_ssize_t _done(self, Py_ssize_t skip) noexcept nogil
    cdef Py_ssize_t _split_candidate(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                                     Py_ssize_t depth, int side, Py_ssize_t remaining,
                                     const Candidate* c, CarryState* carry) except -2 nogil
    cdef int _score(self, Workspace* ws, Py_ssize_t start, Py_ssize_t end,
                    Py_ssize_t depth, int side, Py_ssize_t remaining,
                    const Candidate* c, CarryState* carry, double bound,
                    double* score) except -1 nogil
    cdef int _score_path(self, Workspace* ws, PathState path, Py_ssize_t start,
                         Py_ssize_t end, Py_ssize_t depth, int side, Py_ssize_t remaining,
                         const Candidate* c, CarryState* carry, const Py_ssize_t* group,
                         Py_ssize_t n_group, double* score) except -1 nogil
    cdef Py_ssize_t _score_path_parallel(
        self, Workspace* ws, PathState path, Py_ssize_t start, Py_ssize_t end,
        Py_ssize_t depth, int side, Py_ssize_t remaining, const Candidate* cand,
        double* score, Py_ssize_t n_cand, Py_ssize_t skip, const Py_ssize_t* group,
        Py_ssize_t n_group, bint report) except -1 nogil
