/* snapshot.h — what the memory snapshot's files share: the report being
 * built (snapshot_segments.c reads the segments, snapshot_trace.c replays
 * the device traces, snapshot.c opens the file and answers the accessors). */
#ifndef VF_SNAPSHOT_H
#define VF_SNAPSHOT_H

#include "snapshot/pickle.h"

#define SNAP_MAX_STATES 16
#define SNAP_MAX_POOLS 4096
#define SNAP_TOP 10      /* rows of each allocation list */
#define SNAP_FRAMES 8    /* frames kept per allocation */
#define SNAP_NO_ENTRY UINT64_MAX

struct vf_snapshot {
    const char *layout;
    uint64_t segments, blocks, reserved, allocated, inactive, pending, requested;
    uint64_t trace_entries, peak, peak_entry, before_trace, end_bytes;
    int64_t peak_device;
    bool has_trace;
    char state_name[SNAP_MAX_STATES][40];
    uint64_t state_bytes[SNAP_MAX_STATES];
    size_t n_states;
    vf_snapshot_pool_stats *pools;
    size_t n_pools, cap_pools;
    vf_snapshot_allocation list[3][SNAP_TOP];
    size_t n_list[3];
    /* Work left for walking the values: shared references can make a small
     * pickle name the same list a million times; each item visited counts
     * (snapshot.c sets it from the pickle's own item count). */
    uint64_t budget;
};

/* A live allocation while reading: its frames are still the pickle's. */
typedef struct snap_alloc {
    uint64_t address, size, requested, stream, entry, count, iterations;
    int64_t device;
    const pk_value *frames;
} snap_alloc;

/* Takes one unit of work per item about to be visited; false when spent. */
VF_HIDDEN bool snap_spend(vf_snapshot *s, size_t items);
/* Keeps a among the SNAP_TOP largest of list `which` (by size), its frames copied. */
VF_HIDDEN bool snap_keep(vf_snapshot *s, vf_snapshot_list which, const snap_alloc *a);
/* Empties list `which`. */
VF_HIDDEN void snap_clear(vf_snapshot *s, vf_snapshot_list which);
/* "file.py:12:fn" of a frame dict, into buf. */
VF_HIDDEN void snap_frame_text(const pk_value *frame, char *buf, size_t cap);

VF_HIDDEN vf_status snap_read_segments(vf_snapshot *s, const pk_value *segments, const char *path, vf_error *err);
VF_HIDDEN vf_status snap_replay_traces(vf_snapshot *s, const pk_value *traces, const pk_value *segments,
                                       const char *path, vf_error *err);

#endif
