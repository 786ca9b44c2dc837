/* What the fuzz targets and their replay share: each target records what it made of its
 * last input, so the replay (replay_main.c) can insist that known-good files are accepted
 * and known-bad ones refused, instead of only checking that nothing crashed. libFuzzer
 * ignores the verdict. */
#ifndef LP_FUZZ_H
#define LP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

enum lp_fuzz_verdict {
    LP_FUZZ_REJECTED = 0, /* refused with an error (not a trace, bad config ...) */
    LP_FUZZ_PARTIAL,      /* accepted with recovery: part of a trace skipped, or no end chunk */
    LP_FUZZ_WHOLE,        /* accepted whole: parsed, analysed and reported, nothing dropped */
};

/* Set by the target on every input; defined by each target file (one per executable). */
extern enum lp_fuzz_verdict lp_fuzz_verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input of fuzz_trace_records: parts split at every LP_FUZZ_CHUNK_SEP; the first is the
 * META chunk's payload (key/value pairs), each further one the record stream of a RECORDS
 * chunk; an END chunk repeats the META payload. lp_fuzz_trace_build wraps them into a trace
 * image in OUT with valid header and checksums, chunks zstd-compressed when ZSTD is set
 * (raw otherwise). Returns 0, or -1 when out of memory. */
#define LP_FUZZ_CHUNK_SEP "LPCK"
struct lp_buf;
int lp_fuzz_trace_build(const uint8_t *in, size_t n, int zstd, struct lp_buf *out);

/* The trace targets' common path: a trace image read, analysed and written by every
 * report writer, as `llmprof report` does (fuzz_trace.c). Returns the verdict. */
enum lp_fuzz_verdict lp_fuzz_trace_image(const uint8_t *data, size_t size);

#endif
