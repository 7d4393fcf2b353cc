/* gpu.c — the embedded GPU catalog (data/gpus.json) and forgiving name lookup. */
#include "device/device.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_MAX_ALIASES 8

typedef struct gpu_row {
    vf_gpu g;
    bool family_default;
    size_t n_aliases;
    const char *aliases[GPU_MAX_ALIASES];
} gpu_row;

static gpu_row *g_rows;
static size_t g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Strings live for the process, copied out of the parsed file. */
static const char *keep(const char *s)
{
    if (!s || !*s)
        return "";
    char *d = strdup(s);
    return d ? d : "";
}

static const char *jstr(const json_t *o, const char *k)
{
    return keep(json_string_value(json_object_get(o, k)));
}

static double jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static void load_catalog(void)
{
    const vf__embedded_file *f = vf__embedded_find("gpus.json");
    if (!f)
        return;
    json_t *doc = vf__json_parse(f->data, f->len, "gpus.json", NULL);
    const json_t *arr = json_object_get(doc, "gpus");
    size_t n = json_array_size(arr);
    if (!n || !(g_rows = calloc(n, sizeof *g_rows))) {
        json_decref(doc);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        gpu_row *r = &g_rows[g_count];
        uint64_t mem = 0;
        if (!json_is_object(o) || !vf__json_u64(json_object_get(o, "memory_bytes"), &mem) ||
            !json_string_value(json_object_get(o, "name")))
            continue; /* the file is ours and tested; a bad row is skipped, not fatal */
        r->g.name = jstr(o, "name");
        r->g.family = jstr(o, "family");
        r->g.vendor = jstr(o, "vendor");
        r->g.segment = jstr(o, "segment");
        r->g.memory_bytes = mem;
        r->g.memory_nominal = jstr(o, "memory_nominal");
        r->g.memory_basis = jstr(o, "memory_basis");
        r->g.bandwidth_gbs = jnum(o, "bandwidth_gbs");
        const json_t *t = json_object_get(o, "tflops");
        r->g.tflops_fp16 = jnum(t, "fp16");
        r->g.tflops_bf16 = jnum(t, "bf16");
        r->g.tflops_fp8 = jnum(t, "fp8");
        r->g.tops_int8 = jnum(t, "int8");
        r->g.interconnect = jstr(o, "interconnect");
        r->g.interconnect_gbs = jnum(o, "interconnect_gbs");
        double pn = jnum(o, "max_per_node");
        r->g.max_per_node = pn >= 1 && pn <= 1024 ? (uint32_t)pn : 1;
        r->g.source = jstr(o, "source");
        r->g.note = jstr(o, "note");
        const json_t *um = json_object_get(o, "unified");
        r->g.unified_vllm = jstr(um, "vllm");
        r->g.unified_llamacpp = jstr(um, "llamacpp");
        r->g.unified_assumed = jstr(um, "assumed");
        if (!vf__json_u64(json_object_get(um, "free_bytes"), &r->g.unified_free_bytes))
            r->g.unified_free_bytes = 0;
        r->family_default = json_is_true(json_object_get(o, "family_default"));
        const json_t *al = json_object_get(o, "aliases");
        for (size_t k = 0; k < json_array_size(al) && r->n_aliases < GPU_MAX_ALIASES; k++)
            if (json_is_string(json_array_get(al, k)))
                r->aliases[r->n_aliases++] = keep(json_string_value(json_array_get(al, k)));
        g_count++;
    }
    json_decref(doc);
}

static void ensure_loaded(void) { pthread_once(&g_once, load_catalog); }

size_t vf_gpu_count(void)
{
    ensure_loaded();
    return g_count;
}

const vf_gpu *vf_gpu_get(size_t i)
{
    ensure_loaded();
    return i < g_count ? &g_rows[i].g : NULL;
}

/* Lower case, spaces/hyphens/underscores dropped, vendor words dropped. */
static void norm(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 1 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == ' ' || c == '-' || c == '_' || c == '\t')
            continue;
        out[o++] = (char)tolower(c);
    }
    out[o] = '\0';
    static const char *const drop[] = {"nvidia", "geforce", "tesla", "amd", "instinct", "apple"};
    for (size_t d = 0; d < sizeof drop / sizeof drop[0]; d++) {
        size_t n = strlen(drop[d]);
        char *p;
        while ((p = strstr(out, drop[d])) != NULL)
            memmove(p, p + n, strlen(p + n) + 1);
    }
}

static bool row_matches(const gpu_row *r, const char *key)
{
    char b[160];
    norm(r->g.name, b, sizeof b);
    if (strcmp(b, key) == 0)
        return true;
    for (size_t k = 0; k < r->n_aliases; k++) {
        norm(r->aliases[k], b, sizeof b);
        if (strcmp(b, key) == 0)
            return true;
    }
    return false;
}

/* "24GiB", "80GB", "512 MiB", "1.5TB" → bytes; false when not a size. */
static bool parse_size(const char *key, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)key[0]))
        return false;
    double v = strtod(key, &end);
    static const struct {
        const char *s;
        double m;
    } u[] = {{"gib", 1073741824.0}, {"gb", 1e9}, {"mib", 1048576.0}, {"mb", 1e6}, {"tib", 1099511627776.0},
             {"tb", 1e12}, {"g", 1073741824.0}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (strcmp(end, u[i].s) == 0) {
            double b = v * u[i].m;
            if (!(b >= 1048576.0 && b < 1e16)) /* 1 MiB .. 10 PB */
                return false;
            *out = (uint64_t)llround(b);
            return true;
        }
    return false;
}

static void choose(vf_gpu_choice *out, const gpu_row *r)
{
    out->gpu = r->g;
    out->from_catalog = true;
    snprintf(out->name, sizeof out->name, "%s", r->g.name);
}

/* Resolves one GPU name (no count). 0 found, 1 not found. */
static int resolve(const char *key, const char *orig, vf_gpu_choice *out)
{
    for (size_t i = 0; i < g_count; i++)
        if (row_matches(&g_rows[i], key)) {
            choose(out, &g_rows[i]);
            return 0;
        }
    /* a family name: its common variant */
    char b[160];
    for (size_t i = 0; i < g_count; i++) {
        norm(g_rows[i].g.family, b, sizeof b);
        if (g_rows[i].family_default && strcmp(b, key) == 0) {
            choose(out, &g_rows[i]);
            if (strcmp(g_rows[i].g.name, g_rows[i].g.family) != 0)
                snprintf(out->note, sizeof out->note, "'%s' taken as %s, the common variant; name another to change",
                         orig, g_rows[i].g.name);
            return 0;
        }
    }
    /* a unique name that ends with what was typed ("4090" → RTX 4090) */
    const gpu_row *hit = NULL;
    size_t nhits = 0, kl = strlen(key);
    for (size_t i = 0; i < g_count && kl >= 3; i++) {
        norm(g_rows[i].g.name, b, sizeof b);
        size_t bl = strlen(b);
        if (bl > kl && strcmp(b + bl - kl, key) == 0 && isalpha((unsigned char)b[bl - kl - 1])) {
            if (!hit || g_rows[i].family_default)
                hit = &g_rows[i];
            nhits++;
        }
    }
    if (hit && nhits == 1) {
        choose(out, hit);
        snprintf(out->note, sizeof out->note, "'%s' taken as %s", orig, hit->g.name);
        return 0;
    }
    return 1;
}

vf_status vf_gpu_lookup(const char *spec, vf_gpu_choice *out, vf_error *err)
{
    ensure_loaded();
    if (!spec || !out)
        return vf__err(err, VF_EINVAL, "", "gpu lookup needs a name");
    memset(out, 0, sizeof *out);
    out->count = 1;
    char key[160];
    if (strlen(spec) >= sizeof key)
        return vf__err(err, VF_EINVAL, "", "gpu name too long");
    norm(spec, key, sizeof key);
    if (!key[0])
        return vf__err(err, VF_EINVAL, "", "empty gpu name");
    if (!g_count)
        return vf__err(err, VF_EINVAL, spec, "the gpu catalog is not available in this build");

    /* the whole name first: "rtx4090" must not read as "rt" x 4090 */
    if (resolve(key, spec, out) == 0)
        return VF_OK;
    uint64_t bytes;
    char name_part[160];
    unsigned long n = 0;
    name_part[0] = '\0';
    /* "NAMExN" / "NAME*N" or "NxNAME" */
    char *x = strrchr(key, 'x');
    char *star = strrchr(key, '*');
    if (star && (!x || star > x))
        x = star;
    if (x && x[1] && strspn(x + 1, "0123456789") == strlen(x + 1) && x > key) {
        n = strtoul(x + 1, NULL, 10);
        snprintf(name_part, sizeof name_part, "%.*s", (int)(x - key), key);
    } else {
        size_t d = strspn(key, "0123456789");
        if (d > 0 && (key[d] == 'x' || key[d] == '*') && key[d + 1]) {
            n = strtoul(key, NULL, 10);
            snprintf(name_part, sizeof name_part, "%s", key + d + 1);
        }
    }
    if (name_part[0]) {
        if (n < 1 || n > 4096)
            return vf__err(err, VF_EINVAL, spec, "gpu count must be 1 to 4096");
        if (resolve(name_part, spec, out) == 0 || (parse_size(name_part, &bytes) && (out->gpu.memory_bytes = bytes))) {
            out->count = (uint32_t)n;
            out->count_given = true;
            if (!out->from_catalog)
                goto bare;
            return VF_OK;
        }
        return vf__err(err, VF_EINVAL, spec, "no such gpu in the catalog; see 'vramfit gpus'");
    }
    if (parse_size(key, &bytes)) {
        out->gpu.memory_bytes = bytes;
    bare:
        out->gpu.name = NULL;
        out->gpu.family = out->gpu.vendor = out->gpu.segment = "";
        out->gpu.memory_nominal = out->gpu.memory_basis = out->gpu.interconnect = out->gpu.source = "";
        out->gpu.note = out->gpu.unified_vllm = out->gpu.unified_llamacpp = out->gpu.unified_assumed = "";
        out->gpu.unified_free_bytes = 0;
        out->gpu.max_per_node = 8;
        double gib = (double)out->gpu.memory_bytes / 1073741824.0;
        snprintf(out->name, sizeof out->name, "%.2f GiB GPU", gib);
        snprintf(out->note, sizeof out->note, "'%s' taken as a GPU of %.2f GiB; no speed figures", spec, gib);
        return VF_OK;
    }
    return vf__err(err, VF_EINVAL, spec, "no such gpu in the catalog; see 'vramfit gpus'");
}

const vf_gpu *vf__gpu_row(const char *name)
{
    ensure_loaded();
    if (!name || !*name)
        return NULL;
    for (size_t i = 0; i < g_count; i++) /* what fit names: a catalog name */
        if (strcmp(g_rows[i].g.name, name) == 0)
            return &g_rows[i].g;
    char key[160];
    if (strlen(name) >= sizeof key)
        return NULL;
    norm(name, key, sizeof key);
    for (size_t i = 0; i < g_count; i++)
        if (row_matches(&g_rows[i], key))
            return &g_rows[i].g;
    return NULL;
}

bool vf__gpu_unified(const vf_gpu *g) { return g && g->unified_assumed && g->unified_assumed[0]; }
