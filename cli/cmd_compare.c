// cabin compare: two precision plans (or KV formats) on the same prompts, side by side, with a
// paired significance test over the prompts (app/compare.h does the work).
#include "cli/commands.h"
#include "app/compare.h"
#include "app/eval_text.h"
#include "engine/telemetry.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

typedef struct compare_cli {
    const char *file, *plan_a, *plan_b, *kv_a, *kv_b, *json_out, *plot_out, *root;
    int limit, assistant_limit;
} compare_cli;

#define CO(field) offsetof(compare_cli, field)
static const opt_def COMPARE_OPTS[] = {
    { "--file", "-f", OPT_STR, CO(file), "PROMPTS", "prompts, one per line (blank lines and # lines skipped)",
      "the embedded model: the first user turn of each held-out\ndialogue; another model: required", NULL, NULL },
    { "--a", NULL, OPT_STR, CO(plan_a), "PLAN", "plan A: a precision plan (q8_0, \"q4_0;q8_0:layers=0-3,ffn_down\",\n"
      "plan.json)", "as in the file", NULL, NULL },
    { "--b", NULL, OPT_STR, CO(plan_b), "PLAN", "plan B", "as in the file", NULL, NULL },
    { "--kv-a", NULL, OPT_STR, CO(kv_a), "FORMAT", "KV cache format of A: f16 | q8 | q4 | f32", "--kv, else f16", NULL, NULL },
    { "--kv-b", NULL, OPT_STR, CO(kv_b), "FORMAT", "KV cache format of B", "--kv, else f16", NULL, NULL },
    { "--limit", NULL, OPT_INT, CO(limit), "N", "only the first N prompts", "8 (0: all)", NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--assistant-limit", NULL, OPT_INT, CO(assistant_limit), "N", "embedded model: action exact-match of each plan on\n"
      "the first N held-out dialogues (0: skip)", NULL, NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--root", NULL, OPT_STR, CO(root), "DIR", "sysfs root for the power sources", NULL, NULL, NULL },
    { "--json", NULL, OPT_OUT, CO(json_out), NULL, "write the comparison as JSON to FILE, or to standard output instead\n"
      "of the tables (no FILE, or -)", NULL, NULL, NULL },
    { "--plot", NULL, OPT_STR, CO(plot_out), "FILE.svg", "grouped bars of decode tok/s per prompt (A, B) with KL(A||B)", NULL,
      NULL, NULL, .writes = true },
};

static const cmd_spec COMPARE_SPEC = {
    "cabin compare", "cabin compare [-m MODEL] [-f PROMPTS] --a PLAN --b PLAN [--kv-a F --kv-b F] [-n N] [--seed S]\n"
    "                     [--json [FILE]] [--plot FILE.svg]",
    "Runs the same prompts with the same seed through plan A and plan B, each prompt a\n"
    "fresh chat turn, and prints per prompt: decode tok/s and joules per token of each\n"
    "(measured where a power source can be read, else estimated and marked ~), the KL\n"
    "divergence of B from A and their top-1 agreement teacher-forced on A's tokens (the\n"
    "measure of cabin ppl --kl-base), and whether the replies are the same; then both\n"
    "replies side by side, and a summary: which plan wins each metric on how many\n"
    "prompts, the mean paired difference, and a paired t-test and exact sign test\n"
    "(p < 0.05 significant). On the embedded model, also each plan's action exact-match\n"
    "on held-out dialogues (as cabin eval-assistant).\n",
};

static int compare_parse(int argc, char **argv, compare_cli *c, run_opts *r) {
    *c = (compare_cli){ .limit = 8, .assistant_limit = 50, .root = "/" };
    run_opts_init(r);
    r->s.max_reply_tokens = 48;
    opt_table own = OPT_TABLE(COMPARE_OPTS, c);
    int rc = run_opts_parse_chat(&COMPARE_SPEC, &own, r, argc, argv);
    if (rc) return rc;
    if (c->limit < 0 || c->assistant_limit < 0) {
        fprintf(stderr, "cabin compare: --limit and --assistant-limit must be >= 0\n");
        return OPTS_USAGE;
    }
    return OPTS_OK;
}

// The prompts: -f, or on the embedded model the held-out dialogues' first user turns.
static int compare_prompts(const compare_cli *c, const char *model_path, char ***out, errbuf *err) {
    int n, embedded = c->file ? 0 : eval_is_embedded_file(model_path, err);
    if (embedded < 0) return -1;
    if (c->file) n = compare_read_prompts(c->file, out, err);
    else if (embedded) n = heldout_first_user_turns(CABIN_HELDOUT, c->limit, out, err);
    else return err_set(err, "%s: not the embedded model: give the prompts with -f PROMPTS (one per line)", model_path);
    if (n > 0 && c->limit > 0 && n > c->limit) {
        for (int i = c->limit; i < n; i++) free((*out)[i]);
        n = c->limit;
    }
    return n;
}

static int terminal_width(void) {
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
    return 100;
}

// The tables (unless the JSON goes to stdout), the JSON and the plot; 1 when a file fails.
static int compare_output(const compare_cli *c, const compare_result *res) {
    int rc = 0;
    errbuf err = {{0}};
    if (!opts_out_is_stdout(c->json_out)) {
        strbuf b = {0};
        compare_report(res, terminal_width(), &b);
        fputs(strbuf_str(&b), stdout);
        strbuf_free(&b);
    }
    if (c->json_out) {
        char *js = compare_json(res);
        FILE *f = opts_open_out(c->json_out, &err);
        if (f) fputs(js, f);
        if (!f || opts_close_out(f, c->json_out, &err)) { fprintf(stderr, "cabin compare: %s\n", err.msg); rc = 1; }
        free(js);
    }
    if (c->plot_out) {
        if (compare_plot(res, c->plot_out, &err)) { fprintf(stderr, "cabin compare: %s\n", err.msg); rc = 1; }
        else if (!opts_out_is_stdout(c->json_out)) printf("plot: %s\n", c->plot_out);
    }
    return rc;
}

int cmd_compare(int argc, char **argv) {
    compare_cli c;
    run_opts r;
    int prc = compare_parse(argc, argv, &c, &r);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    char **prompts = NULL;
    int n = compare_prompts(&c, r.s.model_path, &prompts, &err);
    if (n < 0) { fprintf(stderr, "cabin compare: %s\n", err.msg); return 1; }
    power_monitor *pm = power_monitor_open(c.root, &err);
    if (!pm || power_monitor_start(pm, 10, &err)) {
        fprintf(stderr, "cabin compare: %s\n", err.msg);
        power_monitor_close(pm);
        compare_free_prompts(prompts, n);
        return 1;
    }
    compare_opts o = { .base = r.s, .plan = { c.plan_a, c.plan_b }, .kv = { c.kv_a, c.kv_b },
                       .assistant_limit = c.assistant_limit, .free_actions = r.free_actions, .pm = pm };
    compare_result res;
    int rc = compare_run(&o, prompts, n, &res, &err);
    if (rc) fprintf(stderr, "cabin compare: %s\n", err.msg);
    else rc = compare_output(&c, &res);
    compare_result_free(&res);
    compare_free_prompts(prompts, n);
    power_monitor_close(pm);
    return rc ? 1 : 0;
}
