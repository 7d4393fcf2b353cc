/* hub_id.c — "hf://org/name[@rev][:QUANT]" and "org/name" as Hub ids.
 * The name rules are huggingface_hub's validate_repo_id: [A-Za-z0-9_.-],
 * at most 96 characters, no "--" or "..", not starting or ending with '-'
 * or '.'; one optional "org/" part. */
#include "read/hub/hub.h"

#include <stdio.h>
#include <string.h>

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
}

static bool part_ok(const char *s, size_t n)
{
    if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]) || (i > 0 && (s[i] == '-' || s[i] == '.') && s[i - 1] == s[i]))
            return false;
    return true;
}

static bool repo_ok(const char *s, size_t n, bool need_org)
{
    if (n > VF_HUB_REPO_MAX)
        return false;
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return !need_org && part_ok(s, n);
    size_t a = (size_t)(slash - s);
    return part_ok(s, a) && part_ok(slash + 1, n - a - 1);
}

/* A revision: a branch, tag or commit; "refs/pr/1" has slashes. */
static bool rev_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 256 || s[0] == '/' || s[n - 1] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]) && s[i] != '/')
            return false;
    return strstr(s, "..") == NULL || (size_t)(strstr(s, "..") - s) >= n;
}

static bool quant_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return false;
    return true;
}

bool vf__hub_is_commit(const char *s)
{
    if (strlen(s) != 40)
        return false;
    for (int i = 0; i < 40; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

bool vf__hub_id_parse(const char *s, vf__hub_id *id)
{
    memset(id, 0, sizeof *id);
    if (strncmp(s, "hf://", 5) == 0) {
        id->explicit_hub = true;
        s += 5;
    }
    size_t n = strlen(s);
    const char *colon = memchr(s, ':', n), *end = colon ? colon : s + n;
    const char *at = memchr(s, '@', (size_t)(end - s));
    const char *repo_end = at ? at : end;
    if (!repo_ok(s, (size_t)(repo_end - s), !id->explicit_hub))
        return false;
    if (at && !rev_ok(at + 1, (size_t)(end - at - 1)))
        return false;
    if (colon && !quant_ok(colon + 1, strlen(colon + 1)))
        return false;
    memcpy(id->repo, s, (size_t)(repo_end - s));
    if (at) {
        memcpy(id->rev, at + 1, (size_t)(end - at - 1));
        id->rev_given = true;
    } else {
        strcpy(id->rev, "main");
    }
    if (colon)
        snprintf(id->quant, sizeof id->quant, "%s", colon + 1);
    return true;
}
