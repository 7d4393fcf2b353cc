/* snapshot.c — a PyTorch memory snapshot: the file read whole (bounded),
 * its pickle read (pickle.c), the layout told apart, the segments and the
 * traces handed to their readers; the report's accessors. */
#include "snapshot/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAP_MAX_FILE ((uint64_t)2 << 30)

/* 1.13: a list of segments; 2.x: {"segments": [...], "device_traces": [[...], ...]}. */
static vf_status read_root(vf_snapshot *s, const pk_value *root, const char *path, vf_error *err)
{
    const pk_value *segments = root, *traces = NULL;
    s->layout = "list";
    if (root->kind == PK_DICT) {
        s->layout = "dict";
        segments = pk_get(root, "segments");
        traces = pk_get(root, "device_traces");
        if (!segments)
            return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: a dict without \"segments\"");
    }
    if (!pk_is_seq(segments))
        return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: its segments are not a list");
    vf_status st = snap_read_segments(s, segments, path, err);
    if (st == VF_OK && traces && traces->kind != PK_NONE)
        st = snap_replay_traces(s, traces, segments, path, err);
    if (st == VF_OK && !s->has_trace)
        s->peak = s->allocated;
    return st;
}

vf_status vf_snapshot_read(const void *data, size_t n, const char *path, vf_snapshot **out, vf_error *err)
{
    *out = NULL;
    if (!path)
        path = "snapshot";
    pk_doc *doc = NULL;
    const pk_value *root = NULL;
    vf_status st = pk_read(data, n, path, &doc, &root, err);
    if (st != VF_OK)
        return st;
    vf_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        pk_free(doc);
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    }
    /* A tree's items are each visited a few times (the segments once per
     * device trace too); more means the pickle shares its values. */
    s->budget = 4 * (uint64_t)pk_doc_items(doc) + (1u << 20);
    s->peak_device = -1;
    st = read_root(s, root, path, err);
    pk_free(doc);
    if (st != VF_OK) {
        vf_snapshot_free(s);
        return st;
    }
    *out = s;
    return VF_OK;
}

static vf_status read_file(const char *path, uint8_t **buf, size_t *len, vf_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vf__err(err, errno == ENOENT ? VF_ENOENT : VF_EIO, path, "%s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return vf__err(err, VF_EIO, path, "not a regular file");
    }
    if ((uint64_t)sb.st_size > SNAP_MAX_FILE) {
        close(fd);
        return vf__err(err, VF_ERANGE, path, "a snapshot of %lld bytes (at most 2 GiB are read)",
                       (long long)sb.st_size);
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len ? *len : 1);
    vf_status st = *buf ? vf__pread_full(fd, *buf, *len, 0, path, err) : vf__err(err, VF_ENOMEM, path, "out of memory");
    close(fd);
    if (st != VF_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

vf_status vf_snapshot_open(const char *path, vf_snapshot **out, vf_error *err)
{
    *out = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    vf_status st = read_file(path, &buf, &len, err);
    if (st != VF_OK)
        return st;
    st = vf_snapshot_read(buf, len, path, out, err);
    free(buf);
    return st;
}

void vf_snapshot_free(vf_snapshot *s)
{
    if (!s)
        return;
    for (int w = 0; w < 3; w++)
        snap_clear(s, (vf_snapshot_list)w);
    free(s->pools);
    free(s);
}

#define SNAP_FIELD_(type, name, expr) \
    type vf_snapshot_##name(const vf_snapshot *s) { return s ? (expr) : (type)0; }
SNAP_FIELD_(uint64_t, segments, s->segments)
SNAP_FIELD_(uint64_t, blocks, s->blocks)
SNAP_FIELD_(uint64_t, reserved_bytes, s->reserved)
SNAP_FIELD_(uint64_t, allocated_bytes, s->allocated)
SNAP_FIELD_(uint64_t, inactive_bytes, s->inactive)
SNAP_FIELD_(uint64_t, pending_free_bytes, s->pending)
SNAP_FIELD_(uint64_t, requested_bytes, s->requested)
SNAP_FIELD_(uint64_t, trace_entries, s->trace_entries)
SNAP_FIELD_(bool, has_trace, s->has_trace)
SNAP_FIELD_(uint64_t, peak_bytes, s->peak)
SNAP_FIELD_(int64_t, peak_device, s->peak_device)
SNAP_FIELD_(uint64_t, peak_entry, s->peak_entry)
SNAP_FIELD_(uint64_t, before_trace_bytes, s->before_trace)
SNAP_FIELD_(uint64_t, end_bytes, s->end_bytes)
#undef SNAP_FIELD_

const char *vf_snapshot_layout(const vf_snapshot *s)
{
    return s ? s->layout : "";
}

size_t vf_snapshot_state_count(const vf_snapshot *s)
{
    return s ? s->n_states : 0;
}

const char *vf_snapshot_state_name(const vf_snapshot *s, size_t i)
{
    return s && i < s->n_states ? s->state_name[i] : NULL;
}

uint64_t vf_snapshot_state_bytes(const vf_snapshot *s, size_t i)
{
    return s && i < s->n_states ? s->state_bytes[i] : 0;
}

size_t vf_snapshot_pool_count(const vf_snapshot *s)
{
    return s ? s->n_pools : 0;
}

const vf_snapshot_pool_stats *vf_snapshot_pool(const vf_snapshot *s, size_t i)
{
    return s && i < s->n_pools ? &s->pools[i] : NULL;
}

size_t vf_snapshot_alloc_count(const vf_snapshot *s, vf_snapshot_list which)
{
    return s && (unsigned)which < 3 ? s->n_list[which] : 0;
}

const vf_snapshot_allocation *vf_snapshot_alloc(const vf_snapshot *s, vf_snapshot_list which, size_t i)
{
    return s && (unsigned)which < 3 && i < s->n_list[which] ? &s->list[which][i] : NULL;
}
