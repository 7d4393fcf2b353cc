/* load_dlpack.c — a loaded model handed to a framework as DLPack tensors:
 * the loader streams every file into one allocation (per file, through the
 * ring), each tensor is a view into it, and the loaded copy lives until the
 * set and every tensor taken from it are released (a reference count the
 * tensors' deleters drop, from whichever thread the framework frees them).
 * Element types the framework has (PyTorch 1.13: F64..F16, BF16, I8..I64,
 * U8, BOOL) keep their shape; others (FP8, U16-U64, quantized GGUF blocks)
 * are handed over as their raw bytes, uint8, the type named beside them
 * (docs/loader.md). */
#include "load/dlpack_abi.h"
#include "model/model.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct vf_dlpack_set {
    vf_model *model;
    vf_loader *loader;
    atomic_size_t refs;
    int32_t device_type, device_id;
};

typedef struct held {
    dlpack_managed m;
    vf_dlpack_set *set;
    int64_t shape[VF_MAX_DIMS];
    int64_t strides[VF_MAX_DIMS];
} held;

static void drop(vf_dlpack_set *s)
{
    if (atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    vf_loader_free(s->loader);
    vf_model_free(s->model);
    free(s);
}

/* The framework's element type for dt; false: hand over the raw bytes. */
static bool native_type(vf_dtype dt, dlpack_dtype *out)
{
    static const struct { vf_dtype dt; uint8_t code, bits; } map[] = {
        {VF_DTYPE_F64, DLPACK_FLOAT, 64}, {VF_DTYPE_F32, DLPACK_FLOAT, 32}, {VF_DTYPE_F16, DLPACK_FLOAT, 16},
        {VF_DTYPE_BF16, DLPACK_BFLOAT, 16}, {VF_DTYPE_I64, DLPACK_INT, 64}, {VF_DTYPE_I32, DLPACK_INT, 32},
        {VF_DTYPE_I16, DLPACK_INT, 16}, {VF_DTYPE_I8, DLPACK_INT, 8}, {VF_DTYPE_U8, DLPACK_UINT, 8},
        {VF_DTYPE_BOOL, DLPACK_BOOL, 8}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].dt == dt) {
            *out = (dlpack_dtype){.code = map[i].code, .bits = map[i].bits, .lanes = 1};
            return true;
        }
    return false;
}

bool vf_dlpack_raw(const vf_dlpack_set *s, size_t i)
{
    dlpack_dtype d;
    const vf_tensor *t = s ? vf_model_tensor(s->model, i) : NULL;
    return t && !native_type(t->dtype, &d);
}

/* Shape of the raw bytes: the tensor's shape with its last dimension in
 * bytes when each element is whole bytes (FP8: the same shape; U16: twice
 * the last); one dimension of n_bytes for packed blocks. */
static int32_t raw_shape(const vf_tensor *t, int64_t *shape)
{
    const vf_dtype_info *di = vf_dtype_get(t->dtype);
    if (di && di->block_elements == 1 && t->n_dims > 0) {
        for (uint32_t d = 0; d < t->n_dims; d++)
            shape[d] = (int64_t)t->shape[d];
        shape[t->n_dims - 1] *= di->block_bytes;
        return (int32_t)t->n_dims;
    }
    shape[0] = (int64_t)t->n_bytes;
    return 1;
}

static void deleter(dlpack_managed *m)
{
    held *h = (held *)m;
    vf_dlpack_set *s = h->set;
    free(h);
    drop(s);
}

static bool parse_device(const char *dev, int32_t *type, int32_t *id)
{
    if (!strcmp(dev, "host")) {
        *type = DLPACK_CPU;
        *id = 0;
        return true;
    }
    char *end;
    if (strncmp(dev, "cuda:", 5) != 0)
        return false;
    long n = strtol(dev + 5, &end, 10);
    if (end == dev + 5 || *end || n < 0 || n > 1023)
        return false;
    *type = DLPACK_CUDA;
    *id = (int32_t)n;
    return true;
}

vf_status vf_dlpack_load(vf_model *m, const vf_load_opts *o, vf_dlpack_set **out, vf_load_result *res,
                         vf_error *err)
{
    *out = NULL;
    if (!m)
        return vf__err(err, VF_EINVAL, "", "tensors for a framework: no model");
    const char *source = vf_model_source(m);
    vf_load_opts opts;
    vf_load_opts_init(&opts);
    if (o)
        opts = *o;
    vf_dlpack_set *s = calloc(1, sizeof *s);
    if (!s) {
        vf_model_free(m);
        return vf__err(err, VF_ENOMEM, source, "out of memory");
    }
    s->model = m; /* the set owns it from here, failures included */
    atomic_init(&s->refs, 1);
    vf_status st = VF_OK;
    if (opts.device_map)
        st = vf__err(err, VF_EINVAL, source, "tensors for a framework: one device, no device map");
    else if (!parse_device(opts.device, &s->device_type, &s->device_id))
        st = vf__err(err, VF_EINVAL, source, "tensors for a framework: device '%s' is not host or cuda:N", opts.device);
    else if (vf_model_format(m) != VF_FORMAT_SAFETENSORS && vf_model_format(m) != VF_FORMAT_GGUF)
        st = vf__err(err, VF_EUNSUPPORTED, source, "tensors for a framework: a safetensors or GGUF checkpoint, "
                                                   "not a description without weights");
    if (st == VF_OK)
        st = vf_loader_open(m, &opts, &s->loader, err);
    vf_load_result *own = res ? NULL : vf_load_result_new();
    if (st == VF_OK && !res && !own)
        st = vf__err(err, VF_ENOMEM, source, "out of memory");
    if (st == VF_OK)
        st = vf_loader_run(s->loader, res ? res : own, err);
    vf_load_result_free(own);
    if (st != VF_OK) {
        drop(s);
        return st;
    }
    *out = s;
    return VF_OK;
}

size_t vf_dlpack_count(const vf_dlpack_set *s)
{
    return s ? vf_model_tensor_count(s->model) : 0;
}

const char *vf_dlpack_name(const vf_dlpack_set *s, size_t i)
{
    const vf_tensor *t = s ? vf_model_tensor(s->model, i) : NULL;
    return t ? t->name : NULL;
}

const char *vf_dlpack_dtype(const vf_dlpack_set *s, size_t i)
{
    const vf_tensor *t = s ? vf_model_tensor(s->model, i) : NULL;
    const vf_dtype_info *di = t ? vf_dtype_get(t->dtype) : NULL;
    return di ? di->name : NULL;
}

void *vf_dlpack_take(vf_dlpack_set *s, size_t i, vf_error *err)
{
    const vf_tensor *t = s ? vf_model_tensor(s->model, i) : NULL;
    const char *dev;
    uint64_t addr;
    if (!t || vf_loader_tensor_location(s->loader, i, &dev, &addr, err) != VF_OK)
        return NULL;
    held *h = calloc(1, sizeof *h);
    if (!h) {
        vf__err(err, VF_ENOMEM, t->name, "out of memory");
        return NULL;
    }
    dlpack_tensor *d = &h->m.dl_tensor;
    if (native_type(t->dtype, &d->dtype)) {
        d->ndim = (int32_t)t->n_dims;
        for (uint32_t k = 0; k < t->n_dims; k++)
            h->shape[k] = (int64_t)t->shape[k];
    } else {
        d->dtype = (dlpack_dtype){.code = DLPACK_UINT, .bits = 8, .lanes = 1};
        d->ndim = raw_shape(t, h->shape);
    }
    int64_t stride = 1; /* row-major, contiguous: the file's layout */
    for (int32_t k = d->ndim; k-- > 0;) {
        h->strides[k] = stride;
        stride *= h->shape[k] > 0 ? h->shape[k] : 1;
    }
    d->data = (void *)(uintptr_t)addr;
    d->device = (dlpack_device){.device_type = s->device_type, .device_id = s->device_id};
    d->shape = h->shape;
    d->strides = h->strides;
    h->m.manager_ctx = h;
    h->m.deleter = deleter;
    h->set = s;
    atomic_fetch_add(&s->refs, 1);
    return &h->m;
}

void vf_dlpack_release(vf_dlpack_set *s)
{
    if (s)
        drop(s);
}
