/* opt_parse.c — one knob's bad value, in one line, and the bounded number
 * parser every knob table uses (estimate, serving and training options). */
#include "cli.h"
#include "args/estimate_opts.h"

#include <stdio.h>

int vf_cli_opt_bad(const char *opt, const char *arg, const char *why)
{
    fprintf(stderr, "vramfit: --%s %s: %s; see 'vramfit estimate --help'\n", opt, arg, why);
    return -1;
}

int vf_cli_opt_number(const char *opt, const char *arg, uint64_t lo, uint64_t hi, const char *why, uint64_t *out)
{
    if (!vf_parse_u64(arg, out) || *out < lo || *out > hi) {
        char range[96];
        snprintf(range, sizeof range, "expected a whole number from %llu to %llu", (unsigned long long)lo,
                 (unsigned long long)hi);
        return vf_cli_opt_bad(opt, arg, why ? why : range);
    }
    return 1;
}
