"""Memo of search-subtree objectives keyed by row set (see ``_memo.pxd``)."""

from libc.stdlib cimport calloc, malloc, free


cdef inline unsigned long long _mix1(unsigned long long x) noexcept nogil:
    # splitmix64 finalizer
    x = x + 0x9E3779B97F4A7C15ULL
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL
    return x ^ (x >> 31)


cdef inline unsigned long long _mix2(unsigned long long x) noexcept nogil:
    # murmur3 fmix64 of a differently offset input: independent of _mix1
    x = (x + 0x632BE59BD9B4E019ULL) * 0xD6E8FEB86659FD93ULL
    x ^= x >> 33
    x *= 0xFF51AFD7ED558CCDULL
    x ^= x >> 33
    x *= 0xC4CEB9FE1A85EC53ULL
    return x ^ (x >> 33)


cdef inline bint _same(const MemoKey* a, const MemoKey* b) noexcept nogil:
    return (a.h1 == b.h1 and a.h2 == b.h2 and a.n_rows == b.n_rows
            and a.tag == b.tag)


cdef inline Py_ssize_t _slot(const MemoTable* t, const MemoKey* key) noexcept nogil:
    cdef unsigned long long h = (key.h1 ^ (key.h2 >> 7)
                                 ^ (<unsigned long long>key.tag * 0x9E3779B97F4A7C15ULL))
    return <Py_ssize_t>(h & <unsigned long long>(t.capacity - 1))


cdef int memo_table_init(MemoTable* t, Py_ssize_t capacity) except -1:
    cdef Py_ssize_t c = 16
    while c < capacity:
        c *= 2
    t.slots = <MemoEntry*>calloc(c, sizeof(MemoEntry))
    if t.slots == NULL:
        raise MemoryError("could not allocate the search memo")
    t.capacity = c
    t.count = 0
    t.gen = 1               # calloc'ed slots (gen 0) are empty
    return 0


cdef void memo_table_free(MemoTable* t) noexcept nogil:
    free(t.slots)
    t.slots = NULL
    t.capacity = 0
    t.count = 0


cdef void memo_table_clear(MemoTable* t) noexcept nogil:
    # O(1): entries of an older generation count as empty.
    t.gen += 1
    t.count = 0


cdef MemoEntry* _find(const MemoTable* t, const MemoKey* key) noexcept nogil:
    cdef Py_ssize_t i = _slot(t, key), mask = t.capacity - 1
    cdef MemoEntry* e
    while True:
        e = &t.slots[i]
        if e.gen != t.gen:
            return NULL
        if _same(&e.key, key):
            return e
        i = (i + 1) & mask


cdef void _insert(MemoTable* t, const MemoKey* key, double value) noexcept nogil:
    # First entry wins; a table at half capacity takes no more.
    cdef Py_ssize_t i, mask = t.capacity - 1
    cdef MemoEntry* e
    if 2 * (t.count + 1) > t.capacity:
        return
    i = _slot(t, key)
    while True:
        e = &t.slots[i]
        if e.gen != t.gen:
            e.key = key[0]
            e.value = value
            e.gen = t.gen
            t.count += 1
            return
        if _same(&e.key, key):
            return
        i = (i + 1) & mask


cdef int memo_scope_init(MemoScope* s, Py_ssize_t local_capacity,
                         Py_ssize_t pending_capacity) except -1:
    memo_table_init(&s.local, local_capacity)
    s.pending = <MemoEntry*>malloc(pending_capacity * sizeof(MemoEntry))
    if s.pending == NULL:
        memo_table_free(&s.local)
        raise MemoryError("could not allocate the search memo")
    s.pending_capacity = pending_capacity
    s.n_pending = 0
    s.open = False
    s.n_hits = 0
    s.n_stored = 0
    return 0


cdef void memo_scope_free(MemoScope* s) noexcept nogil:
    memo_table_free(&s.local)
    free(s.pending)
    s.pending = NULL
    s.pending_capacity = 0
    s.n_pending = 0


cdef void memo_key(MemoKey* key, const int* rows, Py_ssize_t n_rows,
                   Py_ssize_t remaining, Py_ssize_t level) noexcept nogil:
    """Order-independent key of the row set ``rows[:n_rows]``."""
    cdef Py_ssize_t i
    cdef unsigned long long h1 = 0, h2 = 0, r
    for i in range(n_rows):
        r = <unsigned long long>rows[i]
        h1 += _mix1(r)
        h2 += _mix2(r)
    key.h1 = h1
    key.h2 = h2
    key.n_rows = n_rows
    key.tag = remaining * 64 + level


cdef unsigned long long* memo_row_hashes(Py_ssize_t n_samples) except NULL:
    """Both hashes of every row, interleaved (``2 * n_samples``; free() it).

    A search hashes each node's rows many times; one 16-byte load per row
    costs less than computing the two hashes again.
    """
    cdef Py_ssize_t i
    cdef unsigned long long* h = <unsigned long long*>malloc(
        2 * max(n_samples, 1) * sizeof(unsigned long long))
    if h == NULL:
        raise MemoryError("could not allocate the search memo")
    for i in range(n_samples):
        h[2 * i] = _mix1(<unsigned long long>i)
        h[2 * i + 1] = _mix2(<unsigned long long>i)
    return h


cdef void memo_key_hashed(MemoKey* key, const unsigned long long* hashes,
                          const int* rows, Py_ssize_t n_rows, Py_ssize_t remaining,
                          Py_ssize_t level) noexcept nogil:
    cdef Py_ssize_t i
    cdef unsigned long long h1 = 0, h2 = 0
    cdef const unsigned long long* r
    for i in range(n_rows):
        r = hashes + 2 * <Py_ssize_t>rows[i]
        h1 += r[0]
        h2 += r[1]
    key.h1 = h1
    key.h2 = h2
    key.n_rows = n_rows
    key.tag = remaining * 64 + level


cdef bint memo_lookup(const MemoTable* shared, MemoScope* s, const MemoKey* key,
                      double* value) noexcept nogil:
    """The stored objective, from this candidate's scope or the shared table."""
    cdef MemoEntry* e = NULL
    if s.open:
        e = _find(&s.local, key)
    if e == NULL:
        e = _find(shared, key)
    if e == NULL:
        return False
    value[0] = e.value
    s.n_hits += 1
    return True


cdef void memo_store(MemoScope* s, const MemoKey* key, double value) noexcept nogil:
    """Record an objective: visible to this candidate now, to all after the merge."""
    cdef MemoEntry* e
    if not s.open:
        return
    _insert(&s.local, key, value)
    # A fixed share per candidate: what a candidate contributes must not
    # depend on which other candidates its thread scored in the wave.
    if (s.owner_pending < s.pending_capacity // MEMO_WAVE
            and s.n_pending < s.pending_capacity):
        s.owner_pending += 1
        e = &s.pending[s.n_pending]
        e.key = key[0]
        e.value = value
        e.owner = s.owner
        s.n_pending += 1
        s.n_stored += 1


cdef void memo_open(MemoScope* s, Py_ssize_t owner) noexcept nogil:
    memo_table_clear(&s.local)
    s.owner = owner
    s.owner_pending = 0
    s.open = True


cdef void memo_close(MemoScope* s) noexcept nogil:
    s.open = False


cdef void memo_merge(MemoTable* shared, MemoScope** scopes,
                     Py_ssize_t n_scopes) noexcept nogil:
    """Move the scopes' pending entries into the shared table.

    Entries go in by candidate (``owner``), and in the order found within a
    candidate: each scope's list is in ascending candidate order, so this
    is a merge of sorted lists, and the result does not depend on which
    thread scored which candidate.
    """
    cdef Py_ssize_t t, best, owner
    cdef Py_ssize_t* pos
    cdef Py_ssize_t pos_small[64]
    cdef MemoEntry* e
    if n_scopes <= 64:
        pos = &pos_small[0]
    else:
        pos = <Py_ssize_t*>malloc(n_scopes * sizeof(Py_ssize_t))
    if pos == NULL:
        for t in range(n_scopes):
            scopes[t].n_pending = 0     # out of memory: drop (the same way each run)
        return
    for t in range(n_scopes):
        pos[t] = 0
    while True:
        best = -1
        owner = 0
        for t in range(n_scopes):
            if pos[t] < scopes[t].n_pending:
                e = &scopes[t].pending[pos[t]]
                if best < 0 or e.owner < owner:
                    best = t
                    owner = e.owner
        if best < 0:
            break
        # All of this candidate's entries at once (one scope holds them).
        while (pos[best] < scopes[best].n_pending
               and scopes[best].pending[pos[best]].owner == owner):
            e = &scopes[best].pending[pos[best]]
            _insert(shared, &e.key, e.value)
            pos[best] += 1
    for t in range(n_scopes):
        scopes[t].n_pending = 0
    if pos != &pos_small[0]:
        free(pos)


def _row_set_key(rows, bint hashed=False):
    """``(h1, h2)`` of a row set (private; tests): order-independent sums.

    With ``hashed`` through a table of the per-row hashes (the builder's
    route, ``memo_key_hashed``) instead of hashing each row.
    """
    import numpy as np
    cdef int[::1] r = np.ascontiguousarray(rows, dtype=np.int32)
    cdef MemoKey key
    cdef unsigned long long* table
    if r.shape[0] == 0:
        return 0, 0
    if not hashed:
        memo_key(&key, &r[0], r.shape[0], 0, 0)
    else:
        table = memo_row_hashes(int(np.max(r)) + 1)
        memo_key_hashed(&key, table, &r[0], r.shape[0], 0, 0)
        free(table)
    return int(key.h1), int(key.h2)
