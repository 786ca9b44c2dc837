/* What the reader's files share inside src/trace. */
#ifndef LP_TRACE_READER_INTERNAL_H
#define LP_TRACE_READER_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "llmprof/trace.h"

/* access.c: adds one line to T's warnings (dropped silently when memory runs out) */
void lp_trace_warn(struct lp_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lp_trace_vwarn(struct lp_trace *t, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* access.c: the array of record TYPE in T and, in *N, its count; NULL for a type without one. */
void **lp_trace_array_of(struct lp_trace *t, uint32_t type, size_t **n);
/* The layout of T's array of TYPE in memory (kernels are kept as lp_kernel_rec and API calls
 * as lp_api_rec; the other types as decoded): LP_OK, or LP_ERR_ARG for a type without one */
int lp_trace_layout(uint32_t type, struct lp_record_layout *l);
/* plausible.c: leaves records whose times cannot be true out of T's arrays, one warning per reason;
 * LP_OK, or LP_ERR_NOMEM. */
int lp_trace_drop_implausible(struct lp_trace *t);

#endif
