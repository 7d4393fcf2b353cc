/* snapshot_list.c — the report's allocation lists (the largest few of each,
 * their frames copied out of the pickle) and the walk's work budget: what
 * the segment and trace readers share, below them. */
#include "snapshot/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool snap_spend(vf_snapshot *s, size_t items)
{
    if (s->budget < items)
        return false;
    s->budget -= items;
    return true;
}

static void copy_str(const pk_value *v, char *buf, size_t cap)
{
    size_t n = 0;
    if (v && v->kind == PK_STR)
        n = v->len < cap - 1 ? v->len : cap - 1;
    if (n)
        memcpy(buf, v->s, n);
    buf[n] = '\0';
}

void snap_frame_text(const pk_value *frame, char *buf, size_t cap)
{
    char file[160], name[120];
    copy_str(pk_get(frame, "filename"), file, sizeof file);
    copy_str(pk_get(frame, "name"), name, sizeof name);
    int64_t line = 0;
    pk_get_int(frame, "line", &line);
    const char *base = strrchr(file, '/'); /* as _memory_viz's _frame_fmt: the file's name */
    snprintf(buf, cap, "%s:%lld:%s", base ? base + 1 : file, (long long)line, name);
}

static void free_alloc(vf_snapshot_allocation *a)
{
    char **f = (char **)a->frames;
    for (size_t i = 0; i < a->n_frames; i++)
        free(f[i]);
    free(f);
    memset(a, 0, sizeof *a);
}

static bool copy_frames(vf_snapshot_allocation *out, const pk_value *frames)
{
    size_t n = pk_is_seq(frames) ? frames->n : 0;
    if (n > SNAP_FRAMES)
        n = SNAP_FRAMES;
    char **f = n ? calloc(n, sizeof *f) : NULL;
    if (n && !f)
        return false;
    out->frames = (const char *const *)f;
    for (size_t i = 0; i < n; i++) {
        char buf[320];
        snap_frame_text(frames->items[i], buf, sizeof buf);
        if (!(f[i] = strdup(buf)))
            return false;
        out->n_frames = i + 1;
    }
    return true;
}

void snap_clear(vf_snapshot *s, vf_snapshot_list which)
{
    for (size_t i = 0; i < s->n_list[which]; i++)
        free_alloc(&s->list[which][i]);
    s->n_list[which] = 0;
}

bool snap_keep(vf_snapshot *s, vf_snapshot_list which, const snap_alloc *a)
{
    vf_snapshot_allocation *l = s->list[which];
    size_t n = s->n_list[which];
    size_t at = n;
    while (at > 0 && l[at - 1].size < a->size)
        at--;
    if (at >= SNAP_TOP)
        return true;
    if (n == SNAP_TOP)
        free_alloc(&l[--n]);
    memmove(&l[at + 1], &l[at], (n - at) * sizeof *l);
    s->n_list[which] = n + 1;
    vf_snapshot_allocation *o = &l[at];
    *o = (vf_snapshot_allocation){.address = a->address, .size = a->size, .requested_size = a->requested,
                             .device = a->device, .stream = a->stream, .count = a->count ? a->count : 1,
                             .iterations = a->iterations, .entry = a->entry};
    return copy_frames(o, a->frames);
}
