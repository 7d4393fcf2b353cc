/* watch_out.c — what vramfit watch reports: per GPU the baseline before the
 * command, the device's peak and when, the command's processes' own peak,
 * the memory after it exited, a sparkline of the timeline; the samples as
 * CSV; a plot as SVG to paste into a bug report; the JSON of docs/design.md §4. */
#include "watch/watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NO_VALUE UINT64_MAX

static bool utf8_locale(void)
{
    const char *v = getenv("LC_ALL");
    if (!v || !*v)
        v = getenv("LC_CTYPE");
    if (!v || !*v)
        v = getenv("LANG");
    return v && (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8"));
}

/* The device's used memory over the run in width columns (each the max of its samples). */
static void sparkline(const watch_run *w, size_t k, char *out, size_t cap)
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[] = "_.-~=+*#";
    bool u8 = utf8_locale();
    size_t width = w->rows < 60 ? w->rows : 60, o = 0;
    uint64_t lo = NO_VALUE, hi = 0;
    for (size_t r = 0; r < w->rows; r++) {
        uint64_t v = w->used[r * w->n_gpus + k];
        if (v != NO_VALUE) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    out[0] = '\0';
    for (size_t c = 0; c < width && o + 8 < cap; c++) {
        size_t a = c * w->rows / width, b = (c + 1) * w->rows / width;
        uint64_t m = NO_VALUE;
        for (size_t r = a; r < b; r++) {
            uint64_t v = w->used[r * w->n_gpus + k];
            if (v != NO_VALUE && (m == NO_VALUE || v > m))
                m = v;
        }
        int lvl = m == NO_VALUE || hi <= lo ? 0 : (int)((double)(m - lo) * 7.0 / (double)(hi - lo) + 0.5);
        if (m == NO_VALUE)
            out[o++] = ' ';
        else if (u8)
            o += (size_t)snprintf(out + o, cap - o, "%s", blocks[lvl]);
        else
            out[o++] = ascii[lvl];
        out[o] = '\0';
    }
}

static void print_err(const watch_gpu *g, const watch_err *e, const char *what)
{
    if (e->count)
        fprintf(stderr, "vramfit: watch: GPU %u: %s failed %llu time%s from %.2f s: %s\n", g->index, what,
                (unsigned long long)e->count, e->count == 1 ? "" : "s", e->first_at, e->msg);
}

void vf_watch_errors(const watch_run *w)
{
    for (size_t k = 0; k < w->n_gpus; k++) {
        print_err(&w->gpu[k], &w->gpu[k].mem_err, "the memory query");
        print_err(&w->gpu[k], &w->gpu[k].proc_err, "the process query");
    }
}

/* The estimate against the measured peak of the command's own processes (the
 * device's rise over the baseline where NVML lists none of them). */
static bool measured_for_estimate(const watch_gpu *g, uint64_t *m)
{
    *m = g->tree_peak ? g->tree_peak : g->peak > g->baseline ? g->peak - g->baseline : 0;
    return *m > 0;
}

void vf_watch_print(const watch_run *w, const watch_report *r)
{
    char b1[32], b2[32], line[60 * 4 + 8];
    vf_units u = r->units;
    printf("vramfit watch:");
    for (int i = 0; i < r->n_command; i++)
        printf(" %s", r->command[i]);
    if (r->exit_status >= 0)
        printf(" (exit %d, ", r->exit_status);
    else
        printf(" (pid %d, ", (int)w->root);
    printf("%.2f s, %llu samples every %u ms)\n", r->seconds, (unsigned long long)w->samples, w->interval_ms);
    for (size_t k = 0; k < w->n_gpus; k++) {
        const watch_gpu *g = &w->gpu[k];
        printf("GPU %u  %s (%s)\n", g->index, g->name, vf_fmt_bytes(g->total, u, b1, sizeof b1));
        if (g->have_baseline)
            printf("  before     %12s\n", vf_fmt_bytes(g->baseline, u, b1, sizeof b1));
        if (g->seen)
            printf("  peak       %12s at %.2f s (the device; +%s over before)\n", vf_fmt_bytes(g->peak, u, b1, sizeof b1),
                   g->peak_at, vf_fmt_bytes(g->peak > g->baseline ? g->peak - g->baseline : 0, u, b2, sizeof b2));
        printf("  command    %12s at %.2f s (its processes' own, as NVML lists them%s)\n",
               vf_fmt_bytes(g->tree_peak, u, b1, sizeof b1), g->tree_peak_at,
               g->tree_unknown ? "; some without a figure" : "");
        if (g->have_after)
            printf("  after      %12s\n", vf_fmt_bytes(g->after, u, b1, sizeof b1));
        sparkline(w, k, line, sizeof line);
        if (line[0])
            printf("  %s  (%.2f .. %.2f s)\n", line, w->rows ? w->t[0] : 0.0, w->rows ? w->t[w->rows - 1] : 0.0);
        uint64_t m;
        if (r->have_estimate && measured_for_estimate(g, &m))
            printf("  estimate   %12s per GPU (%s): %+.1f%% against the measured %s\n",
                   vf_fmt_bytes(r->estimate, u, b1, sizeof b1), r->estimate_spec,
                   100.0 * ((double)r->estimate - (double)m) / (double)m, vf_fmt_bytes(m, u, b2, sizeof b2));
    }
    if (w->merged > 1)
        printf("(past %zu rows the timeline keeps the maximum of each %zu samples)\n", w->max_rows, w->merged);
}

static json_t *err_json(const watch_err *e, const char *what)
{
    json_t *j = json_object();
    json_object_set_new(j, "query", json_string(what));
    json_object_set_new(j, "count", vf_json_u64(e->count));
    json_object_set_new(j, "first_at_s", json_real(e->first_at));
    json_object_set_new(j, "message", json_string(e->msg));
    return j;
}

static json_t *bytes_or_null(bool ok, uint64_t v) { return ok ? vf_json_u64(v) : json_null(); }

int vf_watch_json(const watch_run *w, const watch_report *r)
{
    json_t *j = json_object(), *cmd = json_array(), *gpus = json_array();
    for (int i = 0; i < r->n_command; i++)
        json_array_append_new(cmd, json_string(r->command[i]));
    json_object_set_new(j, "command", cmd);
    json_object_set_new(j, "exit_status", r->exit_status >= 0 ? json_integer(r->exit_status) : json_null());
    json_object_set_new(j, "pid", json_integer((json_int_t)w->root));
    json_object_set_new(j, "seconds", json_real(r->seconds));
    json_object_set_new(j, "interval_ms", json_integer(w->interval_ms));
    double diff = 0;
    bool have_diff = false;
    for (size_t k = 0; k < w->n_gpus; k++) {
        const watch_gpu *g = &w->gpu[k];
        json_t *o = json_object(), *errs = json_array();
        json_object_set_new(o, "index", json_integer(g->index));
        json_object_set_new(o, "name", json_string(g->name));
        json_object_set_new(o, "total_bytes", vf_json_u64(g->total));
        json_object_set_new(o, "baseline_bytes", bytes_or_null(g->have_baseline, g->baseline));
        json_object_set_new(o, "peak_bytes", bytes_or_null(g->seen, g->peak));
        json_object_set_new(o, "peak_at_s", g->seen ? json_real(g->peak_at) : json_null());
        json_object_set_new(o, "process_peak_bytes", vf_json_u64(g->tree_peak));
        json_object_set_new(o, "process_peak_at_s", json_real(g->tree_peak_at));
        json_object_set_new(o, "after_bytes", bytes_or_null(g->have_after, g->after));
        if (g->mem_err.count)
            json_array_append_new(errs, err_json(&g->mem_err, "memory"));
        if (g->proc_err.count)
            json_array_append_new(errs, err_json(&g->proc_err, "processes"));
        json_object_set_new(o, "nvml_errors", errs);
        json_array_append_new(gpus, o);
        uint64_t m;
        if (r->have_estimate && !have_diff && measured_for_estimate(g, &m)) {
            diff = 100.0 * ((double)r->estimate - (double)m) / (double)m;
            have_diff = true;
        }
    }
    json_object_set_new(j, "gpus", gpus);
    json_object_set_new(j, "samples", vf_json_u64(w->samples));
    json_object_set_new(j, "estimate_bytes", bytes_or_null(r->have_estimate, r->estimate));
    json_object_set_new(j, "estimate_diff_percent", have_diff ? json_real(diff) : json_null());
    return vf_print_json(j);
}

int vf_watch_csv(const watch_run *w, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "vramfit: %s: cannot write: %s\n", path, strerror(errno));
        return VF_EXIT_IO;
    }
    fprintf(f, "t_s,gpu,used_bytes,process_bytes\n");
    for (size_t r = 0; r < w->rows; r++)
        for (size_t k = 0; k < w->n_gpus; k++) {
            uint64_t u = w->used[r * w->n_gpus + k], t = w->tree[r * w->n_gpus + k];
            fprintf(f, "%.3f,%u,", w->t[r], w->gpu[k].index);
            if (u != NO_VALUE)
                fprintf(f, "%llu", (unsigned long long)u);
            fputc(',', f);
            if (t != NO_VALUE)
                fprintf(f, "%llu", (unsigned long long)t);
            fputc('\n', f);
        }
    if (fclose(f) != 0) {
        fprintf(stderr, "vramfit: %s: write failed\n", path);
        return VF_EXIT_IO;
    }
    return VF_EXIT_OK;
}

/* ---- SVG ---- */

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

typedef struct plot {
    double x0, y0, w, h, tmax, ymax; /* pixels; seconds; bytes */
} plot;

static double px(const plot *p, double t) { return p->x0 + (p->tmax > 0 ? t / p->tmax : 0) * p->w; }
static double py(const plot *p, double b) { return p->y0 + p->h - (p->ymax > 0 ? b / p->ymax : 0) * p->h; }

static void polyline(FILE *f, const watch_run *w, const plot *p, size_t k, const uint64_t *v, const char *style)
{
    fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    for (size_t r = 0; r < w->rows; r++) {
        uint64_t b = v[r * w->n_gpus + k];
        if (b != NO_VALUE)
            fprintf(f, "%.1f,%.1f ", px(p, w->t[r]), py(p, (double)b));
    }
    fputs("\"/>\n", f);
}

static void axes(FILE *f, const plot *p)
{
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n", p->x0,
            p->y0, p->w, p->h);
    for (int i = 0; i <= 4; i++) {
        double b = p->ymax * i / 4, t = p->tmax * i / 4;
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.1f GiB</text>\n", p->x0 - 6,
                py(p, b) + 4, b / 1073741824.0);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%.1f s</text>\n", px(p, t),
                p->y0 + p->h + 16, t);
    }
}

int vf_watch_svg(const watch_run *w, const watch_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "vramfit: %s: cannot write: %s\n", path, strerror(errno));
        return VF_EXIT_IO;
    }
    static const char *const colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    plot p = {70, 40, 700, 240, w->rows ? w->t[w->rows - 1] : 1, 1};
    for (size_t k = 0; k < w->n_gpus; k++)
        p.ymax = (double)w->gpu[k].peak > p.ymax ? (double)w->gpu[k].peak : p.ymax;
    if (r->have_estimate && (double)r->estimate > p.ymax)
        p.ymax = (double)r->estimate;
    p.ymax *= 1.1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"%zu\" font-family=\"sans-serif\">\n",
            (size_t)330 + 16 * w->n_gpus);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"70\" y=\"24\" font-size=\"14\">", f);
    for (int i = 0; i < r->n_command; i++) {
        xml_text(f, r->command[i]);
        fputc(' ', f);
    }
    fputs("</text>\n", f);
    axes(f, &p);
    for (size_t k = 0; k < w->n_gpus; k++) {
        const watch_gpu *g = &w->gpu[k];
        const char *c = colour[k % 6];
        char st[96];
        snprintf(st, sizeof st, "stroke=\"%s\" stroke-width=\"2\"", c);
        polyline(f, w, &p, k, w->used, st);
        snprintf(st, sizeof st, "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"", c);
        polyline(f, w, &p, k, w->tree, st);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", px(&p, g->peak_at), py(&p, (double)g->peak), c);
        fprintf(f, "<text x=\"70\" y=\"%zu\" font-size=\"12\" fill=\"%s\">GPU %u %s: before %.2f GiB, peak %.2f GiB at "
                   "%.2f s, command %.2f GiB (dashed), after %.2f GiB</text>\n",
                (size_t)312 + 16 * k, c, g->index, g->name, g->baseline / 1073741824.0, g->peak / 1073741824.0,
                g->peak_at, g->tree_peak / 1073741824.0, g->after / 1073741824.0);
    }
    if (r->have_estimate)
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"2,4\"/>\n"
                   "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\">estimate %.2f GiB</text>\n",
                p.x0, p.x0 + p.w, py(&p, (double)r->estimate), py(&p, (double)r->estimate), p.x0 + 4,
                py(&p, (double)r->estimate) - 4, r->estimate / 1073741824.0);
    fputs("</svg>\n", f);
    if (fclose(f) != 0) {
        fprintf(stderr, "vramfit: %s: write failed\n", path);
        return VF_EXIT_IO;
    }
    return VF_EXIT_OK;
}
