/* notes.c — the assumptions and explanations an estimate carries, in words.
 * Every part of the memory model writes them; this file depends on nothing
 * but the estimate's struct, so no module has to call back into the one that
 * dispatched to it. */
#include "memory/memory.h"

#include <stdarg.h>
#include <stdio.h>

static VF_PRINTF(3, 0) void note(char (*arr)[VF_NOTE_LEN], size_t *n, const char *fmt, va_list ap)
{
    if (*n >= VF_MAX_NOTES)
        return;
    vsnprintf(arr[*n], VF_NOTE_LEN, fmt, ap);
    (*n)++;
}

void vf__assume(vf_estimate *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note(e->assumptions, &e->n_assumptions, fmt, ap);
    va_end(ap);
}

void vf__explain(vf_estimate *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note(e->explain, &e->n_explain, fmt, ap);
    va_end(ap);
}
