/* embed.c — the vramfit command run in-process, its output returned: what
 * the Python package (python/vramfit) calls through libvramfit-cli.so, so
 * that its answers are the command's own --json objects, byte for byte, and
 * its errors the command's one-line messages and exit codes. Standard output
 * and error are diverted to temporary files for the call (the commands
 * print); callers serialize calls (the package holds a lock): getopt's state
 * and the two descriptors are the process's. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VF_EMBED_API __attribute__((visibility("default")))

VF_EMBED_API int vf_cli_run(int argc, char **argv, char **out, char **err);
VF_EMBED_API void vf_cli_release(char *p);

/* The file's text, NUL-terminated, malloc'd (NULL when out of memory). */
static char *slurp(FILE *f)
{
    if (fseek(f, 0, SEEK_END) != 0)
        return NULL;
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p)
        return NULL;
    size_t got = fread(p, 1, (size_t)n, f);
    p[got] = '\0';
    return p;
}

typedef struct diverted {
    FILE *tmp;
    int saved;
} diverted;

static bool divert(int fd, diverted *d)
{
    d->tmp = tmpfile();
    d->saved = d->tmp ? dup(fd) : -1;
    if (d->saved < 0 || dup2(fileno(d->tmp), fd) < 0) {
        if (d->saved >= 0)
            close(d->saved);
        if (d->tmp)
            fclose(d->tmp);
        return false;
    }
    return true;
}

static char *restore(int fd, diverted *d)
{
    dup2(d->saved, fd);
    close(d->saved);
    char *text = slurp(d->tmp);
    fclose(d->tmp);
    return text;
}

int vf_cli_run(int argc, char **argv, char **out, char **err)
{
    *out = *err = NULL;
    diverted o, e;
    fflush(stdout);
    fflush(stderr);
    if (!divert(STDOUT_FILENO, &o))
        return VF_EXIT_IO;
    if (!divert(STDERR_FILENO, &e)) {
        free(restore(STDOUT_FILENO, &o));
        return VF_EXIT_IO;
    }
    int rc = vf_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    *err = restore(STDERR_FILENO, &e);
    *out = restore(STDOUT_FILENO, &o);
    if (!*out || !*err) {
        free(*out);
        free(*err);
        *out = *err = NULL;
        return VF_EXIT_IO;
    }
    return rc;
}

void vf_cli_release(char *p)
{
    free(p);
}
