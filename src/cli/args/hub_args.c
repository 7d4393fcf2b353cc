/* hub_args.c — the Hub options every command that takes MODEL accepts
 * (--offline, --refresh, --file NAME, --hub-timeout SECONDS), taken out of
 * argv before the command parses the rest, and the one stderr line that says
 * which source answered for a Hub id. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static vf_open_opts hub_opts;

static void progress(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    fprintf(stderr, "\rvramfit: fetching headers %zu/%zu%s", done, total, done == total ? "\n" : "");
}

/* "--name VALUE" or "--name=VALUE": the value, and how many argv slots it took */
static const char *value_of(char **argv, int i, int argc, const char *name, int *used)
{
    size_t k = strlen(name);
    if (strncmp(argv[i], name, k) != 0)
        return NULL;
    if (argv[i][k] == '=') {
        *used = 1;
        return argv[i] + k + 1;
    }
    if (argv[i][k] == '\0') {
        *used = 2;
        return i + 1 < argc ? argv[i + 1] : "";
    }
    return NULL;
}

int vf_cli_hub_args(int *argc, char **argv)
{
    int out = 1;
    bool tail = false;
    for (int i = 1; i < *argc;) {
        const char *a = argv[i], *v;
        int used = 1;
        if (tail || strcmp(a, "--") == 0) {
            tail = true;
            argv[out++] = argv[i++];
            continue;
        }
        if (strcmp(a, "--offline") == 0) {
            hub_opts.offline = true;
        } else if (strcmp(a, "--refresh") == 0) {
            hub_opts.refresh = true;
        } else if ((v = value_of(argv, i, *argc, "--file", &used))) {
            if (!*v)
                return vf_usage_error(argv[0], "--file needs a value");
            hub_opts.file = v;
        } else if ((v = value_of(argv, i, *argc, "--hub-timeout", &used))) {
            char *end = NULL;
            long s = strtol(v, &end, 10);
            if (!*v || *end || s < 1 || s > 86400)
                return vf_usage_error(argv[0], "--hub-timeout needs whole seconds from 1 to 86400, not '%s'", v);
            hub_opts.hub_timeout_s = s;
        } else {
            argv[out++] = argv[i++];
            continue;
        }
        i += used;
    }
    *argc = out;
    argv[out] = NULL;
    if (isatty(2))
        hub_opts.progress = progress;
    return -1;
}

const vf_open_opts *vf_cli_hub_open_opts(void) { return &hub_opts; }

void vf_cli_hub_help(FILE *f)
{
    fprintf(f, "\nHub options (MODEL as hf://org/name[@rev][:QUANT] or org/name; see vramfit(1)):\n"
               "  --offline            never touch the network (as HF_HUB_OFFLINE=1)\n"
               "  --refresh            fetch again, whatever vramfit's cache holds\n"
               "  --file NAME          read this file of the repository\n"
               "  --hub-timeout SECS   give up on a request after SECS seconds (default 60)\n");
}

/* cmd labels the refusal of an approximate model; allow_approximate lets it by. */
int vf_cli_open_model_exact(const char *cmd, const char *src, vf_model **m, bool allow_approximate)
{
    vf_error e = {0};
    if (vf_model_open_with(src, &hub_opts, m, &e) != VF_OK)
        return vf_report_error(&e);
    const char *origin = vf_model_origin(*m);
    /* a Hub id says where its answer came from: a file or a catalog name goes without */
    if (strcmp(origin, "local files") != 0 && strcmp(origin, "the embedded catalog") != 0)
        fprintf(stderr, "vramfit: %s: answered by %s\n", src, origin);
    const char *why = vf_model_approximate(*m);
    if (why && !allow_approximate) { /* one line: its warning says the same */
        fprintf(stderr,
                "vramfit: %s: %s; %s will not answer from a guess: give the weights (safetensors or GGUF files, or a "
                "directory or Hub repository holding them) or pass --approximate\n",
                src, why, cmd);
        vf_model_free(*m);
        *m = NULL;
        return VF_EXIT_INPUT;
    }
    for (size_t i = 0; i < vf_model_warning_count(*m); i++)
        fprintf(stderr, "vramfit: warning: %s\n", vf_model_warning(*m, i));
    return VF_EXIT_OK;
}

int vf_cli_open_model(const char *src, vf_model **m) { return vf_cli_open_model_exact("", src, m, true); }
