/* bench_inspect_gguf.c — inspecting a GGUF reads its header, never its data.
 *
 * Writes two GGUF files with the same metadata (a 150,000-entry
 * tokenizer.ggml.tokens list, scores and token types, as a Qwen-class vocab
 * has) and a real 28-block tensor table, one holding ~4 GiB of tensor data
 * and one ~100x more (sparse files: the data are holes). For each, in a
 * child process each so peak RSS is the operation's own, it times
 * vf_model_open against a plain pread of the header bytes (everything before
 * the data section), and prints time, bytes read (/proc/self/io rchar),
 * peak RSS (getrusage) and the ratio. */
#include "benchutil.h"
#include "gguf_writer.h"
#include "vramfit.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#define VOCAB 150000
#define REPS 5

/* Qwen2-7B-like names and shapes, scaled by `scale` in the embedding width. */
static uint64_t write_model(const char *path, uint64_t scale, uint64_t *header_bytes)
{
    enum { LAYERS = 28 };
    uint64_t embd = 3584 * scale, ff = 18944 * scale, kvd = 512 * scale;
    static char names[LAYERS * 12 + 3][48];
    static gw_tensor t[LAYERS * 12 + 3];
    size_t n = 0;
#define T(nm, ty, nd, a, b)                                                                                            \
    do {                                                                                                               \
        snprintf(names[n], sizeof names[n], "%s", nm);                                                                 \
        t[n] = (gw_tensor){names[n], ty, nd, {a, b, 1, 1}};                                                            \
        n++;                                                                                                           \
    } while (0)
    T("token_embd.weight", GW_T_Q4_K, 2, embd, 152064);
    for (int l = 0; l < LAYERS; l++) {
        char b[48];
#define L(sfx, ty, nd, a, c)                                                                                           \
    snprintf(b, sizeof b, "blk.%d.%s", l, sfx);                                                                        \
    T(b, ty, nd, a, c)
        L("attn_norm.weight", GW_T_F32, 1, embd, 1);
        L("attn_q.weight", GW_T_Q4_K, 2, embd, embd);
        L("attn_q.bias", GW_T_F32, 1, embd, 1);
        L("attn_k.weight", GW_T_Q4_K, 2, embd, kvd);
        L("attn_k.bias", GW_T_F32, 1, kvd, 1);
        L("attn_v.weight", GW_T_Q6_K, 2, embd, kvd);
        L("attn_v.bias", GW_T_F32, 1, kvd, 1);
        L("attn_output.weight", GW_T_Q4_K, 2, embd, embd);
        L("ffn_norm.weight", GW_T_F32, 1, embd, 1);
        L("ffn_gate.weight", GW_T_Q4_K, 2, embd, ff);
        L("ffn_up.weight", GW_T_Q4_K, 2, embd, ff);
        L("ffn_down.weight", GW_T_Q6_K, 2, ff, embd);
    }
    T("output_norm.weight", GW_T_F32, 1, embd, 1);
    T("output.weight", GW_T_Q6_K, 2, embd, 152064);
    gw w = {0};
    gw_begin(&w, 3, n, 9);
    gw_kv_str(&w, "general.architecture", "qwen2");
    gw_kv_str(&w, "general.name", "bench");
    gw_kv_u32(&w, "general.file_type", 15);
    gw_kv_u32(&w, "qwen2.block_count", LAYERS);
    gw_kv_u32(&w, "qwen2.embedding_length", (uint32_t)embd);
    gw_kv_u32(&w, "qwen2.attention.head_count", 28);
    gw_kv_tokens(&w, "tokenizer.ggml.tokens", VOCAB);
    gw_kv_arr_f32(&w, "tokenizer.ggml.scores", VOCAB);
    gw_key(&w, "tokenizer.ggml.token_type", GW_ARRAY);
    gw_u32(&w, GW_I32);
    gw_u64(&w, VOCAB);
    for (uint32_t i = 0; i < VOCAB; i++)
        gw_u32(&w, 1);
    uint64_t data = gw_tensor_infos(&w, t, n, 32);
    *header_bytes = gw_pad(w.len, 32);
    if (gw_finish(&w, path, 32, data) != 0) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        exit(1);
    }
    return data;
}

typedef struct result {
    double seconds; /* best of REPS */
    uint64_t bytes_read;
    long max_rss_kb;
    int ok;
} result;

/* The measured operation, in a fresh process (see main): best of REPS. */
static result run_op(const char *path, uint64_t header_bytes, int open_model)
{
    result c = {1e9, 0, 0, 1};
    for (int i = 0; i < REPS; i++) {
        uint64_t r0 = rchar();
        double t0 = now();
        if (open_model) {
            vf_model *m = NULL;
            vf_error e;
            if (vf_model_open(path, &m, &e) != VF_OK) {
                fprintf(stderr, "bench: %s\n", e.msg);
                c.ok = 0;
            }
            vf_model_free(m);
        } else {
            int fd = open(path, O_RDONLY);
            char *buf = malloc(header_bytes);
            size_t got = 0;
            while (fd >= 0 && buf && got < header_bytes) {
                ssize_t k = pread(fd, buf + got, header_bytes - got, (off_t)got);
                if (k <= 0)
                    break;
                got += (size_t)k;
            }
            c.ok = got == header_bytes;
            free(buf);
            if (fd >= 0)
                close(fd);
        }
        double dt = now() - t0;
        if (dt < c.seconds)
            c.seconds = dt;
        c.bytes_read = rchar() - r0;
    }
    return c;
}

/* Re-executes this program to run one operation, so that the child's peak
 * RSS (wait4) is the operation's own and not the file generator's. */
static result measure(const char *self, const char *path, uint64_t header_bytes, int open_model)
{
    int pfd[2];
    result r = {0};
    if (pipe(pfd) != 0)
        return r;
    pid_t pid = fork();
    if (pid == 0) {
        char hb[32], fdno[16];
        snprintf(hb, sizeof hb, "%llu", (unsigned long long)header_bytes);
        snprintf(fdno, sizeof fdno, "%d", pfd[1]);
        close(pfd[0]);
        execl(self, self, open_model ? "--child-open" : "--child-pread", path, hb, fdno, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    if (read(pfd[0], &r, sizeof r) != (ssize_t)sizeof r)
        r.ok = 0;
    close(pfd[0]);
    struct rusage ru;
    int status;
    if (wait4(pid, &status, 0, &ru) == pid)
        r.max_rss_kb = ru.ru_maxrss;
    return r;
}

/* Writes both files in a child, so that the parent (whose peak RSS every
 * forked measurement inherits) never holds the header being built. */
static int generate(const char *dir, uint64_t hb[2], uint64_t data[2])
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t v[4];
        for (int k = 0; k < 2; k++) {
            char path[64];
            snprintf(path, sizeof path, "%s/m%d.gguf", dir, k);
            v[2 * k + 1] = write_model(path, k == 0 ? 1 : 10, &v[2 * k]);
        }
        _exit(write(pfd[1], v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
    }
    close(pfd[1]);
    uint64_t v[4];
    ssize_t got = read(pfd[0], v, sizeof v);
    close(pfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof v || status != 0)
        return -1;
    hb[0] = v[0], data[0] = v[1], hb[1] = v[2], data[1] = v[3];
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strncmp(argv[1], "--child-", 8) == 0) {
        result c = run_op(argv[2], strtoull(argv[3], NULL, 10), strcmp(argv[1], "--child-open") == 0);
        int fd = atoi(argv[4]);
        return write(fd, &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1;
    }
    char dir[] = "/tmp/vfbench.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    int rc = 0;
    printf("bench_inspect_gguf: GGUF with a %d-entry tokenizer.ggml.tokens vocabulary, 339 tensors\n", VOCAB);
    printf("%-22s %14s %12s %12s %14s %12s\n", "case", "tensor data", "header", "time", "bytes read", "peak RSS");
    uint64_t hbs[2], datas[2];
    if (generate(dir, hbs, datas) != 0) {
        fprintf(stderr, "bench: cannot write the files\n");
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        uint64_t hb = hbs[k], data = datas[k];
        char path[64];
        snprintf(path, sizeof path, "%s/m%d.gguf", dir, k);
        result hdr = measure("/proc/self/exe", path, hb, 0), open = measure("/proc/self/exe", path, hb, 1);
        char label[32];
        snprintf(label, sizeof label, "data %.1f GiB", (double)data / 1073741824.0);
        printf("%-22s %11.1f GiB %8.2f MiB %9.2f ms %10.2f MiB %8.1f MiB   (pread of the header bytes)\n", label,
               (double)data / 1073741824.0, (double)hb / 1048576.0, hdr.seconds * 1e3,
               (double)hdr.bytes_read / 1048576.0, (double)hdr.max_rss_kb / 1024.0);
        printf("%-22s %11.1f GiB %8.2f MiB %9.2f ms %10.2f MiB %8.1f MiB   (vf_model_open)\n", label,
               (double)data / 1073741824.0, (double)hb / 1048576.0, open.seconds * 1e3,
               (double)open.bytes_read / 1048576.0, (double)open.max_rss_kb / 1024.0);
        printf("%-22s ratio open/pread: time %.2fx, bytes read %.3fx, peak RSS %.2fx\n", label,
               open.seconds / hdr.seconds, (double)open.bytes_read / (double)hdr.bytes_read,
               (double)open.max_rss_kb / (double)hdr.max_rss_kb);
        if (!hdr.ok || !open.ok)
            rc = 1;
        unlink(path);
    }
    rmdir(dir);
    return rc;
}
