/* catalog.c — placeholder until the embedded catalog lands (issue 3). */
#include "internal.h"

const char *vf__catalog_config_text(const char *name, size_t *len, const char **canonical)
{
    (void)name, (void)len, (void)canonical;
    return NULL;
}
