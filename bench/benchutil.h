/* benchutil.h — what every benchmark measures with: a monotonic clock and
 * the bytes this process has read (/proc/self/io rchar). */
#ifndef VF_BENCHUTIL_H
#define VF_BENCHUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "rchar: %llu", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

#endif
