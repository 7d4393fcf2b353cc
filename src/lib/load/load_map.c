/* load_map.c — device maps: which device each tensor goes to.
 *
 * Like accelerate's device_map (module-name prefix → GPU index, "cpu") and
 * llama.cpp's -ngl (the first N repeated blocks on the GPU, the rest on the
 * host). A file is one JSON object:
 *   {"model.embed_tokens": 0, "layers:0-15": "cuda:0", "layers:16-31": 1,
 *    "lm_head": "cpu", "*": "host"}
 * Keys: a tensor-name prefix (matches the name itself or the name followed by
 * '.'), "layers:A-B" (the repeated blocks A..B, from the tensor names), or
 * "*" for everything else. The longest matching prefix wins, then a layer
 * range, then "*". Values: an integer N (cuda:N), "cuda:N", "cpu"/"host", or
 * "null". Every tensor must have a device. */
#include "load/load_internal.h"

#include <stdlib.h>
#include <string.h>

void vf__placement_free(vf__placement *p)
{
    free(p->tensor_dev);
    p->tensor_dev = NULL;
}

static int device_index(vf__placement *p, const char *name)
{
    for (size_t i = 0; i < p->n_devices; i++)
        if (strcmp(p->devices[i], name) == 0)
            return (int)i;
    if (p->n_devices >= VF_LOAD_MAX_DEVICES)
        return -1;
    snprintf(p->devices[p->n_devices], sizeof p->devices[0], "%s", name);
    return (int)p->n_devices++;
}

/* Map value → canonical device name; false when not a device. */
static bool value_device(const json_t *v, char out[32])
{
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 0 || n > 1023)
            return false;
        snprintf(out, 32, "cuda:%d", (int)n);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    if (strcmp(s, "cpu") == 0 || strcmp(s, "host") == 0) {
        snprintf(out, 32, "host");
        return true;
    }
    if (strcmp(s, "null") == 0) {
        snprintf(out, 32, "null");
        return true;
    }
    if (strcmp(s, "cuda") == 0 || strcmp(s, "cuda:0") == 0) {
        snprintf(out, 32, "cuda:0");
        return true;
    }
    if (strncmp(s, "cuda:", 5) == 0) {
        char *end = NULL;
        long n = strtol(s + 5, &end, 10);
        if (s[5] < '0' || s[5] > '9' || *end || n < 0 || n > 1023)
            return false;
        snprintf(out, 32, "cuda:%ld", n);
        return true;
    }
    return false;
}

static bool prefix_match(const char *name, const char *key, size_t klen)
{
    if (strncmp(name, key, klen) != 0)
        return false;
    return name[klen] == '\0' || name[klen] == '.' || (klen && key[klen - 1] == '.');
}

vf_status vf__device_map_file(const vf_model *m, const char *path, vf__placement *p, vf_error *err)
{
    memset(p, 0, sizeof *p);
    char *text = NULL;
    size_t len = 0;
    vf_status st = vf__read_small_file(path, VF_MAX_CONFIG_BYTES, &text, &len, err);
    if (st != VF_OK)
        return st == VF_EFORMAT ? vf__err(err, VF_EINVAL, path, "%s", "cannot read the device map") : st;
    json_t *root = vf__json_parse(text, len, path, err);
    free(text);
    if (!root)
        return err ? (err->status = VF_EINVAL) : VF_EINVAL;
    if (!json_is_object(root)) {
        json_decref(root);
        return vf__err(err, VF_EINVAL, path, "a device map is a JSON object of name prefix → device");
    }
    size_t n = vf_model_tensor_count(m);
    p->tensor_dev = malloc((n ? n : 1) * sizeof *p->tensor_dev);
    if (!p->tensor_dev) {
        json_decref(root);
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    }
    /* Validate every entry once, up front. */
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        char dev[32];
        if (!value_device(val, dev)) {
            st = vf__err(err, VF_EINVAL, path, "'%s': not a device (an integer, \"cuda:N\", \"cpu\", \"host\", \"null\")",
                         key);
            goto out;
        }
        if (strncmp(key, "layers:", 7) == 0) {
            unsigned a = 0, b = 0;
            char extra;
            int k = sscanf(key + 7, "%u-%u%c", &a, &b, &extra);
            if (k == 1)
                b = a;
            if ((k != 1 && k != 2) || b < a) {
                st = vf__err(err, VF_EINVAL, path, "'%s': a layer range is \"layers:A-B\" with A <= B", key);
                goto out;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        const json_t *best = NULL, *range = NULL, *star = NULL;
        size_t best_len = 0;
        json_object_foreach(root, key, val) {
            if (strcmp(key, "*") == 0) {
                star = val;
            } else if (strncmp(key, "layers:", 7) == 0) {
                unsigned a = 0, b = 0;
                if (sscanf(key + 7, "%u-%u", &a, &b) == 1)
                    b = a;
                if (t->layer >= 0 && (unsigned)t->layer >= a && (unsigned)t->layer <= b)
                    range = val;
            } else {
                size_t kl = strlen(key);
                if (kl >= best_len && prefix_match(t->name, key, kl)) {
                    best = val;
                    best_len = kl;
                }
            }
        }
        const json_t *v = best ? best : range ? range : star;
        if (!v) {
            st = vf__err(err, VF_EINVAL, path, "tensor '%s' has no device in the map (add \"*\")", t->name);
            goto out;
        }
        char dev[32];
        value_device(v, dev);
        int d = device_index(p, dev);
        if (d < 0) {
            st = vf__err(err, VF_EINVAL, path, "more than %d devices", VF_LOAD_MAX_DEVICES);
            goto out;
        }
        p->tensor_dev[i] = (uint32_t)d;
    }
out:
    json_decref(root);
    if (st != VF_OK)
        vf__placement_free(p);
    return st;
}

/* Order of placement: what comes before the blocks (embeddings), the blocks
 * in order, then what follows them (final norm, output head). */
static int64_t group_of(const vf_tensor *t, int32_t max_layer)
{
    if (t->layer >= 0)
        return (int64_t)t->layer + 1;
    if (t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED)
        return 0;
    return (int64_t)max_layer + 2;
}

typedef struct {
    int64_t group;
    size_t index;
} sort_key;

static int cmp_key(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static uint64_t padded(uint64_t b) { return (b + VF_LOAD_TENSOR_ALIGN - 1) / VF_LOAD_TENSOR_ALIGN * VF_LOAD_TENSOR_ALIGN; }

vf_status vf__device_map_auto(const vf_model *m, size_t n_devices, char names[][32], const uint64_t *budget,
                              vf__placement *p, vf_error *err)
{
    memset(p, 0, sizeof *p);
    if (n_devices == 0 || n_devices > VF_LOAD_MAX_DEVICES)
        return vf__err(err, VF_EINVAL, "device map", "no device to place tensors on");
    size_t n = vf_model_tensor_count(m);
    p->tensor_dev = malloc((n ? n : 1) * sizeof *p->tensor_dev);
    if (!p->tensor_dev)
        return vf__err(err, VF_ENOMEM, "device map", "out of memory");
    p->n_devices = n_devices;
    for (size_t d = 0; d < n_devices; d++)
        snprintf(p->devices[d], sizeof p->devices[d], "%s", names[d]);
    int32_t max_layer = -1;
    for (size_t i = 0; i < n; i++)
        if (vf_model_tensor(m, i)->layer > max_layer)
            max_layer = vf_model_tensor(m, i)->layer;
    /* Walk the groups in order; a group (one block, or the pre/post tensors)
     * is never split, so a device holds whole layers as -ngl does. */
    sort_key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) {
        vf__placement_free(p);
        return vf__err(err, VF_ENOMEM, "device map", "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (sort_key){group_of(vf_model_tensor(m, i), max_layer), i};
    qsort(k, n, sizeof *k, cmp_key);
    size_t dev = 0;
    uint64_t used = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t bytes = 0;
        for (; j < n && k[j].group == k[i].group; j++)
            bytes += padded(vf_model_tensor(m, k[j].index)->n_bytes);
        while (dev + 1 < n_devices && used + bytes > budget[dev]) {
            dev++;
            used = 0;
        }
        used += bytes;
        for (; i < j; i++)
            p->tensor_dev[k[i].index] = (uint32_t)dev;
    }
    free(k);
    return VF_OK;
}
