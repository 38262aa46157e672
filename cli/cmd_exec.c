/*
 * cmd_exec.c: `podplan exec <what> ...`, real runs on this machine.
 *
 * A dispatcher only: each <what> parses its own options (its own
 * pp_cli_cmd, so `podplan exec gemm --help` works) in its own file.
 */
#include "cli_int.h"

#include <string.h>

typedef struct exec_sub {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} exec_sub;

static const exec_sub subs[] = {
    /* --- GEMM and memory bandwidth (cmd_exec_gemm.c) --- */
    {"gemm", "time GEMMs (cuBLASLt or OpenBLAS): sweeps or a model's layer",
     pp_cli_exec_gemm},
    {"membw", "STREAM copy/triad bandwidth of host or GPU memory",
     pp_cli_exec_membw},
    {NULL, NULL, NULL},
};

static void usage(FILE *fp) {
    fprintf(fp, "usage: podplan exec <what> [options]\n\nwhat:\n");
    for (int i = 0; subs[i].name; i++)
        fprintf(fp, "  %-12s %s\n", subs[i].name, subs[i].summary);
    fprintf(fp, "\n`podplan exec <what> --help` describes one.\n");
}

static int run(const pp_cli_cmd *cmd, int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; subs[i].name; i++)
        if (strcmp(subs[i].name, argv[1]) == 0)
            return subs[i].run(argc - 1, argv + 1);
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; subs[i].name; i++) {
        int d = pp_edit_distance(argv[1], subs[i].name, 2);
        if (d < best_d) { best_d = d; best = subs[i].name; }
    }
    if (best)
        fprintf(stderr, "podplan exec: unknown \"%s\" (did you mean \"%s\"?)"
                "\n", argv[1], best);
    else
        fprintf(stderr, "podplan exec: unknown \"%s\"; see `podplan exec "
                "--help`\n", argv[1]);
    return 2;
}

static const pp_cli_opt no_opts[] = {{NULL, 0, NULL, NULL, false}};

const pp_cli_cmd pp_cmd_exec = {
    "exec",
    "real runs on this machine: GEMM and memory-bandwidth sweeps",
    "exec gemm|membw [options]",
    NULL,
    no_opts,
    run,
};
