/* onnx_wire.h — a bounded reader of the protobuf wire format (the encoding
 * of ONNX's onnx.proto), over a file read through a small window so that a
 * field is skipped by its length without its bytes being read: a 500 MB
 * model's weights (TensorProto.raw_data) are never touched. Every length is
 * checked against the end of the message holding it; varints longer than
 * 10 bytes, wire types onnx.proto never uses (groups) and nesting deeper than
 * VF_PB_MAX_DEPTH are refused. Wire format: protobuf's encoding.md. */
#ifndef VF_ONNX_WIRE_H
#define VF_ONNX_WIRE_H

#include "model/model.h"

#define VF_PB_MAX_DEPTH 16      /* nested messages onnx.proto needs: ~8 */
#define VF_PB_WINDOW ((size_t)64 << 10)

enum { VF_PB_VARINT = 0, VF_PB_I64 = 1, VF_PB_LEN = 2, VF_PB_I32 = 5 };

/* Where bytes come from: a file (read at offsets) or memory. */
typedef struct vf__pbsrc {
    int fd;                   /* -1 when mem is the source */
    const uint8_t *mem;
    uint64_t size;            /* bytes in the source */
    const char *path;         /* labels errors */
    uint8_t *win;             /* the window onto the file */
    uint64_t win_off;
    size_t win_len;
    uint64_t bytes_read;      /* read from the file so far (what a skip saved shows here) */
} vf__pbsrc;

/* A cursor inside one message: [pos, end) of the source. */
typedef struct vf__pb {
    vf__pbsrc *src;
    uint64_t pos, end;
    int depth;
    vf_error *err;
} vf__pb;

VF_HIDDEN vf_status vf__pbsrc_open_fd(vf__pbsrc *s, int fd, uint64_t size, const char *path, vf_error *err);
VF_HIDDEN void vf__pbsrc_open_mem(vf__pbsrc *s, const uint8_t *data, size_t size, const char *path);
VF_HIDDEN void vf__pbsrc_close(vf__pbsrc *s);

/* A cursor over the whole source. */
VF_HIDDEN void vf__pb_init(vf__pb *r, vf__pbsrc *s, vf_error *err);
VF_HIDDEN bool vf__pb_more(const vf__pb *r);
VF_HIDDEN vf_status vf__pb_varint(vf__pb *r, uint64_t *v);
/* Next field's number and wire type; refuses field 0 and wire types 3, 4, 6, 7. */
VF_HIDDEN vf_status vf__pb_tag(vf__pb *r, uint32_t *field, uint32_t *wt);
/* The length of a length-delimited field, checked against the message's end. */
VF_HIDDEN vf_status vf__pb_len(vf__pb *r, uint64_t *len);
VF_HIDDEN vf_status vf__pb_skip(vf__pb *r, uint32_t wt);
VF_HIDDEN vf_status vf__pb_fixed32(vf__pb *r, uint32_t *v);
/* Copies n bytes at the cursor (the caller bounds n) and moves past them. */
VF_HIDDEN vf_status vf__pb_bytes(vf__pb *r, void *dst, size_t n);
/* A sub-cursor over the next len bytes; the parent moves past them. */
VF_HIDDEN vf_status vf__pb_sub(vf__pb *r, uint64_t len, vf__pb *sub);
/* Refuses a field whose wire type is not the one onnx.proto gives it. */
VF_HIDDEN vf_status vf__pb_expect(vf__pb *r, const char *msg, uint32_t field, uint32_t wt, uint32_t want);
/* A length-delimited string field copied NUL-terminated into buf (cap
 * bytes); a longer one is refused. *n is its length. */
VF_HIDDEN vf_status vf__pb_str(vf__pb *r, char *buf, size_t cap, size_t *n);

#endif
