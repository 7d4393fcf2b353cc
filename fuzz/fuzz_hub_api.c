/* fuzz_hub_api.c — feeds bytes as the Hub API's answer (GET
 * /api/models/{id}/revision/{rev}) to its parser, then the file choice over
 * the names it accepted, with and without a quantization tag. Every result
 * must be a clean status with a message; every accepted name is relative and
 * cannot step out of the repository; a choice is one of the names. The same
 * bytes, as text, also go to the other parsers of untrusted strings: a
 * Content-Range value (an accepted one answers the range asked for) and a Hub
 * id (an accepted one has a bounded, well-formed repository name). */
#include "read/hub/hub.h"
#include "read/hub/hub_http.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_choice(const vf__hub_info *info, const char *quant)
{
    const char *pick = NULL;
    vf_error err = {0};
    vf_status st = vf__hub_choose(info->files, info->n_files, quant, NULL, "hf://fuzz/repo", &pick, &err);
    if (st == VF_OK) {
        bool listed = false;
        for (size_t i = 0; i < info->n_files && !listed; i++)
            listed = pick == info->files[i];
        if (!listed)
            abort();
    } else if (err.msg[0] == '\0') {
        abort();
    }
}

static void check_strings(const uint8_t *data, size_t size)
{
    char s[512];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    uint64_t a, b, t;
    if (vf__http_content_range(s, 0, 65535, &a, &b, &t) && (a != 0 || b > 65535 || b >= t))
        abort();
    vf__hub_id id;
    if (vf__hub_id_parse(s, &id) && (strlen(id.repo) == 0 || strlen(id.repo) > VF_HUB_REPO_MAX || !id.rev[0]))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > ((size_t)1 << 20))
        return 0;
    check_strings(data, size);
    vf__hub_info info;
    vf_error err = {0};
    if (vf__hub_api_parse((const char *)data, size, "hf://fuzz/repo", &info, &err) != VF_OK) {
        if (err.msg[0] == '\0')
            abort(); /* every failure carries a message */
        return 0;
    }
    if (strlen(info.sha) != 40)
        abort();
    for (size_t i = 0; i < info.n_files; i++) {
        const char *f = info.files[i];
        if (f[0] == '/' || strstr(f, "//") || strcmp(f, "..") == 0 || strncmp(f, "../", 3) == 0 ||
            strstr(f, "/../") || (strlen(f) >= 3 && strcmp(f + strlen(f) - 3, "/..") == 0))
            abort(); /* a ".." segment (a name may hold "..", as "a..b/c") */
    }
    check_choice(&info, NULL);
    check_choice(&info, "Q4_K_M");
    vf__hub_info_free(&info);
    return 0;
}
