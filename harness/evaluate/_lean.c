/* trec_eval's measures straight from files, without numpy or pyarrow: the route `harness eval`
 * takes where this module is compiled (harness/evaluate/lean.py), for memory and start-up time.
 *
 * It reads only the common form, where its meaning is certain: lines of printable ASCII fields
 * separated by spaces (6 in a run, 4 in qrels), ranks of plain digits, finite scores written as
 * harness.trec.SCORE, grades as INTEGER in C's int range, no comment, blank line, tab or carriage
 * return, no judgment repeated. Anything else raises NotFast, and the caller scores with the
 * numpy route, whose exact readers give every error its file and line.
 *
 * A run is read in blocks and scored query by query as it is read (runs come grouped by query),
 * so memory is one block and one query's documents; a run that writes a query in two places is
 * read again whole. Each query is put in trec_eval's order (score descending, docid descending),
 * a repeated document keeps its highest score (counted), the ranking is cut to the depth (-M),
 * and the measures are computed as harness/evaluate/ranked.py computes them: the same divisions,
 * log2 from the C library, sums added one by one in rank order. The GIL is released while a file
 * is read and scored, so runs are scored on all cores by threads. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NONPOOL (-1)  /* a ranked document the qrels do not judge for its query */
#define UNJUDGED (-2) /* judged below 0 */
#define TOP 10        /* coverage.TOP: the top 10s whose judged share the docid warning reads */
#define BLOCK (1 << 20)

enum family { NDCG, PREC, RECALL, AP, RR, RPREC, SUCCESS, JUDGED, NUMQ, NUMREL, NUMRET, FAMILIES };

static PyObject *NotFast;

/* ---- fields ------------------------------------------------------------------------------- */

typedef struct { const char *s; size_t n; } span;

static int printable(unsigned char c) { return c > 0x20 && c < 0x7f; }

/* Split a line (no newline) at runs of spaces into at most `most` + 1 fields; -1 for a byte
 * outside the common form. */
static int split(const char *line, size_t n, span *fields, int most) {
    int count = 0;
    size_t i = 0;
    while (i < n) {
        if (line[i] == ' ') { i++; continue; }
        size_t start = i;
        while (i < n && line[i] != ' ') {
            if (!printable((unsigned char)line[i])) return -1;
            i++;
        }
        if (count > most) return -1;
        fields[count].s = line + start;
        fields[count].n = i - start;
        count++;
    }
    return count;
}

static int digits(span f) {
    for (size_t i = 0; i < f.n; i++)
        if (f.s[i] < '0' || f.s[i] > '9') return 0;
    return f.n > 0;
}

/* [+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?, whole: harness.trec.SCORE */
static int score_form(span f) {
    size_t i = 0, before = 0, after = 0;
    if (i < f.n && (f.s[i] == '+' || f.s[i] == '-')) i++;
    while (i < f.n && f.s[i] >= '0' && f.s[i] <= '9') { i++; before++; }
    if (i < f.n && f.s[i] == '.') {
        i++;
        while (i < f.n && f.s[i] >= '0' && f.s[i] <= '9') { i++; after++; }
    }
    if (!before && !after) return 0;
    if (i < f.n && (f.s[i] == 'e' || f.s[i] == 'E')) {
        i++;
        if (i < f.n && (f.s[i] == '+' || f.s[i] == '-')) i++;
        size_t exponent = 0;
        while (i < f.n && f.s[i] >= '0' && f.s[i] <= '9') { i++; exponent++; }
        if (!exponent) return 0;
    }
    return i == f.n;
}

static int parse_score(span f, double *out) {
    char small[64];
    char *text = f.n < sizeof small ? small : malloc(f.n + 1);
    if (!text || !score_form(f)) { if (text && text != small) free(text); return 0; }
    memcpy(text, f.s, f.n);
    text[f.n] = '\0';
    *out = strtod(text, NULL);
    if (text != small) free(text);
    return isfinite(*out);
}

/* [+-]?[0-9]+ within C's int range: harness.trec.INTEGER and GRADE_LIMIT */
static int parse_grade(span f, int32_t *out) {
    size_t i = 0;
    int negative = 0;
    if (f.n && (f.s[0] == '+' || f.s[0] == '-')) { negative = f.s[0] == '-'; i++; }
    span rest = {f.s + i, f.n - i};
    if (!digits(rest)) return 0;
    long long value = 0;
    for (; i < f.n; i++) {
        value = value * 10 + (f.s[i] - '0');
        if (value > 2147483648LL) return 0;
    }
    if (negative) value = -value;
    if (value < INT32_MIN || value > INT32_MAX) return 0;
    *out = (int32_t)value;
    return 1;
}

static unsigned char folded(char c) { return (unsigned char)(c >= 'A' && c <= 'Z' ? c + 32 : c); }

/* A 64-bit hash of the bytes, 8 at a time, or (`fold`) of their lower case: ids are ASCII, so that is
 * casefold(). Its low bits pick a slot, its high bits are the slot's tag. */
static uint64_t hashed(const char *s, size_t n, uint64_t seed, int fold) {
    uint64_t h = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t word = 0;
        memcpy(&word, s + i, n - i < 8 ? n - i : 8);
        if (fold) {  /* 'A'-'Z' to 'a'-'z', 8 bytes at once (ASCII: no byte has its high bit) */
            uint64_t seven = word & 0x7f7f7f7f7f7f7f7fULL;
            uint64_t above_z = seven + 0x2525252525252525ULL, from_a = seven + 0x3f3f3f3f3f3f3f3fULL;
            word |= ((from_a ^ above_z) & ~word & 0x8080808080808080ULL) >> 2;
        }
        h = (h ^ word) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    h ^= h >> 33;  /* splitmix64's finish: every bit of the input reaches the low bits */
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint32_t tag_of(uint64_t h) { return (uint32_t)(h >> 32) | 1; }  /* 0: a free slot */

/* The hash of (query, a document whose hashed() is `h`): a document's id is hashed once, where it is read. */
static uint64_t keyed(uint64_t h, int32_t query) {
    h ^= (uint64_t)(query + 1) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static int same_folded(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (folded(a[i]) != folded(b[i])) return 0;
    return 1;
}

/* Python's order of ASCII strings, as trec_eval's strcmp orders ids */
static int compare_ids(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* ---- qrels -------------------------------------------------------------------------------- */

/* a judgment: tag, its hash's high bits (0: a free slot); doc, where its id starts in the text */
typedef struct { uint32_t tag, doc, len; int32_t query, grade; } judgment;
typedef struct { const char *s; uint32_t n; int32_t number; } qslot;

typedef struct {
    PyObject_HEAD
    char *text;          /* the file's bytes: the ids point into them */
    Py_ssize_t queries;
    span *qids;          /* sorted; a query's number is its index */
    judgment *table;     /* (query, docid) -> grade, open addressing */
    judgment *folded;    /* (query, case-folded docid): judged in some case */
    size_t mask;         /* of both */
    qslot *qtable;       /* qid -> number */
    size_t qmask;
    int32_t *grades;     /* each query's grades, descending, one query after another */
    Py_ssize_t *starts;  /* where each query's grades start, then the total */
} Qrels;

static int qid_number(const Qrels *q, const char *s, size_t n) {
    size_t i = hashed(s, n, 0, 0) & q->qmask;
    for (; q->qtable[i].s; i = (i + 1) & q->qmask)
        if (q->qtable[i].n == n && !memcmp(q->qtable[i].s, s, n)) return q->qtable[i].number;
    return -1;
}

/* The entry of (query, doc) in `table` (q->folded with `fold`: ignoring case), or the free one where it would go. */
/* The entry of (query, doc), whose keyed(hashed(doc, n, 0, fold), query) is `h`, in `table` (q->folded with `fold`:
 * ignoring case), or the free one where it would go. */
static judgment *slot_at(const Qrels *q, judgment *table, int32_t query, const char *doc, size_t n, int fold,
                         uint64_t h) {
    uint32_t tag = tag_of(h);
    size_t i = h & q->mask;
    for (; table[i].tag; i = (i + 1) & q->mask) {
        if (table[i].tag != tag || table[i].query != query || table[i].len != n) continue;
        const char *id = q->text + table[i].doc;
        if (fold ? same_folded(id, doc, n) : !memcmp(id, doc, n)) return &table[i];
    }
    return &table[i];
}

static judgment *slot(const Qrels *q, judgment *table, int32_t query, const char *doc, size_t n, int fold) {
    return slot_at(q, table, query, doc, n, fold, keyed(hashed(doc, n, 0, fold), query));
}

/* judgments graded `level` or above for a query */
static Py_ssize_t num_rel(const Qrels *q, int32_t query, int32_t level) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = q->starts[query]; i < q->starts[query + 1] && q->grades[i] >= level; i++) count++;
    return count;
}

/* A zeroed table of `bytes`, in huge pages where the kernel gives them (a large qrels' tables are read at
 * random: with 4 KiB pages nearly every look-up also missed the TLB); NULL where memory ran out. */
static void *table_of(size_t bytes) {
    void *table = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (table == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(table, bytes, MADV_HUGEPAGE);
#endif
    return table;
}

static void Qrels_dealloc(Qrels *self) {
    free(self->text);
    free(self->qids);
    if (self->table) munmap(self->table, (self->mask + 1) * sizeof(judgment));
    if (self->folded) munmap(self->folded, (self->mask + 1) * sizeof(judgment));
    free(self->qtable);
    free(self->grades);
    free(self->starts);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static char *slurp(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    struct stat info;
    size_t capacity = !fstat(fd, &info) && info.st_size > 0 ? (size_t)info.st_size + 1 : 1 << 16, used = 0;
    char *text = malloc(capacity + 1);
    for (;;) {
        if (!text) break;
        if (used == capacity) {
            char *grown = realloc(text, 2 * capacity + 1);
            if (!grown) { free(text); text = NULL; break; }
            text = grown;
            capacity *= 2;
        }
        ssize_t got = read(fd, text + used, capacity - used);
        if (got < 0) { if (errno == EINTR) continue; free(text); text = NULL; break; }
        if (got == 0) break;
        used += (size_t)got;
    }
    close(fd);
    if (text) { text[used] = '\n'; *size = used; }
    return text;
}

static int span_order(const void *a, const void *b) {
    const span *x = a, *y = b;
    return compare_ids(x->s, x->n, y->s, y->n);
}

static int descending(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

/* qid -> its slot in q->qtable (free where it is not there), the table grown to hold one more */
static qslot *qid_slot(Qrels *q, const char *s, size_t n) {
    if (2 * ((size_t)q->queries + 1) > q->qmask + 1) {
        size_t capacity = q->qmask ? 2 * (q->qmask + 1) : 64;
        qslot *table = calloc(capacity, sizeof(qslot));
        if (!table) return NULL;
        for (size_t k = 0; k <= q->qmask && q->qtable; k++) {
            if (!q->qtable[k].s) continue;
            size_t i = hashed(q->qtable[k].s, q->qtable[k].n, 0, 0) & (capacity - 1);
            while (table[i].s) i = (i + 1) & (capacity - 1);
            table[i] = q->qtable[k];
        }
        free(q->qtable);
        q->qtable = table;
        q->qmask = capacity - 1;
    }
    size_t i = hashed(s, n, 0, 0) & q->qmask;
    while (q->qtable[i].s && !(q->qtable[i].n == n && !memcmp(q->qtable[i].s, s, n))) i = (i + 1) & q->qmask;
    return &q->qtable[i];
}

/* The qrels' judgments; 0 where the file is outside the common form (or memory ran out). */
static int read_qrels(Qrels *q, const char *path) {
    size_t size;
    q->text = slurp(path, &size);
    if (!q->text || size > UINT32_MAX) return 0;
    size_t lines = 0;
    for (const char *at = q->text, *end = q->text + size; (at = memchr(at, '\n', (size_t)(end - at))); at++) lines++;
    lines += size && q->text[size - 1] != '\n';
    if (!lines) return 0;
    size_t capacity = 2;
    while (capacity < 2 * lines) capacity <<= 1;
    q->mask = capacity - 1;
    q->table = table_of(capacity * sizeof(judgment));
    q->folded = table_of(capacity * sizeof(judgment));
    q->qids = malloc(lines * sizeof(span));
    int32_t *query_of = malloc(lines * sizeof(int32_t)), *grade = malloc(lines * sizeof(int32_t));
    span *doc = malloc(lines * sizeof(span));
    int ok = q->table && q->folded && q->qids && query_of && grade && doc;
    size_t count = 0;
    char *line = q->text, *end = q->text + size;
    while (ok && line < end) {
        char *newline = memchr(line, '\n', (size_t)(end - line) + 1);
        span f[5];
        int32_t value;
        if (split(line, (size_t)(newline - line), f, 4) != 4 || f[0].s[0] == '#' || !parse_grade(f[3], &value)) {
            ok = 0;
            break;
        }
        const span *before = count ? &q->qids[query_of[count - 1]] : NULL;  /* the line before's query */
        if (!before || before->n != f[0].n || memcmp(before->s, f[0].s, f[0].n)) {
            qslot *known = qid_slot(q, f[0].s, f[0].n);
            if (!known) { ok = 0; break; }
            if (!known->s) {
                *known = (qslot){f[0].s, (uint32_t)f[0].n, (int32_t)q->queries};
                q->qids[q->queries++] = f[0];
            }
            query_of[count] = known->number;
        } else {
            query_of[count] = query_of[count - 1];
        }
        grade[count] = value;
        doc[count] = f[2];
        count++;
        line = newline + 1;
    }
    int32_t *renumber = ok ? malloc((size_t)q->queries * sizeof(int32_t)) : NULL;
    q->starts = ok ? calloc((size_t)q->queries + 1, sizeof(Py_ssize_t)) : NULL;
    q->grades = ok ? malloc(count * sizeof(int32_t)) : NULL;
    Py_ssize_t *fill = ok ? malloc(((size_t)q->queries + 1) * sizeof(Py_ssize_t)) : NULL;
    ok = renumber && q->starts && q->grades && fill;
    if (ok) {  /* number the queries in sorted order, then key the judgments by those numbers */
        qsort(q->qids, (size_t)q->queries, sizeof(span), span_order);
        for (Py_ssize_t n = 0; ok && n < q->queries; n++) {
            qslot *known = qid_slot(q, q->qids[n].s, q->qids[n].n);
            if (!known) { ok = 0; break; }
            renumber[known->number] = (int32_t)n;
            known->number = (int32_t)n;
        }
    }
    enum { AHEAD = 16 };  /* as grade(): each slot fetched AHEAD judgments before it is filled */
    uint64_t hashes[AHEAD], folds[AHEAD];
    for (size_t k = 0; ok && k < count + AHEAD; k++) {
        if (k >= AHEAD) {
            size_t i = k - AHEAD;
            int32_t number = query_of[i];
            uint32_t at = (uint32_t)(doc[i].s - q->text), len = (uint32_t)doc[i].n;
            judgment *j = slot_at(q, q->table, number, doc[i].s, doc[i].n, 0, hashes[k % AHEAD]);
            if (j->tag) { ok = 0; break; }  /* judged twice: the exact reader names both lines */
            *j = (judgment){tag_of(hashes[k % AHEAD]), at, len, number, grade[i]};
            j = slot_at(q, q->folded, number, doc[i].s, doc[i].n, 1, folds[k % AHEAD]);
            if (!j->tag) *j = (judgment){tag_of(folds[k % AHEAD]), at, len, number, 0};
            q->starts[number + 1]++;
        }
        if (k < count) {
            int32_t number = query_of[k] = renumber[query_of[k]];
            hashes[k % AHEAD] = keyed(hashed(doc[k].s, doc[k].n, 0, 0), number);
            folds[k % AHEAD] = keyed(hashed(doc[k].s, doc[k].n, 0, 1), number);
            __builtin_prefetch(&q->table[hashes[k % AHEAD] & q->mask]);
            __builtin_prefetch(&q->folded[folds[k % AHEAD] & q->mask]);
        }
    }
    if (ok) {  /* each query's grades, descending */
        for (Py_ssize_t n = 0; n < q->queries; n++) q->starts[n + 1] += q->starts[n];
        memcpy(fill, q->starts, ((size_t)q->queries + 1) * sizeof(Py_ssize_t));
        for (size_t k = 0; k < count; k++) q->grades[fill[query_of[k]]++] = grade[k];
        for (Py_ssize_t n = 0; n < q->queries; n++)
            qsort(q->grades + q->starts[n], (size_t)(q->starts[n + 1] - q->starts[n]), sizeof(int32_t), descending);
    }
    free(fill);
    free(renumber);
    free(query_of);
    free(grade);
    free(doc);
    return ok;
}

static PyObject *Qrels_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
    Qrels *self = (Qrels *)type->tp_alloc(type, 0);
    if (!self) { Py_DECREF(path); return NULL; }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = read_qrels(self, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (!ok) {
        Py_DECREF(self);
        PyErr_SetString(NotFast, "qrels outside the common form");
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *Qrels_qids(Qrels *self, void *closure) {
    PyObject *out = PyList_New(self->queries);
    for (Py_ssize_t n = 0; out && n < self->queries; n++) {
        PyObject *qid = PyUnicode_DecodeASCII(self->qids[n].s, (Py_ssize_t)self->qids[n].n, NULL);
        if (!qid) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, n, qid);
    }
    return out;
}

static PyObject *Qrels_grades(Qrels *self, void *closure) {
    PyObject *out = PyList_New(self->queries);
    for (Py_ssize_t n = 0; out && n < self->queries; n++) {
        PyObject *grades = PyList_New(self->starts[n + 1] - self->starts[n]);
        if (!grades) { Py_DECREF(out); return NULL; }
        for (Py_ssize_t i = self->starts[n]; i < self->starts[n + 1]; i++)
            PyList_SET_ITEM(grades, i - self->starts[n], PyLong_FromLong(self->grades[i]));
        PyList_SET_ITEM(out, n, grades);
    }
    return out;
}

static int file_order(const void *a, const void *b) {
    const judgment *x = a, *y = b;
    return (x->doc > y->doc) - (x->doc < y->doc);
}

static PyObject *Qrels_lines(Qrels *self, PyObject *unused) {
    size_t count = 0;
    for (size_t i = 0; i <= self->mask; i++) count += self->table[i].tag != 0;
    judgment *judged = malloc((count + 1) * sizeof(judgment));
    if (!judged) return PyErr_NoMemory();
    count = 0;
    for (size_t i = 0; i <= self->mask; i++)
        if (self->table[i].tag) judged[count++] = self->table[i];
    qsort(judged, count, sizeof(judgment), file_order);
    PyObject *out = PyList_New((Py_ssize_t)count);
    for (size_t k = 0; out && k < count; k++) {
        const span *qid = &self->qids[judged[k].query];
        PyObject *line = Py_BuildValue("(s#s#i)", qid->s, (Py_ssize_t)qid->n, self->text + judged[k].doc,
                                       (Py_ssize_t)judged[k].len, judged[k].grade);
        if (!line) Py_CLEAR(out);
        else PyList_SET_ITEM(out, (Py_ssize_t)k, line);
    }
    free(judged);
    return out;
}

static PyMethodDef Qrels_methods[] = {
    {"lines", (PyCFunction)Qrels_lines, METH_NOARGS, "the judgments (qid, docid, grade) in the file's order"},
    {NULL},
};

static PyGetSetDef Qrels_getset[] = {
    {"qids", (getter)Qrels_qids, NULL, "the judged queries, sorted (trec_eval's order)", NULL},
    {"grades", (getter)Qrels_grades, NULL, "each query's grades, descending, in qids' order", NULL},
    {NULL},
};

static PyTypeObject QrelsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness.evaluate._lean.Qrels",
    .tp_doc = "Qrels(path): a qrels file in the common form (NotFast otherwise)",
    .tp_basicsize = sizeof(Qrels),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Qrels_new,
    .tp_dealloc = (destructor)Qrels_dealloc,
    .tp_getset = Qrels_getset,
    .tp_methods = Qrels_methods,
};

/* ---- runs --------------------------------------------------------------------------------- */

/* a ranked document: its score, where its id is in the ids read (and its hashed()), its grade, its query's group */
typedef struct { double score; size_t doc; uint64_t hash; uint32_t len; int32_t grade; int32_t group; } entry;

typedef struct { int32_t family, cutoff, level; } measure;  /* cutoff, level: -1 for none */

typedef struct {
    const Qrels *qrels;
    const measure *measures;
    int count;          /* measures */
    long depth;         /* -1: every document */
    int strict;         /* a repeated document is NotFast (the exact reader's error) */
    double *values;     /* [measure][query] */
    char *evaluated;    /* per query */
    /* the documents being collected: one query's (streaming) or the run's (whole) */
    entry *entries; size_t used, capacity;
    char *ids; size_t ids_used, ids_capacity;
    /* queries the qrels do not judge, by name (owned copies), for the caller and to see a query twice */
    span *unjudged; size_t unjudged_count, unjudged_capacity;
    int32_t *unjudged_table; size_t unjudged_mask;
    char *seen;         /* per judged query: its documents came already */
    long duplicates, judged_top, shown_top, other_case;
    size_t lines;
    /* the judged queries in the order the run first writes them (the numpy route's order of its rankings,
     * which the docid warning's examples follow) */
    int32_t *order; size_t ordered; char *appeared;
    /* each scored query's top 10 ids, for the docid warning (coverage.docid_warning), by query number: its
     * first in `top_lengths`, its first byte in `top_ids`, how many (0: not scored) */
    int64_t *top_first, *top_at; uint8_t *top_count;
    char *top_ids; size_t top_used, top_capacity;
    uint32_t *top_lengths; size_t top_entries, top_entries_capacity;
    int32_t *ranks;     /* scratch: dedup table */
    size_t ranks_capacity;
    int failed;         /* 1: outside the common form, 2: out of memory, 3: unreadable */
} scoring;

static _Thread_local const char *sort_ids;

static int rank_order(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->group != y->group) return (x->group > y->group) - (x->group < y->group);
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return -compare_ids(sort_ids + x->doc, x->len, sort_ids + y->doc, y->len);
}

static int grow(void **items, size_t *capacity, size_t needed, size_t size) {
    if (needed <= *capacity) return 1;
    size_t bigger = *capacity ? *capacity : 64;
    while (bigger < needed) bigger *= 2;
    void *grown = realloc(*items, bigger * size);
    if (!grown) return 0;
    *items = grown;
    *capacity = bigger;
    return 1;
}

static int is_hit(int32_t grade, int32_t level) { return grade >= level; }

static double ratio(double numerator, double denominator) { return denominator != 0 ? numerator / denominator : 0.0; }

static double ideal_dcg(const Qrels *q, int32_t query, long cutoff) {
    double sum = 0.0;
    Py_ssize_t position = 0;
    for (Py_ssize_t i = q->starts[query]; i < q->starts[query + 1] && q->grades[i] > 0; i++, position++) {
        if (cutoff >= 0 && position >= cutoff) break;
        sum += (double)q->grades[i] / log2((double)(position + 2));
    }
    return sum;
}

/* the measures of one judged query, its documents in trec_eval's order, deduplicated and cut */
static void score_query(scoring *s, int32_t query, const entry *ranked, size_t shown) {
    const Qrels *q = s->qrels;
    size_t top = shown < TOP ? shown : TOP;
    s->shown_top += (long)top;
    s->top_first[query] = (int64_t)s->top_entries;
    s->top_at[query] = (int64_t)s->top_used;
    s->top_count[query] = (uint8_t)top;
    for (size_t i = 0; i < top; i++) {
        if (!grow((void **)&s->top_ids, &s->top_capacity, s->top_used + ranked[i].len, 1)
            || !grow((void **)&s->top_lengths, &s->top_entries_capacity, s->top_entries + 1, sizeof(uint32_t))) {
            s->failed = 2;
            return;
        }
        memcpy(s->top_ids + s->top_used, s->ids + ranked[i].doc, ranked[i].len);
        s->top_used += ranked[i].len;
        s->top_lengths[s->top_entries++] = ranked[i].len;
        s->judged_top += ranked[i].grade >= 0;
        if (ranked[i].grade == NONPOOL)  /* judged for this query only in another case? (coverage._in_other_case) */
            s->other_case += slot(q, q->folded, query, s->ids + ranked[i].doc, ranked[i].len, 1)->tag != 0;
    }
    s->evaluated[query] = 1;
    for (int m = 0; m < s->count; m++) {
        const measure *me = &s->measures[m];
        int32_t level = me->level < 0 ? 1 : me->level;
        size_t limit = me->cutoff >= 0 && (size_t)me->cutoff < shown ? (size_t)me->cutoff : shown;
        double value = 0.0;
        size_t found = 0;
        switch (me->family) {
        case NDCG: {
            double dcg = 0.0;
            for (size_t i = 0; i < limit; i++)
                if (ranked[i].grade >= 1) dcg += (double)ranked[i].grade / log2((double)(i + 2));
            value = ratio(dcg, ideal_dcg(q, query, me->cutoff));
            break;
        }
        case PREC:
            for (size_t i = 0; i < limit; i++) found += is_hit(ranked[i].grade, level);
            value = (double)found / (double)me->cutoff;
            break;
        case RECALL:
            for (size_t i = 0; i < limit; i++) found += is_hit(ranked[i].grade, level);
            value = ratio((double)found, (double)num_rel(q, query, level));
            break;
        case AP: {
            double sum = 0.0;
            for (size_t i = 0; i < limit; i++)
                if (is_hit(ranked[i].grade, level)) { found++; sum += (double)found / (double)(i + 1); }
            value = ratio(sum, (double)num_rel(q, query, level));
            break;
        }
        case RR:
            for (size_t i = 0; i < limit; i++)
                if (is_hit(ranked[i].grade, level)) { value = 1.0 / (double)(i + 1); break; }
            break;
        case RPREC: {
            Py_ssize_t total = num_rel(q, query, level);
            size_t cut = (size_t)total < shown ? (size_t)total : shown;
            for (size_t i = 0; i < cut; i++) found += is_hit(ranked[i].grade, level);
            value = ratio((double)found, cut > 0 ? (double)total : 0.0);
            break;
        }
        case SUCCESS:
            for (size_t i = 0; i < limit; i++) found += is_hit(ranked[i].grade, level);
            value = found > 0 ? 1.0 : 0.0;
            break;
        case JUDGED:
            for (size_t i = 0; i < limit; i++) found += ranked[i].grade == NONPOOL;
            value = (double)(limit - found) / (double)limit;
            break;
        case NUMQ:
            value = 1.0;
            break;
        case NUMREL:
            value = (double)num_rel(q, query, 1);
            break;
        case NUMRET:
            if (me->level < 0) {
                value = (double)shown;
            } else {
                for (size_t i = 0; i < shown; i++) found += is_hit(ranked[i].grade, me->level);
                value = (double)found;
            }
            break;
        }
        s->values[(size_t)m * (size_t)q->queries + (size_t)query] = value;
    }
}

/* Each document's grade, NONPOOL where the qrels do not judge it for the query (UNJUDGED: graded below 0):
 * looked up AHEAD documents behind the one whose slot is fetched, so the memory reads overlap (the table
 * of a large qrels is far bigger than the caches). */
static void grade(const Qrels *q, int32_t query, entry *ranked, size_t n, const char *ids) {
    enum { AHEAD = 16 };
    uint64_t hashes[AHEAD];
    for (size_t k = 0; k < n + AHEAD; k++) {
        if (k >= AHEAD) {  /* first the one whose slot was fetched AHEAD documents ago, then its ring place */
            entry *e = &ranked[k - AHEAD];
            const judgment *j = slot_at(q, q->table, query, ids + e->doc, e->len, 0, hashes[k % AHEAD]);
            e->grade = !j->tag ? NONPOOL : j->grade < 0 ? UNJUDGED : j->grade;
        }
        if (k < n) {
            hashes[k % AHEAD] = keyed(ranked[k].hash, query);
            __builtin_prefetch(&q->table[hashes[k % AHEAD] & q->mask]);
        }
    }
}

/* One group of entries (one query's documents): ordered, deduplicated, cut, graded and scored. */
static void finish_group(scoring *s, entry *group, size_t n) {
    if (!n) return;
    sort_ids = s->ids;
    size_t i = 1;
    while (i < n && rank_order(&group[i - 1], &group[i]) < 0) i++;
    if (i < n) qsort(group, n, sizeof(entry), rank_order);
    /* a repeated document: the first in rank order is its highest score */
    size_t capacity = 2;
    while (capacity < 2 * n) capacity <<= 1;
    if (!grow((void **)&s->ranks, &s->ranks_capacity, capacity, sizeof(int32_t))) { s->failed = 2; return; }
    memset(s->ranks, 0xff, capacity * sizeof(int32_t));
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        const char *id = s->ids + group[k].doc;
        size_t h = group[k].hash & (capacity - 1);
        int repeated = 0;
        for (; s->ranks[h] >= 0; h = (h + 1) & (capacity - 1)) {
            const entry *other = &group[s->ranks[h]];
            if (other->len == group[k].len && !memcmp(s->ids + other->doc, id, other->len)) { repeated = 1; break; }
        }
        if (repeated) {
            if (s->strict) { s->failed = 1; return; }
            s->duplicates++;
            continue;
        }
        group[kept] = group[k];
        s->ranks[h] = (int32_t)kept;
        kept++;
    }
    if (group[0].group < 0) return;  /* a query the qrels do not judge: counted, not scored */
    size_t shown = s->depth >= 0 && (size_t)s->depth < kept ? (size_t)s->depth : kept;
    grade(s->qrels, group[0].group, group, shown, s->ids);
    score_query(s, group[0].group, group, shown);
}

/* The group number of a query: its qrels number, or -(k + 1) for the k-th unjudged one; -INT32_MAX
 * when it is out of memory. */
static int32_t group_of(scoring *s, span qid) {
    int32_t number = qid_number(s->qrels, qid.s, qid.n);
    if (number >= 0) return number;
    if (2 * (s->unjudged_count + 1) > s->unjudged_mask + 1 || !s->unjudged_table) {
        size_t capacity = s->unjudged_mask ? 2 * (s->unjudged_mask + 1) : 64;
        int32_t *table = malloc(capacity * sizeof(int32_t));
        if (!table) return -INT32_MAX;
        memset(table, 0xff, capacity * sizeof(int32_t));
        for (size_t k = 0; k < s->unjudged_count; k++) {
            size_t h = hashed(s->unjudged[k].s, s->unjudged[k].n, 3, 0) & (capacity - 1);
            while (table[h] >= 0) h = (h + 1) & (capacity - 1);
            table[h] = (int32_t)k;
        }
        free(s->unjudged_table);
        s->unjudged_table = table;
        s->unjudged_mask = capacity - 1;
    }
    size_t h = hashed(qid.s, qid.n, 3, 0) & s->unjudged_mask;
    for (; s->unjudged_table[h] >= 0; h = (h + 1) & s->unjudged_mask) {
        const span *known = &s->unjudged[s->unjudged_table[h]];
        if (known->n == qid.n && !memcmp(known->s, qid.s, qid.n)) return -(s->unjudged_table[h] + 1);
    }
    char *copy = malloc(qid.n);
    if (!copy || !grow((void **)&s->unjudged, &s->unjudged_capacity, s->unjudged_count + 1, sizeof(span))) {
        free(copy);
        return -INT32_MAX;
    }
    memcpy(copy, qid.s, qid.n);
    s->unjudged[s->unjudged_count] = (span){copy, qid.n};
    s->unjudged_table[h] = (int32_t)s->unjudged_count;
    return -(int32_t)(++s->unjudged_count);
}

/* Read the lines of the run that start in bytes [start, end) (-1: to its end); streaming: score each query
 * when the next begins, 0 (and nothing scored since) where a query comes back after another (the caller
 * reads again, whole). Where no line starts there, s->lines stays 0. */
static int read_run(scoring *s, const char *path, off_t start, off_t end_at, int streaming) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { s->failed = 3; return 1; }
    if (start && lseek(fd, start, SEEK_SET) < 0) { close(fd); s->failed = 3; return 1; }
    off_t remaining = end_at < 0 ? -1 : end_at - start;
    char *block = malloc(BLOCK + 1);
    size_t held = 0, lines = 0;
    int32_t current = INT32_MIN;
    int eof = 0;
    char *unjudged_seen = NULL;  /* streaming: unjudged queries whose documents came already */
    size_t unjudged_seen_size = 0;
    if (!block) { close(fd); s->failed = 2; return 1; }
    while (!s->failed) {
        if (!eof) {
            size_t room = BLOCK - held;
            if (remaining >= 0 && (off_t)room > remaining) room = (size_t)remaining;
            ssize_t got = room ? read(fd, block + held, room) : 0;
            if (got < 0) { if (errno == EINTR) continue; s->failed = 3; break; }
            if (got == 0) eof = 1;
            held += (size_t)got;
            if (remaining >= 0) remaining -= got;
        }
        if (eof && held && block[held - 1] != '\n') block[held++] = '\n';  /* a last line without its end */
        char *line = block, *end = block + held;
        char *newline;
        while (!s->failed && line < end && (newline = memchr(line, '\n', (size_t)(end - line)))) {
            span f[7];
            double score;
            lines++;
            if (split(line, (size_t)(newline - line), f, 6) != 6 || f[0].s[0] == '#' || !digits(f[3])
                || !parse_score(f[4], &score) || f[2].n > UINT32_MAX) { s->failed = 1; break; }
            int same = current != INT32_MIN && ((current >= 0 && s->qrels->qids[current].n == f[0].n
                                                 && !memcmp(s->qrels->qids[current].s, f[0].s, f[0].n))
                                                || (current < 0 && s->unjudged[-current - 1].n == f[0].n
                                                    && !memcmp(s->unjudged[-current - 1].s, f[0].s, f[0].n)));
            if (!same) {
                int32_t group = group_of(s, f[0]);
                if (group == -INT32_MAX) { s->failed = 2; break; }
                if (streaming) {
                    finish_group(s, s->entries, s->used);
                    s->used = 0;
                    s->ids_used = 0;
                    int again;
                    if (group >= 0) {
                        again = s->seen[group];
                        s->seen[group] = 1;
                    } else {
                        size_t k = (size_t)(-group - 1);
                        if (k >= unjudged_seen_size) {
                            size_t bigger = unjudged_seen_size ? 2 * unjudged_seen_size : 64;
                            while (bigger <= k) bigger *= 2;
                            char *grown = realloc(unjudged_seen, bigger);
                            if (!grown) { s->failed = 2; break; }
                            memset(grown + unjudged_seen_size, 0, bigger - unjudged_seen_size);
                            unjudged_seen = grown;
                            unjudged_seen_size = bigger;
                        }
                        again = unjudged_seen[k];
                        unjudged_seen[k] = 1;
                    }
                    if (again) { free(block); free(unjudged_seen); close(fd); return 0; }
                }
                current = group;
                if (group >= 0 && !s->appeared[group]) {
                    s->appeared[group] = 1;
                    s->order[s->ordered++] = group;
                }
            }
            if (!grow((void **)&s->entries, &s->capacity, s->used + 1, sizeof(entry))
                || !grow((void **)&s->ids, &s->ids_capacity, s->ids_used + f[2].n, 1)) { s->failed = 2; break; }
            memcpy(s->ids + s->ids_used, f[2].s, f[2].n);
            s->entries[s->used++] = (entry){score, s->ids_used, hashed(f[2].s, f[2].n, 0, 0), (uint32_t)f[2].n,
                                            NONPOOL,  /* graded once cut to the depth (grade()) */
                                            current};
            s->ids_used += f[2].n;
            line = newline + 1;
        }
        if (s->failed) break;
        held = (size_t)(end - line);
        memmove(block, line, held);
        if (eof && !held) break;
        if (!eof && held == BLOCK) { s->failed = 1; break; }  /* a line longer than a block */
    }
    free(block);
    free(unjudged_seen);
    close(fd);
    s->lines += lines;
    if (s->failed) return 1;
    if (streaming) {
        finish_group(s, s->entries, s->used);
    } else {  /* whole: every query's documents, grouped */
        sort_ids = s->ids;
        if (s->used) qsort(s->entries, s->used, sizeof(entry), rank_order);
        size_t start = 0;
        for (size_t k = 1; k <= s->used && !s->failed; k++)
            if (k == s->used || s->entries[k].group != s->entries[start].group) {
                finish_group(s, s->entries + start, k - start);
                start = k;
            }
    }
    return 1;
}

static void reset(scoring *s) {
    size_t cells = (size_t)s->count * (size_t)s->qrels->queries;
    memset(s->values, 0, cells * sizeof(double));
    memset(s->evaluated, 0, (size_t)s->qrels->queries);
    memset(s->seen, 0, (size_t)s->qrels->queries);
    s->used = s->ids_used = 0;
    s->duplicates = s->judged_top = s->shown_top = s->other_case = 0;
    s->lines = 0;
    s->ordered = 0;
    memset(s->appeared, 0, (size_t)s->qrels->queries);
    s->top_used = s->top_entries = 0;
    memset(s->top_count, 0, (size_t)s->qrels->queries);
    for (size_t k = 0; k < s->unjudged_count; k++) free((void *)s->unjudged[k].s);
    s->unjudged_count = 0;
    free(s->unjudged_table);
    s->unjudged_table = NULL;
    s->unjudged_mask = 0;
}

static void release(scoring *s) {
    for (size_t k = 0; k < s->unjudged_count; k++) free((void *)s->unjudged[k].s);
    free(s->unjudged);
    free(s->unjudged_table);
    free(s->values);
    free(s->evaluated);
    free(s->seen);
    free(s->entries);
    free(s->ids);
    free(s->ranks);
    free(s->top_first);
    free(s->top_at);
    free(s->order);
    free(s->appeared);
    free(s->top_count);
    free(s->top_ids);
    free(s->top_lengths);
}

/* {qid: its top 10 ids in trec_eval's order} of the scored queries, in the order the run first writes them */
static PyObject *top_ids(const scoring *s) {
    PyObject *tops = PyDict_New();
    for (size_t k = 0; tops && k < s->ordered; k++) {
        int32_t n = s->order[k];
        if (!s->top_count[n]) continue;
        size_t at = (size_t)s->top_at[n], first = (size_t)s->top_first[n];
        PyObject *ids = PyList_New(s->top_count[n]);
        PyObject *qid = PyUnicode_DecodeASCII(s->qrels->qids[n].s, (Py_ssize_t)s->qrels->qids[n].n, NULL);
        int ok = ids && qid;
        for (size_t k = 0; ok && k < s->top_count[n]; k++) {
            PyObject *id = PyUnicode_DecodeASCII(s->top_ids + at, s->top_lengths[first + k], NULL);
            ok = id != NULL;
            if (ok) PyList_SET_ITEM(ids, (Py_ssize_t)k, id);
            at += s->top_lengths[first + k];
        }
        if (!ok || PyDict_SetItem(tops, qid, ids) < 0) Py_CLEAR(tops);
        Py_XDECREF(ids);
        Py_XDECREF(qid);
    }
    return tops;
}


/* A scoring of `measures` on `qrels`, its per-query arrays made; 0 where memory ran out. */
static int start_scoring(scoring *s, const Qrels *qrels, const measure *measures, int count, long depth,
                         int strict) {
    size_t queries = (size_t)qrels->queries;
    *s = (scoring){.qrels = qrels, .measures = measures, .count = count, .depth = depth, .strict = strict};
    s->values = calloc((size_t)count * queries + 1, sizeof(double));
    s->evaluated = calloc(queries + 1, 1);
    s->seen = calloc(queries + 1, 1);
    s->top_first = calloc(queries + 1, sizeof(int64_t));
    s->top_at = calloc(queries + 1, sizeof(int64_t));
    s->top_count = calloc(queries + 1, 1);
    s->order = calloc(queries + 1, sizeof(int32_t));
    s->appeared = calloc(queries + 1, 1);
    return s->values && s->evaluated && s->seen && s->top_first && s->top_at && s->top_count && s->order
           && s->appeared;
}

/* ---- one run on all cores: parts of the file, each a whole number of queries ----------------- */

#define PART (16 << 20)  /* the least a part is worth a thread for */

/* Where each part of a file of `size` bytes starts (cuts[0] = 0, cuts[parts] = size): at a line whose query
 * differs from the line before, looked for within a block after each even share; fewer parts where a query
 * runs on past that. */
static int cut_points(const char *path, off_t size, int parts, off_t *cuts) {
    int made = 1;
    cuts[0] = 0;
    int fd = open(path, O_RDONLY);
    char *window = fd >= 0 ? malloc(BLOCK) : NULL;
    for (int p = 1; window && p < parts; p++) {
        off_t at = size / parts * p;
        ssize_t got = pread(fd, window, BLOCK, at);
        if (got <= 0) break;
        char *line = memchr(window, '\n', (size_t)got), *end = window + got;
        if (!line) break;
        line++;  /* the first whole line */
        char *space = memchr(line, ' ', (size_t)(end - line));
        if (!space) break;
        span first = {line, (size_t)(space - line)};
        off_t cut = -1;
        for (char *next; (next = memchr(line, '\n', (size_t)(end - line))) && next + 1 < end; ) {
            line = next + 1;
            size_t n = (size_t)(end - line);
            if (n < first.n + 1) break;
            if (memcmp(line, first.s, first.n) || line[first.n] != ' ') { cut = at + (line - window); break; }
        }
        if (cut <= cuts[made - 1] || cut >= size) break;
        cuts[made++] = cut;
    }
    free(window);
    if (fd >= 0) close(fd);
    cuts[made] = size;
    return made;
}

typedef struct { scoring s; const char *path; off_t start, end; int again; } part;

static void *read_part(void *arg) {
    part *p = arg;
    p->again = !read_run(&p->s, p->path, p->start, p->end, 1);
    return NULL;
}

/* Part `from`'s scores moved into `into`; 0 where a query is in both (the run is read again, whole). */
static int merged(scoring *into, scoring *from) {
    size_t queries = (size_t)into->qrels->queries;
    for (size_t n = 0; n < queries; n++)
        if (from->evaluated[n] && into->evaluated[n]) return 0;
    for (size_t k = 0; k < from->unjudged_count; k++) {
        size_t before = into->unjudged_count;
        int32_t group = group_of(into, from->unjudged[k]);
        if (group == -INT32_MAX) { into->failed = 2; return 1; }
        if (into->unjudged_count == before) return 0;
    }
    for (size_t n = 0; n < queries; n++) {
        if (!from->evaluated[n]) continue;
        into->evaluated[n] = 1;
        for (int m = 0; m < into->count; m++)
            into->values[(size_t)m * queries + n] = from->values[(size_t)m * queries + n];
        size_t bytes = 0, first = (size_t)from->top_first[n];
        for (size_t k = 0; k < from->top_count[n]; k++) bytes += from->top_lengths[first + k];
        if (!grow((void **)&into->top_ids, &into->top_capacity, into->top_used + bytes, 1)
            || !grow((void **)&into->top_lengths, &into->top_entries_capacity, into->top_entries + from->top_count[n],
                     sizeof(uint32_t))) {
            into->failed = 2;
            return 1;
        }
        into->top_first[n] = (int64_t)into->top_entries;
        into->top_at[n] = (int64_t)into->top_used;
        into->top_count[n] = from->top_count[n];
        if (bytes) memcpy(into->top_ids + into->top_used, from->top_ids + from->top_at[n], bytes);
        if (from->top_count[n])
            memcpy(into->top_lengths + into->top_entries, from->top_lengths + first,
                   from->top_count[n] * sizeof(uint32_t));
        into->top_used += bytes;
        into->top_entries += from->top_count[n];
    }
    for (size_t k = 0; k < from->ordered; k++)  /* the parts in file order: a part's queries after the one's before */
        if (!into->appeared[from->order[k]]) {
            into->appeared[from->order[k]] = 1;
            into->order[into->ordered++] = from->order[k];
        }
    into->duplicates += from->duplicates;
    into->judged_top += from->judged_top;
    into->shown_top += from->shown_top;
    into->other_case += from->other_case;
    into->lines += from->lines;
    return 1;
}

/* The run scored into `s` (started): in up to `threads` parts at once where it is large, one after
 * another otherwise; read again whole, on one thread, where a query is written in two places. */
static void score_run(scoring *s, const char *path, int threads) {
    struct stat info;
    int parts = 1;
    off_t cuts[65];
    if (threads > 64) threads = 64;
    if (threads > 1 && !stat(path, &info) && info.st_size >= 2 * PART) {
        int most = (int)(info.st_size / PART);
        parts = cut_points(path, info.st_size, threads < most ? threads : most, cuts);
    }
    int again = 0;
    if (parts == 1) {
        again = !read_run(s, path, 0, -1, 1);
    } else {
        part *work = calloc((size_t)parts, sizeof(part));
        pthread_t *running = calloc((size_t)parts, sizeof(pthread_t));
        int started = 0, ok = work && running;
        for (int p = 0; ok && p < parts; p++) {
            ok = start_scoring(&work[p].s, s->qrels, s->measures, s->count, s->depth, s->strict);
            work[p].path = path;
            work[p].start = cuts[p];
            work[p].end = cuts[p + 1];
        }
        for (; ok && started < parts; started++)
            if (pthread_create(&running[started], NULL, read_part, &work[started])) break;
        for (int p = 0; p < started; p++) pthread_join(running[p], NULL);
        if (!ok) s->failed = 2;
        else if (started < parts) again = 1;  /* no thread: read on this one */
        for (int p = 0; ok && p < started && !s->failed; p++) {
            if (work[p].s.failed) s->failed = work[p].s.failed;
            else if (work[p].again || !merged(s, &work[p].s)) again = 1;
        }
        for (int p = 0; work && p < parts; p++) release(&work[p].s);
        free(work);
        free(running);
    }
    if (again && !s->failed) {
        reset(s);
        read_run(s, path, 0, -1, 0);
    }
    if (!s->lines && !s->failed) s->failed = 1;  /* empty: the exact reader says so */
    if (!s->failed && s->unjudged_count) qsort(s->unjudged, s->unjudged_count, sizeof(span), span_order);
}

static PyObject *evaluate(PyObject *module, PyObject *args) {
    Qrels *qrels;
    PyObject *path, *specs;
    long depth;
    int strict, threads;
    double rarely;
    if (!PyArg_ParseTuple(args, "O!O&lOpdi", &QrelsType, &qrels, PyUnicode_FSConverter, &path, &depth, &specs,
                          &strict, &rarely, &threads))
        return NULL;
    PyObject *seq = PySequence_Fast(specs, "measures: a sequence of (family, cutoff, level)");
    if (!seq) { Py_DECREF(path); return NULL; }
    int count = (int)PySequence_Fast_GET_SIZE(seq);
    measure *measures = calloc((size_t)count + 1, sizeof(measure));
    for (int m = 0; measures && m < count; m++) {
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, m), "iii", &measures[m].family, &measures[m].cutoff,
                              &measures[m].level)
            || measures[m].family < 0 || measures[m].family >= FAMILIES
            || (measures[m].cutoff <= 0 && (measures[m].family == PREC || measures[m].family == SUCCESS
                                            || measures[m].family == JUDGED))) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a measure the lean route does not compute");
            free(measures);
            Py_DECREF(seq);
            Py_DECREF(path);
            return NULL;
        }
    }
    Py_DECREF(seq);
    if (!measures) { Py_DECREF(path); return PyErr_NoMemory(); }
    scoring s;
    size_t queries = (size_t)qrels->queries;
    if (!start_scoring(&s, qrels, measures, count, depth, strict)) {
        release(&s);
        free(measures);
        Py_DECREF(path);
        return PyErr_NoMemory();
    }
    Py_INCREF(qrels);
    Py_BEGIN_ALLOW_THREADS
    score_run(&s, PyBytes_AS_STRING(path), threads);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    PyObject *result = NULL;
    if (s.failed == 2) {
        PyErr_NoMemory();
    } else if (s.failed) {
        PyErr_SetString(NotFast, s.failed == 3 ? "run unreadable" : "run outside the common form");
    } else {
        PyObject *values = PyList_New(count), *evaluated = PyList_New((Py_ssize_t)queries),
                 *unjudged = PyList_New((Py_ssize_t)s.unjudged_count);
        int ok = values && evaluated && unjudged;
        for (int m = 0; ok && m < count; m++) {
            PyObject *column = PyList_New((Py_ssize_t)queries);
            ok = column != NULL;
            for (size_t n = 0; ok && n < queries; n++) {
                double value = s.values[(size_t)m * queries + n];
                if (!s.evaluated[n]) {  /* a query the run lacks (trec_eval -c): 0, or its count */
                    value = measures[m].family == NUMQ ? 1.0
                            : measures[m].family == NUMREL ? (double)num_rel(qrels, (int32_t)n, 1) : 0.0;
                }
                PyObject *number = PyFloat_FromDouble(value);
                ok = number != NULL;
                if (ok) PyList_SET_ITEM(column, (Py_ssize_t)n, number);
            }
            if (ok) PyList_SET_ITEM(values, m, column);
            else Py_XDECREF(column);  /* its unset items are NULL, which a list lets go of */
        }
        for (size_t n = 0; ok && n < queries; n++)
            PyList_SET_ITEM(evaluated, (Py_ssize_t)n, PyBool_FromLong(s.evaluated[n]));
        for (size_t k = 0; ok && k < s.unjudged_count; k++) {
            PyObject *qid = PyUnicode_DecodeASCII(s.unjudged[k].s, (Py_ssize_t)s.unjudged[k].n, NULL);
            ok = qid != NULL;
            if (ok) PyList_SET_ITEM(unjudged, (Py_ssize_t)k, qid);
        }
        /* the ids, only where the top 10s are so rarely judged that the docid warning reads them: strings cost */
        PyObject *tops = NULL;
        if (ok && s.shown_top > 0 && (double)s.judged_top < rarely * (double)s.shown_top) {
            tops = top_ids(&s);
            ok = tops != NULL;
        } else if (ok) {
            tops = Py_NewRef(Py_None);
        }
        if (ok)
            result = Py_BuildValue("(NNNllllN)", values, evaluated, unjudged, s.duplicates, s.judged_top, s.shown_top,
                                   s.other_case, tops);
        else {
            Py_XDECREF(values);
            Py_XDECREF(evaluated);
            Py_XDECREF(unjudged);
        }
    }
    Py_DECREF(qrels);
    release(&s);
    free(measures);
    return result;
}

static PyMethodDef methods[] = {
    {"evaluate", evaluate, METH_VARARGS,
     "evaluate(qrels, path, depth, measures, strict, rarely) -> (values, evaluated, unjudged, duplicates, "
     "judged_top, shown_top, other_case, tops): per measure (family, cutoff, level) each qrels query's value, "
     "which queries the run has, the run's queries the qrels lack (sorted), repeated documents dropped, and of "
     "the judged queries' top 10s the documents judged, shown, and judged for their query only in another case, "
     "and {qid: top 10 ids} where judged < rarely * shown (else None). depth -1: every document. NotFast where "
     "the run is outside the common form."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "harness.evaluate._lean",
                                    "trec_eval's measures from files in the common form, without numpy", -1, methods};

PyMODINIT_FUNC PyInit__lean(void) {
    if (PyType_Ready(&QrelsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    NotFast = PyErr_NewExceptionWithDoc("harness.evaluate._lean.NotFast",
                                        "outside the common form: score with the numpy route", NULL, NULL);
    if (!NotFast || PyModule_AddObjectRef(m, "NotFast", NotFast) < 0
        || PyModule_AddObjectRef(m, "Qrels", (PyObject *)&QrelsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    for (int f = 0; f < FAMILIES; f++) {
        static const char *names[] = {"nDCG", "P", "R", "AP", "RR", "Rprec", "Success", "Judged", "NumQ", "NumRel",
                                      "NumRet"};
        if (PyModule_AddIntConstant(m, names[f], f) < 0) { Py_DECREF(m); return NULL; }
    }
    return m;
}
