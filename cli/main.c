/*
 * main.c: `podplan <command> [options]`.
 */
#include "cli_int.h"

#include <string.h>

extern const pp_cli_cmd pp_cmd_calibrate; /* cli/cmd_calibrate.c */
extern const pp_cli_cmd pp_cmd_whatif;    /* cli/cmd_whatif.c */

static const pp_cli_cmd *const commands[] = {
    /* The three questions first: plan, what if (simulate), then the
     * building blocks and the closed forms. */
    &pp_cmd_plan, &pp_cmd_simulate, &pp_cmd_collective, &pp_cmd_flows,
    &pp_cmd_topo, &pp_cmd_flops,    &pp_cmd_estimate,   &pp_cmd_memory,
    &pp_cmd_exec, &pp_cmd_list,     &pp_cmd_calibrate,  &pp_cmd_whatif,
    NULL,
};

static void usage(FILE *fp) {
    fprintf(fp,
            "usage: podplan <command> [options]\n\n"
            "podplan plans large-model training on GPU clusters: which\n"
            "parallel layout to launch, how long an iteration and the whole\n"
            "training take on a simulated network, what fits in memory.\n\n"
            "commands:\n");
    for (int i = 0; commands[i]; i++)
        fprintf(fp, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(fp, "  %-12s %s\n", "help", "show this list, or a command's help");
    fprintf(
        fp,
        "\n`podplan <command> --help` describes a command.\n"
        "Models (--model) are a YAML file, a name in models/zoo/, or\n"
        "inline: layers=96,hidden=12288,heads=96,seq=2048,vocab=51200\n"
        "Exit status: 0 success, 1 the work failed, 2 bad usage or input.\n");
}

static const pp_cli_cmd *find(const char *name) {
    for (int i = 0; commands[i]; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("podplan %s\n", PODPLAN_VERSION);
        return 0;
    }
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 ||
        strcmp(name, "-h") == 0) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            const pp_cli_cmd *c = find(argv[2]);
            if (!c) {
                fprintf(stderr, "podplan: unknown command \"%s\"\n", argv[2]);
                return 2;
            }
            pp_cli_help(c, stdout);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    const pp_cli_cmd *c = find(name);
    if (!c) {
        const char *best = NULL;
        int best_d = 3;
        for (int i = 0; commands[i]; i++) {
            int d = pp_edit_distance(name, commands[i]->name, 2);
            if (d < best_d) {
                best_d = d;
                best = commands[i]->name;
            }
        }
        if (best)
            fprintf(stderr,
                    "podplan: unknown command \"%s\" (did you mean "
                    "\"%s\"?); see `podplan help`\n",
                    name, best);
        else
            fprintf(stderr,
                    "podplan: unknown command \"%s\"; see `podplan "
                    "help`\n",
                    name);
        return 2;
    }
    return c->run(c, argc - 1, argv + 1);
}
