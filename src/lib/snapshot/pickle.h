/* pickle.h — a bounded reader of the pickle subset PyTorch's memory snapshots
 * use (torch.cuda.memory._dump_snapshot: pickle.dump of dicts, lists, tuples,
 * strings, ints, floats, bools and None). Nothing runs: every opcode that
 * would name a global, call or build an object is refused, with its name.
 * Opcodes: Python's Lib/pickletools.py (protocols 2-5, the binary ones). */
#ifndef VF_SNAPSHOT_PICKLE_H
#define VF_SNAPSHOT_PICKLE_H

#include "base/base.h"

typedef enum pk_kind { PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_BYTES, PK_LIST, PK_TUPLE, PK_DICT } pk_kind;

/* A value; strings point into the pickle's bytes (not NUL-terminated). A
 * dict's items are its keys and values in turn (key 0, value 0, key 1, ...). */
typedef struct pk_value {
    pk_kind kind;
    uint32_t cap;                    /* PK_LIST, PK_TUPLE, PK_DICT: items allocated */
    union {
        int64_t i;                   /* PK_INT, PK_BOOL */
        double f;                    /* PK_FLOAT */
        struct { const char *s; size_t len; };          /* PK_STR, PK_BYTES */
        struct { struct pk_value **items; size_t n; };  /* PK_LIST, PK_TUPLE, PK_DICT */
    };
} pk_value;

/* The most values one pickle may make (32 bytes each): a real snapshot with a
 * 100,000-entry trace holds a few million. */
#define PK_MAX_VALUES ((size_t)1 << 25)
/* The most container slots (8 bytes each), counting a shared value each time
 * it is appended. */
#define PK_MAX_ITEMS ((size_t)1 << 26)

typedef struct pk_doc pk_doc;

/* Reads the pickle in [data, data + n) (which must outlive the document);
 * *root is its value. VF_EFORMAT for a malformed pickle, VF_EUNSUPPORTED for
 * an opcode outside the subset (a global, a call, an object). */
VF_HIDDEN vf_status pk_read(const void *data, size_t n, const char *path, pk_doc **doc, const pk_value **root,
                            vf_error *err);
VF_HIDDEN void pk_free(pk_doc *doc);
/* The container slots the pickle made (each value's place in a list, tuple or dict). */
VF_HIDDEN size_t pk_doc_items(const pk_doc *doc);

/* The most items of a dict whose keys are looked up: the snapshot's dicts
 * have at most ~20 keys, and a lookup scans them (a shared dict of a million
 * keys looked up a million times would otherwise take hours). */
#define PK_MAX_DICT_ITEMS 256

/* dict[key] for a string key; NULL when absent, d is no dict or a larger
 * one than PK_MAX_DICT_ITEMS. */
VF_HIDDEN const pk_value *pk_get(const pk_value *d, const char *key);
/* An integer (bools too) of d[key]: true when present and integral. */
VF_HIDDEN bool pk_get_int(const pk_value *d, const char *key, int64_t *out);
/* True when v is the string s. */
VF_HIDDEN bool pk_is_str(const pk_value *v, const char *s);
/* A list or tuple (n items); false otherwise. */
VF_HIDDEN bool pk_is_seq(const pk_value *v);

#endif
