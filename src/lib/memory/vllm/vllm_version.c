/* vllm_version.c — --vllm-version: the release whose accounting is priced,
 * and which engine ran it. "X.Y[.Z]" with any release suffix (rc1, .post1,
 * .dev169+gce17db808), optionally "/v0" or "/v1" for the engine the log
 * names (VLLM_USE_V1: V1 opt-in from 0.7, the default from 0.8, V0 removed
 * in 0.11); "" is the current release. */
#include "memory/infer.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool vf__vllm_version_parse(const char *s, vf__vllm_ver *v, const char **why)
{
    memset(v, 0, sizeof *v);
    *why = "";
    if (!s || !*s) {
        v->current = true;
        v->v1 = true;
        return true;
    }
    long x[3] = {0, 0, 0};
    const char *p = s;
    int n = 0;
    while (n < 3 && isdigit((unsigned char)*p)) {
        char *end;
        x[n++] = strtol(p, &end, 10);
        p = end;
        if (*p != '.' || !isdigit((unsigned char)p[1]))
            break;
        p++;
    }
    if (n < 2 || x[0] > 9 || x[1] > 999 || x[2] > 999) {
        *why = "expected a vLLM release such as 0.11.0 (optionally /v0 or /v1 for the engine)";
        return false;
    }
    v->major = (int)x[0], v->minor = (int)x[1], v->patch = (int)x[2];
    bool newer = v->major > 0;
    v->v1 = newer || v->minor >= 8;
    size_t len = strlen(s);
    if (len >= 3 && s[len - 3] == '/') {
        const char *e = s + len - 2;
        if (strcasecmp(e, "v0") == 0) {
            if (newer || v->minor >= 11) {
                *why = "vLLM 0.11 removed the V0 engine: /v0 needs a release before 0.11";
                return false;
            }
            v->v1 = false;
        } else if (strcasecmp(e, "v1") == 0) {
            if (!newer && v->minor < 7) {
                *why = "vLLM's V1 engine arrived in 0.7: /v1 needs 0.7 or later";
                return false;
            }
            v->v1 = true;
        } else {
            *why = "the engine after '/' is v0 or v1";
            return false;
        }
    }
    return true;
}

bool vf__vllm_at_least(const vf__vllm_ver *v, int a, int b, int c)
{
    if (v->current)
        return true;
    return v->major != a ? v->major > a : v->minor != b ? v->minor > b : v->patch >= c;
}
