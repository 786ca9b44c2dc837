/* llmprof's one error convention: every library function that can fail returns an
 * enum lp_status and, where the caller passes one, writes a readable message into an
 * ERR buffer (char *err, size_t errlen) saying which file, which field and what to do. */
#ifndef LLMPROF_STATUS_H
#define LLMPROF_STATUS_H

enum lp_status {
    LP_OK = 0,
    LP_ERR_IO,      /* open/read/write failed: see the error string */
    LP_ERR_FORMAT,  /* not a trace, or corrupt beyond recovery; a config out of its bounds */
    LP_ERR_VERSION, /* a newer major version than this build reads */
    LP_ERR_NOMEM,
    LP_ERR_ARG,     /* a bad argument or option value */
};

#endif
