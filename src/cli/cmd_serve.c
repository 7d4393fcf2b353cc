/* cmd_serve.c — placeholder until 'vramfit serve' lands. */
#include "cli.h"

#include <string.h>

int cmd_serve(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: vramfit serve ... (not built yet)\n");
        return VF_EXIT_OK;
    }
    fprintf(stderr, "vramfit: serve: not built yet\n");
    return VF_EXIT_USAGE;
}
