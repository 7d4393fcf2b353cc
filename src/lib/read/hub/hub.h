/* hub.h — Hugging Face Hub repositories for the model opener (and for it
 * only: the readers see a vf__fs, never HTTP).
 *
 * An id is "hf://org/name[@rev][:QUANT]" or "org/name[@rev][:QUANT]". The
 * local HF cache is read as huggingface_hub lays it out; the Hub by
 * HF_ENDPOINT's /api/models/{id}/revision/{rev} and /{id}/resolve/{rev}/{file},
 * headers only, what was fetched kept in vramfit's own validated cache. */
#ifndef VF_HUB_H
#define VF_HUB_H

#include "read/source.h"

#define VF_HUB_REPO_MAX 96 /* huggingface_hub's validate_repo_id */

typedef struct vf__hub_id {
    char repo[VF_HUB_REPO_MAX + 1]; /* "org/name" (or "name") */
    char rev[256];                  /* "main" unless given */
    char quant[40];                 /* ":Q4_K_M", without the colon; "" if none */
    bool explicit_hub;              /* written hf:// */
    bool rev_given;
} vf__hub_id;

/* true when s is a Hub id (hf://... always is when well formed; a plain
 * name needs "org/name"); false for anything else (a path, a short name) */
VF_HIDDEN bool vf__hub_id_parse(const char *s, vf__hub_id *id);
/* a full commit id: 40 lower-case hex digits */
VF_HIDDEN bool vf__hub_is_commit(const char *s);

/* ---- the local Hugging Face cache ---- */
/* The snapshot directory of id in the HF cache (malloc'd) in *dir, or NULL
 * when the cache does not hold the repository; an error for a cache that
 * holds it broken (a refs file naming a missing snapshot). */
VF_HIDDEN vf_status vf__hfcache_find(const vf__hub_id *id, char **dir, vf_error *err);
/* HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub (malloc'd) */
VF_HIDDEN char *vf__hfcache_root(void);

/* ---- the Hub ---- */
typedef struct vf__hub_opts {
    bool offline;  /* never touch the network (also HF_HUB_OFFLINE=1) */
    bool refresh;  /* fetch again, whatever vramfit's cache holds */
    const char *file; /* --file NAME: this file of the repository */
    long timeout_s;   /* per request, total; 0: 60 */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
} vf__hub_opts;

typedef struct vf__hub vf__hub;

/* HF_HUB_OFFLINE set to 1, on, yes or true (huggingface_hub's reading) */
VF_HIDDEN bool vf__hub_env_offline(void);

VF_HIDDEN vf_status vf__hub_open(const vf__hub_id *id, const vf__hub_opts *o, vf__hub **out, vf_error *err);
VF_HIDDEN vf__fs *vf__hub_fs(vf__hub *h);
/* the file the opener reads first ("hf://org/name/model.safetensors.index.json", ...) */
VF_HIDDEN const char *vf__hub_pick(const vf__hub *h);
/* "hf://org/name" (the prefix of every path in the file set) */
VF_HIDDEN const char *vf__hub_root(const vf__hub *h);
/* which source answered, for the one stderr line */
VF_HIDDEN const char *vf__hub_answered(const vf__hub *h);
/* keeps what was fetched in vramfit's cache (call once the model opened) */
VF_HIDDEN void vf__hub_save(vf__hub *h);
VF_HIDDEN void vf__hub_free(vf__hub *h);

/* ---- parts, exposed for the tests and the fuzz harness ---- */
typedef struct vf__hub_info {
    char sha[41];
    char **files; /* rfilename of every sibling */
    size_t n_files;
    bool gated;
} vf__hub_info;
/* The API's answer for a revision: {"sha": 40 hex, "siblings": [{"rfilename": ...}], ...} */
VF_HIDDEN vf_status vf__hub_api_parse(const char *text, size_t len, const char *label, vf__hub_info *out,
                                      vf_error *err);
VF_HIDDEN void vf__hub_info_free(vf__hub_info *info);
/* The file to read first among files, as transformers (safetensors index,
 * model.safetensors, other safetensors, never a Mistral consolidated file
 * beside an HF set) and llama.cpp's -hf (a GGUF by quant tag, Q4_K_M by
 * default) choose; file: an exact name. VF_EINVAL with the candidates listed
 * when a GGUF choice is ambiguous. *pick points into files. */
VF_HIDDEN vf_status vf__hub_choose(char *const *files, size_t n, const char *quant, const char *file,
                                   const char *label, const char **pick, vf_error *err);

#endif
