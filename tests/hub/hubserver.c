/* hubserver.c — a stand-in Hugging Face Hub for the tests (loopback only).
 *
 *   hubserver --root DIR --port-file FILE [--latency-ms N] [--fault NAME]
 *             [--gated org/name --token TOKEN] [--max-seconds S]
 *
 * Serves DIR/org/name/... the way the Hub does: GET /api/models/{id}/revision/{rev}
 * (sha, siblings, gated), GET /{id}/resolve/{rev}/{file} (weight files redirected
 * to a second port, the "CDN", which must never see the token), byte ranges
 * (206 + Content-Range, 416 past the end), a gated repository (401 GatedRepo
 * without the token), latency per request and one injected fault. Writes
 * "API_PORT CDN_PORT" to FILE. GET /_stats answers what was served: requests,
 * CDN requests and body bytes, tokens seen by the CDN, the schedule (first
 * ranges after a later range, most connections at once). Bounded: 64 connections,
 * 8 KiB of request head; stops by itself after --max-seconds (default 120). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONN 64
#define HEAD_CAP 8192

static const char *root, *fault = "", *gated = "", *token = "";
static long latency_ms;
static int cdn_port;
static atomic_int conns;
static atomic_long n_requests, n_api, n_cdn, cdn_bytes, leaks;
/* the schedule seen: first ranges (bytes=0-) that came after some later
 * range of another file had (a client that chains each file's requests
 * does that; one that waits for every first range does not), and the most
 * connections open at once */
static atomic_long rests_seen, heads_after_rest, peak_conns, n_conns;

static bool is(const char *f) { return strcmp(fault, f) == 0; }

/* A repository's commit: 40 hex digits from its name (FNV-1a, five rounds). */
static void sha_of(const char *repo, char out[41])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int r = 0; r < 5; r++) {
        for (const char *p = repo; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        h = (h ^ (uint64_t)r) * 0x100000001b3ull;
        snprintf(out + 8 * r, 9, "%08x", (unsigned)(h >> 32));
    }
}

static bool send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static bool reply(int fd, int code, const char *reason, const char *extra, const char *type, const char *body)
{
    char head[1024];
    size_t n = body ? strlen(body) : 0;
    int k = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nContent-Type: %s\r\n%s\r\n", code,
                     reason, n, type, extra ? extra : "");
    return send_all(fd, head, (size_t)k) && (!n || send_all(fd, body, n));
}

/* ---- the API's answer ---- */

static void list_files(const char *dir, const char *prefix, char **out, size_t *len, size_t *cap, int depth)
{
    DIR *d = opendir(dir);
    if (!d || depth > 3) {
        if (d)
            closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096], rel[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(rel, sizeof rel, "%s%s", prefix, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            char sub[2100];
            snprintf(sub, sizeof sub, "%s/", rel);
            list_files(path, sub, out, len, cap, depth + 1);
            continue;
        }
        if (*len + strlen(rel) + 32 > *cap) {
            *cap = (*cap + strlen(rel) + 32) * 2;
            *out = realloc(*out, *cap);
        }
        *len += (size_t)sprintf(*out + *len, "%s{\"rfilename\":\"%s\"}", *len > 1 ? "," : "", rel);
    }
    closedir(d);
}

static bool api(int fd, const char *repo, const char *rev)
{
    char dir[2048], sha[41];
    snprintf(dir, sizeof dir, "%s/%s", root, repo);
    sha_of(repo, sha);
    struct stat sb;
    if (stat(dir, &sb) != 0 || (strcmp(rev, "main") != 0 && strcmp(rev, sha) != 0))
        return reply(fd, 404, "Not Found", "X-Error-Code: RepoNotFound\r\n", "application/json",
                     "{\"error\":\"Repository not found\"}");
    if (is("api-html"))
        return reply(fd, 200, "OK", NULL, "text/html", "<html><body>Service unavailable</body></html>");
    if (is("api-json"))
        return reply(fd, 200, "OK", NULL, "application/json", "{\"sha\": \"1");
    size_t len = 1, cap = 4096;
    char *files = malloc(cap);
    files[0] = '[';
    files[1] = '\0';
    list_files(dir, "", &files, &len, &cap, 0);
    char *body = malloc(len + 512);
    sprintf(body, "{\"id\":\"%s\",\"sha\":\"%s\",\"gated\":%s,\"private\":false,\"siblings\":%s]}", repo, sha,
            strcmp(repo, gated) == 0 ? "\"manual\"" : "false", files);
    bool ok = reply(fd, 200, "OK", NULL, "application/json", body);
    free(files);
    free(body);
    return ok;
}

/* ---- file bytes ---- */

static bool range_of(const char *range, uint64_t size, uint64_t *a, uint64_t *b)
{
    unsigned long long x, y;
    if (!range || sscanf(range, "bytes=%llu-%llu", &x, &y) != 2)
        return false;
    *a = x;
    *b = y < size ? y : size - 1;
    return true;
}

static bool serve_file(int fd, const char *path, const char *range, bool cdn)
{
    int f = open(path, O_RDONLY);
    struct stat sb;
    if (f < 0 || fstat(f, &sb) != 0) {
        if (f >= 0)
            close(f);
        return reply(fd, 404, "Not Found", "X-Error-Code: EntryNotFound\r\n", "application/json", "{}");
    }
    uint64_t size = (uint64_t)sb.st_size, a = 0, b = size ? size - 1 : 0;
    bool ranged = range_of(range, size, &a, &b) && !(cdn && is("ignore-range"));
    if (cdn && ranged && a == 0 && rests_seen)
        heads_after_rest++;
    else if (cdn && ranged && a > 0)
        rests_seen++;
    char head[512];
    bool ok;
    if (cdn && is("html")) {
        ok = reply(fd, 200, "OK", NULL, "text/html; charset=utf-8", "<!DOCTYPE html><html>Error 500</html>");
    } else if ((cdn && is("416")) || (ranged && a >= size)) {
        snprintf(head, sizeof head, "Content-Range: bytes */%llu\r\n", (unsigned long long)size);
        ok = reply(fd, 416, "Range Not Satisfiable", head, "text/plain", "");
    } else {
        if (!ranged) {
            a = 0;
            b = size ? size - 1 : 0;
        }
        uint64_t n = size ? b - a + 1 : 0;
        int k = ranged ? snprintf(head, sizeof head,
                                  "HTTP/1.1 206 Partial Content\r\nContent-Length: %llu\r\nContent-Range: bytes "
                                  "%llu-%llu/%llu\r\nContent-Type: application/octet-stream\r\n\r\n",
                                  (unsigned long long)n, (unsigned long long)(a + (cdn && is("lying-range"))),
                                  (unsigned long long)b, (unsigned long long)size)
                       : snprintf(head, sizeof head,
                                  "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nContent-Type: application/octet-stream\r\n\r\n",
                                  (unsigned long long)n);
        ok = send_all(fd, head, (size_t)k);
        uint64_t send_n = cdn && is("truncated") ? n / 2 : n;
        char buf[65536];
        for (uint64_t at = 0; ok && at < send_n;) {
            size_t want = send_n - at < sizeof buf ? (size_t)(send_n - at) : sizeof buf;
            ssize_t r = pread(f, buf, want, (off_t)(a + at));
            if (r <= 0)
                break;
            if (cdn && is("header-cap") && a + at == 0 && r >= 8) /* the length claims 200,000,000 */
                memcpy(buf, "\x00\xc2\xeb\x0b\x00\x00\x00\x00", 8);
            ok = send_all(fd, buf, (size_t)r);
            if (cdn)
                cdn_bytes += r;
            at += (uint64_t)r;
        }
        if (cdn && is("truncated"))
            ok = false; /* close: the body stops short */
    }
    close(f);
    return ok;
}

static bool weight_file(const char *p)
{
    size_t n = strlen(p);
    return (n > 12 && strcmp(p + n - 12, ".safetensors") == 0) || (n > 5 && strcmp(p + n - 5, ".gguf") == 0);
}

/* "/org/name/resolve/REV/file" → repo, rev, file */
static bool split_resolve(const char *path, char *repo, char *rev, char *file)
{
    const char *r = strstr(path, "/resolve/");
    if (!r || r - path < 2 || r - path > 200)
        return false;
    memcpy(repo, path + 1, (size_t)(r - path - 1));
    repo[r - path - 1] = '\0';
    const char *q = r + 9, *slash = strchr(q, '/');
    if (!slash || slash - q > 100)
        return false;
    memcpy(rev, q, (size_t)(slash - q));
    rev[slash - q] = '\0';
    snprintf(file, 1024, "%s", slash + 1);
    return !strstr(file, "..");
}

static bool handle(int fd, const char *path, const char *range, const char *auth, bool on_cdn)
{
    n_requests++;
    if (latency_ms)
        usleep((useconds_t)latency_ms * 1000);
    char repo[256], rev[128], file[1024], p[4096];
    if (on_cdn) {
        n_cdn++;
        if (auth) {
            leaks++;
            return reply(fd, 400, "Bad Request", NULL, "text/plain", "authorization sent to the cdn");
        }
        if (is("slow"))
            sleep(5);
        if (strncmp(path, "/cdn/", 5) != 0 || strstr(path, ".."))
            return reply(fd, 404, "Not Found", NULL, "text/plain", "");
        snprintf(p, sizeof p, "%s/%s", root, path + 5);
        return serve_file(fd, p, range, true);
    }
    if (strcmp(path, "/_stats") == 0) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"requests\":%ld,\"api_requests\":%ld,\"cdn_requests\":%ld,\"cdn_bytes\":%ld,\"cdn_tokens\":%ld,"
                 "\"heads_after_rest\":%ld,\"peak_connections\":%ld,\"connections\":%ld}",
                 (long)n_requests - 1, (long)n_api, (long)n_cdn, (long)cdn_bytes, (long)leaks, (long)heads_after_rest,
                 (long)peak_conns, (long)n_conns);
        n_requests--;
        return reply(fd, 200, "OK", NULL, "application/json", body);
    }
    if (strncmp(path, "/api/models/", 12) == 0) {
        n_api++;
        const char *r = strstr(path, "/revision/");
        if (!r || r - path - 12 > 200)
            return reply(fd, 404, "Not Found", NULL, "application/json", "{}");
        snprintf(repo, sizeof repo, "%.*s", (int)(r - path - 12), path + 12);
        snprintf(rev, sizeof rev, "%s", r + 10);
        return api(fd, repo, rev);
    }
    if (!split_resolve(path, repo, rev, file))
        return reply(fd, 404, "Not Found", NULL, "text/plain", "");
    char sha[41];
    sha_of(repo, sha);
    if (strcmp(rev, sha) != 0 && strcmp(rev, "main") != 0)
        return reply(fd, 404, "Not Found", "X-Error-Code: RevisionNotFound\r\n", "application/json", "{}");
    if (strcmp(repo, gated) == 0) {
        char want[512];
        snprintf(want, sizeof want, "Bearer %s", token);
        if (!auth || strcmp(auth, want) != 0)
            return reply(fd, auth ? 403 : 401, auth ? "Forbidden" : "Unauthorized", "X-Error-Code: GatedRepo\r\n",
                         "application/json", "{\"error\":\"Access to model is restricted\"}");
    }
    if (is("redirect-loop")) {
        char loc[4200];
        snprintf(loc, sizeof loc, "Location: %s\r\n", path);
        return reply(fd, 302, "Found", loc, "text/plain", "");
    }
    if (weight_file(file)) {
        char loc[4200];
        snprintf(loc, sizeof loc, "Location: http://127.0.0.1:%d/cdn/%s/%s\r\nX-Repo-Commit: %s\r\n", cdn_port, repo,
                 file, sha);
        return reply(fd, 302, "Found", loc, "text/plain", "");
    }
    snprintf(p, sizeof p, "%s/%s/%s", root, repo, file);
    return serve_file(fd, p, range, false);
}

/* ---- connections ---- */

static const char *header(char *head, const char *name)
{
    size_t k = strlen(name);
    for (char *line = strstr(head, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
        char *l = line + 2;
        if (strncasecmp(l, name, k) == 0 && l[k] == ':') {
            char *v = l + k + 1;
            while (*v == ' ')
                v++;
            char *end = strstr(v, "\r\n");
            static __thread char val[1024];
            size_t n = end ? (size_t)(end - v) : strlen(v);
            snprintf(val, sizeof val, "%.*s", (int)n, v);
            return val;
        }
    }
    return NULL;
}

typedef struct conn {
    int fd;
    bool cdn;
} conn;

static void *serve_conn(void *arg)
{
    conn c = *(conn *)arg;
    free(arg);
    char head[HEAD_CAP + 1];
    size_t have = 0;
    head[0] = '\0';
    for (;;) {
        char *end = NULL;
        while (!(end = strstr(head, "\r\n\r\n"))) {
            if (have >= HEAD_CAP)
                goto out;
            ssize_t r = recv(c.fd, head + have, HEAD_CAP - have, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
            head[have] = '\0';
        }
        end[2] = '\0';
        char method[8], path[2048];
        if (sscanf(head, "%7s %2047s", method, path) != 2 || strcmp(method, "GET") != 0)
            goto out;
        char range[128] = "", auth[1024] = "";
        const char *v;
        if ((v = header(head, "Range")))
            snprintf(range, sizeof range, "%s", v);
        bool has_auth = (v = header(head, "Authorization")) != NULL;
        if (has_auth)
            snprintf(auth, sizeof auth, "%s", v);
        size_t used = (size_t)(end + 4 - head);
        bool close_after = strstr(head, "HTTP/1.0") || ((v = header(head, "Connection")) && !strcasecmp(v, "close"));
        if (!handle(c.fd, path, range[0] ? range : NULL, has_auth ? auth : NULL, c.cdn) || close_after)
            goto out;
        memmove(head, head + used, have - used);
        have -= used;
        head[have] = '\0';
    }
out:
    close(c.fd);
    conns--;
    return NULL;
}

static int listen_on(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 128) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &n) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return s;
}

int main(int argc, char **argv)
{
    const char *port_file = NULL;
    long max_s = 120;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--root"))
            root = argv[i + 1];
        else if (!strcmp(argv[i], "--port-file"))
            port_file = argv[i + 1];
        else if (!strcmp(argv[i], "--latency-ms"))
            latency_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--fault"))
            fault = argv[i + 1];
        else if (!strcmp(argv[i], "--gated"))
            gated = argv[i + 1];
        else if (!strcmp(argv[i], "--token"))
            token = argv[i + 1];
        else if (!strcmp(argv[i], "--max-seconds"))
            max_s = atol(argv[i + 1]);
    }
    if (!root || !port_file) {
        fprintf(stderr, "usage: hubserver --root DIR --port-file FILE [options]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int api_port, s_api = listen_on(&api_port), s_cdn = listen_on(&cdn_port);
    if (s_api < 0 || s_cdn < 0) {
        perror("hubserver: listen");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%d %d\n", api_port, cdn_port);
    fclose(f);
    rename(tmp, port_file); /* the port file appears whole, once both sockets listen */
    time_t stop = time(NULL) + max_s;
    struct pollfd p[2] = {{s_api, POLLIN, 0}, {s_cdn, POLLIN, 0}};
    while (time(NULL) < stop) {
        if (poll(p, 2, 500) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & POLLIN))
                continue;
            int fd = accept(p[i].fd, NULL, NULL);
            if (fd < 0)
                continue;
            /* an answer's head and body go out as separate writes: without
             * this, Nagle holds the body until the client's delayed ACK of
             * the head (up to 40 ms), latency that is the stand-in's, not a
             * Hub's (a CDN sends at once) */
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (conns >= MAX_CONN) {
                close(fd);
                continue;
            }
            conn *c = malloc(sizeof *c);
            c->fd = fd;
            c->cdn = i == 1;
            conns++;
            n_conns++;
            if (conns > peak_conns)
                peak_conns = conns;
            pthread_t t;
            if (pthread_create(&t, NULL, serve_conn, c) != 0) {
                close(fd);
                free(c);
                conns--;
                continue;
            }
            pthread_detach(t);
        }
    }
    return 0;
}
