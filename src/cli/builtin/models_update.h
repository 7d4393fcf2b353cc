/* models_update.h — vramfit models --update ID...: configs fetched through
 * the Hub path into vramfit's cache (models_update.c). */
#ifndef VF_MODELS_UPDATE_H
#define VF_MODELS_UPDATE_H

#include <stdbool.h>

/* argv[first..argc) are the ids; json: one JSON object. The exit status: 0
 * when every id was fetched, else the first failure's. */
int vf_cli_models_update(int argc, char **argv, int first, bool json);

#endif
