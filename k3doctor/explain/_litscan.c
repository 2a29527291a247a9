/* Stage 1 of ``explain --log`` in C: which lines of a block hold an anchor literal or match a tail.
 *
 * Optional accelerator for k3doctor/explain/literal_scan.py (which documents the semantics and
 * falls back to the pure-Python prefilter where this module is not built). One pass over the
 * block, line by line (memchr finds each newline): at each position the 3 bytes ending there form
 * a gram, read from memory (no position waits on the one before); a bitmap of the grams the
 * anchors are filed under (one gram per anchor, chosen by the caller, in every letter case) says
 * where to verify; a verified anchor (case-insensitively) makes its line a hit and the scan moves
 * to the next line. Tails (linear regex pieces: byte sets with repeat bounds, matched on text
 * folded as the prefilter folds it, digits to ``0``) are tried where their first byte set occurs.
 * The pass also records where every line ends (for line assembly) and the longest line.
 *
 * ``Matcher.which(text)`` serves stage 2: the indices of every anchor that occurs in a text (the
 * knowledge base's keywords of a line, or the literals a marker regex's alternatives require).
 *
 * Read-only on its input; memory: the 2 MiB gram bitmap and the anchors. No Python object is
 * touched while scanning except to append results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define GRAM_BITS (1u << 24)
#define MAX_ITEMS 32
#define TAIL_BUDGET 100000  /* backtracking steps per start before a tail is taken as matched */

typedef struct {
    uint32_t anchor;
    uint32_t off;
} Entry;

typedef struct {
    uint8_t set[256];   /* 1 where the (folded) byte is in the item's set */
    uint32_t lo, hi;    /* repeat bounds; hi = UINT32_MAX: unbounded */
} Item;

typedef struct {
    Item items[MAX_ITEMS];
    uint32_t n;
} Tail;

typedef struct {
    PyObject_HEAD
    uint8_t *bitmap;          /* GRAM_BITS bits: the grams anchors are filed under, in every case */
    uint8_t pairs[8192];      /* 2^16 bits: the two-byte anchors (case-folded) */
    uint32_t *slot_gram;      /* open addressing: gram -> entries */
    uint32_t *slot_start, *slot_count;
    uint32_t nslots;
    Entry *entries;
    uint8_t **anchors;
    uint32_t *alen;
    uint32_t nanchors;
    uint32_t *seen;           /* per anchor: the ``which`` call that last found it (``epoch``) */
    uint32_t epoch;
    Tail *tails;
    uint32_t ntails;
    uint8_t trigger[256];     /* bit 0: some tail may start here; bit 1: the line is a hit;
                                 bit 4: a two-byte anchor may start here */
    uint8_t case_fold[256];   /* capitals to small letters */
    uint8_t tail_fold[256];   /* ... and digits to '0' (the prefilter's fold, for tails) */
} Matcher;

static void matcher_free(Matcher *m) {
    PyMem_Free(m->bitmap);
    PyMem_Free(m->slot_gram);
    PyMem_Free(m->slot_start);
    PyMem_Free(m->slot_count);
    PyMem_Free(m->entries);
    if (m->anchors) {
        for (uint32_t i = 0; i < m->nanchors; i++) PyMem_Free(m->anchors[i]);
    }
    PyMem_Free(m->anchors);
    PyMem_Free(m->alen);
    PyMem_Free(m->seen);
    PyMem_Free(m->tails);
    m->bitmap = NULL; m->slot_gram = NULL; m->slot_start = NULL; m->slot_count = NULL;
    m->entries = NULL; m->anchors = NULL; m->alen = NULL; m->tails = NULL; m->seen = NULL;
    m->nanchors = 0; m->ntails = 0;
}

static void Matcher_dealloc(Matcher *m) {
    matcher_free(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static inline uint32_t slot_of(uint32_t g, uint32_t n) { return (g * 2654435761u) & (n - 1); }

static inline uint32_t fold_gram(const uint8_t *fold, uint32_t g) {
    return ((uint32_t)fold[g >> 16] << 16) | ((uint32_t)fold[(g >> 8) & 0xFF] << 8) | fold[g & 0xFF];
}

static int parse_tail(PyObject *spec, Tail *t) {
    /* spec: a list of (set: bytes of length 256, lo: int, hi: int, -1 = unbounded) */
    if (!PyList_Check(spec)) { PyErr_SetString(PyExc_TypeError, "a tail is a list of items"); return -1; }
    Py_ssize_t n = PyList_GET_SIZE(spec);
    if (n < 1 || n > MAX_ITEMS) { PyErr_SetString(PyExc_ValueError, "a tail has 1 to 32 items"); return -1; }
    t->n = (uint32_t)n;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *set; long long lo, hi;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(spec, k), "SLL", &set, &lo, &hi)) return -1;
        if (PyBytes_GET_SIZE(set) != 256 || lo < 0 || (hi >= 0 && hi < lo) || lo > UINT32_MAX - 1) {
            PyErr_SetString(PyExc_ValueError, "a tail item is (256-byte set, lo, hi)");
            return -1;
        }
        memcpy(t->items[k].set, PyBytes_AS_STRING(set), 256);
        if (t->items[k].set['\n']) {
            PyErr_SetString(PyExc_ValueError, "a tail item's set must not hold a newline");
            return -1;
        }
        t->items[k].lo = (uint32_t)lo;
        t->items[k].hi = hi < 0 || hi > (long long)UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)hi;
    }
    return 0;
}

/* Matcher(anchors: list[bytes], offsets: list[int], tails: list[tail], hit_bytes: bytes[256],
 *         pairs: list[bytes] = [])
 * anchors: at least 3 bytes, no newline; each filed under its 3 bytes at offsets[i]. hit_bytes: 1
 * where a byte makes its line a hit outright (one-byte anchors, in both cases). pairs: the
 * two-byte anchors. Anchors match case-insensitively (ASCII letters). */
static int Matcher_init(Matcher *m, PyObject *args, PyObject *kw) {
    PyObject *anchors, *offsets, *tails, *hit_bytes, *pairs = NULL;
    static char *kwlist[] = {"anchors", "offsets", "tails", "hit_bytes", "pairs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!O!S|O!", kwlist, &PyList_Type, &anchors, &PyList_Type,
                                     &offsets, &PyList_Type, &tails, &hit_bytes, &PyList_Type, &pairs))
        return -1;
    matcher_free(m);
    Py_ssize_t n = PyList_GET_SIZE(anchors);
    if (PyList_GET_SIZE(offsets) != n || PyBytes_GET_SIZE(hit_bytes) != 256 || n > (1 << 26)) {
        PyErr_SetString(PyExc_ValueError, "one offset per anchor, and a 256-byte hit_bytes table");
        return -1;
    }
    for (int c = 0; c < 256; c++) {
        m->case_fold[c] = (uint8_t)((c >= 'A' && c <= 'Z') ? c + 32 : c);
        m->tail_fold[c] = (uint8_t)((c >= '0' && c <= '9') ? '0' : m->case_fold[c]);
        m->trigger[c] = PyBytes_AS_STRING(hit_bytes)[c] ? 2 : 0;
    }
    memset(m->pairs, 0, sizeof m->pairs);
    for (Py_ssize_t k = 0; pairs && k < PyList_GET_SIZE(pairs); k++) {
        PyObject *w = PyList_GET_ITEM(pairs, k);
        if (!PyBytes_Check(w) || PyBytes_GET_SIZE(w) != 2 || memchr(PyBytes_AS_STRING(w), '\n', 2)) {
            PyErr_SetString(PyExc_ValueError, "a pair is two bytes, no newline");
            return -1;
        }
        const uint8_t *q = (const uint8_t *)PyBytes_AS_STRING(w);
        uint32_t pg = ((uint32_t)m->case_fold[q[0]] << 8) | m->case_fold[q[1]];
        m->pairs[pg >> 3] |= (uint8_t)(1u << (pg & 7));
        for (int c = 0; c < 256; c++)
            if (m->case_fold[c] == m->case_fold[q[0]]) m->trigger[c] |= 16;
    }
    uint32_t ns = 16;
    while (ns < 4 * (uint32_t)n + 16) ns <<= 1;
    m->nslots = ns;
    m->nanchors = (uint32_t)n;
    m->anchors = PyMem_Calloc(n ? n : 1, sizeof(uint8_t *));
    m->alen = PyMem_Calloc(n ? n : 1, sizeof(uint32_t));
    m->seen = PyMem_Calloc(n ? n : 1, sizeof(uint32_t));
    m->epoch = 0;
    m->bitmap = PyMem_Calloc(GRAM_BITS / 8, 1);
    m->slot_gram = PyMem_Malloc(ns * sizeof(uint32_t));
    m->slot_start = PyMem_Calloc(ns, sizeof(uint32_t));
    m->slot_count = PyMem_Calloc(ns, sizeof(uint32_t));
    m->entries = PyMem_Malloc((n ? n : 1) * sizeof(Entry));
    uint32_t *slot = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *offs = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    if (!m->anchors || !m->alen || !m->seen || !m->bitmap || !m->slot_gram || !m->slot_start || !m->slot_count
        || !m->entries || !slot || !offs) {
        PyMem_Free(slot); PyMem_Free(offs);
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t s = 0; s < ns; s++) m->slot_gram[s] = UINT32_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyList_GET_ITEM(anchors, i);
        long off = PyLong_AsLong(PyList_GET_ITEM(offsets, i));
        if (!PyBytes_Check(a) || (off == -1 && PyErr_Occurred())) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "anchors are bytes, offsets ints");
            goto fail;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(a);
        const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(a);
        if (len < 3 || off < 0 || off > len - 3 || memchr(p, '\n', len) != NULL) {
            PyErr_SetString(PyExc_ValueError, "an anchor has at least 3 bytes, no newline, and its gram inside it");
            goto fail;
        }
        m->anchors[i] = PyMem_Malloc(len);
        if (!m->anchors[i]) { PyErr_NoMemory(); goto fail; }
        for (Py_ssize_t j = 0; j < len; j++) m->anchors[i][j] = m->case_fold[p[j]];
        m->alen[i] = (uint32_t)len;
        offs[i] = (uint32_t)off;
        const uint8_t *g3 = m->anchors[i] + off;
        uint32_t g = ((uint32_t)g3[0] << 16) | ((uint32_t)g3[1] << 8) | g3[2];
        /* the bitmap holds the gram in every case (the scan tests raw bytes), the slots the folded one */
        for (int k = 0; k < 8; k++) {
            uint32_t v = 0;
            int ok = 1;
            for (int j = 0; j < 3; j++) {
                uint8_t f = g3[j];
                uint8_t b = (k >> j) & 1 ? (uint8_t)(f >= 'a' && f <= 'z' ? f - 32 : 0) : f;
                if ((k >> j) & 1 && !b) ok = 0;  /* (no capital form: that variant is the same gram) */
                v = (v << 8) | b;
            }
            if (ok) m->bitmap[v >> 3] |= (uint8_t)(1u << (v & 7));
        }
        uint32_t s = slot_of(g, ns);
        while (m->slot_gram[s] != UINT32_MAX && m->slot_gram[s] != g) s = (s + 1) & (ns - 1);
        m->slot_gram[s] = g;
        m->slot_count[s]++;
        slot[i] = s;
    }
    uint32_t total = 0;
    for (uint32_t s = 0; s < ns; s++) {
        m->slot_start[s] = total;
        total += m->slot_count[s];
        m->slot_count[s] = 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t s = slot[i];
        m->entries[m->slot_start[s] + m->slot_count[s]++] = (Entry){(uint32_t)i, offs[i]};
    }
    PyMem_Free(slot); PyMem_Free(offs);
    Py_ssize_t nt = PyList_GET_SIZE(tails);
    m->ntails = 0;
    m->tails = PyMem_Calloc(nt ? nt : 1, sizeof(Tail));
    if (!m->tails) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < nt; k++) {
        if (parse_tail(PyList_GET_ITEM(tails, k), &m->tails[k]) < 0) return -1;
        if (m->tails[k].items[0].lo == 0) {
            PyErr_SetString(PyExc_ValueError, "a tail's first item must match at least one byte");
            return -1;
        }
        for (int c = 0; c < 256; c++)
            if (m->tails[k].items[0].set[m->tail_fold[c]]) m->trigger[c] |= 1;
        m->ntails++;
    }
    return 0;
fail:
    PyMem_Free(slot); PyMem_Free(offs);
    return -1;
}

/* whether items[k:] match at t[pos:end] (within the line: no set holds a newline) */
static int tail_rest(const Matcher *m, const Tail *tl, uint32_t k, const uint8_t *t, Py_ssize_t pos,
                     Py_ssize_t end, long *budget) {
    if (k == tl->n) return 1;
    if (--*budget < 0) return 1;  /* too many steps: taken as matched (a candidate too many is safe) */
    const Item *it = &tl->items[k];
    Py_ssize_t run = 0;
    while (pos + run < end && (uint32_t)run < it->hi && it->set[m->tail_fold[t[pos + run]]]) run++;
    if ((uint32_t)run < it->lo) return 0;
    for (Py_ssize_t r = run; r >= (Py_ssize_t)it->lo; r--) {
        if (tail_rest(m, tl, k + 1, t, pos + r, end, budget)) return 1;
        if (*budget < 0) return 1;
    }
    return 0;
}

static int tails_at(const Matcher *m, const uint8_t *t, Py_ssize_t pos, Py_ssize_t end) {
    for (uint32_t k = 0; k < m->ntails; k++) {
        const Tail *tl = &m->tails[k];
        if (!tl->items[0].set[m->tail_fold[t[pos]]]) continue;
        /* (quick reject: a first item of exactly one byte, and a next byte the second item refuses) */
        if (tl->n > 1 && tl->items[0].hi == 1 && tl->items[1].lo > 0
            && (pos + 1 >= end || !tl->items[1].set[m->tail_fold[t[pos + 1]]]))
            continue;
        long budget = TAIL_BUDGET;
        if (tail_rest(m, tl, 0, t, pos, end, &budget)) return 1;
    }
    return 0;
}

/* what a position whose byte is special (``sp``: see ``spec`` in scan) decides: -1 an ESC (the
   line is handed back), 1 a hit (a one-byte or two-byte anchor, or a tail starts here), 0 neither */
static inline int at_special(const Matcher *m, uint8_t sp, const uint8_t *t, Py_ssize_t i, Py_ssize_t n) {
    if (sp & 4) return -1;
    if (sp & 2) return 1;
    if ((sp & 16) && i + 1 < n) {
        uint32_t pg = ((uint32_t)m->case_fold[t[i]] << 8) | m->case_fold[t[i + 1]];
        if ((m->pairs[pg >> 3] >> (pg & 7)) & 1) return 1;
    }
    /* (no set holds a newline: a tail's match stays in its line) */
    return (sp & 1) && tails_at(m, t, i, n);
}

/* whether an anchor filed under the folded gram ``fg`` (ending at i) occurs there, within the line
   that starts at ls */
static inline int verify(const Matcher *m, const uint8_t *t, Py_ssize_t i, Py_ssize_t ls, Py_ssize_t n, uint32_t fg) {
    const uint8_t *fold = m->case_fold;
    uint32_t s = slot_of(fg, m->nslots);
    while (m->slot_gram[s] != fg) {
        if (m->slot_gram[s] == UINT32_MAX) return 0;  /* (a guard: a gram in the bitmap folds to a filed one) */
        s = (s + 1) & (m->nslots - 1);
    }
    for (uint32_t k = m->slot_start[s], e = k + m->slot_count[s]; k < e; k++) {
        Entry en = m->entries[k];
        Py_ssize_t st = i - 2 - (Py_ssize_t)en.off;
        uint32_t len = m->alen[en.anchor];
        if (st < ls || st + (Py_ssize_t)len > n) continue;
        const uint8_t *a = m->anchors[en.anchor];
        uint32_t j = 0;
        while (j < len && fold[t[st + j]] == a[j]) j++;
        if (j == len) return 1;
    }
    return 0;
}

static int append_index(PyObject *list, Py_ssize_t v) {
    PyObject *o = PyLong_FromSsize_t(v);
    if (!o) return -1;
    int r = PyList_Append(list, o);
    Py_DECREF(o);
    return r;
}

/* scan(block, hand_back=True) -> (hit line indices, line ends (uint32 per line, as bytes), newlines,
 * longest line, indices of the lines holding an ESC byte: handed back unsearched, or searched too
 * where a hit came before the ESC; with hand_back false none is handed back) */
static PyObject *Matcher_scan(Matcher *m, PyObject *args) {
    Py_buffer b;
    int hand_back = 1;  /* 0: an ESC byte is searched as any other byte (text already stripped) */
    if (!m->bitmap || !m->slot_gram || !m->tails) {
        PyErr_SetString(PyExc_RuntimeError, "Matcher is not initialised");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*|p", &b, &hand_back)) return NULL;
    const uint8_t *t = b.buf;
    Py_ssize_t n = b.len;
    if (n > (Py_ssize_t)UINT32_MAX - 1) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "a block is at most 4 GiB");
        return NULL;
    }
    Py_ssize_t lines = 1;
    for (const uint8_t *p = t, *e = t + n; (p = memchr(p, '\n', e - p)) != NULL; p++) lines++;
    PyObject *ends = PyBytes_FromStringAndSize(NULL, lines * 4);
    PyObject *hits = PyList_New(0), *esc = PyList_New(0);
    if (!ends || !hits || !esc) goto error;
    uint32_t *endv = (uint32_t *)PyBytes_AS_STRING(ends);
    const uint8_t *fold = m->case_fold, *bm = m->bitmap;
    /* one table look-up per byte finds every byte that needs more than the gram test:
       1 a tail may start, 2 a hit byte, 4 ESC (handed back), 16 a pair may start */
    uint8_t spec[256];
    for (int c = 0; c < 256; c++) spec[c] = m->trigger[c];
    if (hand_back) spec[0x1b] |= 4;
    /* line by line (memchr finds the newline); within a line, each position is tested against
       ``spec`` and, from its third byte on (the first two end no gram of the line), the gram ending
       there against the bitmap. The gram is read from memory, not rolled, so no position waits on
       the one before. */
    Py_ssize_t line = 0, ls = 0, longest = 0;
    for (;;) {
        const uint8_t *nlp = ls < n ? memchr(t + ls, '\n', n - ls) : NULL;
        Py_ssize_t le = nlp ? nlp - t : n, i = ls;
        int got = 0;  /* 1: a hit at i; -1: an ESC at i, the line handed back */
        for (; i < le && i < ls + 2 && !got; i++)
            if (spec[t[i]]) got = at_special(m, spec[t[i]], t, i, n);
        for (; i < le && !got; i++) {
            uint8_t c = t[i], sp = spec[c];
            uint32_t g = ((uint32_t)t[i - 2] << 16) | ((uint32_t)t[i - 1] << 8) | c;
            int in_map = (bm[g >> 3] >> (g & 7)) & 1;
            if (__builtin_expect(!(sp | in_map), 1)) continue;
            if (sp) got = at_special(m, sp, t, i, n);
            if (!got && in_map) got = verify(m, t, i, ls, n, fold_gram(fold, g));
        }
        if (got) i--;  /* (the loops stepped past the position that decided) */
        int hit = got > 0, handed = got < 0;
        if (handed) {
            if (append_index(esc, line) < 0) goto error;
        } else if (hit) {
            if (append_index(hits, line) < 0) goto error;
            /* the rest of the line cannot add anything, but an ESC in it still hands it back */
            if (hand_back && memchr(t + i, 0x1b, le - i) != NULL && append_index(esc, line) < 0) goto error;
        }
        if (!nlp) break;
        if (le - ls > longest) longest = le - ls;
        endv[line++] = (uint32_t)le;
        ls = le + 1;
    }
    if (n - ls > longest) longest = n - ls;
    endv[line] = (uint32_t)n;
    PyBuffer_Release(&b);
    return Py_BuildValue("NNnnN", hits, ends, lines - 1, longest, esc);
error:
    PyBuffer_Release(&b);
    Py_XDECREF(ends); Py_XDECREF(hits); Py_XDECREF(esc);
    return NULL;
}

/* which(text) -> the indices of the anchors that occur in ``text`` (case-insensitively, anywhere:
 * no line is assumed), ascending. For stage 2: the keywords of a line, where the anchors are the
 * knowledge base's keywords. */
static PyObject *Matcher_which(Matcher *m, PyObject *args) {
    Py_buffer b;
    if (!m->bitmap || !m->slot_gram || !m->tails || !m->seen) {
        PyErr_SetString(PyExc_RuntimeError, "Matcher is not initialised");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    if (++m->epoch == 0) {  /* (wrapped around: every mark is stale) */
        memset(m->seen, 0, m->nanchors * sizeof(uint32_t));
        m->epoch = 1;
    }
    const uint8_t *t = b.buf, *fold = m->case_fold, *bm = m->bitmap;
    Py_ssize_t n = b.len;
    PyObject *out = PyList_New(0);
    if (!out) { PyBuffer_Release(&b); return NULL; }
    for (Py_ssize_t i = 2; i < n; i++) {
        uint32_t g = ((uint32_t)t[i - 2] << 16) | ((uint32_t)t[i - 1] << 8) | t[i];
        if (__builtin_expect(!((bm[g >> 3] >> (g & 7)) & 1), 1)) continue;
        uint32_t fg = fold_gram(fold, g), s = slot_of(fg, m->nslots);
        while (m->slot_gram[s] != fg && m->slot_gram[s] != UINT32_MAX) s = (s + 1) & (m->nslots - 1);
        if (m->slot_gram[s] == UINT32_MAX) continue;
        for (uint32_t k = m->slot_start[s], e = k + m->slot_count[s]; k < e; k++) {
            Entry en = m->entries[k];
            Py_ssize_t st = i - 2 - (Py_ssize_t)en.off;
            uint32_t len = m->alen[en.anchor];
            if (st < 0 || st + (Py_ssize_t)len > n) continue;
            const uint8_t *a = m->anchors[en.anchor];
            uint32_t j = 0;
            while (j < len && fold[t[st + j]] == a[j]) j++;
            if (j != len) continue;
            if (m->seen[en.anchor] == m->epoch) continue;
            m->seen[en.anchor] = m->epoch;
            if (append_index(out, en.anchor) < 0) { Py_DECREF(out); PyBuffer_Release(&b); return NULL; }
        }
    }
    PyBuffer_Release(&b);
    if (PyList_Sort(out) < 0) { Py_DECREF(out); return NULL; }
    return out;
}

/* at_least(ends, threshold) -> indices of the lines at least ``threshold`` bytes long */
static PyObject *at_least(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    Py_ssize_t threshold;
    if (!PyArg_ParseTuple(args, "y*n", &b, &threshold)) return NULL;
    const uint32_t *e = b.buf;
    Py_ssize_t n = b.len / 4;
    PyObject *out = PyList_New(0);
    if (!out) { PyBuffer_Release(&b); return NULL; }
    int64_t start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((int64_t)e[i] - start >= threshold && append_index(out, i) < 0) {
            Py_DECREF(out);
            PyBuffer_Release(&b);
            return NULL;
        }
        start = (int64_t)e[i] + 1;
    }
    PyBuffer_Release(&b);
    return out;
}

/* lengths(ends, idx) -> [length of line idx[0], ...] (ends: a scan's line ends) */
static PyObject *lengths_of(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer e;
    PyObject *idx;
    if (!PyArg_ParseTuple(args, "y*O!", &e, &PyList_Type, &idx)) return NULL;
    const uint32_t *ends = e.buf;
    Py_ssize_t nl = e.len / 4, k = PyList_GET_SIZE(idx);
    PyObject *out = PyList_New(k);
    for (Py_ssize_t j = 0; out && j < k; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(idx, j));
        if (i < 0 || i >= nl) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "line index out of range");
            Py_CLEAR(out);
            break;
        }
        PyObject *v = PyLong_FromSsize_t((Py_ssize_t)ends[i] - (i ? (Py_ssize_t)ends[i - 1] + 1 : 0));
        if (!v) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, j, v);
    }
    PyBuffer_Release(&e);
    return out;
}

/* lines(buf, ends, idx) -> [line idx[0], line idx[1], ...] as bytes (ends: a scan's line ends) */
static PyObject *lines_of(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b, e;
    PyObject *idx;
    if (!PyArg_ParseTuple(args, "y*y*O!", &b, &e, &PyList_Type, &idx)) return NULL;
    const uint32_t *ends = e.buf;
    Py_ssize_t nl = e.len / 4, k = PyList_GET_SIZE(idx);
    PyObject *out = PyList_New(k);
    if (!out) goto done;
    for (Py_ssize_t j = 0; j < k; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(idx, j));
        if (i < 0 || i >= nl) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "line index out of range");
            Py_CLEAR(out);
            goto done;
        }
        Py_ssize_t st = i ? (Py_ssize_t)ends[i - 1] + 1 : 0, en = ends[i];
        if (en > b.len || st > en) {
            PyErr_SetString(PyExc_ValueError, "line ends do not fit the block");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *piece = PyBytes_FromStringAndSize((const char *)b.buf + st, en - st);
        if (!piece) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, j, piece);
    }
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&e);
    return out;
}

static PyMethodDef Matcher_methods[] = {
    {"scan", (PyCFunction)Matcher_scan, METH_VARARGS,
     "scan(block, hand_back=True) -> (hit line indices, line ends as uint32 bytes, newlines, longest, "
     "ESC line indices)"},
    {"which", (PyCFunction)Matcher_which, METH_VARARGS,
     "which(text) -> the indices of the anchors occurring in text, ascending"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "k3doctor.explain._litscan.Matcher",
    .tp_doc = "Matcher(anchors, offsets, tails, hit_bytes): stage 1 of explain --log in C",
    .tp_basicsize = sizeof(Matcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Matcher_init,
    .tp_dealloc = (destructor)Matcher_dealloc,
    .tp_methods = Matcher_methods,
};

static PyMethodDef module_methods[] = {
    {"at_least", at_least, METH_VARARGS, "at_least(ends, threshold) -> line indices"},
    {"lines", lines_of, METH_VARARGS, "lines(buf, ends, idx) -> the lines idx, as bytes"},
    {"lengths", lengths_of, METH_VARARGS, "lengths(ends, idx) -> the lengths of the lines idx"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_litscan",
                                    "Stage 1 of explain --log in C (see literal_scan.py).", -1,
                                    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__litscan(void) {
    if (PyType_Ready(&MatcherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&MatcherType);
    if (PyModule_AddObject(m, "Matcher", (PyObject *)&MatcherType) < 0) {
        Py_DECREF(&MatcherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
