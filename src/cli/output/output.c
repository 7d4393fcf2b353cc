/* output.c — units, numbers, JSON and error output shared by the commands. */
#include "cli.h"
#include "exit_code.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *vf_fmt_bytes(uint64_t b, vf_units u, char *buf, size_t n)
{
    static const char *const bin[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    static const char *const dec[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    const double base = u == VF_UNITS_GB ? 1000.0 : 1024.0;
    const char *const *names = u == VF_UNITS_GB ? dec : bin;
    double v = (double)b;
    int i = 0;
    while (v >= base && i < 5) {
        v /= base;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, n, "%.2f %s", v, names[i]);
    return buf;
}

const char *vf_fmt_count(uint64_t v, char *buf, size_t n)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *vf_fmt_short(uint64_t v, char *buf, size_t n)
{
    if (v >= 1000000000000ull)
        snprintf(buf, n, "%.2fT", v / 1e12);
    else if (v >= 1000000000ull)
        snprintf(buf, n, "%.2fB", v / 1e9);
    else if (v >= 1000000ull)
        snprintf(buf, n, "%.1fM", v / 1e6);
    else if (v >= 1000ull)
        snprintf(buf, n, "%.1fK", v / 1e3);
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
    return buf;
}

bool vf_parse_units(const char *s, vf_units *u)
{
    if (strcasecmp(s, "gib") == 0)
        *u = VF_UNITS_GIB;
    else if (strcasecmp(s, "gb") == 0)
        *u = VF_UNITS_GB;
    else
        return false;
    return true;
}

json_t *vf_json_u64(uint64_t v) { return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v); }

int vf_print_json(json_t *obj)
{
    if (!obj) {
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    int rc = json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(obj);
    fputc('\n', stdout);
    if (rc != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "vramfit: cannot write output\n");
        return VF_EXIT_IO;
    }
    return VF_EXIT_OK;
}

int vf_report_error(const vf_error *e)
{
    fprintf(stderr, "vramfit: %s\n", e->msg[0] ? e->msg : vf_strerror(e->status));
    return vf_status_exit_code(e->status);
}

int vf_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("vramfit: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; see 'vramfit %s --help'\n", cmd);
    return VF_EXIT_USAGE;
}

bool vf_use_color(int fd)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        return false;
    return isatty(fd);
}

static bool parse_scaled(const char *s, uint64_t *out, bool bytes)
{
    if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    double v;
    unsigned long long iv = strtoull(s, &end, 10);
    bool integral = (*end == '\0' || isalpha((unsigned char)*end));
    if (!integral) {
        v = strtod(s, &end);
        if (errno || v < 0)
            return false;
    } else {
        if (errno)
            return false;
        v = (double)iv;
    }
    double mult = 1;
    if (*end) {
        static const struct {
            const char *s;
            double m;
        } suf[] = {{"k", 1e3},       {"K", 1e3},        {"M", 1e6},        {"G", 1e9},
                   {"T", 1e12},      {"KB", 1e3},       {"kB", 1e3},       {"MB", 1e6},
                   {"GB", 1e9},      {"TB", 1e12},      {"KiB", 1024.0},   {"MiB", 1048576.0},
                   {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"B", 1}};
        bool found = false;
        for (size_t i = 0; i < sizeof suf / sizeof suf[0]; i++)
            if (strcmp(end, suf[i].s) == 0 || (bytes && strcasecmp(end, suf[i].s) == 0 && strlen(end) > 1)) {
                mult = suf[i].m;
                found = true;
                break;
            }
        if (!found)
            return false;
        if (!bytes && strcmp(end, "B") == 0)
            return false;
    }
    if (integral && mult == 1) {
        *out = iv;
        return true;
    }
    double r = v * mult;
    if (r >= 18446744073709549568.0)
        return false;
    *out = (uint64_t)(r + 0.5);
    return true;
}

bool vf_parse_u64(const char *s, uint64_t *out) { return parse_scaled(s, out, false); }
bool vf_parse_bytes(const char *s, uint64_t *out) { return parse_scaled(s, out, true); }

const char *vf_cli_mode_name(const vf_estimate_opts *o)
{
    return o->mode == VF_MODE_TRAINING ? "training" : "inference";
}
