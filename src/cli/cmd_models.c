/* cmd_models.c — placeholder until 'vramfit models' lands. */
#include "cli.h"

#include <string.h>

int cmd_models(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit models ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: models: not built yet\n");
    return VF_EXIT_USAGE;
}
