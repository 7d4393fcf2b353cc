/* limits.c — the bounds a load is measured against, each run in its own
 * process so its peak RSS is its own (docs/loader.md "Benchmarks").
 *   limits gen FILE BYTES    write a safetensors checkpoint of ~BYTES (64 MiB F32 tensors, non-zero data)
 *   limits sparse FILE BYTES one U8 tensor of BYTES, left as a hole (for out-of-memory checks)
 *   limits hostmem FILE      pread the whole file into one fresh mapping of its size (first touch included)
 *   limits stream FILE       pread through one reused 8 MiB buffer, discarding
 *   limits classic FILE      read the whole file into a buffer, then copy it into a second (device-like) one
 * Prints: MODE seconds=S bytes=N gib_per_s=G peak_rss=R */
#include "benchutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned long long peak_rss(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (unsigned long long)ru.ru_maxrss * 1024ull;
}

static void die(const char *what)
{
    fprintf(stderr, "limits: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Reads [0, n) of fd into dst in pieces pread accepts (≤ 1 GiB). */
static void read_all(int fd, unsigned char *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t want = n - got > (1u << 30) ? (1u << 30) : n - got;
        ssize_t r = pread(fd, dst + got, want, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("pread");
        got += (size_t)r;
    }
}

static void *fresh(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

static int gen(const char *path, unsigned long long bytes)
{
    const unsigned long long T = 64ull << 20;
    unsigned long long n = bytes / T ? bytes / T : 1;
    size_t cap = 256 + (size_t)n * 160, len = 0;
    char *h = malloc(cap);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (unsigned long long i = 0; i < n; i++)
        len += (size_t)snprintf(h + len, cap - len,
                                ",\"model.layers.%llu.mlp.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[4096,4096],"
                                "\"data_offsets\":[%llu,%llu]}",
                                i, i * T, (i + 1) * T);
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(path, "wb");
    if (!f)
        die(path);
    if (!st_write_header(f, h, len))
        die("write");
    uint64_t *buf = malloc(T);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (unsigned long long i = 0; i < n; i++) {
        for (size_t k = 0; k < T / 8; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: cheap non-zero data */
            buf[k] = x;
        }
        if (fwrite(buf, 1, T, f) != T)
            die("write");
    }
    if (fclose(f) != 0)
        die("close");
    free(buf);
    free(h);
    printf("gen bytes=%llu tensors=%llu\n", n * T, n);
    return 0;
}

static int sparse(const char *path, unsigned long long bytes)
{
    char h[256];
    int len = snprintf(h, sizeof h,
                       "{\"model.layers.0.mlp.up_proj.weight\":{\"dtype\":\"U8\",\"shape\":[%llu],"
                       "\"data_offsets\":[0,%llu]}}",
                       bytes, bytes);
    FILE *f = fopen(path, "wb");
    if (!f)
        die(path);
    size_t hl = st_write_header(f, h, (size_t)len);
    if (!hl || fflush(f) != 0 || ftruncate(fileno(f), (off_t)(8 + hl + bytes)) != 0)
        die("ftruncate");
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "gen") == 0)
        return gen(argv[2], strtoull(argv[3], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "sparse") == 0)
        return sparse(argv[2], strtoull(argv[3], NULL, 10));
    if (argc != 3) {
        fprintf(stderr, "usage: limits gen|sparse FILE BYTES | hostmem|stream|classic FILE\n");
        return 2;
    }
    const char *mode = argv[1];
    int fd = open(argv[2], O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0)
        die(argv[2]);
    size_t n = (size_t)sb.st_size;
    double t0 = now();
    if (strcmp(mode, "hostmem") == 0) {
        unsigned char *dst = fresh(n);
        read_all(fd, dst, n);
    } else if (strcmp(mode, "stream") == 0) {
        const size_t B = 8u << 20;
        unsigned char *buf = malloc(B);
        for (size_t off = 0; off < n;) {
            ssize_t r = pread(fd, buf, B, (off_t)off);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                die("pread");
            off += (size_t)r;
        }
        free(buf);
    } else if (strcmp(mode, "classic") == 0) {
        /* torch.load then .to(device): whole file in host memory, then a second copy */
        unsigned char *a = malloc(n), *b = fresh(n);
        if (!a)
            die("malloc");
        read_all(fd, a, n);
        memcpy(b, a, n);
        if (b[n / 2] != a[n / 2])
            return 1;
    } else {
        fprintf(stderr, "limits: unknown mode %s\n", mode);
        return 2;
    }
    double s = now() - t0;
    printf("%s seconds=%.4f bytes=%zu gib_per_s=%.3f peak_rss=%llu\n", mode, s, n, (double)n / (1u << 30) / s,
           peak_rss());
    return 0;
}
