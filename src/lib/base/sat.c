/* sat.c — saturating arithmetic: an estimate of absurd knobs stays finite
 * (UINT64_MAX) instead of wrapping; and a dtype's bytes for n elements. */
#include "base/base.h"

uint64_t vf__smul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return vf__mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t vf__sadd(uint64_t a, uint64_t b)
{
    uint64_t r;
    return vf__add_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t vf__dt_bytes(vf_dtype dt, uint64_t n)
{
    const vf_dtype_info *d = vf_dtype_get(dt);
    if (!d)
        return vf__smul(n, 2);
    uint64_t blocks = n / d->block_elements + (n % d->block_elements != 0);
    return vf__smul(blocks, d->block_bytes);
}
