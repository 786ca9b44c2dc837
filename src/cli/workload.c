/* The workload and GPU options that 'model' and 'report' (and profile's report part) share:
 * each is parsed here once, with the model layer's checks (dtypes, vision modes). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

void lp_cli_workload_init(struct lp_cli_workload *g)
{
    memset(g, 0, sizeof *g);
    lp_workload_defaults(&g->w);
}

/* the names NAME gives for 0 .. N - 1 (at most MAX), into NAMES: how many */
static size_t names_of(const char **names, size_t max, int n, const char *(*name)(int))
{
    size_t k = 0;
    for (; k < max && (int)k < n; k++)
        names[k] = name((int)k);
    return k;
}

static const char *dtype_at(int k) { return lp_dtype_name((enum lp_dtype)k); }
static const char *vision_mode_at(int k) { return lp_vision_mode_name((enum lp_vision_mode)k); }

static int parse_dtype(const char *cmd, const char *opt, const char *v, enum lp_dtype *d)
{
    if (v && lp_dtype_parse(v, d) == LP_OK)
        return 0;
    const char *names[32];
    return lp_cli_bad_value(cmd, opt, v, names, names_of(names, 32, LP_DTYPE_COUNT, dtype_at));
}

int lp_cli_opt_dtype(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    (void)o;
    return parse_dtype(cmd, opt, arg, value);
}

/* the activation dtype: matmuls run in it, so a weight-only format is refused */
int lp_cli_opt_compute_dtype(const struct lp_cli_opt *o, void *value, const char *cmd,
                             const char *opt, const char *arg)
{
    char err[128];
    if (lp_cli_opt_dtype(o, value, cmd, opt, arg) != 0)
        return -1;
    if (lp_dtype_check_compute(*(enum lp_dtype *)value, err, sizeof err) != LP_OK) {
        lp_cli_error(cmd, "%s %s", opt, err);
        return -1;
    }
    return 0;
}

int lp_cli_opt_prefill_logits(const struct lp_cli_opt *o, void *value, const char *cmd,
                              const char *opt, const char *arg)
{
    (void)o;
    struct lp_cli_workload *g = value;
    static const char *const values[] = {"all", "last"};
    if (!arg || (strcmp(arg, "all") && strcmp(arg, "last")))
        return lp_cli_bad_value(cmd, opt, arg, values, 2);
    g->w.prefill_logits_all = !strcmp(arg, "all");
    g->prefill_logits_set = 1;
    return 0;
}

int lp_cli_opt_vision(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                      const char *arg)
{
    (void)o;
    struct lp_cli_workload *g = value;
    g->vision_set = 1;
    for (int k = LP_VISION_MODE_NONE; arg && k <= LP_VISION_MODE_GUNDAM; k++)
        if (!strcmp(arg, lp_vision_mode_name((enum lp_vision_mode)k))) {
            g->w.vision_mode = (enum lp_vision_mode)k;
            return 0;
        }
    const char *names[32];
    return lp_cli_bad_value(cmd, opt, arg, names,
                            names_of(names, 32, LP_VISION_MODE_GUNDAM + 1, vision_mode_at));
}

int lp_cli_opt_tiles(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg)
{
    (void)o;
    struct lp_cli_workload *g = value;
    long long tw = 0, th = 0;
    char extra;
    g->vision_set = 1;
    if (!arg || sscanf(arg, "%lldx%lld%c", &tw, &th, &extra) != 2 || tw < 1 || th < 1 ||
        tw > 9 || th > 9) {
        lp_cli_error(cmd, "%s takes WxH from 1 to 9 each, such as 3x2", opt);
        return -1;
    }
    g->w.tiles_w = tw;
    g->w.tiles_h = th;
    return 0;
}
