/* hub_cache.h — vramfit's validated cache of Hub answers (hub_cache.c). */
#ifndef VF_HUB_CACHE_H
#define VF_HUB_CACHE_H

#include "model/model.h"

/* {cache}/hub/models--org--name/{sub}, malloc'd; NULL without a home */
VF_HIDDEN char *vf__hubcache_dir(const char *repo, const char *sub);
/* a repository path as one file name ('/' and anything unusual as %XX) */
VF_HIDDEN void vf__hubcache_escape(const char *name, char *out, size_t cap);
/* an entry that checks out (≤ cap bytes): its bytes (NUL-terminated), and the
 * whole file's size; false for a missing or invalid entry */
VF_HIDDEN bool vf__hubcache_get(const char *path, size_t cap, unsigned char **data, size_t *len, uint64_t *total);
/* writes an entry: temp file + rename; false when it could not */
VF_HIDDEN bool vf__hubcache_put(const char *path, const void *data, size_t len, uint64_t total);

#endif
