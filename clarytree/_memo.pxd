# Memo of subtree objectives inside one lookahead search.
#
# The same row set is reached many times in a search: a depth-2 box
# x_f <= a, x_g <= b through both orders of its splits, and completions of
# different candidates meet in the same grandchildren.  A search subtree's
# objective depends only on its row set, the levels left and the builder
# (greedy or lookahead of depth k), so it is kept under that key, as the
# optimal-tree dynamic programs do.
#
# Determinism: entries found while one candidate of a committed node is
# scored go to that candidate's own scope (seen by it at once) and to a
# pending list; the candidate loop merges the pending lists into the shared
# table at fixed wave boundaries (after candidates k with k + 1 a multiple of
# MEMO_WAVE, and after a node's first-scored candidate), in candidate order
# (each thread's pending list holds its candidates in ascending order), first
# entry wins.  What a lookup can see therefore depends only on
# candidate order and wave boundaries, never on which thread scored what, so
# results do not depend on the number of threads.  A parallel loop must score
# each candidate within one thread (its own scope), keep each candidate's
# pending entries separate, and merge at the same wave boundaries in
# candidate order.
#
# Keys: the row count and two independent 64-bit sums of per-row hashes
# (order-independent), plus the levels left and the builder level; a false
# match needs both 64-bit sums to collide for two row sets of one size.

cdef enum:
    MEMO_WAVE = 16              # candidates between two merges


cdef struct MemoKey:
    unsigned long long h1
    unsigned long long h2
    Py_ssize_t n_rows
    Py_ssize_t tag              # remaining * 64 + builder level


cdef struct MemoEntry:
    MemoKey key
    double value
    unsigned long long gen      # valid iff equal to the table's generation
    Py_ssize_t owner            # pending entries: the candidate that found it


cdef struct MemoTable:
    # Open addressing, linear probing; insertions stop at half capacity.
    MemoEntry* slots
    Py_ssize_t capacity         # power of two
    Py_ssize_t count
    unsigned long long gen


cdef struct MemoScope:
    # One thread's view while it scores one candidate of a committed node.
    MemoTable local             # this candidate's entries
    MemoEntry* pending          # entries to merge at the wave's end, in order
    Py_ssize_t n_pending
    Py_ssize_t pending_capacity
    bint open
    Py_ssize_t owner            # the candidate being scored
    Py_ssize_t owner_pending    # its pending entries (at most capacity / MEMO_WAVE)
    unsigned long long n_hits
    unsigned long long n_stored


cdef int memo_table_init(MemoTable* t, Py_ssize_t capacity) except -1
cdef void memo_table_free(MemoTable* t) noexcept nogil
cdef void memo_table_clear(MemoTable* t) noexcept nogil
cdef int memo_scope_init(MemoScope* s, Py_ssize_t local_capacity,
                         Py_ssize_t pending_capacity) except -1
cdef void memo_scope_free(MemoScope* s) noexcept nogil

cdef void memo_key(MemoKey* key, const int* rows, Py_ssize_t n_rows,
                   Py_ssize_t remaining, Py_ssize_t level) noexcept nogil
# The same key from a table of both per-row hashes (see memo_row_hashes).
cdef void memo_key_hashed(MemoKey* key, const unsigned long long* hashes,
                          const int* rows, Py_ssize_t n_rows, Py_ssize_t remaining,
                          Py_ssize_t level) noexcept nogil
cdef unsigned long long* memo_row_hashes(Py_ssize_t n_samples) except NULL
cdef bint memo_lookup(const MemoTable* shared, MemoScope* s, const MemoKey* key,
                      double* value) noexcept nogil
cdef void memo_store(MemoScope* s, const MemoKey* key, double value) noexcept nogil
cdef void memo_open(MemoScope* s, Py_ssize_t owner) noexcept nogil
cdef void memo_close(MemoScope* s) noexcept nogil
cdef void memo_merge(MemoTable* shared, MemoScope** scopes,
                     Py_ssize_t n_scopes) noexcept nogil
