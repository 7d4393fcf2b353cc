/* gguf_priv.h — what the GGUF reader's files share (gguf.c parses the
 * binary layout, gguf_hparams.c turns the metadata into vf_hparams). */
#ifndef VF_GGUF_PRIV_H
#define VF_GGUF_PRIV_H

#include "model/model.h"

/* Arrays longer than this are kept in m->gguf_kv as {"type", "count"} only. */
#define VF_GGUF_KV_MAX_ARRAY 1024u
/* Strings longer than this are kept in m->gguf_kv as {"type", "length"} only. */
#define VF_GGUF_KV_MAX_STRING ((uint64_t)1 << 20)

/* Per-layer hyper-parameter arrays are built up to this depth only. */
#define VF_GGUF_MAX_LAYERS 65536u

/* Fills m->hp from m->gguf_kv (the first shard's metadata) and the tensor
 * table. Never fails on odd values: what cannot be read is left unstated. */
VF_HIDDEN void vf__gguf_hparams(vf_model *m);

#endif
