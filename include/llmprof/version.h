/* llmprof's version, shared by the CLI and the collector. */
#ifndef LLMPROF_VERSION_H
#define LLMPROF_VERSION_H

#define LLMPROF_VERSION "0.1.0"

#endif
