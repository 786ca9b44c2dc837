/* What the files of src/compare/ share: collectives matched across ranks by their ends and
 * the groups of ranks they show (collectives.c), from which the hosts' clock offsets
 * (clocks.c) and the waits in collectives (ranks.c) are computed. */
#ifndef LP_COMPARE_INTERNAL_H
#define LP_COMPARE_INTERNAL_H

#include "llmprof/compare.h"

/* One matched collective of group G (index into lp_ranks.groups) as its M members ran
 * it: K[i]'s kernel C[i] */
typedef void (*lp_coll_visit)(size_t g, struct lp_rank *const *k,
                              const struct lp_rank_coll *const *c, size_t m, void *ctx);

/* Calls VISIT for every matched collective of every group (lp_ranks_find_groups), in the
 * groups' order. LP_OK or LP_ERR_NOMEM. */
int lp_coll_match(const struct lp_ranks *out, lp_coll_visit visit, void *ctx);

/* Each rank's collectives by kernel name, then end: BY_NAME[i] indexes lp_rank.coll of rank
 * i (NULL without collectives); USED[i][j] marks rank i's collective j matched already. */
struct lp_coll_index {
    size_t n;
    uint32_t **by_name;
    uint8_t **used;
};

int lp_coll_index_build(const struct lp_ranks *out, struct lp_coll_index *ix);
void lp_coll_index_free(struct lp_coll_index *ix);

/* How many collectives of NAME rank I ran; *FIRST: where they start in IX's BY_NAME[I] */
size_t lp_coll_index_name(const struct lp_ranks *out, const struct lp_coll_index *ix, size_t i,
                          uint64_t name, size_t *first);

/* A link: rank I's collective A and rank J's B (indices into their lp_rank.coll) */
typedef void (*lp_coll_link)(uint32_t a, uint32_t b, void *ctx);

/* The links between ranks I and J's unused collectives of NAME, with J's ends moved by
 * SHIFT_J: each the other's nearest by end, within LP_COLL_TOGETHER_NS. Calls LINK (may be
 * NULL) for each; returns how many. */
size_t lp_coll_links(const struct lp_ranks *out, const struct lp_coll_index *ix, size_t i,
                     size_t j, uint64_t name, int64_t shift_j, lp_coll_link link, void *ctx);

/* The groups of ranks whose collectives end together (lp_ranks.groups, by members), on the
 * clock of the hosts aligned so far. LP_OK or LP_ERR_NOMEM. */
int lp_ranks_find_groups(struct lp_ranks *out);

/* The hosts of OUT's ranks (lp_ranks.hosts, lp_rank.host_index) and, past one host, each
 * one's clock offset from the ends of the collectives its ranks ran with an aligned host's
 * (clocks.c); the offsets applied to the ranks' collectives. LP_OK or LP_ERR_NOMEM. */
int lp_ranks_align(struct lp_ranks *out);

#endif
