/* benchutil.h — what every benchmark measures with: a monotonic clock and
 * the bytes this process has read (/proc/self/io rchar); and the safetensors
 * header writer of the generated checkpoints. */
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

/* Writes a safetensors header: the little-endian length word, then the JSON
 * padded with spaces to a multiple of 8 bytes, as the reference writer does
 * (h needs room for 7 more bytes). Returns the padded length, 0 on error. */
static inline size_t st_write_header(FILE *f, char *h, size_t len)
{
    while (len % 8)
        h[len++] = ' ';
    unsigned char lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    if (fwrite(lb, 1, 8, f) != 8 || fwrite(h, 1, len, f) != len)
        return 0;
    return len;
}

#endif
