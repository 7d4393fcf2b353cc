/* cmd_load.c — placeholder until 'vramfit load' lands. */
#include "cli.h"

#include <string.h>

int cmd_load(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit load ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: load: not built yet\n");
    return VF_EXIT_USAGE;
}
