/*
 * cli_int.h: the podplan command line, private to cli/.
 *
 * Each subcommand is a table of options plus a run function.  The option
 * parser is ours rather than getopt_long so that every error names the
 * option and the bad value, suggests the nearest option on a typo, and
 * --help is generated from the same table that parses.
 */
#ifndef PODPLAN_CLI_INT_H
#define PODPLAN_CLI_INT_H

#include "podplan/common.h"
#include "podplan/models.h"
#include "podplan/vocab.h"

#include <jansson.h>

#define PP_CLI_MAX_OPTS 64
/* Positional arguments one command takes: the files of a calibration
 * sweep (`calibrate import|fit|validate` take one per shape set or run). */
#define PP_CLI_MAX_POSITIONAL 1024

typedef struct pp_cli_opt {
    const char *name; /* long name without "--" */
    char short_name;  /* or 0 */
    const char *arg;  /* metavar, or NULL for a flag */
    const char *help; /* one line; "(default: x)" where there is one */
    bool repeat;      /* may be given more than once (--set) */
    /* A named choice from a registry (podplan/vocab.h), or NULL: --help
     * lists its names with their help and pp_args_choice parses it, with
     * "did you mean", so the CLI never keeps a list of its own. */
    const pp_registry *choices;
    /* Choices of this registry that this command cannot run, or 0: bit v
     * set for value v; --help marks them and pp_args_choice refuses them
     * with `unsupported_why`. */
    uint32_t unsupported;
    const char *unsupported_why;
} pp_cli_opt;

typedef struct pp_cli_cmd {
    const char *name;
    const char *summary;    /* one line for `podplan help` */
    const char *usage;      /* synopsis after "podplan " */
    const char *details;    /* paragraphs after the options, or NULL */
    const pp_cli_opt *opts; /* terminated by {NULL} */
    int (*run)(const struct pp_cli_cmd *cmd, int argc, char **argv);
} pp_cli_cmd;

typedef struct pp_args {
    const pp_cli_cmd *cmd;
    const char *value[PP_CLI_MAX_OPTS]; /* last value given, or NULL */
    int count[PP_CLI_MAX_OPTS];
    char *positional[PP_CLI_MAX_POSITIONAL]; /* borrowed from argv */
    int n_positional;
    /* every value of repeatable options, in order */
    struct {
        int opt;
        const char *value;
    } multi[64];
    int n_multi;
} pp_args;

/* Parses argv (argv[0] is the subcommand).  Returns 0, 1 when --help was
 * printed (the caller exits 0), or PP_EUSAGE with e filled. */
int pp_cli_parse(const pp_cli_cmd *cmd, int argc, char **argv, pp_args *a,
                 pp_error *e);
void pp_cli_help(const pp_cli_cmd *cmd, FILE *fp);

/* Accessors by option name.  `get` returns NULL when absent. */
const char *pp_args_get(const pp_args *a, const char *name);
bool pp_args_flag(const pp_args *a, const char *name);
/* All values of a repeatable option, in command-line order; returns the
 * count (at most max). */
size_t pp_args_all(const pp_args *a, const char *name, const char **out,
                   size_t max);
/* Required option: fills e with "--name is required" when absent. */
int pp_args_need(const pp_args *a, const char *name, const char **out,
                 pp_error *e);
/* Typed options; absent leaves *out unchanged and returns 0.  Errors read
 * "--gpus: expected a positive integer, got "x"". */
int pp_args_int(const pp_args *a, const char *name, int64_t min, int64_t max,
                int64_t *out, pp_error *e);
int pp_args_quantity(const pp_args *a, const char *name, pp_qkind kind,
                     const char *default_unit, double *out, pp_error *e);
/* An option with a small fixed list of its own (--format, on|off):
 * "--name: expected a|b, got "x" (did you mean "y"?)". */
int pp_args_enum(const pp_args *a, const char *name, const char *const *names,
                 int *out, pp_error *e);
/* An option whose table entry names a registry: parsed by
 * pp_registry_parse (absent leaves *out unchanged and returns 0). */
int pp_args_choice(const pp_args *a, const char *name, int *out, pp_error *e);

/* ------------------------------------------------------------------------
 * The shared loaders: every command reads --model, --cluster (with its
 * --set overrides) and --profile through these, so every command reports
 * a bad or misspelt name the same way (file:line:col for a broken file,
 * "did you mean" and `podplan list` for an unknown name).
 * ---------------------------------------------------------------------- */
struct pp_cluster;
struct pp_gpu_spec;
struct pp_gpu_profile;
struct pp_stack;
/* --model (required unless `optional`; absent and optional: returns 1 and
 * leaves m untouched). */
int pp_cli_load_model(const pp_args *a, bool optional, pp_model *m,
                      pp_error *e);
/* --cluster (required) with every --set, in order, when the command has
 * --set. */
int pp_cli_load_cluster(const pp_args *a, struct pp_cluster **c, pp_error *e);
/* The catalogue's GPU `name` (what --gpu says) copied to *out; PP_EUSAGE
 * with a "did you mean" for a name the catalogue lacks. */
int pp_cli_catalog_gpu(const char *name, struct pp_gpu_spec *out, pp_error *e);
/* --profile when given, else the profile shipped for gpu.  Commands where
 * the default is the planner's business pass required false: then an
 * absent --profile returns 1 and leaves p untouched. */
int pp_cli_load_profile(const pp_args *a, const struct pp_gpu_spec *gpu,
                        bool required, struct pp_gpu_profile *p, pp_error *e);
/* The same with the software stack: `stack` names it (NULL: --stack when
 * the command has it, else the GPU's default) and, when st is not NULL,
 * it is returned there.  Always loads (the stack is always stated). */
int pp_cli_load_profile_stack(const pp_args *a, const struct pp_gpu_spec *gpu,
                              const char *stack, struct pp_gpu_profile *p,
                              struct pp_stack *st, pp_error *e);
/* Refuses (PP_EUSAGE) a layout the stack cannot run: dtype=fp8 without
 * its FP8 support or the GPU's FP8 rate, zero= above its highest stage,
 * a recomputation it does not offer. */
int pp_cli_check_stack(const struct pp_stack *st,
                       const struct pp_gpu_profile *g, const pp_parallel *p,
                       pp_error *e);
/* "megatron-lm-2021 (default for a100)" or "... (--stack)". */
const char *pp_cli_stack_label(const struct pp_gpu_profile *p, char *buf,
                               size_t len);

/* --parallel SPEC: pp_parallel_parse, plus overlap=on|off (DP overlap),
 * the key `plan` shows beside the SPEC, so that every layout plan prints
 * pastes here unchanged.  *overlap (may be NULL) gets -1 when the SPEC has
 * no overlap=, else 0 or 1.  When the SPEC gives no gbs= it says on stderr
 * which it used (mbs x dp).  p must be pp_parallel_init'ed. */
int pp_cli_load_parallel(const pp_args *a, pp_parallel *p, int *overlap,
                         pp_error *e);

/* Says on stderr which default a command chose for something the user
 * left out ("podplan plan: no --global-batch; using ..."), so a silent
 * default never surprises.  stdout is untouched. */
void pp_cli_note(const pp_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --format table|json and -o FILE, shared by every command. */
enum { PP_FMT_TABLE, PP_FMT_JSON };
extern const char *const pp_format_names[];

/* Writes a JSON value (borrowed) with stable formatting: two-space indent,
 * keys in insertion order, 12 significant digits, trailing newline. */
int pp_json_write(FILE *fp, json_t *v, pp_error *e);
/* json_real that maps non-finite values to null (JSON has no inf/nan). */
json_t *pp_json_num(double v);
/* Whether an output file named `path` is to be JSON: its name ends in
 * ".json" (--ops, calibrate run --report); anything else is text. */
bool pp_cli_json_path(const char *path);

/* Prints the error, "podplan <cmd>: <message>", and returns the exit code
 * for it. */
int pp_cli_fail(const char *cmd, const pp_error *e);

/* Formats with the unit a person would choose (wrapper over
 * pp_unit_format with 4 digits); returns a static rotating buffer so a
 * printf can hold several. */
const char *pp_fmtq(double v, pp_qkind kind);

/* Writes a command's result to -o FILE (atomically) or stdout: the JSON
 * when fmt is PP_FMT_JSON, else what table(fp, ctx) prints.  Takes
 * ownership of json.  Returns the process exit code. */
int pp_cli_emit(const pp_args *a, int fmt, json_t *json,
                void (*table)(FILE *fp, const void *ctx), const void *ctx);

/* `simulate --ops FILE`: each part's priced operations (ops_out.c),
 * tab-separated or, for FILE.json, JSON; written atomically. */
struct pp_gpu_profile;
int pp_cli_write_ops(const char *path, const struct pp_gpu_profile *g,
                     const pp_model *m, const pp_parallel *p, pp_error *e);

/* Subcommands. */
extern const pp_cli_cmd pp_cmd_plan, pp_cmd_flops, pp_cmd_estimate,
    pp_cmd_memory, pp_cmd_topo, pp_cmd_collective, pp_cmd_flows, pp_cmd_list;
extern const pp_cli_cmd pp_cmd_simulate;
/* `podplan exec` and its parts (argv[0] is the part's name). */
extern const pp_cli_cmd pp_cmd_exec;
int pp_cli_exec_gemm(int argc, char **argv);
int pp_cli_exec_membw(int argc, char **argv);
extern const pp_cli_cmd pp__cmd_exec_gemm, pp__cmd_exec_membw;

#endif
