/* speed_out.c — the speed bounds as fit and estimate print them. */
#include "cli.h"

json_t *vf_cli_speed_json(const vf_speed *s)
{
    if (!s->known)
        return json_null();
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string("upper bounds from bandwidth and peak FLOP/s"));
    json_object_set_new(j, "decode_tokens_per_s_per_sequence_max", json_real(s->decode_tps_per_seq));
    json_object_set_new(j, "decode_tokens_per_s_batch_max", json_real(s->decode_tps_batch));
    json_object_set_new(j, "decode_batch", json_integer((json_int_t)s->batch));
    json_object_set_new(j, "bytes_read_per_token", json_integer((json_int_t)s->bytes_per_token));
    json_object_set_new(j, "prefill_seconds_min", json_real(s->prefill_seconds));
    if (s->train_step_seconds > 0)
        json_object_set_new(j, "train_step_seconds_min", json_real(s->train_step_seconds));
    json_object_set_new(j, "peak_tflops", json_real(s->peak_tflops));
    json_object_set_new(j, "peak_dtype", json_string(s->peak_dtype ? s->peak_dtype : ""));
    json_object_set_new(j, "pipeline_stages", json_integer(s->pp));
    json_object_set_new(j, "nodes", json_integer(s->nodes));
    if (s->pp_bubble > 0)
        json_object_set_new(j, "pipeline_bubble", json_real(s->pp_bubble));
    if (s->nodes > 1) {
        json_object_set_new(j, "internode_gb_per_s_assumed", json_real(s->internode_gbs));
        json_object_set_new(j, "internode_seconds_min", json_real(s->internode_seconds));
    }
    return j;
}

void vf_cli_print_speed(const vf_speed *s, const vf_estimate_opts *o, uint64_t context, double bandwidth_gbs)
{
    if (!s->known)
        return;
    printf("Speed bounds (upper limits; memory is not compute):\n");
    if (o->mode == VF_MODE_INFERENCE) {
        printf("  decode   <= %.1f tokens/s per sequence; <= %.1f tokens/s for the batch of %llu\n",
               s->decode_tps_per_seq, s->decode_tps_batch, (unsigned long long)s->batch);
        printf("             (%.0f GB/s per GPU / %.2f GB read per token per GPU at %llu tokens of context)\n",
               bandwidth_gbs, (double)s->bytes_per_token / 1e9, (unsigned long long)context);
        printf("  prefill  >= %.3f s for one sequence of %llu tokens (2 x active params x tokens / %.0f TFLOPS %s)\n",
               s->prefill_seconds, (unsigned long long)context, s->peak_tflops, s->peak_dtype);
        if (s->pp > 1)
            printf("           one sequence passes the %u pipeline stages one after another; the batch bound\n"
                   "           counts the stages working on %u batches in flight\n",
                   s->pp, s->pp);
        if (s->nodes > 1)
            printf("  nodes    >= %.3f s more per prefill: its hidden states cross %u node boundar%s at %.0f GB/s "
                   "per GPU (assumed)\n",
                   s->internode_seconds, s->nodes - 1, s->nodes == 2 ? "y" : "ies", s->internode_gbs);
    } else {
        printf("  step     >= %.3f s per optimizer step per GPU (%s x params x tokens / %.0f TFLOPS %s)\n",
               s->train_step_seconds, o->train.lora_rank ? "4" : "6", s->peak_tflops, s->peak_dtype);
        if (s->pp_bubble > 0)
            printf("           with the pipeline bubble: (%u - 1) / (m + %u - 1) = %.1f%% of the step idle\n", s->pp,
                   s->pp, 100.0 * s->pp_bubble);
        if (s->nodes > 1)
            printf("  nodes    >= %.3f s per step of data-parallel collectives across %u nodes at %.0f GB/s per GPU "
                   "(assumed)\n",
                   s->internode_seconds, s->nodes, s->internode_gbs);
    }
}
