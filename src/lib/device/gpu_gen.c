/* gpu_gen.c — what a GPU's name says about the chip: its architecture
 * generation and its streaming multiprocessors. The memory model asks by
 * name (a catalog name, a --gpu spelling or what NVML reports), so the
 * tables match case-insensitive substrings, the more specific names first. */
#include "device/device.h"

#include <string.h>
#include <strings.h>

/* strcasestr is a GNU extension: a portable case-insensitive search. */
bool vf__name_has(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; s && *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return true;
    return false;
}

/* The architecture a GPU name denotes (catalog names and their spellings);
 * VF_GEN_UNKNOWN without a name or for another vendor. */
vf__gen vf__gpu_generation(const char *name)
{
    static const struct { const char *s; vf__gen g; } t[] = {
        {"gb200", VF_GEN_BLACKWELL}, {"gb300", VF_GEN_BLACKWELL}, {"b100", VF_GEN_BLACKWELL},
        {"b200", VF_GEN_BLACKWELL},  {"b300", VF_GEN_BLACKWELL},  {"rtx 50", VF_GEN_BLACKWELL},
        {"rtx pro 6000", VF_GEN_BLACKWELL}, {"gh200", VF_GEN_HOPPER}, {"h100", VF_GEN_HOPPER},
        {"h200", VF_GEN_HOPPER},     {"h800", VF_GEN_HOPPER},     {"h20", VF_GEN_HOPPER},
        {"ada", VF_GEN_ADA},         {"l40", VF_GEN_ADA},         {"l4", VF_GEN_ADA},
        {"rtx 40", VF_GEN_ADA},      {"a100", VF_GEN_AMPERE},     {"a10", VF_GEN_AMPERE},
        {"a30", VF_GEN_AMPERE},      {"a40", VF_GEN_AMPERE},      {"rtx a", VF_GEN_AMPERE},
        {"rtx 30", VF_GEN_AMPERE},   {"t4", VF_GEN_TURING},       {"rtx 20", VF_GEN_TURING},
        {"titan rtx", VF_GEN_TURING}, {"v100", VF_GEN_VOLTA},
    };
    if (!name || !*name || vf__name_has(name, "mi2") || vf__name_has(name, "mi3"))
        return VF_GEN_UNKNOWN;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (vf__name_has(name, t[i].s))
            return t[i].g;
    return VF_GEN_UNKNOWN;
}

/* Streaming multiprocessors, from NVIDIA's data sheets (what
 * torch.cuda.get_device_properties().multi_processor_count reports); 0 when
 * the name is not one of these (or its count is not sure: GB200). More
 * specific names come first. */
uint32_t vf__gpu_sm_count(const char *name)
{
    static const struct { const char *s; uint32_t n; } t[] = {
        {"h100 pcie", 114}, {"gh200", 132}, {"h100", 132}, {"h200", 132}, {"gb200", 0}, {"b200", 148},
        {"a100", 108},      {"a10", 72},    {"a30", 56},   {"l40", 142},  {"l4", 58},
        {"rtx 6000 ada", 142}, {"rtx 4090", 128}, {"rtx 3090 ti", 84}, {"rtx 3090", 82}, {"t4", 40}, {"v100", 80},
    };
    if (!name || !*name)
        return 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (vf__name_has(name, t[i].s))
            return t[i].n;
    return 0;
}

/* "12.4" → 1204; 0 for "", -1 when it is not a CUDA version. */
