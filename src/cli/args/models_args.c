/* models_args.c — the options of 'vramfit models', as a table its parser and
 * the server's API (/api/models, serve_args.c) both read: a query parameter
 * of /api/models is one of these, judged by the command's own parser. */
#include "cli.h"

#include <getopt.h>

const struct option vf_cli_models_options[] = {{"json", no_argument, 0, 'j'},
                                               {"family", required_argument, 0, 'f'},
                                               {"help", no_argument, 0, 'h'},
                                               {0, 0, 0, 0}};
