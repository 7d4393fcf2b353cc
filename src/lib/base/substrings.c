/* substrings.c — the names as a trie with failure links (Aho and Corasick,
 * "Efficient string matching", CACM 1975): reading the text byte by byte, a
 * state is the longest suffix read that is a prefix of some name, and a state
 * whose suffix chain ends a name means a match. The trie's edges live in one
 * open-addressed table keyed by (state, byte); the links are made on the
 * first query. */
#include "base/substrings.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct edge {
    uint32_t from, to; /* to == 0: free slot (the root is never a target) */
    unsigned char c;
} edge;

struct vf__substrings {
    size_t cap;      /* states: max_chars + 1 */
    size_t n;        /* states used; state 0 is the root */
    uint32_t *fail;  /* per state: the state of its longest proper suffix */
    uint32_t *first, *next; /* per state: its first child, its next sibling (0: none) */
    unsigned char *byte;    /* per state: the byte of the edge into it */
    bool *ends;      /* a name ends here, or at a state on its failure chain */
    edge *edges;     /* 2 * cap slots, a power of two */
    size_t mask;
    bool linked;
};

static size_t slot(const vf__substrings *s, uint32_t from, unsigned char c)
{
    uint64_t k = ((uint64_t)from << 8 | c) * 0x9E3779B97F4A7C15ull;
    return (size_t)(k >> 32) & s->mask;
}

static uint32_t edge_get(const vf__substrings *s, uint32_t from, unsigned char c)
{
    for (size_t i = slot(s, from, c);; i = (i + 1) & s->mask) {
        const edge *e = &s->edges[i];
        if (!e->to)
            return 0;
        if (e->from == from && e->c == c)
            return e->to;
    }
}

static void edge_put(vf__substrings *s, uint32_t from, unsigned char c, uint32_t to)
{
    size_t i = slot(s, from, c);
    while (s->edges[i].to) /* at most cap edges in 2 * cap slots: a free one exists */
        i = (i + 1) & s->mask;
    s->edges[i] = (edge){.from = from, .to = to, .c = c};
}

vf__substrings *vf__substrings_new(size_t max_chars)
{
    if (max_chars == 0 || max_chars > (1u << 24))
        return NULL;
    vf__substrings *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = max_chars + 1;
    size_t slots = 1;
    while (slots < 2 * s->cap)
        slots <<= 1;
    s->mask = slots - 1;
    s->fail = calloc(s->cap, sizeof *s->fail);
    s->first = calloc(s->cap, sizeof *s->first);
    s->next = calloc(s->cap, sizeof *s->next);
    s->byte = calloc(s->cap, 1);
    s->ends = calloc(s->cap, sizeof *s->ends);
    s->edges = calloc(slots, sizeof *s->edges);
    s->n = 1;
    if (!s->fail || !s->first || !s->next || !s->byte || !s->ends || !s->edges) {
        vf__substrings_free(s);
        return NULL;
    }
    return s;
}

void vf__substrings_free(vf__substrings *s)
{
    if (!s)
        return;
    free(s->fail);
    free(s->first);
    free(s->next);
    free(s->byte);
    free(s->ends);
    free(s->edges);
    free(s);
}

bool vf__substrings_add(vf__substrings *s, const char *name, size_t len)
{
    if (!s || s->linked || len == 0)
        return false;
    uint32_t at = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        uint32_t next = edge_get(s, at, c);
        if (!next) {
            if (s->n == s->cap)
                return false; /* the prefix added so far ends no name: it matches nothing */
            next = (uint32_t)s->n++;
            edge_put(s, at, c, next);
            s->byte[next] = c;
            s->next[next] = s->first[at];
            s->first[at] = next;
        }
        at = next;
    }
    s->ends[at] = true;
    return true;
}

/* The failure links breadth first: a state's link is found from its parent's. */
static bool link(vf__substrings *s)
{
    uint32_t *queue = malloc(s->n * sizeof *queue);
    if (!queue)
        return false;
    size_t head = 0, tail = 0;
    queue[tail++] = 0;
    while (head < tail) {
        uint32_t u = queue[head++];
        for (uint32_t v = s->first[u]; v; v = s->next[v]) {
            uint32_t t = 0;
            for (uint32_t f = s->fail[u]; u && !(t = edge_get(s, f, s->byte[v])) && f;)
                f = s->fail[f];
            s->fail[v] = t != v ? t : 0;
            s->ends[v] = s->ends[v] || s->ends[s->fail[v]];
            queue[tail++] = v;
        }
    }
    free(queue);
    s->linked = true;
    return true;
}

bool vf__substrings_any(vf__substrings *s, const char *text)
{
    if (!s || s->n == 1 || !text || (!s->linked && !link(s)))
        return false;
    uint32_t at = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        uint32_t t;
        while ((t = edge_get(s, at, *p)) == 0 && at)
            at = s->fail[at];
        at = t;
        if (s->ends[at])
            return true;
    }
    return false;
}
