/* serve_run.c — runs one vramfit command for an API request, in a child
 * process: the answer is byte for byte what the command prints with --json,
 * a malformed model can never take the server down, and a request that runs
 * too long is killed. */
#define _GNU_SOURCE /* pipe2: close-on-exec from the start, as requests spawn from several threads */
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keeps the last cap - 1 bytes of a stream: the error line comes last. */
static void keep_tail(char *buf, size_t *len, size_t cap, const char *in, size_t n)
{
    if (n >= cap - 1) {
        memcpy(buf, in + n - (cap - 1), cap - 1);
        *len = cap - 1;
        return;
    }
    if (*len + n > cap - 1) {
        size_t drop = *len + n - (cap - 1);
        memmove(buf, buf + drop, *len - drop);
        *len -= drop;
    }
    memcpy(buf + *len, in, n);
    *len += n;
}

/* The command's error, without its "vramfit: " prefix: its last line that is
 * neither a warning nor the line naming the source that answered for a Hub
 * id (both come before an error); else its first line. */
static void error_line(char *text, char *out, size_t cap)
{
    const char *pick = NULL, *first = NULL;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!first)
            first = line;
        if (!strncmp(line, "vramfit: ", 9) && strncmp(line, "vramfit: warning: ", 18) != 0 &&
            !strstr(line, ": answered by "))
            pick = line;
        line = nl ? nl + 1 : NULL;
    }
    const char *e = pick ? pick : first ? first : "";
    snprintf(out, cap, "%s", strncmp(e, "vramfit: ", 9) == 0 ? e + 9 : e);
}

int vf_serve_run(char *const argv[], int timeout_s, size_t out_cap, char **out, size_t *out_len, char *errline,
                 size_t errline_cap)
{
    *out = NULL;
    *out_len = 0;
    errline[0] = '\0';
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
        snprintf(errline, errline_cap, "cannot create a pipe: %s", strerror(errno));
        if (po[0] >= 0)
            close(po[0]), close(po[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    posix_spawnattr_init(&at);
    /* the server blocks SIGINT/SIGTERM and ignores SIGPIPE; the child must not */
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(po[1]);
    close(pe[1]);
    if (rc != 0) {
        snprintf(errline, errline_cap, "cannot run %s: %s", argv[0], strerror(rc));
        close(po[0]);
        close(pe[0]);
        return -1;
    }
    size_t cap = 4096, n = 0, en = 0;
    char *buf = malloc(cap);
    char ebuf[8192];
    bool overflow = false, timed_out = false;
    long long deadline = now_ms() + (long long)timeout_s * 1000;
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0 && buf) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        int r = poll(pf, 2, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && r > 0; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[8192];
            ssize_t k = read(pf[i].fd, tmp, sizeof tmp);
            if (k <= 0) {
                if (k < 0 && errno == EINTR)
                    continue;
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            if (i == 1) {
                keep_tail(ebuf, &en, sizeof ebuf, tmp, (size_t)k);
                continue;
            }
            if (n + (size_t)k > out_cap) {
                overflow = true;
                break;
            }
            if (n + (size_t)k + 1 > cap) {
                size_t nc = cap;
                while (n + (size_t)k + 1 > nc)
                    nc *= 2;
                char *p = realloc(buf, nc);
                if (!p) {
                    free(buf);
                    buf = NULL;
                    break;
                }
                buf = p;
                cap = nc;
            }
            memcpy(buf + n, tmp, (size_t)k);
            n += (size_t)k;
        }
        if (overflow)
            break;
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    if (timed_out || overflow || !buf || open_fds > 0)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    ebuf[en] = '\0';
    error_line(ebuf, errline, errline_cap);
    if (!buf) {
        snprintf(errline, errline_cap, "out of memory");
        return -1;
    }
    buf[n] = '\0';
    if (timed_out || overflow || !WIFEXITED(status)) {
        snprintf(errline, errline_cap, "%s",
                 timed_out ? "the request took too long"
                 : overflow ? "the answer is too large"
                            : "the command failed");
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return WEXITSTATUS(status);
}
