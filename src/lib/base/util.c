/* util.c — bounded file reads, paths, UTF-8 and JSON helpers. */
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

vf_status vf__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, vf_error *err)
{
    unsigned char *p = buf;
    while (n > 0) {
        if (off > (uint64_t)INT64_MAX)
            return vf__err(err, VF_EFORMAT, path, "offset %llu out of range", (unsigned long long)off);
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return vf__err(err, VF_EIO, path, "read failed: %s", strerror(errno));
        }
        if (r == 0)
            return vf__err(err, VF_EFORMAT, path, "file is truncated");
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return VF_OK;
}

vf_status vf__read_small_file(const char *path, size_t cap, char **out, size_t *len, vf_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vf__err(err, errno == ENOENT ? VF_ENOENT : VF_EIO, path, "cannot open: %s", strerror(errno));
    vf_status st = VF_OK;
    struct stat sb;
    char *buf = NULL;
    if (fstat(fd, &sb) != 0) {
        st = vf__err(err, VF_EIO, path, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = vf__err(err, VF_EFORMAT, path, "not a regular file");
        goto out;
    }
    if ((uint64_t)sb.st_size > cap) {
        st = vf__err(err, VF_EFORMAT, path, "file is %lld bytes, over the %zu-byte limit", (long long)sb.st_size,
                     cap);
        goto out;
    }
    size_t n = (size_t)sb.st_size;
    buf = malloc(n + 1);
    if (!buf) {
        st = vf__err(err, VF_ENOMEM, path, "out of memory");
        goto out;
    }
    st = vf__pread_full(fd, buf, n, 0, path, err);
    if (st != VF_OK)
        goto out;
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return st;
}

bool vf__is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool vf__is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool vf__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *vf__path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    if (a > SIZE_MAX - b - 2)
        return NULL;
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

char *vf__path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

bool vf__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        /* overlong forms, surrogates and out-of-range code points */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        i += len;
    }
    return true;
}

/* Nesting depth of JSON text, counted outside strings, so that deep input
 * is refused before the recursive parser sees it. */
static size_t json_depth(const char *t, size_t n)
{
    size_t depth = 0, max = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                max = depth;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return max;
}

json_t *vf__json_parse(const char *text, size_t len, const char *path, vf_error *err)
{
    if (!vf__utf8_valid(text, len)) {
        vf__err(err, VF_EFORMAT, path, "not valid utf-8");
        return NULL;
    }
    if (json_depth(text, len) > VF_JSON_MAX_DEPTH) {
        vf__err(err, VF_EFORMAT, path, "json nested deeper than %d levels", VF_JSON_MAX_DEPTH);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        /* jansson's messages start with a capital at times; keep ours lower-case */
        char msg[JSON_ERROR_TEXT_LENGTH];
        snprintf(msg, sizeof msg, "%s", je.text);
        if (msg[0] >= 'A' && msg[0] <= 'Z')
            msg[0] = (char)(msg[0] - 'A' + 'a');
        vf__err(err, VF_EFORMAT, path, "invalid json at line %d: %s", je.line, msg);
        return NULL;
    }
    return j;
}

bool vf__json_u64(const json_t *v, uint64_t *out)
{
    /* jansson keeps integers exact in json_int_t (long long); reals are refused */
    if (!json_is_integer(v))
        return false;
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return false;
    *out = (uint64_t)i;
    return true;
}

const vf__embedded_file *vf__embedded_find(const char *name)
{
    for (size_t i = 0; i < vf__embedded_count; i++)
        if (strcmp(vf__embedded_files[i].name, name) == 0)
            return &vf__embedded_files[i];
    return NULL;
}

/* Grows an array to hold one more element; false on overflow or no memory. */
bool vf__grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / elem)
        return false;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}
