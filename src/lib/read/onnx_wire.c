/* onnx_wire.c — the protobuf wire format, bounded (see onnx_wire.h). */
#include "read/onnx_wire.h"

#include <stdlib.h>
#include <string.h>

vf_status vf__pbsrc_open_fd(vf__pbsrc *s, int fd, uint64_t size, const char *path, vf_error *err)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->size = size;
    s->path = path;
    s->win = malloc(VF_PB_WINDOW);
    if (!s->win)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    return VF_OK;
}

void vf__pbsrc_open_mem(vf__pbsrc *s, const uint8_t *data, size_t size, const char *path)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->mem = data;
    s->size = size;
    s->path = path;
}

void vf__pbsrc_close(vf__pbsrc *s)
{
    free(s->win);
    s->win = NULL;
}

/* The byte at off (off < size): from memory, or the window, refilled from
 * the file at off when off is outside it. */
static vf_status byte_at(vf__pbsrc *s, uint64_t off, uint8_t *b, vf_error *err)
{
    if (s->fd < 0) {
        *b = s->mem[off];
        return VF_OK;
    }
    if (off < s->win_off || off - s->win_off >= s->win_len) {
        uint64_t left = s->size - off;
        size_t n = left < VF_PB_WINDOW ? (size_t)left : VF_PB_WINDOW;
        vf_status st = vf__pread_full(s->fd, s->win, n, off, s->path, err);
        if (st != VF_OK)
            return st;
        s->win_off = off;
        s->win_len = n;
        s->bytes_read += n;
    }
    *b = s->win[off - s->win_off];
    return VF_OK;
}

void vf__pb_init(vf__pb *r, vf__pbsrc *s, vf_error *err)
{
    r->src = s;
    r->pos = 0;
    r->end = s->size;
    r->depth = 0;
    r->err = err;
}

bool vf__pb_more(const vf__pb *r) { return r->pos < r->end; }

static vf_status bad(vf__pb *r, const char *what)
{
    return vf__err(r->err, VF_EFORMAT, r->src->path, "onnx: %s at byte %llu", what, (unsigned long long)r->pos);
}

vf_status vf__pb_varint(vf__pb *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->pos >= r->end)
            return bad(r, "truncated varint");
        uint8_t b;
        vf_status st = byte_at(r->src, r->pos, &b, r->err);
        if (st != VF_OK)
            return st;
        r->pos++;
        if (i == 9 && b > 1)
            return bad(r, "varint overflows 64 bits");
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return VF_OK;
        }
    }
    return bad(r, "varint longer than 10 bytes");
}

vf_status vf__pb_tag(vf__pb *r, uint32_t *field, uint32_t *wt)
{
    uint64_t t;
    vf_status st = vf__pb_varint(r, &t);
    if (st != VF_OK)
        return st;
    if (t >> 3 == 0 || t >> 3 > 0x1fffffff)
        return bad(r, "field number 0 or past 2^29");
    *field = (uint32_t)(t >> 3);
    *wt = (uint32_t)(t & 7);
    if (*wt == 3 || *wt == 4)
        return bad(r, "group wire type (not used by onnx.proto)");
    if (*wt > 5)
        return bad(r, "invalid wire type");
    return VF_OK;
}

vf_status vf__pb_len(vf__pb *r, uint64_t *len)
{
    vf_status st = vf__pb_varint(r, len);
    if (st == VF_OK && *len > r->end - r->pos)
        return bad(r, "length past the end of its message");
    return st;
}

static vf_status advance(vf__pb *r, uint64_t n)
{
    if (n > r->end - r->pos)
        return bad(r, "field past the end of its message");
    r->pos += n;
    return VF_OK;
}

vf_status vf__pb_skip(vf__pb *r, uint32_t wt)
{
    uint64_t v;
    vf_status st;
    switch (wt) {
    case VF_PB_VARINT:
        return vf__pb_varint(r, &v);
    case VF_PB_I64:
        return advance(r, 8);
    case VF_PB_I32:
        return advance(r, 4);
    default:
        st = vf__pb_len(r, &v);
        return st == VF_OK ? advance(r, v) : st;
    }
}

vf_status vf__pb_bytes(vf__pb *r, void *dst, size_t n)
{
    if (n > r->end - r->pos)
        return bad(r, "field past the end of its message");
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++) {
        vf_status st = byte_at(r->src, r->pos + i, &d[i], r->err);
        if (st != VF_OK)
            return st;
    }
    r->pos += n;
    return VF_OK;
}

vf_status vf__pb_fixed32(vf__pb *r, uint32_t *v)
{
    uint8_t b[4];
    vf_status st = vf__pb_bytes(r, b, 4);
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return st;
}

vf_status vf__pb_sub(vf__pb *r, uint64_t len, vf__pb *sub)
{
    if (r->depth + 1 > VF_PB_MAX_DEPTH)
        return bad(r, "messages nested too deep");
    if (len > r->end - r->pos)
        return bad(r, "length past the end of its message");
    *sub = *r;
    sub->end = r->pos + len;
    sub->depth = r->depth + 1;
    r->pos += len;
    return VF_OK;
}

vf_status vf__pb_expect(vf__pb *r, const char *msg, uint32_t field, uint32_t wt, uint32_t want)
{
    if (wt == want)
        return VF_OK;
    return vf__err(r->err, VF_EFORMAT, r->src->path, "onnx: %s field %u has wire type %u, onnx.proto says %u",
                   msg, field, wt, want);
}

vf_status vf__pb_str(vf__pb *r, char *buf, size_t cap, size_t *n)
{
    uint64_t len;
    vf_status st = vf__pb_len(r, &len);
    if (st != VF_OK)
        return st;
    if (len >= cap)
        return bad(r, "string longer than this reader takes");
    st = vf__pb_bytes(r, buf, (size_t)len);
    buf[st == VF_OK ? len : 0] = '\0';
    *n = (size_t)len;
    return st;
}
