/* models_args.c — the options of 'vramfit models', as a table its parser and
 * the server's API (/api/models, serve_args.c) both read: a query parameter
 * of /api/models is one of these, judged by the command's own parser. */
#include "cli.h"
#include "args/estimate_opts.h"

#include <getopt.h>

const struct option vf_cli_models_options[] = {
    {"json", no_argument, 0, M_JSON},              {"family", required_argument, 0, M_FAMILY},
    {"fits", required_argument, 0, M_FITS},        {"local", no_argument, 0, M_LOCAL},
    {"host-memory", required_argument, 0, M_HOST}, {"max-params", required_argument, 0, M_MAX_PARAMS},
    {"task", required_argument, 0, M_TASK},        {"train", no_argument, 0, M_TRAIN},
    {"units", required_argument, 0, M_UNITS},      {"help", no_argument, 0, M_HELP},
    {0, 0, 0, 0}};
