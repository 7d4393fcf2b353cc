/* train_opts.c — the training knobs of 'vramfit estimate --train' (stub:
 * the training module replaces this file with its table and parser). */
#include "estimate_opts.h"

const struct option vf_cli_train_options[] = {
    {0, 0, 0, 0},
};

int vf_cli_parse_train_opt(int c, const char *arg, vf_estimate_opts *o)
{
    (void)c, (void)arg, (void)o;
    return 0; /* not handled */
}

void vf_cli_train_opts_help(FILE *f) { (void)f; }
