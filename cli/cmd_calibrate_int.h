/*
 * cmd_calibrate_int.h: what `calibrate fit|validate` (cmd_calibrate.c)
 * shares with `calibrate run` (cmd_calibrate_run.c).
 */
#ifndef PODPLAN_CLI_CMD_CALIBRATE_INT_H
#define PODPLAN_CLI_CMD_CALIBRATE_INT_H

#include <stdio.h>

#include "cli_int.h"
#include "podplan/calibrate.h"

/* One fit's parameters, standard errors and statistics, as a table. */
void pp__cal_fit_print(FILE *fp, const pp_cal_fit *f);
/* "podplan calibrate <argv...>" into buf (cut to len - 1): provenance. */
void pp__cal_command_line(int argc, char **argv, char *buf, size_t len);
/* The --profile to start from, for the cluster's GPU where --cluster is
 * given; net may be NULL. */
int pp__cal_load_base(const pp_args *a, const char *cluster,
                      pp_gpu_profile *prof, pp_cal_network *net, pp_error *e);

#endif
