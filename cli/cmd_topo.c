/* being written: `podplan topo` */
#include "cli_int.h"
static const pp_cli_opt opts[] = {{NULL, 0, NULL, NULL, false}};
static int run(const pp_cli_cmd *cmd, int argc, char **argv) { (void)cmd; (void)argc; (void)argv; return 1; }
const pp_cli_cmd pp_cmd_topo = {"topo", "cluster analysis (being written)", "topo", NULL, opts, run};
