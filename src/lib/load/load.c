/* load.c — the streaming loader (docs/loader.md).
 *
 * Plan: one device allocation per file (tensors at offset − data start), or
 * with a device map one per device (tensors packed at 256-byte alignment).
 * The bytes to move are cut into chunks of one ring slot each.
 * Run: reader threads pread chunks into free slots of a ring of pinned
 * buffers; the calling thread queues one asynchronous host-to-device copy per
 * filled slot and records the slot's event after it, and a slot goes back to
 * the readers only once that event has completed. Devices whose memory is
 * host memory ("host") need no ring: readers pread straight into place.
 * Any failure stops the readers, waits for the copies already queued, and
 * releases every byte the run took. */
#define _GNU_SOURCE /* O_DIRECT */
#include "load/load_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

ssize_t (*vf__load_pread)(int fd, void *buf, size_t n, off_t off) = pread;

/* Default ring: at least 64 MiB, and 8 MiB per slot when there are many
 * readers: a copy of 8 MiB keeps the per-copy cost (~10 us of launch and DMA
 * setup) near 1% at 50 GB/s, and 2 slots per reader keep a reader's share
 * of the ring queued on the GPU while it reads the next chunk. */
#define DEFAULT_STAGING ((uint64_t)64 << 20)
#define DEFAULT_SLOT ((uint64_t)8 << 20)
#define DEFAULT_MAX_THREADS 16
#define MIN_SLOT ((uint64_t)64 << 10)
/* The plan holds one 40-byte record per chunk: sizes come from files (a sparse
 * file can claim petabytes), so their number is capped (320 MiB of plan; 64 TiB
 * in 8 MiB slots) before anything that large is allocated. */
#define MAX_CHUNKS ((size_t)1 << 23)
#define DIRECT_ALIGN 4096u /* O_DIRECT: offset, length and buffer aligned to the logical block */

typedef struct chunk {
    uint32_t file;
    uint32_t part;
    uint64_t file_off;
    uint64_t len;
    uint64_t dst_off; /* within the part's allocation */
} chunk;

typedef struct part {
    uint32_t dev;
    uint64_t bytes;
    uint64_t addr;
    bool allocated;
} part;

enum { SLOT_FREE, SLOT_READING, SLOT_FILLED, SLOT_INFLIGHT };

typedef struct slot {
    unsigned char *buf;
    int state;
    size_t chunk;
    const unsigned char *data; /* the chunk's bytes inside buf */
    uint32_t ev_dev;           /* device whose event guards the slot */
    void *ev[VF_LOAD_MAX_DEVICES];
} slot;

struct vf_loader {
    const vf_model *m;
    vf_load_opts o;
    char *map_spec;
    size_t n_devs;
    vf__backend *devs[VF_LOAD_MAX_DEVICES];
    vf_load_device info[VF_LOAD_MAX_DEVICES];
    bool by_nvml[VF_LOAD_MAX_DEVICES]; /* the device's figures all come from NVML */
    uint32_t *tensor_part;
    uint64_t *tensor_dst;
    size_t n_tensors_placed;
    uint64_t tensor_bytes;
    part *parts;
    size_t n_parts;
    chunk *chunks;
    size_t n_chunks;
    uint64_t total_bytes;
    uint64_t slot_bytes;
    uint32_t n_slots, threads;
    bool need_ring;
    vf__backend *ring_owner;
    bool loaded;

    /* run state */
    int *fds, *dfds;
    bool direct_on;
    slot *slots;
    size_t *filled, *inflight; /* FIFOs of slot indices */
    size_t n_filled, h_filled, n_inflight, h_inflight;
    uint64_t *chunk_hash;
    pthread_mutex_t mu;
    pthread_cond_t cv_slot, cv_work;
    size_t next_chunk, chunks_done;
    uint64_t bytes_done;
    bool stop;
    vf_status st;
    vf_error err;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void vf_load_opts_init(vf_load_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->device, sizeof o->device, "host");
}

/* ---------------------------------------------------------------- open */

static int dev_index(vf_loader *l, const char *name) /* -1 if not open */
{
    for (size_t i = 0; i < l->n_devs; i++)
        if (strcmp(l->devs[i]->name, name) == 0)
            return (int)i;
    return -1;
}

/* NVML's used bytes of the device with this UUID now. */
static bool nvml_used(const char *uuid, uint64_t *used)
{
    vf_local_gpu g[VF_LOAD_MAX_DEVICES];
    size_t n = 0;
    if (!uuid[0] || vf_local_gpus(g, VF_LOAD_MAX_DEVICES, &n, NULL) != VF_OK)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(g[i].uuid, uuid) == 0 && g[i].total_bytes > 0) { /* 0: NVML refused the memory query */
            *used = g[i].used_bytes;
            return true;
        }
    return false;
}

static vf_status open_device(vf_loader *l, const char *name, vf_local_gpu *gpus, size_t n_gpus, vf_error *err)
{
    if (dev_index(l, name) >= 0)
        return VF_OK;
    if (l->n_devs >= VF_LOAD_MAX_DEVICES)
        return vf__err(err, VF_EINVAL, name, "more than %d devices", VF_LOAD_MAX_DEVICES);
    vf__backend *b = NULL;
    vf_status st = vf__backend_open(name, &b, err);
    if (st != VF_OK)
        return st;
    size_t i = l->n_devs++;
    l->devs[i] = b;
    vf_load_device *d = &l->info[i];
    snprintf(d->device, sizeof d->device, "%s", b->name);
    snprintf(d->name, sizeof d->name, "%s", b->gpu);
    snprintf(d->mem_source, sizeof d->mem_source, "%s", b->mem_source);
    uint64_t fr = 0, tot = 0;
    if (b->ops->mem_info(b, &fr, &tot, NULL) == VF_OK) {
        d->used_ready_bytes = tot - fr;
        d->used_before_bytes = d->used_ready_bytes;
        /* NVML saw the device before our context existed: the difference is the
         * context's cost. NVML again now, not cuMemGetInfo: the two disagree by
         * the driver's reserved memory (NVML's v1 "used" and total include it,
         * cuMemGetInfo's do not: ~0.5 GiB on an H100), which would swallow the
         * context's cost. */
        uint64_t ready = 0;
        for (size_t g = 0; g < n_gpus; g++)
            if (b->uuid[0] && strcmp(gpus[g].uuid, b->uuid) == 0 && gpus[g].total_bytes > 0 &&
                nvml_used(b->uuid, &ready)) {
                d->used_before_bytes = gpus[g].used_bytes;
                d->used_ready_bytes = ready;
                l->by_nvml[i] = true;
                snprintf(d->mem_source, sizeof d->mem_source, "nvml");
            }
    }
    return VF_OK;
}

/* Builds the per-device budgets for --device-map auto: every CUDA device the
 * driver shows, filled up to its free memory less headroom, then the host. */
#define AUTO_HEADROOM ((uint64_t)512 << 20)

static vf_status plan_auto(vf_loader *l, vf__placement *p, vf_local_gpu *gpus, size_t n_gpus, vf_error *err)
{
    int n_cuda = 0;
    vf_status st = vf__cuda_device_count(&n_cuda, NULL);
    if (st != VF_OK)
        n_cuda = 0;
    if (n_cuda > VF_LOAD_MAX_DEVICES - 1)
        n_cuda = VF_LOAD_MAX_DEVICES - 1;
    char names[VF_LOAD_MAX_DEVICES][32];
    uint64_t budget[VF_LOAD_MAX_DEVICES];
    size_t n = 0;
    for (int i = 0; i < n_cuda; i++) {
        snprintf(names[n], sizeof names[n], "cuda:%d", i);
        if ((st = open_device(l, names[n], gpus, n_gpus, err)) != VF_OK)
            return st;
        vf__backend *b = l->devs[dev_index(l, names[n])];
        uint64_t fr = 0, tot = 0;
        if (b->ops->mem_info(b, &fr, &tot, err) != VF_OK)
            return VF_EDEVICE;
        budget[n++] = fr > AUTO_HEADROOM ? fr - AUTO_HEADROOM : 0;
    }
    snprintf(names[n], sizeof names[n], "host");
    budget[n++] = UINT64_MAX;
    return vf__device_map_auto(l->m, n, names, budget, p, err);
}

static vf_status add_chunks(vf_loader *l, size_t *cap, uint32_t file, uint32_t pi, uint64_t off, uint64_t len,
                            uint64_t dst, vf_error *err)
{
    while (len > 0) {
        uint64_t n = len < l->slot_bytes ? len : l->slot_bytes;
        if (l->n_chunks == MAX_CHUNKS)
            return vf__err(err, VF_EUNSUPPORTED, vf_model_source(l->m),
                           "too large to stage in %llu-byte buffers (more than %zu chunks): raise --staging-mb",
                           (unsigned long long)l->slot_bytes, MAX_CHUNKS);
        if (l->n_chunks == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            chunk *c = realloc(l->chunks, nc * sizeof *c);
            if (!c)
                return vf__err(err, VF_ENOMEM, vf_model_source(l->m), "out of memory");
            l->chunks = c;
            *cap = nc;
        }
        l->chunks[l->n_chunks++] = (chunk){file, pi, off, n, dst};
        off += n;
        dst += n;
        len -= n;
    }
    return VF_OK;
}

/* One allocation per file: the whole data section, streamed in order. */
static vf_status plan_per_file(vf_loader *l, vf_error *err)
{
    const vf_model *m = l->m;
    size_t nf = vf_model_file_count(m), cap = 0;
    l->parts = calloc(nf ? nf : 1, sizeof *l->parts);
    if (!l->parts)
        return vf__err(err, VF_ENOMEM, vf_model_source(m), "out of memory");
    for (size_t f = 0; f < nf; f++) {
        const vf_file_info *fi = vf_model_file(m, f);
        l->parts[f] = (part){0, fi->data_bytes, 0, false};
        if (vf__add_overflow(l->total_bytes, fi->data_bytes, &l->total_bytes))
            return vf__err(err, VF_EFORMAT, vf_model_source(m), "the files' data add up past 2^64 bytes");
        vf_status st = add_chunks(l, &cap, (uint32_t)f, (uint32_t)f, fi->data_offset, fi->data_bytes, 0, err);
        if (st != VF_OK)
            return st;
    }
    l->n_parts = nf;
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        const vf_file_info *fi = vf_model_file(m, t->file);
        l->tensor_part[i] = t->file;
        l->tensor_dst[i] = t->offset - fi->data_offset;
    }
    return VF_OK;
}

typedef struct {
    uint32_t file;
    uint64_t offset;
    size_t index;
} by_offset;

static int cmp_offset(const void *a, const void *b)
{
    const by_offset *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* One allocation per device: its tensors packed in file order; adjacent
 * tensors that stay adjacent are read as one run. */
static vf_status plan_mapped(vf_loader *l, const vf__placement *p, vf_error *err)
{
    const vf_model *m = l->m;
    size_t n = vf_model_tensor_count(m), cap = 0;
    l->parts = calloc(p->n_devices, sizeof *l->parts);
    by_offset *order = malloc((n ? n : 1) * sizeof *order);
    if (!l->parts || !order) {
        free(order);
        return vf__err(err, VF_ENOMEM, vf_model_source(m), "out of memory");
    }
    l->n_parts = p->n_devices;
    for (size_t d = 0; d < p->n_devices; d++)
        l->parts[d].dev = (uint32_t)dev_index(l, p->devices[d]);
    for (size_t i = 0; i < n; i++)
        order[i] = (by_offset){vf_model_tensor(m, i)->file, vf_model_tensor(m, i)->offset, i};
    qsort(order, n, sizeof *order, cmp_offset);
    vf_status st = VF_OK;
    for (size_t d = 0; d < p->n_devices && st == VF_OK; d++) {
        uint64_t dst = 0, run_off = 0, run_len = 0, run_dst = 0;
        uint32_t run_file = 0;
        for (size_t k = 0; k < n && st == VF_OK; k++) {
            size_t i = order[k].index;
            if (p->tensor_dev[i] != d)
                continue;
            const vf_tensor *t = vf_model_tensor(m, i);
            /* Sizes come from the files (sparse ones can claim exabytes): a wrapped
             * offset would put tensors inside a too-small allocation. */
            uint64_t aligned, end;
            if (vf__add_overflow(dst, VF_LOAD_TENSOR_ALIGN - 1, &aligned) ||
                vf__add_overflow(aligned / VF_LOAD_TENSOR_ALIGN * VF_LOAD_TENSOR_ALIGN, t->n_bytes, &end) ||
                vf__add_overflow(l->total_bytes, t->n_bytes, &l->total_bytes)) {
                st = vf__err(err, VF_EFORMAT, vf_model_source(m), "the tensors for %s add up past 2^64 bytes",
                             p->devices[d]);
                break;
            }
            dst = aligned / VF_LOAD_TENSOR_ALIGN * VF_LOAD_TENSOR_ALIGN;
            l->tensor_part[i] = (uint32_t)d;
            l->tensor_dst[i] = dst;
            if (run_len && run_file == t->file && run_off + run_len == t->offset && run_dst + run_len == dst) {
                run_len += t->n_bytes;
            } else {
                if (run_len)
                    st = add_chunks(l, &cap, run_file, (uint32_t)d, run_off, run_len, run_dst, err);
                run_file = t->file, run_off = t->offset, run_len = t->n_bytes, run_dst = dst;
            }
            dst = end;
        }
        if (run_len && st == VF_OK)
            st = add_chunks(l, &cap, run_file, (uint32_t)d, run_off, run_len, run_dst, err);
        l->parts[d].bytes = dst;
    }
    free(order);
    return st;
}

vf_status vf_loader_open(const vf_model *m, const vf_load_opts *o, vf_loader **out, vf_error *err)
{
    *out = NULL;
    vf_load_opts defaults;
    if (!o) {
        vf_load_opts_init(&defaults);
        o = &defaults;
    }
    const char *src = vf_model_source(m);
    size_t nt = vf_model_tensor_count(m);
    for (size_t i = 0; i < nt; i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        if (t->file == VF_NO_FILE)
            return vf__err(err, VF_EUNSUPPORTED, src, "no tensor data to load (the model comes from a config)");
        const vf_file_info *fi = vf_model_file(m, t->file);
        uint64_t end, data_end;
        if (!fi || t->offset < fi->data_offset || vf__add_overflow(t->offset, t->n_bytes, &end) ||
            vf__add_overflow(fi->data_offset, fi->data_bytes, &data_end) || end > data_end)
            return vf__err(err, VF_EFORMAT, fi ? fi->path : src, "tensor '%s' lies outside the data section", t->name);
    }
    vf_loader *l = calloc(1, sizeof *l);
    if (!l)
        return vf__err(err, VF_ENOMEM, src, "out of memory");
    l->m = m;
    l->o = *o;
    l->o.device[sizeof l->o.device - 1] = '\0';
    if (o->device_map) {
        l->map_spec = strdup(o->device_map);
        l->o.device_map = l->map_spec;
    }
    vf_status st = VF_OK;
    vf__placement pl = {0};
    vf_local_gpu gpus[VF_LOAD_MAX_DEVICES];
    size_t n_gpus = 0;
    l->tensor_part = malloc((nt ? nt : 1) * sizeof *l->tensor_part);
    l->tensor_dst = malloc((nt ? nt : 1) * sizeof *l->tensor_dst);
    if (!l->tensor_part || !l->tensor_dst || (o->device_map && !l->map_spec)) {
        st = vf__err(err, VF_ENOMEM, src, "out of memory");
        goto fail;
    }
    /* Ring geometry. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* One reader copies ~5-10 GB/s out of the page cache; a Gen5 x16 link takes ~55 GB/s. */
    l->threads = o->threads ? o->threads
                            : (uint32_t)(cpus < 1 ? 1 : cpus > DEFAULT_MAX_THREADS ? DEFAULT_MAX_THREADS : cpus);
    if (l->threads > 64)
        l->threads = 64;
    l->n_slots = o->buffers ? o->buffers : (l->threads * 2 > 4 ? l->threads * 2 : 4);
    if (l->n_slots < 2 || l->n_slots > 1024) {
        st = vf__err(err, VF_EINVAL, "staging", "%u buffers: between 2 and 1024", l->n_slots);
        goto fail;
    }
    uint64_t staging = o->staging_bytes;
    if (!staging)
        staging = (uint64_t)l->n_slots * DEFAULT_SLOT > DEFAULT_STAGING ? (uint64_t)l->n_slots * DEFAULT_SLOT
                                                                        : DEFAULT_STAGING;
    l->slot_bytes = staging / l->n_slots / MIN_SLOT * MIN_SLOT;
    if (l->slot_bytes < MIN_SLOT || l->slot_bytes > ((uint64_t)1 << 32)) {
        st = vf__err(err, VF_EINVAL, "staging", "%llu bytes for %u buffers: each must be 64 KiB to 4 GiB",
                     (unsigned long long)staging, l->n_slots);
        goto fail;
    }
    /* NVML first: "before" must be measured before our context exists. */
    bool wants_cuda = strncmp(l->o.device, "cuda", 4) == 0 || o->device_map;
    if (wants_cuda)
        vf_local_gpus(gpus, VF_LOAD_MAX_DEVICES, &n_gpus, NULL);
    if (!o->device_map) {
        if ((st = open_device(l, l->o.device, gpus, n_gpus, err)) != VF_OK)
            goto fail;
        st = plan_per_file(l, err);
    } else {
        if (strcmp(o->device_map, "auto") == 0)
            st = plan_auto(l, &pl, gpus, n_gpus, err);
        else
            st = vf__device_map_file(m, o->device_map, &pl, err);
        for (size_t d = 0; st == VF_OK && d < pl.n_devices; d++)
            st = open_device(l, pl.devices[d], gpus, n_gpus, err);
        if (st == VF_OK)
            st = plan_mapped(l, &pl, err);
        snprintf(l->o.device, sizeof l->o.device, "map");
    }
    if (st != VF_OK)
        goto fail;
    for (size_t i = 0; i < nt; i++) {
        l->tensor_bytes += vf_model_tensor(m, i)->n_bytes;
        l->info[l->parts[l->tensor_part[i]].dev].tensors++;
        l->info[l->parts[l->tensor_part[i]].dev].bytes += vf_model_tensor(m, i)->n_bytes;
    }
    l->n_tensors_placed = nt;
    /* The ring is pinned by a device that keeps data (a GPU), not by "null"
     * (plain memory), whose buffers a GPU would copy from as pageable memory. */
    for (size_t c = 0; c < l->n_chunks; c++) {
        vf__backend *b = l->devs[l->parts[l->chunks[c].part].dev];
        if (!b->ops->host_addressable) {
            l->need_ring = true;
            if (!l->ring_owner || (!l->ring_owner->ops->keeps_data && b->ops->keeps_data))
                l->ring_owner = b;
        }
    }
    /* A small model needs no more slots than it has chunks to stage. */
    size_t ring_chunks = 0;
    for (size_t c = 0; c < l->n_chunks; c++)
        ring_chunks += !l->devs[l->parts[l->chunks[c].part].dev]->ops->host_addressable;
    if (ring_chunks < l->n_slots)
        l->n_slots = ring_chunks < 2 ? 2 : (uint32_t)ring_chunks;
    if (o->verify)
        for (size_t i = 0; i < l->n_devs; i++)
            if (!l->devs[i]->ops->keeps_data && l->info[i].bytes) {
                st = vf__err(err, VF_EINVAL, l->devs[i]->name, "keeps nothing to verify (drop --verify)");
                goto fail;
            }
    /* The files must still hold what their headers promise. */
    for (size_t f = 0; f < vf_model_file_count(m); f++) {
        const vf_file_info *fi = vf_model_file(m, f);
        struct stat sb;
        if (stat(fi->path, &sb) != 0) {
            st = vf__err(err, VF_EIO, fi->path, "%s", strerror(errno));
            goto fail;
        }
        /* A difference, not data_offset + data_bytes: that sum comes from the file and may wrap. */
        if (sb.st_size < 0 || (uint64_t)sb.st_size < fi->data_offset || (uint64_t)sb.st_size - fi->data_offset < fi->data_bytes) {
            st = vf__err(err, VF_EFORMAT, fi->path, "file is truncated: %llu bytes, the header needs %llu",
                         (unsigned long long)sb.st_size, (unsigned long long)(fi->data_offset + fi->data_bytes));
            goto fail;
        }
    }
    vf__placement_free(&pl);
    *out = l;
    return VF_OK;
fail:
    vf__placement_free(&pl);
    vf_loader_free(l);
    return st;
}

/* ---------------------------------------------------------------- run */

static void fail_locked(vf_loader *l, vf_status st, const vf_error *e)
{
    if (l->st == VF_OK) {
        l->st = st;
        l->err = *e;
        l->err.status = st;
    }
    l->stop = true;
    pthread_cond_broadcast(&l->cv_slot);
    pthread_cond_broadcast(&l->cv_work);
}

/* Reads [off, off+len) of file f into dst. With O_DIRECT the read is widened
 * to the block alignment inside buf and *data points at the first wanted byte. */
static vf_status read_chunk(vf_loader *l, const chunk *c, unsigned char *buf, bool direct, const unsigned char **data,
                            vf_error *err)
{
    const char *path = vf_model_file(l->m, c->file)->path;
    uint64_t off = c->file_off, want = c->len, got = 0;
    int fd = l->fds[c->file];
    if (direct && l->dfds[c->file] >= 0) {
        fd = l->dfds[c->file];
        off = c->file_off / DIRECT_ALIGN * DIRECT_ALIGN;
        want = (c->file_off + c->len + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN - off;
    } else {
        direct = false;
    }
    uint64_t need = direct ? c->file_off + c->len - off : c->len;
    while (got < need) {
        ssize_t r = vf__load_pread(fd, buf + got, (size_t)(want - got), (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && direct && errno == EINVAL && got == 0) {
            /* The file system refused O_DIRECT after all: buffered for this chunk. */
            return read_chunk(l, c, buf, false, data, err);
        }
        if (r < 0)
            return vf__err(err, VF_EIO, path, "read failed at offset %llu: %s", (unsigned long long)(off + got),
                           strerror(errno));
        if (r == 0)
            return vf__err(err, VF_EIO, path, "short read at offset %llu: %llu of %llu bytes (file truncated?)",
                           (unsigned long long)(off + got), (unsigned long long)got, (unsigned long long)need);
        got += (uint64_t)r;
        if (direct && got < need && got % DIRECT_ALIGN)
            return vf__err(err, VF_EIO, path, "short read at offset %llu (file truncated?)",
                           (unsigned long long)(off + got));
    }
    *data = buf + (c->file_off - off);
    return VF_OK;
}

/* The flag is set by a signal handler or another thread: read it atomically. */
static bool cancelled(const vf_loader *l) { return l->o.cancel && __atomic_load_n(l->o.cancel, __ATOMIC_RELAXED); }

static void *reader_main(void *arg)
{
    vf_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        size_t ci = l->next_chunk;
        if (l->stop || ci >= l->n_chunks)
            break;
        const chunk *c = &l->chunks[ci];
        const part *p = &l->parts[c->part];
        vf__backend *b = l->devs[p->dev];
        bool in_place = b->ops->host_addressable;
        size_t si = SIZE_MAX;
        if (!in_place) {
            for (size_t s = 0; s < l->n_slots; s++)
                if (l->slots[s].state == SLOT_FREE) {
                    si = s;
                    break;
                }
            if (si == SIZE_MAX) {
                pthread_cond_wait(&l->cv_slot, &l->mu);
                continue;
            }
            l->slots[si].state = SLOT_READING;
            l->slots[si].chunk = ci;
        }
        l->next_chunk++;
        pthread_mutex_unlock(&l->mu);

        vf_error e = {0};
        vf_status st = VF_OK;
        const unsigned char *data = NULL;
        if (cancelled(l))
            st = vf__err(&e, VF_EINTR, vf_model_source(l->m), "interrupted");
        else if (in_place)
            st = read_chunk(l, c, (unsigned char *)(uintptr_t)(p->addr + c->dst_off), false, &data, &e);
        else
            st = read_chunk(l, c, l->slots[si].buf, l->direct_on, &data, &e);
        if (st == VF_OK && l->chunk_hash)
            l->chunk_hash[ci] = vf_hash64(data, (size_t)c->len, ci);

        pthread_mutex_lock(&l->mu);
        if (st != VF_OK) {
            if (si != SIZE_MAX)
                l->slots[si].state = SLOT_FREE;
            fail_locked(l, st, &e);
            break;
        }
        if (in_place) {
            l->chunks_done++;
            l->bytes_done += c->len;
        } else {
            l->slots[si].data = data;
            l->slots[si].state = SLOT_FILLED;
            l->filled[(l->h_filled + l->n_filled++) % l->n_slots] = si;
        }
        pthread_cond_signal(&l->cv_work);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Called with the lock held: the slot's copy is complete, it may be refilled. */
static void retire_locked(vf_loader *l)
{
    size_t si = l->inflight[l->h_inflight];
    l->h_inflight = (l->h_inflight + 1) % l->n_slots;
    l->n_inflight--;
    l->chunks_done++;
    l->bytes_done += l->chunks[l->slots[si].chunk].len;
    l->slots[si].state = SLOT_FREE;
    pthread_cond_signal(&l->cv_slot);
}

static void progress(vf_loader *l, double t0, double *last, bool force)
{
    if (!l->o.progress)
        return;
    double t = now_s();
    if (!force && t - *last < 0.1)
        return;
    *last = t;
    vf_load_progress p = {l->bytes_done, l->total_bytes, t - t0};
    pthread_mutex_unlock(&l->mu);
    l->o.progress(&p, l->o.progress_user);
    pthread_mutex_lock(&l->mu);
}

/* The calling thread: queues copies of filled slots, retires completed ones. */
static void coordinate(vf_loader *l, double t0)
{
    double last = 0;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        if (cancelled(l)) {
            vf_error e;
            fail_locked(l, vf__err(&e, VF_EINTR, vf_model_source(l->m), "interrupted"), &e);
            break;
        }
        if (l->n_filled) {
            size_t si = l->filled[l->h_filled];
            l->h_filled = (l->h_filled + 1) % l->n_slots;
            l->n_filled--;
            slot *s = &l->slots[si];
            const chunk *c = &l->chunks[s->chunk];
            const part *p = &l->parts[c->part];
            vf__backend *b = l->devs[p->dev];
            s->state = SLOT_INFLIGHT;
            s->ev_dev = p->dev;
            pthread_mutex_unlock(&l->mu);
            vf_error e = {0};
            vf_status st = VF_OK;
            if (!s->ev[p->dev])
                st = b->ops->event_create(b, &s->ev[p->dev], &e);
            if (st == VF_OK)
                st = b->ops->copy_h2d_async(b, p->addr + c->dst_off, s->data, (size_t)c->len, &e);
            if (st == VF_OK)
                st = b->ops->event_record(b, s->ev[p->dev], &e);
            pthread_mutex_lock(&l->mu);
            /* Even after a failure the slot stays in flight: a copy may have been
             * queued, and the stream is drained before any buffer is freed. */
            l->inflight[(l->h_inflight + l->n_inflight++) % l->n_slots] = si;
            if (st != VF_OK) {
                fail_locked(l, st, &e);
                break;
            }
            continue;
        }
        if (l->n_inflight) {
            slot *s = &l->slots[l->inflight[l->h_inflight]];
            vf__backend *b = l->devs[s->ev_dev];
            bool done = false;
            vf_error e = {0};
            bool idle = l->n_filled == 0;
            pthread_mutex_unlock(&l->mu);
            vf_status st = b->ops->event_query(b, s->ev[s->ev_dev], &done, &e);
            /* Nothing else to do: wait for the oldest copy (copies finish in stream order). */
            if (st == VF_OK && !done && idle) {
                st = b->ops->event_sync(b, s->ev[s->ev_dev], &e);
                done = st == VF_OK;
            }
            pthread_mutex_lock(&l->mu);
            if (st != VF_OK) {
                fail_locked(l, st, &e);
                break;
            }
            if (done) {
                retire_locked(l);
                progress(l, t0, &last, false);
            }
            continue;
        }
        if (l->chunks_done == l->n_chunks)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&l->cv_work, &l->mu, &ts);
        progress(l, t0, &last, false);
    }
    if (!l->stop)
        progress(l, t0, &last, true);
    l->stop = true; /* readers exit once the chunks are gone or on failure */
    pthread_cond_broadcast(&l->cv_slot);
    pthread_mutex_unlock(&l->mu);
}

/* Reads every chunk back from its device and compares it with the file's hash. */
static vf_status verify(vf_loader *l, vf_error *err)
{
    unsigned char *tmp = NULL;
    vf_status st = VF_OK;
    for (size_t ci = 0; ci < l->n_chunks && st == VF_OK; ci++) {
        const chunk *c = &l->chunks[ci];
        const part *p = &l->parts[c->part];
        vf__backend *b = l->devs[p->dev];
        const unsigned char *data;
        if (b->ops->host_addressable) {
            data = (const unsigned char *)(uintptr_t)(p->addr + c->dst_off);
        } else {
            if (!tmp)
                tmp = l->slots[0].buf; /* the ring is idle now: reuse its first (pinned) slot */
            if ((st = b->ops->copy_d2h(b, tmp, p->addr + c->dst_off, (size_t)c->len, err)) != VF_OK)
                break;
            data = tmp;
        }
        if (vf_hash64(data, (size_t)c->len, ci) != l->chunk_hash[ci])
            st = vf__err(err, VF_EDEVICE, b->name,
                         "verify failed: %llu bytes at device offset %llu differ from %s at offset %llu",
                         (unsigned long long)c->len, (unsigned long long)c->dst_off,
                         vf_model_file(l->m, c->file)->path, (unsigned long long)c->file_off);
        if (cancelled(l) && st == VF_OK)
            st = vf__err(err, VF_EINTR, vf_model_source(l->m), "interrupted");
    }
    return st;
}

static void release_run(vf_loader *l, bool keep_parts)
{
    for (size_t i = 0; i < l->n_devs; i++)
        l->devs[i]->ops->sync(l->devs[i]); /* no buffer is freed under a queued copy */
    if (l->slots) {
        for (size_t s = 0; s < l->n_slots; s++) {
            for (size_t d = 0; d < l->n_devs; d++)
                if (l->slots[s].ev[d])
                    l->devs[d]->ops->event_destroy(l->devs[d], l->slots[s].ev[d]);
            if (l->slots[s].buf)
                l->ring_owner->ops->host_free(l->ring_owner, l->slots[s].buf, (size_t)l->slot_bytes + 2 * DIRECT_ALIGN);
        }
        free(l->slots);
        l->slots = NULL;
    }
    free(l->filled);
    free(l->inflight);
    free(l->chunk_hash);
    l->filled = l->inflight = NULL;
    l->chunk_hash = NULL;
    if (l->fds) {
        for (size_t f = 0; f < vf_model_file_count(l->m); f++) {
            if (l->fds[f] >= 0)
                close(l->fds[f]);
            if (l->dfds[f] >= 0)
                close(l->dfds[f]);
        }
    }
    free(l->fds);
    free(l->dfds);
    l->fds = l->dfds = NULL;
    if (!keep_parts)
        for (size_t i = 0; i < l->n_parts; i++)
            if (l->parts[i].allocated) {
                vf__backend *b = l->devs[l->parts[i].dev];
                b->ops->free(b, l->parts[i].addr, l->parts[i].bytes);
                l->parts[i].allocated = false;
                l->parts[i].addr = 0;
            }
}

static vf_status prepare(vf_loader *l, vf_error *err)
{
    const vf_model *m = l->m;
    size_t nf = vf_model_file_count(m);
    l->fds = malloc((nf ? nf : 1) * sizeof *l->fds);
    l->dfds = malloc((nf ? nf : 1) * sizeof *l->dfds);
    if (!l->fds || !l->dfds)
        return vf__err(err, VF_ENOMEM, vf_model_source(m), "out of memory");
    for (size_t f = 0; f < nf; f++)
        l->fds[f] = l->dfds[f] = -1;
    l->direct_on = false;
    for (size_t f = 0; f < nf; f++) {
        const char *path = vf_model_file(m, f)->path;
        if ((l->fds[f] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            return vf__err(err, VF_EIO, path, "%s", strerror(errno));
        posix_fadvise(l->fds[f], 0, 0, POSIX_FADV_SEQUENTIAL);
        if (l->o.direct && l->need_ring) {
            l->dfds[f] = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
            l->direct_on |= l->dfds[f] >= 0; /* refused (tmpfs, some FUSE): buffered reads */
        }
    }
    for (size_t i = 0; i < l->n_parts; i++) {
        part *p = &l->parts[i];
        if (p->bytes == 0)
            continue;
        vf__backend *b = l->devs[p->dev];
        vf_status st = b->ops->alloc(b, p->bytes, &p->addr, err);
        if (st != VF_OK)
            return st;
        p->allocated = true;
    }
    if (l->o.verify) {
        l->chunk_hash = calloc(l->n_chunks ? l->n_chunks : 1, sizeof *l->chunk_hash);
        if (!l->chunk_hash)
            return vf__err(err, VF_ENOMEM, vf_model_source(m), "out of memory");
    }
    l->slots = calloc(l->n_slots, sizeof *l->slots);
    l->filled = malloc(l->n_slots * sizeof *l->filled);
    l->inflight = malloc(l->n_slots * sizeof *l->inflight);
    if (!l->slots || !l->filled || !l->inflight)
        return vf__err(err, VF_ENOMEM, vf_model_source(m), "out of memory");
    if (l->need_ring) {
        /* Pinned once, reused for the whole load (pinning is slow: peers-loading.md §3.2). */
        for (size_t s = 0; s < l->n_slots; s++) {
            vf__backend *b = l->ring_owner;
            vf_status st = b->ops->host_alloc(b, (size_t)l->slot_bytes + 2 * DIRECT_ALIGN, (void **)&l->slots[s].buf, err);
            if (st != VF_OK)
                return st;
            /* O_DIRECT wants the buffer aligned too. */
            if (((uintptr_t)l->slots[s].buf % DIRECT_ALIGN) && l->direct_on)
                l->direct_on = false;
        }
    }
    return VF_OK;
}

vf_status vf_loader_run(vf_loader *l, vf_load_result *res, vf_error *err)
{
    memset(res, 0, sizeof *res);
    if (l->loaded)
        return vf__err(err, VF_EINVAL, vf_model_source(l->m), "already loaded");
    double t0 = now_s();
    l->next_chunk = l->chunks_done = 0;
    l->bytes_done = 0;
    l->n_filled = l->h_filled = l->n_inflight = l->h_inflight = 0;
    l->stop = false;
    l->st = VF_OK;
    memset(&l->err, 0, sizeof l->err);
    vf_status st = prepare(l, err);
    if (st != VF_OK) {
        release_run(l, false);
        return st;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv_slot, NULL);
    pthread_cond_init(&l->cv_work, NULL);
    uint32_t nthreads = l->threads;
    if (nthreads > l->n_chunks)
        nthreads = l->n_chunks ? (uint32_t)l->n_chunks : 1;
    pthread_t th[64];
    uint32_t started = 0;
    for (; started < nthreads; started++)
        if (pthread_create(&th[started], NULL, reader_main, l) != 0)
            break;
    if (started == 0) {
        vf_error e;
        pthread_mutex_lock(&l->mu);
        fail_locked(l, vf__err(&e, VF_ENOMEM, vf_model_source(l->m), "cannot start reader threads"), &e);
        pthread_mutex_unlock(&l->mu);
    }
    coordinate(l, t0);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    /* Copies queued before a failure must end before their buffers go. */
    for (size_t i = 0; i < l->n_devs; i++)
        l->devs[i]->ops->sync(l->devs[i]);
    st = l->st;
    if (st == VF_OK && l->chunks_done != l->n_chunks)
        st = vf__err(&l->err, VF_EIO, vf_model_source(l->m), "load ended early");
    if (st == VF_OK && l->o.verify) {
        st = verify(l, &l->err);
        res->verified = st == VF_OK;
    }
    double t1 = now_s();
    pthread_cond_destroy(&l->cv_slot);
    pthread_cond_destroy(&l->cv_work);
    pthread_mutex_destroy(&l->mu);
    if (st != VF_OK) {
        if (err)
            *err = l->err;
        release_run(l, false);
        return st;
    }
    res->staging_bytes = l->need_ring ? (uint64_t)l->n_slots * (l->slot_bytes + 2 * DIRECT_ALIGN) : 0;
    res->buffers = l->need_ring ? l->n_slots : 0;
    res->threads = nthreads;
    res->direct = l->direct_on;
    release_run(l, true);
    l->loaded = true;
    res->tensors = l->n_tensors_placed;
    res->bytes = l->total_bytes;
    res->tensor_bytes = l->tensor_bytes;
    res->seconds = t1 - t0;
    res->gib_per_s = res->seconds > 0 ? (double)res->bytes / (double)(1u << 30) / res->seconds : 0;
    snprintf(res->device, sizeof res->device, "%s", l->o.device);
    res->n_devices = l->n_devs;
    for (size_t i = 0; i < l->n_devs; i++) {
        vf_load_device *d = &l->info[i];
        vf__backend *b = l->devs[i];
        for (size_t p = 0; p < l->n_parts; p++)
            if (l->parts[p].dev == i)
                d->allocated_bytes += l->parts[p].bytes;
        uint64_t fr = 0, tot = 0;
        if (b->ops->mem_info(b, &fr, &tot, NULL) == VF_OK) {
            d->used_after_bytes = tot - fr;
            uint64_t after = 0;
            if (l->by_nvml[i] && nvml_used(b->uuid, &after))
                d->used_after_bytes = after; /* the same counter as before and ready */
            if (d->used_after_bytes > d->used_ready_bytes)
                res->device_bytes_used += d->used_after_bytes - d->used_ready_bytes;
            if (d->used_ready_bytes > d->used_before_bytes)
                res->device_context_bytes += d->used_ready_bytes - d->used_before_bytes;
        } else if (b->ops->keeps_data) {
            /* host: what we allocated is what the load took */
            d->used_after_bytes = d->allocated_bytes;
            res->device_bytes_used += d->allocated_bytes;
        }
        res->devices[i] = *d;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        res->peak_host_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
    return VF_OK;
}

vf_status vf_loader_tensor_location(const vf_loader *l, size_t i, const char **device, uint64_t *addr,
                                    vf_error *err)
{
    if (!l || !device || !addr)
        return vf__err(err, VF_EINVAL, "", "tensor location needs a loader and two results");
    if (!l->loaded)
        return vf__err(err, VF_EINVAL, "", "tensor location: the loader has not run");
    if (i >= l->n_tensors_placed)
        return vf__err(err, VF_EINVAL, "", "tensor location: tensor %zu of %zu", i, l->n_tensors_placed);
    const part *p = &l->parts[l->tensor_part[i]];
    *device = l->devs[p->dev]->name;
    *addr = p->addr ? p->addr + l->tensor_dst[i] : 0;
    return VF_OK;
}

void vf_loader_free(vf_loader *l)
{
    if (!l)
        return;
    if (l->parts)
        for (size_t i = 0; i < l->n_parts; i++)
            if (l->parts[i].allocated) {
                vf__backend *b = l->devs[l->parts[i].dev];
                b->ops->free(b, l->parts[i].addr, l->parts[i].bytes);
            }
    for (size_t i = 0; i < l->n_devs; i++)
        vf__backend_close(l->devs[i]);
    free(l->parts);
    free(l->chunks);
    free(l->tensor_part);
    free(l->tensor_dst);
    free(l->map_spec);
    free(l);
}
