/* capture.c — another command's --json answer as a value: oom --model and
 * watch --estimate run the fit and estimate commands themselves (their
 * knobs, defaults and errors exactly), with stdout diverted to a temporary
 * file for the length of the call. */
#include "cli.h"

#include <stdlib.h>
#include <unistd.h>

int vf_cli_capture_json(int (*cmd)(int, char **), int argc, char **argv, json_t **out)
{
    *out = NULL;
    FILE *tmp = tmpfile();
    if (!tmp) {
        fprintf(stderr, "vramfit: cannot create a temporary file\n");
        return VF_EXIT_IO;
    }
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved < 0 || dup2(fileno(tmp), STDOUT_FILENO) < 0) {
        if (saved >= 0)
            close(saved);
        fclose(tmp);
        fprintf(stderr, "vramfit: cannot divert standard output\n");
        return VF_EXIT_IO;
    }
    int rc = cmd(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    rewind(tmp);
    json_error_t e;
    *out = json_loadf(tmp, 0, &e);
    fclose(tmp);
    return rc;
}
