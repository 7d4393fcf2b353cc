/* cmd_estimate.c — placeholder until 'vramfit estimate' lands. */
#include "cli.h"

#include <string.h>

int cmd_estimate(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit estimate ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: estimate: not built yet\n");
    return VF_EXIT_USAGE;
}
