/* fuzz_oom.c — libFuzzer harness: arbitrary bytes as a log through the
 * out-of-memory scanner, fed whole and in uneven pieces (the first byte
 * picks the piece size): both must give the same report, every string in it
 * must be terminated and the counts must be within what was fed. */
#include "vramfit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void scan(const uint8_t *data, size_t size, size_t piece, vf_oom_report *r)
{
    vf_oom_scanner *s = vf_oom_open();
    if (!s)
        abort();
    for (size_t i = 0; i < size; i += piece)
        vf_oom_feed(s, data + i, size - i < piece ? size - i : piece);
    vf_oom_finish(s, (uint64_t)24 << 30, r);
    vf_oom_free(s);
}

static void check(const vf_oom_report *r, size_t size)
{
    if (r->bytes != size || r->errors > size || r->lines > size || r->n_advice > VF_OOM_MAX_ADVICE)
        abort();
    if (r->found != (r->errors > 0) || (r->found && (r->line < 1 || r->line > r->lines)))
        abort();
    const char *strs[] = {r->engine, r->kind, r->phase, r->buffer, r->message};
    size_t caps[] = {sizeof r->engine, sizeof r->kind, sizeof r->phase, sizeof r->buffer, sizeof r->message};
    for (size_t i = 0; i < 5; i++)
        if (!memchr(strs[i], '\0', caps[i]))
            abort();
    for (size_t i = 0; i < r->n_advice; i++)
        if (!memchr(r->advice[i], '\0', sizeof r->advice[i]))
            abort();
    if (r->fragmentation > 1.0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vf_oom_report a, b;
    scan(data, size, size ? size : 1, &a);
    check(&a, size);
    size_t piece = size ? (size_t)data[0] % 97 + 1 : 1;
    scan(data, size, piece, &b);
    check(&b, size);
    if (memcmp(&a, &b, sizeof a) != 0)
        abort();
    return 0;
}
