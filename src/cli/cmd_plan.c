/* cmd_plan.c — placeholder until 'vramfit plan' lands. */
#include "cli.h"

#include <string.h>

int cmd_plan(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit plan ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: plan: not built yet\n");
    return VF_EXIT_USAGE;
}
