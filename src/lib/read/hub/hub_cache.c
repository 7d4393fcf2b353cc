/* hub_cache.c — vramfit's own cache of what was fetched from the Hub:
 * $XDG_CACHE_HOME/vramfit (else ~/.cache/vramfit)/hub/models--org--name/,
 * refs/{rev} → the commit, {commit}/{entry} → the API answer and each file's
 * fetched first bytes. An entry is written to a temporary name and renamed
 * (never seen half written) and carries its lengths and an FNV-1a checksum:
 * one that does not check out is ignored, never trusted. */
#include "read/hub/hub_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "vramfit-hub-cache 1"

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

char *vf__hubcache_dir(const char *repo, const char *sub)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[4096];
    if (x && *x)
        snprintf(base, sizeof base, "%s/vramfit/hub", x);
    else if (home && *home)
        snprintf(base, sizeof base, "%s/.cache/vramfit/hub", home);
    else
        return NULL;
    size_t n = strlen(base) + 2 * strlen(repo) + strlen(sub) + 32;
    char *p = malloc(n);
    if (!p)
        return NULL;
    size_t k = (size_t)snprintf(p, n, "%s/models--", base);
    for (const char *c = repo; *c; c++) {
        if (*c == '/') {
            p[k++] = '-';
            p[k++] = '-';
        } else {
            p[k++] = *c;
        }
    }
    snprintf(p + k, n - k, "/%s", sub);
    return p;
}

void vf__hubcache_escape(const char *name, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)name; *c && k + 4 < cap; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
                     *c == '_' || *c == '-';
        if (plain && !(k == 0 && *c == '.')) {
            out[k++] = (char)*c;
        } else {
            out[k++] = '%';
            out[k++] = hex[*c >> 4];
            out[k++] = hex[*c & 15];
        }
    }
    out[k] = '\0';
}

bool vf__hubcache_get(const char *path, size_t cap, unsigned char **data, size_t *len, uint64_t *total)
{
    *data = NULL;
    char *text = NULL;
    size_t n = 0;
    vf_error e = {0};
    if (vf__read_small_file(path, cap + 128, &text, &n, &e) != VF_OK)
        return false;
    unsigned long long t = 0, l = 0, sum = 0;
    int used = 0;
    char *nl = memchr(text, '\n', n < 128 ? n : 128);
    bool ok = nl && sscanf(text, MAGIC " %llu %llu %16llx%n", &t, &l, &sum, &used) == 3 && text + used == nl &&
              l <= cap && l <= t && (size_t)(n - (size_t)(nl + 1 - text)) == l &&
              fnv1a((unsigned char *)nl + 1, (size_t)l) == sum;
    if (ok && (*data = malloc((size_t)l + 1))) {
        memcpy(*data, nl + 1, (size_t)l);
        (*data)[l] = '\0';
        *len = (size_t)l;
        *total = t;
    }
    free(text);
    return ok && *data;
}

static bool mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return true;
}

bool vf__hubcache_put(const char *path, const void *data, size_t len, uint64_t total)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return false;
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    char head[128];
    int hn = snprintf(head, sizeof head, MAGIC " %llu %llu %016llx\n", (unsigned long long)total,
                      (unsigned long long)len, (unsigned long long)fnv1a(data, len));
    bool ok = mkdirs(tmp);
    int fd = ok ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    ok = fd >= 0 && write(fd, head, (size_t)hn) == hn;
    for (size_t at = 0; ok && at < len;) {
        ssize_t w = write(fd, (const char *)data + at, len - at);
        ok = w > 0;
        at += ok ? (size_t)w : 0;
    }
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok;
}
