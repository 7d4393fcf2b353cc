/* pickle.c — the pickle machine for memory snapshots (pickle.h): a value
 * stack, a mark stack and a memo, each grown one element at a time and
 * bounded by the opcodes read; values from an arena freed at once. */
#include "snapshot/pickle.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 4096

typedef struct arena_block {
    struct arena_block *next;
    size_t used;
    pk_value v[ARENA_BLOCK];
} arena_block;

struct pk_doc {
    arena_block *blocks;
    size_t values;
    size_t items; /* container slots: shared values appended many times count each time */
};

typedef struct machine {
    const uint8_t *base, *p, *end;
    const char *path;
    vf_error *err;
    pk_doc *doc;
    pk_value **stack;
    size_t n_stack, cap_stack;
    size_t *marks;
    size_t n_marks, cap_marks;
    pk_value **memo;
    size_t n_memo, cap_memo;
} machine;

static pk_value pk_none = {.kind = PK_NONE}, pk_true = {.kind = PK_BOOL, .i = 1}, pk_false = {.kind = PK_BOOL};

static vf_status bad(machine *m, const char *what)
{
    return vf__err(m->err, VF_EFORMAT, m->path, "malformed pickle at byte %zu: %s",
                   (size_t)(m->p - m->base), what);
}

static pk_value *new_value(machine *m, pk_kind k)
{
    pk_doc *d = m->doc;
    if (d->values >= PK_MAX_VALUES)
        return NULL;
    if (!d->blocks || d->blocks->used == ARENA_BLOCK) {
        arena_block *b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        b->next = d->blocks;
        d->blocks = b;
    }
    pk_value *v = &d->blocks->v[d->blocks->used++];
    d->values++;
    v->kind = k;
    return v;
}

static vf_status no_room(machine *m)
{
    return vf__err(m->err, VF_ENOMEM, m->path, "pickle: out of memory, or more than %zu values or %zu container items", PK_MAX_VALUES, PK_MAX_ITEMS);
}

static vf_status push(machine *m, pk_value *v)
{
    if (!v || !vf__grow((void **)&m->stack, &m->cap_stack, m->n_stack, sizeof *m->stack))
        return no_room(m);
    m->stack[m->n_stack++] = v;
    return VF_OK;
}

static bool append_item(machine *m, pk_value *seq, pk_value *item)
{
    size_t cap = seq->cap;
    if (cap > UINT32_MAX / 2 || m->doc->items >= PK_MAX_ITEMS)
        return false;
    m->doc->items++;
    if (!vf__grow((void **)&seq->items, &cap, seq->n, sizeof *seq->items))
        return false;
    seq->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
    seq->items[seq->n++] = item;
    return true;
}

/* Bytes the opcode takes after itself; false when the pickle ends first. */
static bool take(machine *m, size_t n, const uint8_t **out)
{
    if ((size_t)(m->end - m->p) < n)
        return false;
    *out = m->p;
    m->p += n;
    return true;
}

static uint64_t le(const uint8_t *b, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | b[i];
    return v;
}

/* The top mark's stack position, popped. */
static vf_status pop_mark(machine *m, size_t *at)
{
    if (!m->n_marks)
        return bad(m, "no mark");
    *at = m->marks[--m->n_marks];
    return VF_OK;
}

static vf_status string_op(machine *m, size_t lenbytes, pk_kind k)
{
    const uint8_t *b, *s;
    if (!take(m, lenbytes, &b))
        return bad(m, "truncated length");
    uint64_t n = le(b, lenbytes);
    if (n > (uint64_t)(m->end - m->p) || !take(m, (size_t)n, &s))
        return bad(m, "string past the end");
    if (k == PK_STR && !vf__utf8_valid((const char *)s, (size_t)n))
        return bad(m, "string not UTF-8");
    pk_value *v = new_value(m, k);
    if (!v)
        return no_room(m);
    v->s = (const char *)s;
    v->len = (size_t)n;
    return push(m, v);
}

static vf_status int_op(machine *m, size_t n, bool is_signed)
{
    const uint8_t *b;
    if (!take(m, n, &b))
        return bad(m, "truncated integer");
    uint64_t u = le(b, n);
    pk_value *v = new_value(m, PK_INT);
    if (!v)
        return no_room(m);
    if (is_signed && n < 8 && (u >> (8 * n - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * n);
    memcpy(&v->i, &u, sizeof u);
    return push(m, v);
}

/* LONG1 / LONG4: a little-endian two's-complement integer of n bytes; the
 * snapshot's addresses and sizes fit in 8. */
static vf_status long_op(machine *m, size_t lenbytes)
{
    const uint8_t *b, *d;
    if (!take(m, lenbytes, &b))
        return bad(m, "truncated length");
    uint64_t n = le(b, lenbytes);
    if (n > 8)
        return vf__err(m->err, VF_EUNSUPPORTED, m->path, "pickle: an integer of %llu bytes (at most 8 are read)",
                       (unsigned long long)n);
    if (!take(m, (size_t)n, &d))
        return bad(m, "integer past the end");
    pk_value *v = new_value(m, PK_INT);
    if (!v)
        return no_room(m);
    uint64_t u = le(d, (size_t)n);
    if (n > 0 && n < 8 && (d[n - 1] & 0x80))
        u |= ~(uint64_t)0 << (8 * n);
    memcpy(&v->i, &u, sizeof u);
    return push(m, v);
}

static vf_status float_op(machine *m)
{
    const uint8_t *b;
    if (!take(m, 8, &b))
        return bad(m, "truncated float");
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | b[i]; /* BINFLOAT is big-endian */
    pk_value *v = new_value(m, PK_FLOAT);
    if (!v)
        return no_room(m);
    memcpy(&v->f, &u, sizeof u);
    return push(m, v);
}

/* TUPLE, LIST, DICT (from the mark) and TUPLE1-3 (the top n). */
static vf_status collect(machine *m, pk_kind k, size_t from)
{
    if (from > m->n_stack)
        return bad(m, "stack underflow");
    size_t n = m->n_stack - from;
    if (k == PK_DICT && n % 2)
        return bad(m, "odd number of dict items");
    pk_value *v = new_value(m, k);
    if (!v)
        return no_room(m);
    for (size_t i = from; i < m->n_stack; i++)
        if (!append_item(m, v, m->stack[i]))
            return no_room(m);
    m->n_stack = from;
    return push(m, v);
}

/* APPEND(S), SETITEM(S): the items from `from` into the value below them. */
static vf_status extend(machine *m, size_t from, bool dict)
{
    if (from == 0 || from > m->n_stack)
        return bad(m, "stack underflow");
    pk_value *target = m->stack[from - 1];
    if (target->kind != (dict ? PK_DICT : PK_LIST))
        return bad(m, dict ? "SETITEM(S) on a non-dict" : "APPEND(S) on a non-list");
    if (dict && (m->n_stack - from) % 2)
        return bad(m, "odd number of dict items");
    for (size_t i = from; i < m->n_stack; i++)
        if (!append_item(m, target, m->stack[i]))
            return no_room(m);
    m->n_stack = from;
    return VF_OK;
}

static vf_status memo_put(machine *m, uint64_t idx)
{
    if (!m->n_stack)
        return bad(m, "memo of an empty stack");
    if (idx > m->n_memo) /* pickle.py numbers its memo in order */
        return bad(m, "memo index out of order");
    if (idx == m->n_memo) {
        if (!vf__grow((void **)&m->memo, &m->cap_memo, m->n_memo, sizeof *m->memo))
            return no_room(m);
        m->n_memo++;
    }
    m->memo[idx] = m->stack[m->n_stack - 1];
    return VF_OK;
}

static vf_status memo_get(machine *m, uint64_t idx)
{
    if (idx >= m->n_memo)
        return bad(m, "memo index not set");
    return push(m, m->memo[idx]);
}

static vf_status index_op(machine *m, size_t n, bool get)
{
    const uint8_t *b;
    if (!take(m, n, &b))
        return bad(m, "truncated memo index");
    uint64_t idx = le(b, n);
    return get ? memo_get(m, idx) : memo_put(m, idx);
}

/* Opcodes that import, call or build an object: never run, named. */
static const char *refused_name(uint8_t op)
{
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: case 0x83: case 0x84: return "EXT";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return NULL;
    }
}

/* GLOBAL's "module name" (two lines), for the refusal's message. */
static void global_text(const machine *m, char *buf, size_t cap)
{
    size_t n = 0;
    int lines = 0;
    for (const uint8_t *q = m->p; q < m->end && lines < 2 && n + 1 < cap && n < 80; q++) {
        if (*q == '\n') {
            lines++;
            if (lines < 2)
                buf[n++] = ' ';
        } else {
            buf[n++] = (*q >= 0x20 && *q < 0x7f) ? (char)*q : '?';
        }
    }
    buf[n] = '\0';
}

static vf_status refuse(machine *m, uint8_t op, const char *name)
{
    if (op == 'c') {
        char g[96];
        global_text(m, g, sizeof g);
        return vf__err(m->err, VF_EUNSUPPORTED, m->path,
                       "refused: the pickle names the global '%s' (a memory snapshot holds only dicts, lists, "
                       "strings and numbers; nothing is run)", g);
    }
    return vf__err(m->err, VF_EUNSUPPORTED, m->path,
                   "refused: pickle opcode %s at byte %zu (a memory snapshot holds only dicts, lists, strings and "
                   "numbers; nothing is run)", name, (size_t)(m->p - 1 - m->base));
}

static vf_status step(machine *m, uint8_t op, bool *stop)
{
    const uint8_t *b;
    size_t at = 0;
    vf_status st;
    switch (op) {
    case 0x80: return take(m, 1, &b) ? (b[0] <= 5 ? VF_OK : bad(m, "unknown protocol")) : bad(m, "truncated PROTO");
    case 0x95: return take(m, 8, &b) ? VF_OK : bad(m, "truncated FRAME"); /* framing only groups the opcodes */
    case '.': *stop = true; return VF_OK;
    case '(':
        if (!vf__grow((void **)&m->marks, &m->cap_marks, m->n_marks, sizeof *m->marks))
            return no_room(m);
        m->marks[m->n_marks++] = m->n_stack;
        return VF_OK;
    case '}': return push(m, new_value(m, PK_DICT));
    case ']': return push(m, new_value(m, PK_LIST));
    case ')': return push(m, new_value(m, PK_TUPLE));
    case 'N': return push(m, &pk_none);
    case 0x88: return push(m, &pk_true);
    case 0x89: return push(m, &pk_false);
    case 'K': return int_op(m, 1, false);
    case 'M': return int_op(m, 2, false);
    case 'J': return int_op(m, 4, true);
    case 0x8a: return long_op(m, 1);
    case 0x8b: return long_op(m, 4);
    case 'G': return float_op(m);
    case 0x8c: return string_op(m, 1, PK_STR);
    case 'X': return string_op(m, 4, PK_STR);
    case 0x8d: return string_op(m, 8, PK_STR);
    case 'U': return string_op(m, 1, PK_BYTES);
    case 'T': return string_op(m, 4, PK_BYTES);
    case 'C': return string_op(m, 1, PK_BYTES);
    case 'B': return string_op(m, 4, PK_BYTES);
    case 0x8e: return string_op(m, 8, PK_BYTES);
    case 0x85: case 0x86: case 0x87:
        if (m->n_stack < (size_t)(op - 0x84))
            return bad(m, "stack underflow");
        return collect(m, PK_TUPLE, m->n_stack - (size_t)(op - 0x84));
    case 't': case 'l': case 'd':
        if ((st = pop_mark(m, &at)) != VF_OK)
            return st;
        return collect(m, op == 't' ? PK_TUPLE : op == 'l' ? PK_LIST : PK_DICT, at);
    case 'a': return m->n_stack ? extend(m, m->n_stack - 1, false) : bad(m, "stack underflow");
    case 's': return m->n_stack >= 2 ? extend(m, m->n_stack - 2, true) : bad(m, "stack underflow");
    case 'e': case 'u':
        if ((st = pop_mark(m, &at)) != VF_OK)
            return st;
        return extend(m, at, op == 'u');
    case 0x94: return memo_put(m, m->n_memo);
    case 'q': return index_op(m, 1, false);
    case 'r': return index_op(m, 4, false);
    case 'h': return index_op(m, 1, true);
    case 'j': return index_op(m, 4, true);
    case '0': return m->n_stack ? (m->n_stack--, VF_OK) : bad(m, "stack underflow");
    case '1':
        if ((st = pop_mark(m, &at)) != VF_OK)
            return st;
        m->n_stack = at;
        return VF_OK;
    case '2': return m->n_stack ? push(m, m->stack[m->n_stack - 1]) : bad(m, "stack underflow");
    default: {
        const char *name = refused_name(op);
        if (name)
            return refuse(m, op, name);
        return vf__err(m->err, VF_EUNSUPPORTED, m->path,
                       "pickle opcode 0x%02x is not read (protocol 0/1 text opcodes and unknown ones)", op);
    }
    }
}

vf_status pk_read(const void *data, size_t n, const char *path, pk_doc **doc, const pk_value **root, vf_error *err)
{
    *doc = NULL;
    *root = NULL;
    machine m = {.base = data, .p = data, .end = (const uint8_t *)data + n, .path = path, .err = err};
    m.doc = calloc(1, sizeof *m.doc);
    if (!m.doc)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    vf_status st = VF_OK;
    bool stop = false;
    while (st == VF_OK && !stop) {
        if (m.p >= m.end) {
            st = bad(&m, "no STOP opcode");
            break;
        }
        st = step(&m, *m.p++, &stop);
    }
    if (st == VF_OK && m.n_stack != 1)
        st = bad(&m, "STOP with other than one value on the stack");
    if (st == VF_OK) {
        *doc = m.doc;
        *root = m.stack[0];
    } else {
        pk_free(m.doc);
    }
    free(m.stack);
    free(m.marks);
    free(m.memo);
    return st;
}

void pk_free(pk_doc *doc)
{
    if (!doc)
        return;
    for (arena_block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        for (size_t i = 0; i < b->used; i++)
            if (b->v[i].kind >= PK_LIST)
                free(b->v[i].items);
        free(b);
    }
    free(doc);
}

size_t pk_doc_items(const pk_doc *doc)
{
    return doc ? doc->items : 0;
}

bool pk_is_str(const pk_value *v, const char *s)
{
    size_t n = strlen(s);
    return v && v->kind == PK_STR && v->len == n && memcmp(v->s, s, n) == 0;
}

bool pk_is_seq(const pk_value *v)
{
    return v && (v->kind == PK_LIST || v->kind == PK_TUPLE);
}

const pk_value *pk_get(const pk_value *d, const char *key)
{
    if (!d || d->kind != PK_DICT || d->n > PK_MAX_DICT_ITEMS)
        return NULL;
    for (size_t i = 0; i + 1 < d->n; i += 2) /* the last of equal keys wins, as in Python */
        if (pk_is_str(d->items[d->n - 2 - i], key))
            return d->items[d->n - 1 - i];
    return NULL;
}

bool pk_get_int(const pk_value *d, const char *key, int64_t *out)
{
    const pk_value *v = pk_get(d, key);
    if (!v || (v->kind != PK_INT && v->kind != PK_BOOL))
        return false;
    *out = v->i;
    return true;
}
