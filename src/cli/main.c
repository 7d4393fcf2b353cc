/* main.c — the vramfit command: a table of subcommands, one file each;
 * vf_cli_main is also what the Python package runs (embed.c). */
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
    {"snapshot", cmd_snapshot, "a PyTorch memory snapshot: reserved, allocated, peak, leak suspects"},
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
               "checkpoint's model.safetensors.index.json, a .gguf file, a config.json, a directory,\n"
               "or a Hugging Face Hub id: hf://org/name[@rev][:QUANT] (headers only, never weights);\n"
               "a plain org/name is looked up in the local HF cache, the catalog, then the Hub.\n\n"
               "Every command takes --json for one JSON object on stdout, and --help.\n"
               "Exit status: 0 success (fit: it fits), 1 fit or plan: does not fit, 2 usage error,\n"
               "3 bad or unsupported model input, 4 I/O error, 5 device or driver error.\n"
               "See vramfit(1) and 'vramfit COMMAND --help'.\n");
}

/* The commands that take MODEL also take the Hub options (hub_args.c). */
static bool takes_model(const char *name)
{
    static const char *const with_model[] = {"inspect", "estimate", "fit", "plan", "load", "sweep", "oom"};
    for (size_t i = 0; i < sizeof with_model / sizeof with_model[0]; i++)
        if (strcmp(name, with_model[i]) == 0)
            return true;
    return false;
}

static int run_command(const vf_cmd *cmd, int argc, char **argv)
{
    if (!takes_model(cmd->name))
        return cmd->run(argc, argv);
    int rc = vf_cli_hub_args(&argc, argv);
    if (rc >= 0)
        return rc;
    bool help = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        help = help || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
    rc = cmd->run(argc, argv);
    if (help && rc == VF_EXIT_OK)
        vf_cli_hub_help(stdout);
    return rc;
}

int vf_cli_main(int argc, char **argv)
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
                    return run_command(&commands[i], 2, args);
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
            return run_command(&commands[i], argc - 1, argv + 1);
    fprintf(stderr, "vramfit: '%s' is not a command; see 'vramfit --help'\n", c);
    return VF_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    return vf_cli_main(argc, argv);
}
