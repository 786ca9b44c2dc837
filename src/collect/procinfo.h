/* Process facts for the trace header: pid, command line, versions, clocks, ranks. */
#ifndef LP_COLLECT_PROCINFO_H
#define LP_COLLECT_PROCINFO_H

#include <stdint.h>

void lp_procinfo_set_start_meta(uint32_t cupti_version, const char *cupti_path);
void lp_procinfo_set_end_meta(void);

#endif
