/* capture.c — another command's --json answer as a value: oom --model and
 * watch --estimate run the fit and estimate commands themselves (their
 * knobs, defaults and errors exactly), with stdout diverted to a temporary
 * file for the length of the call. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
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

int vf_cli_estimate_spec(const char *cmd, const char *spec, int (*estimate)(int, char **), uint64_t *bytes)
{
    char buf[2048], *argv[72];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", spec);
    argv[n++] = "estimate";
    for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save); t && n < 70; t = strtok_r(NULL, " \t\n", &save))
        argv[n++] = t;
    if (n == 1)
        return vf_usage_error(cmd, "--estimate: no MODEL in '%s'", spec);
    argv[n++] = "--json";
    argv[n] = NULL;
    json_t *j = NULL;
    int rc = vf_cli_capture_json(estimate, n, argv, &j);
    if (rc == VF_EXIT_OK) {
        json_t *d = json_object_get(j, "device_bytes");
        if (!json_is_integer(d))
            d = json_object_get(j, "per_gpu_bytes");
        if (json_is_integer(d) && json_integer_value(d) > 0)
            *bytes = (uint64_t)json_integer_value(d);
        else
            rc = vf_usage_error(cmd, "--estimate: the estimate gave no device memory");
    }
    json_decref(j);
    return rc;
}
