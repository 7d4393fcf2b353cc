/* st_parse.h — a bounded single-pass parser of the safetensors header.
 *
 * The header is a JSON object: "__metadata__" → object of strings, every
 * other key a tensor name → {"dtype": string, "shape": [u64...],
 * "data_offsets": [u64, u64]} plus keys the format does not define (skipped,
 * as the reference reader does). The parser checks the JSON grammar (RFC
 * 8259: escapes, surrogate pairs, UTF-8, no trailing bytes, nesting ≤
 * VF_JSON_MAX_DEPTH, no duplicate keys in any object) and hands each tensor
 * entry, decoded, to a callback that checks what the values mean. */
#ifndef VF_ST_PARSE_H
#define VF_ST_PARSE_H

#include "model/model.h"

/* One tensor entry as written; the callback decides what is wrong with it. */
typedef struct vf__st_entry {
    const char *name;  /* decoded, NUL-terminated; valid during the callback */
    size_t name_len;
    const char *dtype; /* decoded; NULL when absent or not a string */
    size_t dtype_len;
    bool has_shape;    /* "shape" present and an array */
    size_t n_dims;     /* its length, counted past VF_MAX_DIMS */
    size_t shape_bad;  /* index of its first value that is not a u64, SIZE_MAX if none */
    uint64_t shape[VF_MAX_DIMS];
    bool offsets_ok;   /* "data_offsets" is an array of exactly two u64 */
    uint64_t offsets[2];
    /* set by the callback: a copy of name that outlives the parse (used to
     * find duplicate names); NULL makes the parser keep no record of it */
    const char *stored_name;
} vf__st_entry;

typedef vf_status (*vf__st_entry_fn)(void *ctx, vf__st_entry *e, vf_error *err);

/* Integers accepted as u64 are those jansson kept exact: 0 … INT64_MAX.
 * A larger integer literal is a JSON error ("too big integer"). */
#define VF_ST_MAX_INT ((uint64_t)INT64_MAX)

/* Parses text[0, len) (need not be NUL-terminated); calls fn for every
 * tensor entry in file order. Errors are "PATH: reason" in err. */
VF_HIDDEN vf_status vf__st_parse(const char *text, size_t len, const char *path, vf__st_entry_fn fn, void *ctx,
                                 vf_error *err);

/* Longest probe run in the tensor-name table before duplicates are found
 * by sorting instead (256; tests set 0 to take the sorting path). */
extern VF_HIDDEN unsigned vf__st_max_probe;

#endif
