/* readers.h — the readers, as the opener (open.c) sees them. Each fills a model
 * already created by vf__model_new and returns VF_OK or an error; none of them
 * knows another, and nothing but open.c calls them. */
#ifndef VF_READERS_H
#define VF_READERS_H

#include "model/model.h"
#include "read/source.h"

/* The file readers read through fs (source.h): a shard, a split part or the
 * index's shards are opened in the same file set as the first file. */
VF_HIDDEN vf_status vf__safetensors_read(vf_model *m, vf__fs *fs, const char *path, vf_error *err);
VF_HIDDEN vf_status vf__safetensors_read_index(vf_model *m, vf__fs *fs, const char *index_path, vf_error *err);
VF_HIDDEN vf_status vf__gguf_read(vf_model *m, vf__fs *fs, const char *path, vf_error *err);
/* config.json text → hparams + architecture tensor list. path labels errors. */
VF_HIDDEN vf_status vf__hfconfig_read_text(vf_model *m, const char *text, size_t len, const char *path,
                                           vf_error *err);
/* A config.json's text as JSON; Python's bare Infinity / NaN read as null. */
VF_HIDDEN json_t *vf__config_json_parse(const char *text, size_t len, const char *path, vf_error *err);
/* hparams only (no tensors), for a directory holding weights + config. */
VF_HIDDEN vf_status vf__hfconfig_parse_hparams(vf_hparams *hp, json_t *cfg, const char *path, vf_error *err);
/* An ONNX model: graph (m->graph) and initializers (m->tensors), no weight bytes read. */
VF_HIDDEN vf_status vf__onnx_read(vf_model *m, const char *path, vf_error *err);
/* Embedded catalog: config text for a name or alias, NULL when unknown. */
/* A GGUF repository's name as its base catalog model and file type (gguf_repo.c). */
typedef struct vf__gguf_repo {
    char base[160];  /* the catalog id: "Qwen/Qwen3-8B" */
    char named[48];  /* the type as named: "Q4_K_M", "UD-Q4_K_XL" (Q4_K_M when none) */
    char ftype[32];  /* the llama-quantize type that prices it: "q4_k_m" */
    bool own_recipe; /* the repository's own mix (unsloth UD), priced by ftype's rule */
} vf__gguf_repo;
/* false unless source is "ORG/NAME-GGUF[:TYPE]" with NAME a catalog model
 * ("Qwen3-8B", bartowski's "Qwen_Qwen3-8B"). */
VF_HIDDEN bool vf__gguf_repo_resolve(const char *source, vf__gguf_repo *out);
/* "ollama:[USER/]NAME[:TAG]" (ollama.c): the parts, checked to make paths. */
typedef struct vf__ollama_name {
    char space[64];  /* "library" for a bare name */
    char model[96];
    char tag[96];    /* "latest" when none */
} vf__ollama_name;
VF_HIDDEN bool vf__ollama_name_parse(const char *source, vf__ollama_name *out);
/* The store's root ($OLLAMA_MODELS, else ~/.ollama/models), malloc'd; NULL without a home. */
VF_HIDDEN char *vf__ollama_root(void);
/* The model blob (a GGUF file) the store's manifest names and the manifest's
 * path, malloc'd; both NULL when the store has no such name. An error for a
 * manifest that does not check out or a blob it lacks. */
VF_HIDDEN vf_status vf__ollama_find(const vf__ollama_name *o, char **blob, char **manifest, vf_error *err);
/* The catalog model a library name and size tag stand for ("qwen3:8b" is
 * Qwen/Qwen3-8B) and the tag's type (q4_k_m when it names none). */
VF_HIDDEN bool vf__ollama_catalog(const vf__ollama_name *o, char *base, size_t cap, char *ftype, size_t fcap);
VF_HIDDEN const char *vf__catalog_config_text(const char *name, size_t *len, const char **canonical);

#endif
