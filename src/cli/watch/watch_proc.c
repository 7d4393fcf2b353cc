/* watch_proc.c — the watched command: run as a child with stdio untouched,
 * its exit status passed through, never left behind.
 *
 * - vramfit becomes a child subreaper (PR_SET_CHILD_SUBREAPER) before the
 *   fork, so the command's orphans are adopted by vramfit, not by init: they
 *   stay in the tree whose memory is counted, and they are stopped when the
 *   command ends (SIGTERM, then SIGKILL after 2 s).
 * - the child asks for SIGKILL when vramfit dies (PR_SET_PDEATHSIG), checked
 *   against the race where vramfit died before the call.
 * - exec failures come back through a close-on-exec pipe: 127 for a command
 *   not found, 126 for one that cannot run, as a shell says.
 * - SIGINT, SIGTERM and SIGHUP sent to vramfit alone (kill, timeout) are
 *   forwarded to the child; from the terminal they reach the whole
 *   foreground group already, so those are not sent twice (si_code tells). */
#define _GNU_SOURCE
#include "watch/watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_child;  /* the pid to forward to, 0 when none */
static volatile sig_atomic_t g_signal; /* the last signal vramfit got */

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    g_signal = sig;
    if (g_child > 0 && si && si->si_code <= 0) /* SI_USER, SI_QUEUE, SI_TKILL: another process sent it */
        kill((pid_t)g_child, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};

void vf_watch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &sa, NULL);
}

static void child_exec(char **argv, int fd, pid_t parent)
{
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        signal(forwarded[i], SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* vramfit is already gone */
        _exit(127);
    execvp(argv[0], argv);
    int e = errno;
    if (write(fd, &e, sizeof e) < 0)
        _exit(126);
    _exit(e == ENOENT ? 127 : 126);
}

int vf_watch_spawn(watch_run *w, char **argv)
{
    int pfd[2];
    if (pipe(pfd) != 0 || fcntl(pfd[1], F_SETFD, FD_CLOEXEC) != 0) {
        fprintf(stderr, "vramfit: watch: pipe: %s\n", strerror(errno));
        return VF_EXIT_IO;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    if (p < 0) {
        fprintf(stderr, "vramfit: watch: fork: %s\n", strerror(errno));
        close(pfd[0]), close(pfd[1]);
        return VF_EXIT_IO;
    }
    if (p == 0) {
        close(pfd[0]);
        child_exec(argv, pfd[1], parent);
    }
    close(pfd[1]);
    g_child = p;
    if (g_signal) /* one that came while the child was being made */
        kill(p, g_signal);
    w->root = p;
    w->own_child = true;
    int e = 0;
    ssize_t n;
    while ((n = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    if (n == (ssize_t)sizeof e) {
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
            ;
        g_child = 0;
        fprintf(stderr, "vramfit: %s: %s\n", argv[0], strerror(e));
        return e == ENOENT ? 127 : 126;
    }
    return 0;
}

/* Reads /proc/PID/stat: the parent and the state; false when gone. */
static bool proc_stat(pid_t pid, pid_t *ppid, char *state)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    int pp;
    if (!rp || sscanf(rp + 1, " %c %d", state, &pp) != 2)
        return false;
    *ppid = (pid_t)pp;
    return true;
}

bool vf_watch_in_tree(const watch_run *w, pid_t pid)
{
    pid_t self = getpid();
    if (pid <= 1 || pid == self)
        return false;
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        if (pid == w->root)
            return true;
        pid_t pp;
        char st;
        if (!proc_stat(pid, &pp, &st))
            return false;
        if (pp == self) /* our only children are the command and its adopted orphans */
            return w->own_child;
        pid = pp;
    }
    return false;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The command's processes that vramfit adopted: stopped, then reaped. */
static void stop_orphans(void)
{
    pid_t self = getpid();
    for (int round = 0; round < 2; round++) {
        int sent = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            pid_t pid = (pid_t)atoi(e->d_name), pp;
            char st;
            if (pid > 1 && proc_stat(pid, &pp, &st) && pp == self && st != 'Z' &&
                kill(pid, round ? SIGKILL : SIGTERM) == 0)
                sent++;
        }
        if (d)
            closedir(d);
        if (!sent)
            break;
        for (int i = 0; i < 40 && waitpid(-1, NULL, WNOHANG) >= 0; i++)
            sleep_ms(50);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

void vf_watch_wait(watch_run *w, int *status)
{
    if (!w->own_child) { /* --pid: until it is gone (or a zombie), or vramfit is told to stop */
        pid_t pp;
        char st = 'R';
        while (!g_signal && proc_stat(w->root, &pp, &st) && st != 'Z')
            sleep_ms(w->interval_ms);
        *status = -1;
        return;
    }
    int st = 0;
    pid_t r;
    while ((r = waitpid(w->root, &st, 0)) < 0 && errno == EINTR)
        ;
    g_child = 0;
    if (r < 0)
        *status = 1;
    else if (WIFEXITED(st))
        *status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        *status = 128 + WTERMSIG(st);
    else
        *status = 1;
    stop_orphans();
}
