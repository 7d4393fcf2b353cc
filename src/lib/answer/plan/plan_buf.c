/* plan_buf.c — the bounded text buffer the plan emitters write into, and
 * shell words for what they pass to a command line. */
#include "answer/plan/plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void vf__put(vf__sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(b->p + (b->len < b->cap ? b->len : b->cap - 1), room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        b->overflow = true;
    else
        b->len += (size_t)n;
}

/* Shell-safe enough for model names and paths: quote unless plain. */
void vf__put_arg(vf__sbuf *b, const char *s)
{
    bool plain = *s != '\0';
    for (const char *c = s; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+=@%,", *c))
            plain = false;
    if (plain) {
        vf__put(b, "%s", s);
        return;
    }
    vf__put(b, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            vf__put(b, "'\\''");
        else
            vf__put(b, "%c", *c);
    }
    vf__put(b, "'");
}

