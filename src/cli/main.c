/* main.c — the vramfit command: a table of subcommands, one file each. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const vf_cmd commands[] = {
    {"inspect", cmd_inspect, "architecture, exact parameters and bytes per dtype of a model"},
    {"estimate", cmd_estimate, "memory breakdown for inference (default) or --train"},
    {"fit", cmd_fit, "does it fit on a GPU; max context, max batch, fewest GPUs, what to change"},
    {"gpus", cmd_gpus, "the GPU catalog; --local lists this machine's devices"},
    {"dtypes", cmd_dtypes, "precision table: bits and bytes per element, quantization formats"},
    {"models", cmd_models, "the embedded model catalog"},
    {"load", cmd_load, "stream weights into device memory with bounded host memory"},
    {"sweep", cmd_sweep, "memory against context length or batch, one estimate per value"},
    {"plan", cmd_plan, "a launch configuration for vLLM, llama.cpp, DeepSpeed or Accelerate"},
    {"serve", cmd_serve, "the calculator as a local web page"},
    {"watch", cmd_watch, "a command's GPU memory over time (NVML): baseline, peak, after"},
    {"oom", cmd_oom, "explain an out-of-memory error in a log, with its numbers"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: vramfit [--version] [--help] COMMAND [ARGS]\n\n"
               "How much GPU memory a model needs to load, serve or train it, and how to make it fit.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nMODEL is a catalog name (Qwen/Qwen3-8B, qwen3-8b), a .safetensors file, a sharded\n"
               "checkpoint's model.safetensors.index.json, a .gguf file, a config.json, or a directory.\n\n"
               "Every command takes --json for one JSON object on stdout, and --help.\n"
               "Exit status: 0 success (fit: it fits), 1 fit or plan: does not fit, 2 usage error,\n"
               "3 bad or unsupported model input, 4 I/O error, 5 device or driver error.\n"
               "See vramfit(1) and 'vramfit COMMAND --help'.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return VF_EXIT_USAGE;
    }
    const char *c = argv[1];
    if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0) {
        if (argc > 2 && strcmp(c, "help") == 0) {
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *args[] = {argv[2], "--help", NULL};
                    return commands[i].run(2, args);
                }
        }
        usage(stdout);
        return VF_EXIT_OK;
    }
    if (strcmp(c, "--version") == 0 || strcmp(c, "-V") == 0) {
        printf("vramfit %s\n", vf_version());
        return VF_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(c, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vramfit: '%s' is not a command; see 'vramfit --help'\n", c);
    return VF_EXIT_USAGE;
}
