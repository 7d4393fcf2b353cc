/* graph_einsum.c — the output shape of an ONNX Einsum from its equation
 * (onnx/docs/Operators.md, Einsum, opset 12): "term1, term2 -> out", each
 * term letters (a-z, A-Z) with at most one "..." standing for the dimensions
 * its letters do not name; spaces allowed anywhere (torchvision's MaxViT
 * writes "B G H I D, B G H J D -> B G H I J"). Without "->" the output is
 * the broadcast ellipsis dimensions, then every letter used once, in ASCII
 * order. Letters name one size each (a size of 1 broadcasts, as
 * torch.einsum does); ellipsis dimensions broadcast right-aligned. The
 * equation is untrusted: every malformed one (an unknown character, a lone
 * '.', two ellipses in a term, terms and inputs that disagree in number or
 * rank, an output letter used twice or never in an input, sizes that
 * disagree, more than VF_MAX_DIMS dimensions) is refused. */
#include "model/graph.h"

#include <string.h>

#define LETTERS 52

static int letter(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26; /* ASCII order: upper case first */
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    return -1;
}

typedef struct term {
    int lab[VF_MAX_DIMS + 1]; /* letter index per position, -1 for the ellipsis */
    int n;                    /* labels, the ellipsis counted once */
    int ell;                  /* position of the ellipsis, -1 none */
} term;

/* One term from p up to a ',' or '-' or the end; false when malformed. */
static bool parse_term(const char **p, const char *end, term *t)
{
    t->n = 0;
    t->ell = -1;
    const char *q = *p;
    while (q < end && *q != ',' && *q != '-') {
        if (*q == ' ') {
            q++;
            continue;
        }
        if (t->n > VF_MAX_DIMS)
            return false;
        if (*q == '.') {
            if (end - q < 3 || q[1] != '.' || q[2] != '.' || t->ell >= 0)
                return false;
            t->ell = t->n;
            t->lab[t->n++] = -1;
            q += 3;
            continue;
        }
        int l = letter(*q);
        if (l < 0)
            return false;
        t->lab[t->n++] = l;
        q++;
    }
    *p = q;
    return true;
}

#define UNSET INT64_MIN

/* One dimension's size as another input gives it: a size of 1 broadcasts,
 * an unknown one (-1) takes the other's; false when two sizes disagree. */
static bool unify(int64_t *have, int64_t e)
{
    if (*have == UNSET || *have == 1 || (*have < 0 && e != 1)) {
        *have = e;
        return true;
    }
    return e < 0 || e == 1 || e == *have || *have < 0;
}

bool vf__einsum_shape(const char *eq, const vf__vshape *const *xs, uint32_t nx, vf__vshape *o)
{
    if (!eq || !nx || nx > VF_MAX_DIMS)
        return false;
    size_t len = strnlen(eq, VF_MAX_NAME_LEN + 1);
    if (len > VF_MAX_NAME_LEN)
        return false;
    const char *p = eq, *end = eq + len, *arrow = NULL;
    for (const char *q = eq; q + 1 < end; q++)
        if (q[0] == '-' && q[1] == '>') {
            arrow = q;
            break;
        }
    const char *in_end = arrow ? arrow : end;
    int64_t size[LETTERS], ell[VF_MAX_DIMS]; /* ell: the ellipsis dims counted from the right */
    int uses[LETTERS] = {0};
    for (int i = 0; i < LETTERS; i++)
        size[i] = UNSET;
    for (int i = 0; i < VF_MAX_DIMS; i++)
        ell[i] = UNSET;
    int32_t erank = 0;
    for (uint32_t k = 0; k < nx; k++) {
        term t;
        if (!parse_term(&p, in_end, &t) || (p < in_end && *p != ',') || (p < in_end) != (k + 1 < nx))
            return false;
        if (p < in_end)
            p++; /* the ',' */
        const vf__vshape *x = xs[k];
        if (!x || x->rank < 0 || x->rank > VF_MAX_DIMS)
            return false;
        int32_t named = t.ell >= 0 ? t.n - 1 : t.n, er = x->rank - named;
        if (er < 0 || (t.ell < 0 && er))
            return false;
        if (er > erank)
            erank = er;
        for (int32_t i = 0, d = 0; i < t.n; i++) {
            if (t.lab[i] >= 0) {
                if (!unify(&size[t.lab[i]], x->d[d++]))
                    return false;
                uses[t.lab[i]]++;
                continue;
            }
            for (int32_t j = 0; j < er; j++, d++)
                if (!unify(&ell[er - 1 - j], x->d[d]))
                    return false;
        }
    }
    int32_t r = 0;
    if (!arrow) { /* implicit: the ellipsis, then the letters used once */
        for (int32_t j = erank - 1; j >= 0; j--)
            o->d[r++] = ell[j];
        for (int l = 0; l < LETTERS; l++)
            if (uses[l] == 1) {
                if (r >= VF_MAX_DIMS)
                    return false;
                o->d[r++] = size[l];
            }
    } else {
        term t;
        p = arrow + 2;
        if (!parse_term(&p, end, &t) || p != end)
            return false;
        bool seen[LETTERS] = {0};
        for (int i = 0; i < t.n; i++) {
            if (t.lab[i] < 0) {
                if (r + erank > VF_MAX_DIMS)
                    return false;
                for (int32_t j = erank - 1; j >= 0; j--)
                    o->d[r++] = ell[j];
                continue;
            }
            int l = t.lab[i];
            if (seen[l] || !uses[l] || r >= VF_MAX_DIMS)
                return false;
            seen[l] = true;
            o->d[r++] = size[l];
        }
    }
    o->rank = r;
    o->elem = xs[0]->elem;
    return true;
}
