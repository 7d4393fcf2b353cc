/* timeit.c — one command run REPS times with its output thrown away:
 * prints "best-wall median-wall best-cpu" in milliseconds, cpu being the
 * child's user + system time (what a loaded machine inflates least)
 * (bench/catalog-speed.sh).
 * usage: timeit REPS PROGRAM [ARGS...]; exit status: the last run's. */
#include "benchutil.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 2 ? atoi(argv[1]) : 0;
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: timeit REPS PROGRAM [ARGS...]\n");
        return 2;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double *t = calloc((size_t)reps, sizeof *t), cpu = 1e300;
    int status = 0;
    for (int i = 0; i < reps && t; i++) {
        pid_t pid;
        double t0 = now();
        if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) {
            perror(argv[2]);
            return 2;
        }
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) < 0)
            return 2;
        t[i] = (now() - t0) * 1e3;
        double c = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
        if (c < cpu)
            cpu = c;
    }
    if (!t)
        return 2;
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("%.2f %.2f %.2f\n", t[0], t[reps / 2], cpu);
    free(t);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
