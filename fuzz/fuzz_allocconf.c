/* fuzz_allocconf.c — libFuzzer harness: the first line of the input as a
 * PYTORCH_CUDA_ALLOC_CONF string through the allocator settings' parser;
 * when it parses, the rest drives the caching allocator replay (3 bytes an
 * operation: an allocation of b1 << (b2 % 41) bytes, or the free of a live
 * tensor), under a memory fraction picked by the last byte. After every
 * step: allocated never above reserved, peaks never below the current
 * figures; at the end, with everything freed and the cache emptied, nothing
 * reserved outside expandable segments. With a freeze taken halfway, the
 * frozen copy must follow the original figure for figure. */
#include "memory/torch/alloc_torch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIVE 256

static void check(const vf__talloc *a)
{
    vf__tstats s = vf__talloc_stats(a);
    if (s.allocated > s.reserved || s.peak_allocated < s.allocated || s.peak_reserved < s.reserved)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char conf[2048];
    size_t n = 0;
    while (n < size && n + 1 < sizeof conf && data[n] != '\n')
        n++;
    memcpy(conf, data, n);
    conf[n] = '\0';
    vf__tconf c;
    vf_error err = {0};
    if (vf__tconf_parse(conf, &c, &err) != VF_OK) {
        if (!memchr(err.msg, '\0', sizeof err.msg) || !err.msg[0])
            abort();
        return 0;
    }
    const uint8_t *ops = data + n + (n < size);
    size_t nops = size - n - (n < size);
    if (nops && ops[nops - 1] & 1)
        c.fraction = (double)(ops[nops - 1] | 1) / 256.0;
    vf__talloc *a = vf__talloc_new(&c, (uint64_t)64 << 30);
    if (!a)
        return 0;
    uint32_t live[LIVE], flive[LIVE];
    size_t k = 0;
    /* halfway, a freeze (what a model's weights are kept as): from there the
     * same operations go to both, on the tensors made after it, and both
     * must give the same figures */
    vf__talloc *f = NULL;
    for (size_t i = 0; i + 3 <= nops; i += 3) {
        if (!f && i >= nops / 2 && (nops & 2)) {
            if (!(f = vf__talloc_freeze(a)))
                break;
            k = 0; /* the tensors before it stay allocated for good */
        }
        if ((ops[i] & 1) && k) {
            size_t j = ops[i + 1] % k;
            vf__talloc_release(a, live[j]);
            vf__talloc_release(f, f ? flive[j] : 0);
            live[j] = live[--k];
            flive[j] = flive[k];
        } else if (k < LIVE) {
            uint64_t sz = (uint64_t)ops[i + 1] << (ops[i + 2] % 41);
            uint32_t h = vf__talloc_malloc(a, sz), g = f ? vf__talloc_malloc(f, sz) : 0;
            if (f && !h != !g)
                abort();
            if (h)
                live[k] = h, flive[k++] = g;
        }
        check(a);
        if (f) {
            vf__tstats sa = vf__talloc_stats(a), sf = vf__talloc_stats(f);
            if (sa.allocated != sf.allocated || sa.reserved != sf.reserved || sa.peak_reserved != sf.peak_reserved)
                abort();
        }
    }
    if (!f) {
        while (k)
            vf__talloc_release(a, live[--k]);
        vf__talloc_empty_cache(a);
        check(a);
        vf__tstats s = vf__talloc_stats(a);
        if (s.allocated || (!c.expandable && s.reserved))
            abort();
    }
    vf__talloc_free(f);
    vf__talloc_free(a);
    return 0;
}
