/* bench_inspect.c — inspect of a DeepSeek-V3-scale safetensors header.
 *
 * Writes one sparse .safetensors file in DeepSeek-V3's layout (names, FP8
 * weights with 128x128-block F32 scales, BF16 norms/embeddings, 256 routed
 * experts + 1 shared per MoE layer, MLA projections, the MTP layer), with
 * more MoE layers than the real 61 so that the header holds 100,000+
 * tensors. Data is a hole: the file claims ~0.8 TB but takes header bytes.
 * Then, in this one run, measures:
 *   - vf_model_open + vf_model_totals_get: wall time (best of N), bytes
 *     read (/proc/self/io rchar delta), peak RSS growth;
 *   - the baseline: pread of the same header bytes into a buffer, and
 *     `dd` of them in a child process (time incl. fork/exec);
 * and prints the ratios. The page cache is warm for both (file just written).
 * Usage: bench_inspect [DIR]   (default $TMPDIR or /tmp) */
#include "benchutil.h"
#include "vramfit.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H 7168u
#define VOCAB 129280u
#define N_EXPERTS 256u
#define MOE_FF 2048u
#define DENSE_FF 18432u
#define FIRST_DENSE 3u
#define N_LAYERS 67u /* real DeepSeek-V3: 61 (+1 MTP); 67 passes 100,000 tensors */
#define REPS 5

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void emit(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap *= 2;
        if (!(b->p = realloc(b->p, b->cap))) {
            perror("realloc");
            exit(1);
        }
    }
}

static uint64_t off, count;

static void tensor(buf *b, const char *name, const char *dt, unsigned bytes_per, uint64_t d0, uint64_t d1)
{
    uint64_t n = (d1 ? d0 * d1 : d0) * bytes_per;
    if (d1)
        emit(b, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]}", name, dt,
             (unsigned long long)d0, (unsigned long long)d1, (unsigned long long)off,
             (unsigned long long)(off + n));
    else
        emit(b, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}", name, dt,
             (unsigned long long)d0, (unsigned long long)off, (unsigned long long)(off + n));
    off += n;
    count++;
}

/* An FP8 linear layer [out, in] with its block-scale tensor [ceil(out/128), ceil(in/128)]. */
static void fp8_linear(buf *b, const char *name, uint64_t out, uint64_t in)
{
    char s[256];
    snprintf(s, sizeof s, "%s.weight", name);
    tensor(b, s, "F8_E4M3", 1, out, in);
    snprintf(s, sizeof s, "%s.weight_scale_inv", name);
    tensor(b, s, "F32", 4, (out + 127) / 128, (in + 127) / 128);
}

static void norm(buf *b, const char *name, uint64_t n)
{
    char s[256];
    snprintf(s, sizeof s, "%s.weight", name);
    tensor(b, s, "BF16", 2, n, 0);
}

static void mlp(buf *b, const char *pre, uint64_t ff)
{
    char s[256];
    snprintf(s, sizeof s, "%s.gate_proj", pre);
    fp8_linear(b, s, ff, H);
    snprintf(s, sizeof s, "%s.up_proj", pre);
    fp8_linear(b, s, ff, H);
    snprintf(s, sizeof s, "%s.down_proj", pre);
    fp8_linear(b, s, H, ff);
}

static void layer(buf *b, unsigned l)
{
    char p[128], s[256];
    snprintf(p, sizeof p, "model.layers.%u", l);
#define NAME(suffix) (snprintf(s, sizeof s, "%s.%s", p, suffix), s)
    norm(b, NAME("input_layernorm"), H);
    norm(b, NAME("post_attention_layernorm"), H);
    /* MLA: q_lora_rank 1536, kv_lora_rank 512, rope 64, 128 heads x (128 nope + 64 rope), v 128 */
    fp8_linear(b, NAME("self_attn.q_a_proj"), 1536, H);
    norm(b, NAME("self_attn.q_a_layernorm"), 1536);
    fp8_linear(b, NAME("self_attn.q_b_proj"), 128 * 192, 1536);
    fp8_linear(b, NAME("self_attn.kv_a_proj_with_mqa"), 512 + 64, H);
    norm(b, NAME("self_attn.kv_a_layernorm"), 512);
    fp8_linear(b, NAME("self_attn.kv_b_proj"), 128 * (128 + 128), 512);
    fp8_linear(b, NAME("self_attn.o_proj"), H, 128 * 128);
    if (l < FIRST_DENSE) {
        mlp(b, NAME("mlp"), DENSE_FF);
        return;
    }
    tensor(b, NAME("mlp.gate.weight"), "BF16", 2, N_EXPERTS, H);
    tensor(b, NAME("mlp.gate.e_score_correction_bias"), "F32", 4, N_EXPERTS, 0);
    for (unsigned e = 0; e < N_EXPERTS; e++) {
        char q[160];
        snprintf(q, sizeof q, "%s.mlp.experts.%u", p, e);
        mlp(b, q, MOE_FF);
    }
    mlp(b, NAME("mlp.shared_experts"), MOE_FF);
#undef NAME
}

static uint64_t generate(const char *path)
{
    buf b = {malloc(1 << 20), 0, 1 << 20};
    emit(&b, "{\"__metadata__\":{\"format\":\"pt\"}");
    tensor(&b, "model.embed_tokens.weight", "BF16", 2, VOCAB, H);
    for (unsigned l = 0; l < N_LAYERS; l++)
        layer(&b, l);
    /* the multi-token-prediction layer, as DeepSeek-V3 stores it after the last block */
    char p[64], s[160];
    snprintf(p, sizeof p, "model.layers.%u", N_LAYERS);
    layer(&b, N_LAYERS);
    snprintf(s, sizeof s, "%s.enorm", p), norm(&b, s, H);
    snprintf(s, sizeof s, "%s.hnorm", p), norm(&b, s, H);
    snprintf(s, sizeof s, "%s.eh_proj.weight", p), tensor(&b, s, "BF16", 2, H, 2 * H);
    snprintf(s, sizeof s, "%s.shared_head.norm", p), norm(&b, s, H);
    snprintf(s, sizeof s, "%s.shared_head.head.weight", p), tensor(&b, s, "BF16", 2, VOCAB, H);
    snprintf(s, sizeof s, "%s.embed_tokens.weight", p), tensor(&b, s, "BF16", 2, VOCAB, H);
    norm(&b, "model.norm", H);
    tensor(&b, "lm_head.weight", "BF16", 2, VOCAB, H);
    emit(&b, "}");
    while (b.n % 8)
        emit(&b, " "); /* padded here: the buffer grows only through emit */
    FILE *f = fopen(path, "wb");
    if (!f || !st_write_header(f, b.p, b.n) || fflush(f) != 0 || ftruncate(fileno(f), (off_t)(8 + b.n + off)) != 0 ||
        fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    free(b.p);
    return b.n;
}

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/vf_bench_dsv3.%d.safetensors", dir, (int)getpid());
    /* generate in a child so the generator's buffers do not count in our RSS */
    pid_t g = fork();
    if (g == 0) {
        uint64_t hn = generate(path);
        fprintf(stderr, "bench_inspect: wrote %s: %llu tensors, header %llu bytes, data %llu bytes (sparse)\n",
                path, (unsigned long long)count, (unsigned long long)hn, (unsigned long long)off);
        _exit(0);
    }
    int st;
    if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_inspect: generating failed\n");
        return 1;
    }
    int fd = open(path, O_RDONLY);
    unsigned char lb[8];
    if (fd < 0 || pread(fd, lb, 8, 0) != 8) {
        perror(path);
        return 1;
    }
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--)
        hn = (hn << 8) | lb[i];
    uint64_t hdr_bytes = 8 + hn;

    /* the library: open + totals */
    long rss0 = maxrss_kib();
    double best = 1e9;
    uint64_t read_bytes = 0, tensors = 0, params = 0, bytes = 0;
    for (int r = 0; r < REPS; r++) {
        vf_model *m = NULL;
        vf_error e = {0};
        uint64_t c0 = rchar();
        double t0 = now();
        if (vf_model_open(path, &m, &e) != VF_OK) {
            fprintf(stderr, "bench_inspect: %s\n", e.msg);
            unlink(path);
            return 1;
        }
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        double dt = now() - t0;
        read_bytes = rchar() - c0;
        if (dt < best)
            best = dt;
        tensors = vf_model_tensor_count(m);
        params = t.params;
        bytes = t.bytes;
        vf_model_free(m);
    }
    long rss1 = maxrss_kib();

    /* baseline 1: pread of the header bytes */
    char *hb = malloc(hdr_bytes);
    double pbest = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        size_t got = 0;
        while (got < hdr_bytes) {
            ssize_t k = pread(fd, hb + got, hdr_bytes - got, (off_t)got);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        double dt = now() - t0;
        if (dt < pbest)
            pbest = dt;
    }
    free(hb);
    close(fd);

    /* baseline 2: dd of the same bytes in a child (fork + exec included) */
    double dbest = 1e9;
    char count_arg[64];
    snprintf(count_arg, sizeof count_arg, "count=%llu", (unsigned long long)hdr_bytes);
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        pid_t c = fork();
        if (c == 0) {
            int nul = open("/dev/null", O_WRONLY);
            dup2(nul, 1);
            dup2(nul, 2);
            char ifarg[4200];
            snprintf(ifarg, sizeof ifarg, "if=%s", path);
            execlp("dd", "dd", ifarg, "of=/dev/null", "bs=1M", count_arg, "iflag=count_bytes", (char *)NULL);
            _exit(127);
        }
        waitpid(c, &st, 0);
        double dt = now() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_inspect: dd failed\n");
            dbest = -1;
            break;
        }
        if (dt < dbest)
            dbest = dt;
    }
    unlink(path);

    printf("inspect: DeepSeek-V3 layout, %u blocks + MTP, one safetensors file\n", N_LAYERS);
    printf("  tensors               %llu\n", (unsigned long long)tensors);
    printf("  params                %llu\n", (unsigned long long)params);
    printf("  tensor bytes          %llu (%.1f GiB, a sparse hole: never read)\n", (unsigned long long)bytes,
           (double)bytes / 1073741824.0);
    printf("  header bytes          %llu (%.1f MiB)\n", (unsigned long long)hdr_bytes, hdr_bytes / 1048576.0);
    printf("  vf_model_open+totals  %.1f ms (best of %d)\n", best * 1e3, REPS);
    printf("  bytes read            %llu (%.3f x the header)\n", (unsigned long long)read_bytes,
           (double)read_bytes / (double)hdr_bytes);
    printf("  peak RSS growth       %.1f MiB (%.1f x the header)\n", (rss1 - rss0) / 1024.0,
           (rss1 - rss0) * 1024.0 / (double)hdr_bytes);
    printf("  pread of header       %.2f ms  -> inspect / pread = %.1f\n", pbest * 1e3, best / pbest);
    if (dbest > 0)
        printf("  dd of header (child)  %.2f ms  -> inspect / dd    = %.1f\n", dbest * 1e3, best / dbest);
    return 0;
}
