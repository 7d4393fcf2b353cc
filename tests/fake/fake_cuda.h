/* fake_cuda.h — the test-only controls of the fake CUDA driver
 * (tests/fake/fake_cuda.c), reached with dlsym on the loaded libcuda.so.1. */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

typedef struct fake_cuda_stats {
    /* outstanding now */
    long dev_allocs, host_allocs, streams, events, contexts;
    unsigned long long dev_bytes, host_bytes;
    /* since the last reset */
    long alloc_calls, host_alloc_calls, copy_calls, record_calls, d2h_calls;
    long copies_done, pageable_copies, max_inflight;
    long spin_waits; /* cuEventSynchronize on an event without CU_EVENT_BLOCKING_SYNC (burns a core) */
    long violations; /* a host buffer changed or freed under an in-flight copy, a copy out of bounds, ... */
    char last_violation[256];
} fake_cuda_stats;

/* Re-reads the FAKE_CUDA_* environment and zeroes the counters (not the
 * outstanding lists). */
typedef void (*fake_cuda_reset_fn)(void);
typedef void (*fake_cuda_stats_fn)(fake_cuda_stats *s);
/* Used bytes of device dev as NVML would see them (context + allocations). */
typedef int (*fake_cuda_device_used_fn)(int dev, unsigned long long *used);

#endif
