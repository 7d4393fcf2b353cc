/* cmd_gpus.c — placeholder until 'vramfit gpus' lands. */
#include "cli.h"

#include <string.h>

int cmd_gpus(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit gpus ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: gpus: not built yet\n");
    return VF_EXIT_USAGE;
}
