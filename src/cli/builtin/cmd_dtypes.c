/* cmd_dtypes.c — vramfit dtypes: every element type and load format. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit dtypes [--json]\n\n"
           "The precision table: every storage type of safetensors and GGUF with its block size,\n"
           "bytes per block and exact bits per element (block overhead included), then the formats\n"
           "people choose when they load (bitsandbytes int8/nf4, GPTQ, AWQ, fp8) in bits per weight.\n");
}

int cmd_dtypes(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":jh", opts, NULL)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'h') {
            help();
            return VF_EXIT_OK;
        } else
            return vf_usage_error("dtypes", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind != argc)
        return vf_usage_error("dtypes", "unexpected argument '%s'", argv[optind]);
    if (json) {
        json_t *o = json_object(), *a = json_array(), *q = json_array();
        for (int i = 0; i < VF_DTYPE_COUNT; i++) {
            const vf_dtype_info *d = vf_dtype_get((vf_dtype)i);
            json_t *e = json_object();
            json_object_set_new(e, "name", json_string(d->name));
            json_object_set_new(e, "block_elements", json_integer(d->block_elements));
            json_object_set_new(e, "block_bytes", json_integer(d->block_bytes));
            json_object_set_new(e, "bits_per_element", json_real(d->bits_per_element));
            json_object_set_new(e, "bytes_per_element", json_real(d->bits_per_element / 8));
            json_object_set_new(e, "gguf_id", d->gguf_id >= 0 ? json_integer(d->gguf_id) : json_null());
            json_object_set_new(e, "safetensors", d->safetensors_name ? json_string(d->safetensors_name) : json_null());
            json_array_append_new(a, e);
        }
        for (size_t i = 0; i < vf_quant_scheme_count(); i++) {
            vf_quant_scheme s;
            if (vf_quant_scheme_parse(vf_quant_scheme_name(i), &s) != VF_OK)
                continue;
            json_t *e = json_object();
            json_object_set_new(e, "name", json_string(s.name));
            json_object_set_new(e, "method", json_string(s.method));
            json_object_set_new(e, "bits_per_weight", json_real(s.bits_per_weight));
            json_object_set_new(e, "group_size", json_integer(s.group_size));
            json_object_set_new(e, "keeps", json_string(s.keeps));
            json_array_append_new(q, e);
        }
        json_object_set_new(o, "dtypes", a);
        json_object_set_new(o, "load_formats", q);
        return vf_print_json(o);
    }
    printf("%-12s %6s %6s %9s %9s %8s  %s\n", "dtype", "block", "bytes", "bits/el", "bytes/el", "gguf id",
           "safetensors");
    for (int i = 0; i < VF_DTYPE_COUNT; i++) {
        const vf_dtype_info *d = vf_dtype_get((vf_dtype)i);
        char gid[16] = "-";
        if (d->gguf_id >= 0)
            snprintf(gid, sizeof gid, "%d", d->gguf_id);
        printf("%-12s %6u %6u %9.4g %9.4g %8s  %s\n", d->name, d->block_elements, d->block_bytes,
               d->bits_per_element, d->bits_per_element / 8, gid, d->safetensors_name ? d->safetensors_name : "-");
    }
    printf("\n%-16s %-13s %9s %6s  %s\n", "load format", "method", "bits/wt", "group", "left unquantized");
    for (size_t i = 0; i < vf_quant_scheme_count(); i++) {
        vf_quant_scheme s;
        if (vf_quant_scheme_parse(vf_quant_scheme_name(i), &s) != VF_OK)
            continue;
        char g[16] = "-";
        if (s.group_size)
            snprintf(g, sizeof g, "%u", s.group_size);
        printf("%-16s %-13s %9.4f %6s  %s\n", s.name, s.method, s.bits_per_weight, g, s.keeps);
    }
    printf("\nGPTQ and AWQ take a bit width and group size: gptq-int4-g128, awq-int4-g64, gptq-int8-g32.\n"
           "Sizes: bits per element include every block scale and header; 1 byte = 8 bits.\n");
    return VF_EXIT_OK;
}
