/* What the files of src/compare/ share: collectives matched across ranks (collectives.c),
 * which both the hosts' clock offsets (clocks.c) and the waits in collectives (ranks.c) are
 * computed from. */
#ifndef LP_COMPARE_INTERNAL_H
#define LP_COMPARE_INTERNAL_H

#include "llmprof/compare.h"

/* One collective as every rank with communication ran it: M ranks, K[i]'s kernel C[i] */
typedef void (*lp_coll_visit)(struct lp_rank *const *k, const struct lp_rank_coll *const *c,
                              size_t m, void *ctx);

/* How the matching went */
struct lp_coll_match {
    size_t ranks;                       /* ranks with communication kernels */
    size_t matched;                     /* collectives matched (VISIT called for each) */
    size_t names, names_unmatched;      /* distinct (stream, name) pairs; of them, run
                                           unequally often (left out) */
};

/* Matches the collectives of OUT's ranks with communication kernels: by stream (each
 * communicator's, by first use), kernel name and order among those, and calls VISIT for
 * each. Fewer than two such ranks: nothing visited. LP_OK or LP_ERR_NOMEM. */
int lp_coll_match(const struct lp_ranks *out, lp_coll_visit visit, void *ctx,
                  struct lp_coll_match *how);

/* The hosts of OUT's ranks (lp_ranks.hosts, lp_rank.host_index) and, past one host, each
 * one's clock offset from the ends of the collectives its ranks share with the reference
 * host's; the offsets applied to the ranks' collectives. LP_OK or LP_ERR_NOMEM. */
int lp_ranks_align(struct lp_ranks *out);

#endif
