/* snapshot_args.c — the options of 'vramfit snapshot', as a table its parser
 * and the server's API (/api/snapshot, serve_args.c) both read. */
#include "cli.h"

#include <getopt.h>

const struct option vf_cli_snapshot_options[] = {{"json", no_argument, 0, 'j'},
                                                 {"units", required_argument, 0, 'u'},
                                                 {"estimate", required_argument, 0, 'e'},
                                                 {"help", no_argument, 0, 'h'},
                                                 {0, 0, 0, 0}};
