/* config_keys.c — typed reads of a config.json object's keys, shared by the
 * config reader and the architectures (neither owns the other). */
#include "base/base.h"

#include <stdarg.h>

int vf__cfg_u64(const json_t *o, uint64_t *out, ...)
{
    va_list ap;
    va_start(ap, out);
    int r = 0;
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
        const json_t *v = json_is_object(o) ? json_object_get(o, k) : NULL;
        if (!v || json_is_null(v))
            continue;
        r = vf__json_u64(v, out) ? 1 : -1;
        if (r < 0 && json_is_real(v)) {
            /* some writers emit 4096.0: accept exact non-negative integers */
            double d = json_real_value(v);
            if (d >= 0 && d < 9007199254740992.0 && d == (double)(uint64_t)d) {
                *out = (uint64_t)d;
                r = 1;
            }
        }
        break;
    }
    va_end(ap);
    return r;
}

bool vf__cfg_bool(const json_t *o, const char *key, bool dflt)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

const char *vf__cfg_str(const json_t *o, const char *key)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

bool vf__cfg_in_list(const json_t *a, uint64_t i)
{
    size_t n = json_array_size(a);
    for (size_t k = 0; k < n; k++) {
        uint64_t v;
        if (vf__json_u64(json_array_get(a, k), &v) && v == i)
            return true;
    }
    return false;
}
