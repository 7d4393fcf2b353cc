/* catalog_out.c — vramfit fit MODEL without --gpu: "what hardware do I need?"
 * The library's table (vf_fit_catalog): for every catalog GPU the fewest
 * devices of it that hold the model as asked (tensor parallel inside a node,
 * pipeline stages across nodes; training: ZeRO data parallel), the machines
 * they span, what the busiest device needs and the headroom, least total
 * device memory first. The page shows the same rows. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static json_t *row_json(const vf_fit_row *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "gpu", json_string(r->gpu->name));
    json_object_set_new(j, "count", json_integer(r->gpus));
    json_object_set_new(j, "nodes", json_integer(r->nodes));
    json_object_set_new(j, "gpu_bytes", vf_json_u64(r->gpu->memory_bytes));
    json_object_set_new(j, "needed_bytes", vf_json_u64(r->needed_bytes));
    json_object_set_new(j, "headroom_bytes", json_integer((json_int_t)r->headroom_bytes));
    json_object_set_new(j, "total_gpu_bytes", vf_json_u64(r->total_bytes));
    json_object_set_new(j, "tp", json_integer(r->tp));
    json_object_set_new(j, "pp", json_integer(r->pp));
    json_object_set_new(j, "dp", json_integer(r->dp));
    json_object_set_new(j, "parallelism", json_string(r->parallelism));
    return j;
}

static int print_rows_json(const vf_cli_fit_args *a, uint64_t one, const vf_fit_row *rows, size_t k)
{
    json_t *j = json_object();
    json_object_set_new(j, "fits", json_boolean(k > 0));
    json_object_set_new(j, "approximate", json_boolean(a->approx_why != NULL));
    json_object_set_new(j, "needed_bytes", vf_json_u64(one));
    json_object_set_new(j, "mode", json_string(vf_cli_mode_name(&a->est)));
    json_t *arr = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(arr, row_json(&rows[i]));
    json_object_set_new(j, "gpus", arr);
    return vf_print_json(j);
}

static void print_rows(const vf_cli_fit_args *a, uint64_t one, const vf_fit_row *rows, size_t k, size_t n)
{
    char b1[32], b2[32], b3[32];
    if (a->approx_why)
        printf("APPROXIMATE: %s\n", a->approx_why);
    if (one)
        printf("Needs %s on one GPU (%s). ", vf_fmt_bytes(one, a->units, b1, sizeof b1), vf_cli_mode_name(&a->est));
    else
        printf("Fits on no single GPU (%s). ", vf_cli_mode_name(&a->est));
    printf("Catalog GPUs, each with the fewest devices of it that hold it (least total memory first):\n");
    if (!k)
        printf("  none up to the search limit; try 'vramfit fit MODEL --gpu G' for advice\n");
    for (size_t i = 0; i < k; i++)
        printf("  %2u x %-26s %10s each, needs %10s, headroom %10s  (%s; %u node%s)\n", rows[i].gpus,
               rows[i].gpu->name, vf_fmt_bytes(rows[i].gpu->memory_bytes, a->units, b1, sizeof b1),
               vf_fmt_bytes(rows[i].needed_bytes, a->units, b2, sizeof b2),
               vf_fmt_bytes((uint64_t)(rows[i].headroom_bytes > 0 ? rows[i].headroom_bytes : 0), a->units, b3,
                            sizeof b3),
               rows[i].parallelism, rows[i].nodes, rows[i].nodes == 1 ? "" : "s");
    if (k < n)
        printf("  (%zu more catalog GPUs hold it at no count up to the search limit)\n", n - k);
}

int vf_cli_fit_catalog(const vf_cli_fit_args *a, vf_model *m)
{
    size_t n = vf_gpu_count(), total = 0, k = 0;
    vf_fit_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    vf_error e = {0};
    uint64_t one = 0;
    vf_fit_opts fo = {.est = a->est, .gpus_per_node = a->gpus_per_node};
    if (vf_estimate_needed_bytes(m, &a->est, &one, &e) != VF_OK || vf_fit_catalog(m, &fo, rows, n, &total, &e) != VF_OK) {
        free(rows);
        return vf_report_error(&e);
    }
    while (k < total && rows[k].fits)
        k++;
    int rc;
    if (a->json) {
        rc = print_rows_json(a, one, rows, k);
    } else {
        print_rows(a, one, rows, k, total);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    free(rows);
    return rc == VF_EXIT_OK && !k ? VF_EXIT_NOFIT : rc;
}
