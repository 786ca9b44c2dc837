/* Subcommands of the llmprof CLI, one file each, and the helpers they share. */
#ifndef LP_CLI_H
#define LP_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/model.h"

int lp_cmd_record(int argc, char **argv);
int lp_cmd_info(int argc, char **argv);
int lp_cmd_model(int argc, char **argv);
int lp_cmd_report(int argc, char **argv);
int lp_cmd_export(int argc, char **argv);
int lp_cmd_profile(int argc, char **argv);

/* "llmprof <cmd>: message" on stderr. */
void lp_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Directory of the running executable, without trailing slash. */
int lp_cli_exe_dir(char *buf, size_t len);
/* Lists DIR's trace files (sorted); returns the count, -1 if DIR cannot be read. */
int lp_cli_list_traces(const char *dir, char ***paths);
void lp_cli_free_list(char **paths, int n);
/* mkdir -p: 0, or -1 with errno */
int lp_cli_mkdir_p(const char *dir);
void lp_cli_format_bytes(uint64_t bytes, char *buf, size_t len);
void lp_cli_format_ns(uint64_t ns, char *buf, size_t len);

/* Option values; on a bad one they print "llmprof CMD: OPT takes ..." and return -1. */
int lp_cli_parse_i64(const char *cmd, const char *opt, const char *v, int64_t min, int64_t *out);
int lp_cli_parse_double(const char *cmd, const char *opt, const char *v, double *out);
int lp_cli_parse_dtype(const char *cmd, const char *opt, const char *v, enum lp_dtype *d);
/* The traces of a run: RUN is a run directory or one trace file. Returns the count (0 with
 * a message when none), -1 with a message when RUN cannot be read. */
int lp_cli_run_traces(const char *cmd, const char *run, char ***paths);

#endif
