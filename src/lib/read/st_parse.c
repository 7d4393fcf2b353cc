/* st_parse.c — the safetensors header grammar, parsed in one pass over the
 * bytes already read. Replaces a general JSON tree for this one file kind:
 * a DeepSeek-V3 header (100k tensors, 13 MB) became ~150 MB of jansson
 * nodes and half a second of building and freeing them; here nothing but
 * the tensor list itself outlives the parse.
 *
 * Grammar: RFC 8259 (JSON). Refused as jansson refused them: invalid UTF-8,
 * control characters and \u0000 in strings, lone surrogates, leading zeros,
 * integers beyond int64, duplicate keys in any object, nesting deeper than
 * VF_JSON_MAX_DEPTH, bytes after the top-level value. */
#include "read/st_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- growable scratch buffer (a decoded string) ---- */
typedef struct sbuf {
    char *p;
    size_t cap;
} sbuf;

static bool sbuf_reserve(sbuf *b, size_t n)
{
    if (n <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < n) {
        if (nc > SIZE_MAX / 2)
            return false;
        nc *= 2;
    }
    char *q = realloc(b->p, nc);
    if (!q)
        return false;
    b->p = q;
    b->cap = nc;
    return true;
}

/* ---- stable copies of keys that are not tensor names ---- */
typedef struct kblock {
    struct kblock *next;
    size_t used, cap;
    char data[];
} kblock;

/* ---- the keys of one object, checked for duplicates when it closes ---- */
typedef struct keylist {
    const char **k; /* copies in the parser's key store */
    size_t n, cap;
} keylist;

typedef struct parser {
    const unsigned char *t;
    size_t len, pos;
    const char *path;
    vf_error *err;
    uint64_t seed; /* varies per parse; names built to collide anyway end in check_names' sort */
    sbuf name, key, val, dtype; /* decoded: tensor name, other keys, values, dtype */
    kblock *store;
    /* tensor names, for the duplicate check after the parse */
    const char **names;
    uint64_t *hashes;
    size_t n_names, cap_names;
    vf__st_entry_fn fn;
    void *ctx;
} parser;

#define HASH_K 0x9E3779B97F4A7C15u

/* Word-at-a-time multiply/xor-shift hash: names are long (50+ bytes) and
 * share prefixes, so a byte-serial hash would cost more than the parse. */
static uint64_t hash_bytes(const char *s, size_t n, uint64_t seed)
{
    uint64_t h = seed ^ ((uint64_t)n * HASH_K), w;
    while (n >= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * HASH_K;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * HASH_K;
    h ^= h >> 32;
    h *= HASH_K;
    h ^= h >> 29;
    return h;
}

/* ---- errors ---- */
static vf_status syntax(parser *p, const char *fmt, ...) VF_PRINTF(2, 3);

static vf_status nomem(parser *p) { return vf__err(p->err, VF_ENOMEM, p->path, "out of memory parsing the header"); }

static vf_status nested(parser *p)
{
    return vf__err(p->err, VF_EFORMAT, p->path, "json nested deeper than %d levels", VF_JSON_MAX_DEPTH);
}

/* The line of the cursor, counted only for a message. */
static size_t line_of(const parser *p)
{
    size_t line = 1;
    const unsigned char *s = p->t, *e = p->t + (p->pos < p->len ? p->pos : p->len);
    while (s < e && (s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        line++;
        s++;
    }
    return line;
}

static vf_status syntax(parser *p, const char *fmt, ...)
{
    char msg[VF_ERROR_MSG_MAX];
    if (p->pos >= p->len) {
        snprintf(msg, sizeof msg, "premature end of input");
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    return vf__err(p->err, VF_EFORMAT, p->path, "invalid json at line %zu: %s", line_of(p), msg);
}

/* The byte at the cursor, or 0 at the end (0 is never valid there). */
static inline int peek(const parser *p) { return p->pos < p->len ? p->t[p->pos] : 0; }

static inline void ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->t[p->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            return;
        p->pos++;
    }
}

/* Expects byte c (after white space), consumes it. */
static inline vf_status expect(parser *p, char c, const char *what)
{
    ws(p);
    if (peek(p) != c)
        return syntax(p, "%s expected", what);
    p->pos++;
    ws(p);
    return VF_OK;
}

/* After a member or element: 1 past a ',' (blanks skipped), 0 at close (not
 * consumed, so that an object can check its keys first), -1 with *st set on
 * anything else. */
static inline int next_item(parser *p, int close, vf_status *st)
{
    ws(p);
    if (peek(p) == ',') {
        p->pos++;
        ws(p);
        return 1;
    }
    if (peek(p) == close)
        return 0;
    *st = syntax(p, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    return -1;
}

/* ---- strings ---- */

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if none:
 * no overlong forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return len;
}

static int hexval(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    return -1;
}

/* Four hex digits at t[i]; -1 when not. */
static long hex4(const parser *p, size_t i)
{
    if (i > p->len || p->len - i < 4)
        return -1;
    long v = 0;
    for (size_t k = 0; k < 4; k++) {
        int d = hexval(p->t[i + k]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The end of the run from t[i] of bytes a string holds as they are:
 * printable ASCII other than '"' and '\\'. Eight at a time while it lasts. */
static inline size_t plain_run(const unsigned char *t, size_t i, size_t n)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while (n - i >= 8) {
        uint64_t w, q, b;
        memcpy(&w, t + i, 8);
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        /* high bit set in a byte lane (or above one) that is < 0x20, '"',
         * '\\' or ≥ 0x80 */
        if ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b) | w) & highs)
            break;
        i += 8;
    }
    while (i < n && (unsigned)(t[i] - 0x20u) < 0x60u && t[i] != '"' && t[i] != '\\')
        i++;
    return i;
}

/* Decodes the string whose quote is at the cursor into b (NUL-terminated). */
static vf_status parse_string(parser *p, sbuf *b, size_t *out_len)
{
    const unsigned char *t = p->t;
    size_t i = p->pos + 1, n = p->len, o = 0;
    for (;;) {
        size_t s = i;
        i = plain_run(t, i, n);
        size_t run = i - s;
        if (!sbuf_reserve(b, o + run + 5)) /* + the longest escape or sequence + NUL */
            return nomem(p);
        memcpy(b->p + o, t + s, run);
        o += run;
        if (i >= n) {
            p->pos = n;
            return syntax(p, "unterminated string");
        }
        unsigned c = t[i];
        if (c == '"') {
            b->p[o] = '\0';
            p->pos = i + 1;
            *out_len = o;
            return VF_OK;
        }
        if (c < 0x20) {
            p->pos = i;
            return syntax(p, "control character 0x%02x in string", c);
        }
        if (c >= 0x80) {
            size_t k = utf8_seq(t + i, n - i);
            if (!k)
                return vf__err(p->err, VF_EFORMAT, p->path, "not valid utf-8");
            memcpy(b->p + o, t + i, k);
            o += k;
            i += k;
            continue;
        }
        /* a backslash escape */
        p->pos = i;
        if (i + 1 >= n) {
            p->pos = n;
            return syntax(p, "unterminated string");
        }
        unsigned e = t[i + 1];
        i += 2;
        char simple = 0;
        switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default: return syntax(p, "invalid escape '\\%c'", e >= 0x20 && e < 0x7f ? (char)e : '?');
        }
        if (simple) {
            b->p[o++] = simple;
            continue;
        }
        long cp = hex4(p, i);
        if (cp < 0) {
            if (n - i < 4)
                p->pos = n;
            return syntax(p, "invalid \\u escape");
        }
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return syntax(p, "invalid unicode '\\u%04lX' (a low surrogate alone)", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = (i + 1 < n && t[i] == '\\' && t[i + 1] == 'u') ? hex4(p, i + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return syntax(p, "invalid unicode '\\u%04lX' (a high surrogate alone)", cp);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        if (cp == 0)
            return syntax(p, "\\u0000 is not allowed");
        if (cp < 0x80) {
            b->p[o++] = (char)cp;
        } else if (cp < 0x800) {
            b->p[o++] = (char)(0xC0 | (cp >> 6));
            b->p[o++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            b->p[o++] = (char)(0xE0 | (cp >> 12));
            b->p[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            b->p[o++] = (char)(0x80 | (cp & 0x3F));
        } else {
            b->p[o++] = (char)(0xF0 | (cp >> 18));
            b->p[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            b->p[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            b->p[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
}

/* Records a copy of key s (n bytes) in k. */
static vf_status key_add(parser *p, keylist *k, const char *s, size_t n, const char **stored)
{
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 8;
        const char **nk = realloc(k->k, nc * sizeof *nk);
        if (!nk)
            return nomem(p);
        k->k = nk;
        k->cap = nc;
    }
    if (!p->store || p->store->cap - p->store->used < n + 1) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        kblock *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return nomem(p);
        nb->next = p->store;
        nb->used = 0;
        nb->cap = cap;
        p->store = nb;
    }
    char *d = p->store->data + p->store->used;
    memcpy(d, s, n + 1);
    p->store->used += n + 1;
    k->k[k->n++] = d;
    if (stored)
        *stored = d;
    return VF_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static vf_status duplicate(parser *p, const char *key)
{
    return vf__err(p->err, VF_EFORMAT, p->path, "invalid json at line %zu: duplicate object key '%s'", line_of(p),
                   key);
}

/* An object's keys, all read: a duplicate is an error. Sorting bounds the
 * work whatever the keys are (these objects are small in real files). */
static vf_status keys_unique(parser *p, keylist *k)
{
    if (k->n <= 8) {
        for (size_t i = 1; i < k->n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(k->k[i], k->k[j]) == 0)
                    return duplicate(p, k->k[i]);
        return VF_OK;
    }
    qsort(k->k, k->n, sizeof *k->k, cmp_str);
    for (size_t i = 1; i < k->n; i++)
        if (strcmp(k->k[i], k->k[i - 1]) == 0)
            return duplicate(p, k->k[i]);
    return VF_OK;
}

/* ---- numbers and other values ---- */

static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* A JSON number at the cursor; *is_u64 when it is a plain non-negative
 * integer (no sign, fraction or exponent), its value in *u. */
static vf_status parse_number(parser *p, uint64_t *u, bool *is_u64)
{
    const unsigned char *t = p->t;
    size_t i = p->pos, n = p->len, start = p->pos;
    bool neg = false, big = false, real = false;
    uint64_t v = 0;
    if (i < n && t[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= n || !is_digit(t[i])) {
        p->pos = i;
        return syntax(p, "invalid number");
    }
    if (t[i] == '0') {
        i++;
        if (i < n && is_digit(t[i])) {
            p->pos = start;
            return syntax(p, "invalid number (leading zero)");
        }
    } else {
        /* 19 digits cannot wrap a u64; more are past INT64_MAX anyway */
        size_t d0 = i;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* eight digits at a time (offsets run to 12 digits): digit lanes
         * joined pairwise into 2-, 4-, then 8-digit values */
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, t + i, 8);
            if ((w & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u ||
                ((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u)
                break;
            w -= 0x3030303030303030u;
            w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFu;
            w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFu;
            w = (w * 10000 + (w >> 32)) & 0xFFFFFFFFu;
            v = v * 100000000u + w;
            i += 8;
        }
#endif
        for (; i < n && is_digit(t[i]); i++)
            v = v * 10 + (unsigned)(t[i] - '0');
        big = i - d0 > 19;
    }
    if (i < n && t[i] == '.') {
        real = true;
        if (++i >= n || !is_digit(t[i])) {
            p->pos = i;
            return syntax(p, "invalid number (no digit after '.')");
        }
        while (i < n && is_digit(t[i]))
            i++;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        real = true;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        if (i >= n || !is_digit(t[i])) {
            p->pos = i;
            return syntax(p, "invalid number (no digit in the exponent)");
        }
        while (i < n && is_digit(t[i]))
            i++;
    }
    if (!real && (big || v > (neg ? VF_ST_MAX_INT + 1 : VF_ST_MAX_INT))) {
        p->pos = start;
        return syntax(p, neg ? "too big negative integer" : "too big integer");
    }
    p->pos = i;
    *u = v;
    *is_u64 = !neg && !real;
    return VF_OK;
}

static vf_status literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->t + p->pos, word, n) != 0)
        return syntax(p, "invalid token");
    p->pos += n;
    return VF_OK;
}

static vf_status skip_value(parser *p, unsigned depth);

/* One member of an object, the cursor on its key's opening quote: reads the
 * key, the ':' and the value. Keys it adds to keys are checked for
 * duplicates when the object closes. */
typedef vf_status (*member_fn)(parser *p, keylist *keys, void *ctx);

/* The object whose '{' is at the cursor, fn called for each member. */
static inline vf_status for_each_member(parser *p, member_fn fn, void *ctx)
{
    keylist ks = {0};
    vf_status st = VF_OK;
    p->pos++;
    ws(p);
    if (peek(p) == '}') {
        p->pos++;
        return VF_OK;
    }
    for (;;) {
        if (peek(p) != '"') {
            st = syntax(p, "string expected as an object key");
            break;
        }
        if ((st = fn(p, &ks, ctx)) != VF_OK)
            break;
        int more = next_item(p, '}', &st);
        if (more > 0)
            continue;
        if (more == 0 && (st = keys_unique(p, &ks)) == VF_OK)
            p->pos++;
        break;
    }
    free(ks.k);
    return st;
}

/* One element of an array, the cursor on it. */
typedef vf_status (*element_fn)(parser *p, void *ctx);

/* The array whose '[' is at the cursor, fn called for each element. */
static inline vf_status for_each_element(parser *p, element_fn fn, void *ctx)
{
    vf_status st;
    p->pos++;
    ws(p);
    if (peek(p) == ']') {
        p->pos++;
        return VF_OK;
    }
    for (;;) {
        if ((st = fn(p, ctx)) != VF_OK)
            return st;
        int more = next_item(p, ']', &st);
        if (more > 0)
            continue;
        if (more < 0)
            return st;
        p->pos++;
        return VF_OK;
    }
}

/* A decoded key, added to keys (its copy in *stored when wanted), then ':'. */
static vf_status member_key(parser *p, keylist *keys, const char **stored)
{
    size_t kl;
    vf_status st;
    if ((st = parse_string(p, &p->key, &kl)) != VF_OK || (st = key_add(p, keys, p->key.p, kl, stored)) != VF_OK)
        return st;
    return expect(p, ':', "':'");
}

static vf_status skip_member(parser *p, keylist *keys, void *ctx)
{
    vf_status st = member_key(p, keys, NULL);
    return st != VF_OK ? st : skip_value(p, *(const unsigned *)ctx);
}

static vf_status skip_element(parser *p, void *ctx) { return skip_value(p, *(const unsigned *)ctx); }

/* A value nobody reads, in an object or array at nesting level depth. */
static vf_status skip_object(parser *p, unsigned depth) { return for_each_member(p, skip_member, &depth); }

static vf_status skip_array(parser *p, unsigned depth) { return for_each_element(p, skip_element, &depth); }

/* depth: the nesting level of the container holding the value (0: none). */
static vf_status skip_value(parser *p, unsigned depth)
{
    size_t l;
    uint64_t u;
    bool ok;
    switch (peek(p)) {
    case '{': return depth + 1 > VF_JSON_MAX_DEPTH ? nested(p) : skip_object(p, depth + 1);
    case '[': return depth + 1 > VF_JSON_MAX_DEPTH ? nested(p) : skip_array(p, depth + 1);
    case '"': return parse_string(p, &p->val, &l);
    case 't': return literal(p, "true");
    case 'f': return literal(p, "false");
    case 'n': return literal(p, "null");
    default:
        if (peek(p) == '-' || is_digit(peek(p)))
            return parse_number(p, &u, &ok);
        return syntax(p, "invalid token");
    }
}

typedef struct u64_array {
    unsigned depth;
    uint64_t *out;
    size_t max, *count, *first_bad;
} u64_array;

static vf_status u64_element(parser *p, void *ctx)
{
    u64_array *a = ctx;
    vf_status st;
    size_t i = (*a->count)++;
    uint64_t v = 0;
    bool ok = false;
    int c = peek(p);
    if (c == '-' || is_digit(c))
        st = parse_number(p, &v, &ok);
    else
        st = skip_value(p, a->depth);
    if (st != VF_OK)
        return st;
    if (ok && i < a->max)
        a->out[i] = v;
    if (!ok && *a->first_bad == SIZE_MAX)
        *a->first_bad = i;
    return VF_OK;
}

/* An array at the cursor, level depth, whose values should be u64: the first
 * max are stored, *count gets its length, *first_bad the index of the first
 * value that is not a u64 (SIZE_MAX if none). */
static vf_status parse_u64_array(parser *p, unsigned depth, uint64_t *out, size_t max, size_t *count,
                                 size_t *first_bad)
{
    *count = 0;
    *first_bad = SIZE_MAX;
    if (depth > VF_JSON_MAX_DEPTH)
        return nested(p);
    u64_array a = {depth, out, max, count, first_bad};
    return for_each_element(p, u64_element, &a);
}

static bool key_is(const sbuf *b, size_t n, const char *word, size_t wn)
{
    if (n != wn)
        return false;
    for (size_t i = 0; i < n; i++)
        if (b->p[i] != word[i])
            return false;
    return true;
}

/* Consumes the n bytes at the cursor when they are word. */
static inline bool raw_is(parser *p, const char *word, size_t n)
{
    if (p->len - p->pos < n)
        return false;
    for (size_t i = 0; i < n; i++) /* short, constant: unrolled where inlined */
        if (p->t[p->pos + i] != (unsigned char)word[i])
            return false;
    p->pos += n;
    return true;
}

typedef struct entry_ctx {
    vf__st_entry *e;
    bool seen_dtype, seen_shape, seen_off;
} entry_ctx;

/* One member of a tensor entry: dtype, shape, data_offsets or another key. */
static vf_status entry_member(parser *p, keylist *extra, void *ctx)
{
    entry_ctx *c = ctx;
    vf__st_entry *e = c->e;
    vf_status st;
    size_t kl;
    bool dtype = false, shape = false, off = false;
    /* the keys as writers spell them, without decoding */
    if (raw_is(p, "\"dtype\"", 7))
        dtype = true;
    else if (raw_is(p, "\"shape\"", 7))
        shape = true;
    else if (raw_is(p, "\"data_offsets\"", 14))
        off = true;
    else if ((st = parse_string(p, &p->key, &kl)) != VF_OK)
        return st;
    else {
        dtype = key_is(&p->key, kl, "dtype", 5);
        shape = key_is(&p->key, kl, "shape", 5);
        off = key_is(&p->key, kl, "data_offsets", 12);
    }
    if ((dtype && c->seen_dtype) || (shape && c->seen_shape) || (off && c->seen_off))
        return syntax(p, "duplicate object key '%s'", dtype ? "dtype" : shape ? "shape" : "data_offsets");
    if (!dtype && !shape && !off && (st = key_add(p, extra, p->key.p, kl, NULL)) != VF_OK)
        return st;
    if ((st = expect(p, ':', "':'")) != VF_OK)
        return st;
    if (dtype) {
        c->seen_dtype = true;
        if (peek(p) != '"')
            return skip_value(p, 2);
        st = parse_string(p, &p->dtype, &e->dtype_len);
        e->dtype = p->dtype.p;
        return st;
    }
    if (shape) {
        c->seen_shape = true;
        e->has_shape = peek(p) == '[';
        return e->has_shape ? parse_u64_array(p, 3, e->shape, VF_MAX_DIMS, &e->n_dims, &e->shape_bad)
                            : skip_value(p, 2);
    }
    if (off) {
        c->seen_off = true;
        if (peek(p) != '[')
            return skip_value(p, 2);
        size_t cnt, bad;
        st = parse_u64_array(p, 3, e->offsets, 2, &cnt, &bad);
        e->offsets_ok = cnt == 2 && bad == SIZE_MAX;
        return st;
    }
    return skip_value(p, 2); /* a key the format does not define */
}

/* A tensor entry (level 2) into e; e->name is set by the caller. */
static vf_status parse_entry(parser *p, vf__st_entry *e)
{
    vf_status st;
    if (peek(p) != '{') {
        if ((st = skip_value(p, 1)) != VF_OK)
            return st;
        return vf__err(p->err, VF_EFORMAT, p->path, "tensor '%s': entry is not an object", e->name);
    }
    entry_ctx c = {e, false, false, false};
    return for_each_member(p, entry_member, &c);
}

/* One member of __metadata__: its value must be a string. */
static vf_status metadata_member(parser *p, keylist *keys, void *ctx)
{
    (void)ctx;
    vf_status st;
    size_t l;
    const char *k = NULL;
    if ((st = member_key(p, keys, &k)) != VF_OK)
        return st;
    if (peek(p) == '"')
        return parse_string(p, &p->val, &l);
    if ((st = skip_value(p, 2)) != VF_OK)
        return st;
    return vf__err(p->err, VF_EFORMAT, p->path, "__metadata__ value '%s' is not a string", k);
}

static vf_status parse_metadata(parser *p)
{
    vf_status st;
    if (peek(p) != '{') {
        if ((st = skip_value(p, 1)) != VF_OK)
            return st;
        return vf__err(p->err, VF_EFORMAT, p->path, "__metadata__ is not an object");
    }
    return for_each_member(p, metadata_member, NULL);
}

/* Remembers a stored tensor name and its hash for check_names. */
static vf_status name_push(parser *p, const char *stored, uint64_t h)
{
    if (p->n_names == p->cap_names) {
        size_t nc = p->cap_names ? p->cap_names * 2 : 256;
        const char **nn = realloc(p->names, nc * sizeof *nn);
        if (nn)
            p->names = nn;
        uint64_t *nh = realloc(p->hashes, nc * sizeof *nh);
        if (nh)
            p->hashes = nh;
        if (!nn || !nh)
            return nomem(p);
        p->cap_names = nc;
    }
    p->names[p->n_names] = stored;
    p->hashes[p->n_names++] = h;
    return VF_OK;
}

/* A tensor entry (level 1 member) whose key, name, was just read. */
static vf_status parse_tensor(parser *p, const char *name, size_t nl)
{
    vf_status st;
    /* hashed now, while the name is in the cache */
    uint64_t h = hash_bytes(name, nl, p->seed);
    if ((st = expect(p, ':', "':'")) != VF_OK)
        return st;
    if (nl == 0)
        return vf__err(p->err, VF_EFORMAT, p->path, "a tensor has an empty name");
    vf__st_entry e; /* shape[] and offsets[] are written before read */
    e.name = name;
    e.name_len = nl;
    e.dtype = NULL;
    e.dtype_len = 0;
    e.has_shape = e.offsets_ok = false;
    e.n_dims = 0;
    e.shape_bad = SIZE_MAX;
    e.stored_name = NULL;
    if ((st = parse_entry(p, &e)) != VF_OK || (st = p->fn(p->ctx, &e, p->err)) != VF_OK)
        return st;
    return e.stored_name ? name_push(p, e.stored_name, h) : VF_OK;
}

/* One member of the top-level object: __metadata__ or a tensor. Tensor names
 * are not added to keys: check_names tests them all after the parse. */
static vf_status top_member(parser *p, keylist *keys, void *ctx)
{
    (void)keys;
    bool *seen_meta = ctx;
    vf_status st;
    size_t nl;
    if ((st = parse_string(p, &p->name, &nl)) != VF_OK)
        return st;
    if (!key_is(&p->name, nl, "__metadata__", 12))
        return parse_tensor(p, p->name.p, nl);
    if (*seen_meta)
        return syntax(p, "duplicate object key '__metadata__'");
    *seen_meta = true;
    if ((st = expect(p, ':', "':'")) != VF_OK)
        return st;
    return parse_metadata(p);
}

/* The top-level object (level 1). */
static vf_status parse_top(parser *p)
{
    vf_status st;
    bool seen_meta = false;
    ws(p);
    if (peek(p) != '{') {
        if (p->pos >= p->len)
            return syntax(p, "premature end of input");
        if ((st = skip_value(p, 0)) != VF_OK)
            return st;
        ws(p);
        if (p->pos < p->len)
            return syntax(p, "end of file expected");
        return vf__err(p->err, VF_EFORMAT, p->path, "header is not a json object");
    }
    if ((st = for_each_member(p, top_member, &seen_meta)) != VF_OK)
        return st;
    ws(p);
    if (p->pos < p->len)
        return syntax(p, "end of file expected");
    return VF_OK;
}

/* Tensor names are checked for duplicates once all are known: a table
 * sized once, filled in file order with the slots fetched ahead, since a
 * table for 100k names is larger than the caches and a lookup per entry
 * during the parse waits on memory each time. Names chosen to collide make
 * a probe run long: then sorting (n log n whatever the names) decides. */
unsigned vf__st_max_probe = 256;

static vf_status check_names(parser *p)
{
    size_t n = p->n_names, cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *tab = calloc(cap, sizeof *tab); /* name index + 1; 0: empty */
    if (!tab)
        return nomem(p);
    size_t mask = cap - 1;
    bool collided = false;
    for (size_t i = 0; i < n && !collided; i++) {
        if (i + 16 < n)
            __builtin_prefetch(&tab[(size_t)p->hashes[i + 16] & mask], 1);
        uint64_t h = p->hashes[i];
        size_t j = (size_t)h & mask, probes = 0;
        for (; tab[j]; j = (j + 1) & mask) {
            size_t k = tab[j] - 1;
            if (p->hashes[k] == h && strcmp(p->names[k], p->names[i]) == 0) {
                free(tab);
                return vf__err(p->err, VF_EFORMAT, p->path, "invalid json: duplicate object key '%s'", p->names[i]);
            }
            if (++probes > vf__st_max_probe) {
                collided = true;
                break;
            }
        }
        tab[j] = (uint32_t)(i + 1);
    }
    free(tab);
    if (!collided)
        return VF_OK;
    qsort(p->names, n, sizeof *p->names, cmp_str);
    for (size_t i = 1; i < n; i++)
        if (strcmp(p->names[i], p->names[i - 1]) == 0)
            return vf__err(p->err, VF_EFORMAT, p->path, "invalid json: duplicate object key '%s'", p->names[i]);
    return VF_OK;
}

vf_status vf__st_parse(const char *text, size_t len, const char *path, vf__st_entry_fn fn, void *ctx,
                       vf_error *err)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.t = (const unsigned char *)text;
    p.len = len;
    p.path = path;
    p.err = err;
    p.fn = fn;
    p.ctx = ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    p.seed = ((uint64_t)ts.tv_nsec * HASH_K) ^ (uint64_t)(uintptr_t)&p ^ ((uint64_t)ts.tv_sec << 32);
    vf_status st = parse_top(&p);
    if (st == VF_OK && p.n_names >= UINT32_MAX)
        st = vf__err(err, VF_EFORMAT, path, "too many tensors");
    if (st == VF_OK)
        st = check_names(&p);
    free(p.name.p);
    free(p.key.p);
    free(p.val.p);
    free(p.dtype.p);
    free(p.names);
    free(p.hashes);
    while (p.store) {
        kblock *nx = p.store->next;
        free(p.store);
        p.store = nx;
    }
    /* invalid UTF-8 anywhere is named as such, whatever else broke first */
    if (st != VF_OK && st != VF_ENOMEM && !vf__utf8_valid(text, len))
        st = vf__err(err, VF_EFORMAT, path, "not valid utf-8");
    return st;
}
