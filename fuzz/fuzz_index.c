/* fuzz_index.c — libFuzzer harness: arbitrary text as
 * model.safetensors.index.json beside three fixed, valid shards, through the
 * sharded-checkpoint reader (shard existence, path safety, map/shard
 * agreement, total_size). The shards are written once per process. */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include "model/model.h"
#include "read/readers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char index_path[128];

static void cleanup(void)
{
    static const char *const names[] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                        "model-00003-of-00003.safetensors", "model.safetensors.index.json"};
    char p[160];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* One shard: header naming its tensors as F32 vectors, data zero-filled. */
static void write_shard(const char *name, const char *const *tensors, size_t n)
{
    char hdr[1024];
    size_t len = (size_t)snprintf(hdr, sizeof hdr, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(hdr + len, sizeof hdr - len,
                                ",\"%s\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[%llu,%llu]}", tensors[i],
                                (unsigned long long)off, (unsigned long long)(off + 16));
        off += 16;
    }
    len += (size_t)snprintf(hdr + len, sizeof hdr - len, "}");
    char p[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f)
        abort();
    unsigned char lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    fwrite(lb, 1, 8, f);
    fwrite(hdr, 1, len, f);
    static const unsigned char zeros[64];
    for (uint64_t k = 0; k < off; k += 16)
        fwrite(zeros, 1, 16, f);
    if (fclose(f) != 0)
        abort();
}

static void setup(void)
{
    /* tmpfs when there is one: rewriting a file in place on ext4 forces a
     * flush to disk at every close (auto_da_alloc), 100x slower */
    snprintf(dir, sizeof dir, "%s/vf_fuzz_index.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
        abort();
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    static const char *const s1[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"};
    static const char *const s2[] = {"model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"};
    static const char *const s3[] = {"model.norm.weight", "lm_head.weight"};
    write_shard("model-00001-of-00003.safetensors", s1, 2);
    write_shard("model-00002-of-00003.safetensors", s2, 2);
    write_shard("model-00003-of-00003.safetensors", s3, 2);
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        setup();
    int fd = open(index_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    fuzz_write_all(fd, data, size); /* a short file is an input too */
    close(fd);
    vf_model *m = vf__model_new(VF_FORMAT_SAFETENSORS, index_path);
    if (m) {
        vf_error err = {0};
        fuzz_after_read(m, vf__safetensors_read_index(m, &vf__local_fs, index_path, &err), &err);
    }
    return 0;
}
