/* cmd_fit.c — placeholder until 'vramfit fit' lands. */
#include "cli.h"

#include <string.h>

int cmd_fit(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit fit ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: fit: not built yet\n");
    return VF_EXIT_USAGE;
}
