/* cli.h — what the vramfit command's files share. */
#ifndef VF_CLI_H
#define VF_CLI_H

#include "vramfit.h"
#include "exit_code.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>


typedef struct vf_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} vf_cmd;

/* One entry per command, each in its own cmd_*.c. */
int cmd_inspect(int argc, char **argv);
int cmd_dtypes(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_oom(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

/* main.c: the command line as the vramfit command runs it (argv[0] the program). */
int vf_cli_main(int argc, char **argv);

/* ---- capture.c ---- */
/* Runs cmd (called with --json among argv) with stdout captured; *out is its
 * one JSON object (NULL when it printed none). Returns cmd's exit status. */
int vf_cli_capture_json(int (*cmd)(int, char **), int argc, char **argv, json_t **out);
/* "MODEL knobs" through estimate (cmd_estimate, passed in: output calls no
 * command) with --json: *bytes is its device memory per GPU (device_bytes,
 * else per_gpu_bytes). cmd names the caller in usage errors. */
int vf_cli_estimate_spec(const char *cmd, const char *spec, int (*estimate)(int, char **), uint64_t *bytes);

/* ---- output.c ---- */
typedef enum { VF_UNITS_GIB, VF_UNITS_GB } vf_units;

/* "14.96 GiB", "512.0 MiB", "16.06 GB" — always with the unit. */
const char *vf_fmt_bytes(uint64_t bytes, vf_units u, char *buf, size_t n);
/* "8,030,261,248" */
const char *vf_fmt_count(uint64_t v, char *buf, size_t n);
/* "8.03B", "135M" */
const char *vf_fmt_short(uint64_t v, char *buf, size_t n);
bool vf_parse_units(const char *s, vf_units *u);
/* Prints obj as the command's one JSON object on stdout and drops the reference. */
int vf_print_json(json_t *obj);
/* A byte or token count as a JSON integer: saturates at INT64_MAX (JSON
 * integers are signed 64-bit in jansson), never wraps negative. */
json_t *vf_json_u64(uint64_t v);
/* A graph model's part of inspect (graph_out.c): NULL / nothing for other models. */
json_t *vf_graph_json(const vf_model *m);
void vf_graph_print(const vf_model *m, vf_units u);
/* "vramfit: msg" on stderr; returns the exit code for the status. */
int vf_report_error(const vf_error *e);
/* "vramfit: fmt" on stderr for a usage error, plus the hint; returns 2. */
int vf_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when stdout (fd 1) or stderr (fd 2) is a terminal and NO_COLOR is unset. */
bool vf_use_color(int fd);
/* Parses a non-negative integer with optional k/M/G suffix (powers of 1000
 * for counts, e.g. 32k = 32768 when binary is true). */
bool vf_parse_u64(const char *s, uint64_t *out);
/* "24GiB", "80GB", "512MiB", "1073741824" → bytes. */
bool vf_parse_bytes(const char *s, uint64_t *out);

/* Opens MODEL, printing the error on failure; returns 0 or an exit code.
 * A Hub id also prints one stderr line naming the source that answered. */
int vf_cli_open_model(const char *src, vf_model **m);
/* As vf_cli_open_model, but an approximate model (unknown family) is refused
 * in one line (exit 3) unless allowed (fit and plan: --approximate). */
int vf_cli_open_model_exact(const char *cmd, const char *src, vf_model **m, bool allow_approximate);
/* hub_args.c: takes --offline, --refresh, --file, --hub-timeout out of argv
 * (argv[0] is the command); -1 to go on, else a usage exit code. */
int vf_cli_hub_args(int *argc, char **argv);
/* The Hub options' lines for a command's --help. */
void vf_cli_hub_help(FILE *f);
/* The Hub options vf_cli_hub_args took (--offline, --refresh, ...). */
const vf_open_opts *vf_cli_hub_open_opts(void);

/* ---- cmd_fit.c: the knobs fit and plan share ---- */
typedef struct vf_cli_fit_args {
    const char *model;
    const char *gpu;     /* --gpu G[xN], NULL = every catalog GPU */
    bool local;          /* --local: this machine's devices */
    bool json;
    vf_units units;
    const char *emit;    /* plan --emit */
    const char *over;    /* sweep --over context|batch */
    const char *values;  /* sweep --values N,N,... */
    bool runtime_set;
    bool approximate;    /* --approximate: answer for a guessed tensor list (unknown family) */
    const char *approx_why; /* set in vf_cli_fit_settle: the model's vf_model_approximate() */
    vf_estimate_opts est;
    uint32_t nodes;         /* --nodes N: machines (0 = as the devices need) */
    uint32_t gpus_per_node; /* --gpus-per-node G (0 = the catalog GPU's node) */
    bool graph;          /* the model is a network by its graph (no context) */
} vf_cli_fit_args;
/* fit's, plan's and sweep's own options (before the knobs' tables). */
extern const struct option vf_cli_fit_options[];
/* models' options (args/models_args.c), read by its parser and /api/models. */
/* models' own options (args/models_args.c): its parser and the server read the table */
extern const struct option vf_cli_models_options[];
/* snapshot's options (args/snapshot_args.c), read by its parser and the server */
extern const struct option vf_cli_snapshot_options[];
/* estimate's own options (--train, --json, --explain, --units, --help). */
extern const struct option vf_cli_estimate_cmd_options[];
/* Parses fit/plan/sweep arguments; returns -1 to go on, else an exit code. */
int vf_cli_fit_parse(const char *cmd, int argc, char **argv, vf_cli_fit_args *a, void (*help)(void));
/* After the model is open: knobs that depend on it and the runtime. */
void vf_cli_fit_settle(vf_cli_fit_args *a, const vf_model *m);
/* Resolves the GPU(s) to fit on: --gpu, or --local (smallest free memory). */
int vf_cli_fit_gpu(const vf_cli_fit_args *a, vf_gpu_choice *c);
/* "inference" or "training". */
const char *vf_cli_mode_name(const vf_estimate_opts *o);

/* ---- catalog_out.c: fit without --gpu ---- */
/* Every catalog GPU with the fewest devices of it that fit (vf_fit_catalog),
 * printed as a table or JSON; 0 when any fits, 1 when none. */
int vf_cli_fit_catalog(const vf_cli_fit_args *a, vf_model *m);

/* ---- speed_out.c: the speed bounds (fit, estimate) ---- */
json_t *vf_cli_speed_json(const vf_speed *s);
void vf_cli_print_speed(const vf_speed *s, const vf_estimate_opts *o, uint64_t context, double bandwidth_gbs);

#endif
