// cabin heatmap: per (layer, tensor kind) quantization sensitivity as a coloured grid, JSON, CSV,
// and a precision plan derived from it (engine/sensitivity.h). Results are cached.
#include "cli/commands.h"
#include "app/eval_text.h"
#include "app/heat_cache.h"
#include "app/heatmap.h"
#include "base/afile.h"
#include "engine/sensitivity.h"
#include "engine/wtype.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Colour depth for the grid: 0 none, 8 or 256.
static int color_depth(const char *mode) {
    if (mode && strcmp(mode, "never") == 0) return 0;
    const char *term = getenv("TERM"), *ct = getenv("COLORTERM");
    bool want = mode && strcmp(mode, "always") == 0;
    if (!want) {
        const char *nc = getenv("NO_COLOR");
        if ((nc && *nc) || !isatty(STDOUT_FILENO) || !term || strcmp(term, "dumb") == 0) return 0;
    }
    if ((term && strstr(term, "256")) || (ct && *ct)) return 256;
    return 8;
}

// 0..1 (cool to hot) -> an escape sequence setting the background.
static const char *heat_color(double x, int depth, char *buf, size_t cap) {
    static const int ramp256[] = { 22, 28, 34, 70, 106, 142, 178, 214, 208, 202, 196, 160 };
    static const int ramp8[] = { 42, 43, 41 };   // green, yellow, red backgrounds
    if (x < 0) x = 0;
    if (x > 1) x = 1;
    if (depth == 256) {
        int i = (int)lround(x * 11);
        snprintf(buf, cap, "\033[48;5;%dm\033[38;5;16m", ramp256[i]);
    } else {
        int i = x < 0.34 ? 0 : x < 0.67 ? 1 : 2;
        snprintf(buf, cap, "\033[%dm\033[30m", ramp8[i]);
    }
    return buf;
}

// Position of a KL value on a log scale between lo and hi.
static double heat_pos(double v, double lo, double hi) {
    if (!(hi > lo)) return 0.5;
    v = v < lo ? lo : v;
    return (log(v) - log(lo)) / (log(hi) - log(lo));
}

static void print_grid(const sensitivity_map *m, int depth) {
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < m->n_layer * TK_LAYER_KINDS; i++) {
        double v = m->cells[i].kl_mean;
        if (v > hi) hi = v;
        if (v > 0 && v < lo) lo = v;
    }
    if (!isfinite(lo)) lo = hi > 0 ? hi : 1e-9;
    printf("mean KL per token (nats) with only that tensor at %s; base mean NLL %.4f over %ld tokens\n",
           wtype_name(m->type), m->base_nll, m->scored);
    printf("layer ");
    for (int k = 0; k < TK_LAYER_KINDS; k++) printf(" %-11s", tensor_kind_name(k));
    printf("\n");
    char esc[48];
    for (int l = 0; l < m->n_layer; l++) {
        printf("%5d ", l);
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            double x = heat_pos(c->kl_mean, lo, hi);
            if (depth) printf(" %s%11.2e\033[0m", heat_color(x, depth, esc, sizeof esc), c->kl_mean);
            else printf(" %10.2e%c", c->kl_mean, x > 0.67 ? '#' : x > 0.34 ? '+' : ' ');
        }
        printf("\n");
    }
    printf("legend: %.2e ", lo);
    for (int i = 0; i <= 10; i++) {
        if (depth) printf("%s  \033[0m", heat_color(i / 10.0, depth, esc, sizeof esc));
        else printf("%c", i > 6 ? '#' : i > 3 ? '+' : '.');
    }
    printf(" %.2e (log scale; hotter = more sensitive%s)\n", hi, depth ? "" : ", # top third, + middle");
}

static int write_csv(const sensitivity_map *m, const char *path, errbuf *err) {
    afile a;
    if (afile_open(&a, path, NULL)) return err_set(err, "%s: cannot write (%s)", path, strerror(errno));
    FILE *f = a.f;
    fprintf(f, "layer,kind,type,kl_mean,kl_max,dnll,top1,n_weights\n");
    for (int l = 0; l < m->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            fprintf(f, "%d,%s,%s,%.9g,%.9g,%.9g,%.6f,%llu\n", l, tensor_kind_name(k), wtype_name(m->type),
                    c->kl_mean, c->kl_max, c->dnll, c->top1, (unsigned long long)c->n_weights);
        }
    return afile_close(&a, ferror(f) != 0, err);
}

typedef struct progress_state { double t0; bool quiet; } progress_state;

static bool show_progress(void *ud, int done, int total, int layer, int kind, const sens_cell *c) {
    progress_state *p = ud;
    if (p->quiet) return true;
    double el = now_sec() - p->t0;
    if (layer < 0) {
        fprintf(stderr, "\rbase run done (%.1f s); %d tensors to try", el, total);
    } else {
        double eta = done > 0 ? el / done * (total - done) : 0;
        int w = 24, fill = total ? done * w / total : w;
        fprintf(stderr, "\r[");
        for (int i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
        fprintf(stderr, "] %3d/%d layer %d %-10s KL %.2e  %.0f s left ", done, total, layer,
                tensor_kind_name(kind), c->kl_mean, eta);
    }
    if (done == total && layer >= 0) fprintf(stderr, "\n");
    return true;
}

typedef struct heatmap_cli_opts {
    const char *file, *type_name, *json_out, *csv_out, *plan_out, *high_name, *color;
    int tokens, window;
    float budget;
    bool no_cache, quiet;
    int type, high;        // wtype of --type and --high, from the names
} heatmap_cli_opts;

#define HO(field) offsetof(heatmap_cli_opts, field)
static const opt_def HEATMAP_OPTS[] = {
    OPT_TEXT_FILE(HO(file), "the text"),
    { "--type", NULL, OPT_STR, HO(type_name), "T", "target type", NULL, NULL, NULL },
    { "--tokens", NULL, OPT_INT, HO(tokens), "N", "tokens of the text to use", NULL, NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--window", NULL, OPT_INT, HO(window), "N", "tokens per window (scored on each window's second half)",
      "the context -c when given, else 128", NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--json", NULL, OPT_OUT, HO(json_out), NULL, "write the map as JSON to FILE, or to standard output instead of\n"
      "the grid (no FILE, or -)", NULL, NULL, NULL },
    { "--csv", NULL, OPT_STR, HO(csv_out), "FILE", "write the map as CSV", NULL, NULL, NULL, .writes = true },
    { "--plan-out", NULL, OPT_STR, HO(plan_out), "FILE", "a precision plan: everything at --type except the most\n"
      "sensitive tensors at --high, greedy by KL removed per extra\nbit, within --budget bits per weight over the layer matrices",
      NULL, NULL, NULL, .writes = true },
    { "--budget", NULL, OPT_FLOAT, HO(budget), "BPW", "e.g. 5.0 (q4_0 is 4.5, q8_0 8.5, f16 16)", NULL, NULL, NULL, OPT_RANGE(1, 32) },
    { "--high", NULL, OPT_STR, HO(high_name), "T", "the higher type for the plan (more bits than --type): q8_0,\nf16, or a K-quant such as q6_k over --type q4_k", NULL, NULL, NULL },
    { "--color", NULL, OPT_STR, HO(color), "WHEN", "auto (NO_COLOR and non-terminals turn it off) | always | never", NULL, NULL, NULL },
    { "--no-cache", NULL, OPT_FLAG, HO(no_cache), NULL, "recompute", NULL, NULL, NULL },
    { "--quiet", "-q", OPT_FLAG, HO(quiet), NULL, "no progress", NULL, NULL, NULL },
};

static const cmd_spec HEATMAP_SPEC = {
    "cabin heatmap", "cabin heatmap [-m MODEL] [-f TEXT] [--type q4_0] [--tokens N] [--window N]\n"
    "                     [--json [FILE]] [--csv FILE] [--plan-out PLAN.json --budget BPW]",
    "Quantization sensitivity per (layer, tensor kind): the text runs once at the file's\n"
    "precision (the base: top-64 log-probs per token), then once per layer matrix with\n"
    "ONLY that tensor at --type; each cell is the mean KL divergence from the base (and\n"
    "the change in mean NLL in the JSON/CSV). Results are cached in\n"
    "$XDG_CACHE_HOME/cabin/heatmap (key: model path, size, mtime; text; type; tokens; window).\n"
    "Without -f, the embedded model uses its held-out dialogues in its chat layout.\n",
};

static int heatmap_parse(int argc, char **argv, heatmap_cli_opts *o, run_opts *r) {
    *o = (heatmap_cli_opts){ .type_name = "q4_0", .high_name = "q8_0", .color = "auto", .tokens = 512 };
    run_opts_init(r);
    opt_table own = OPT_TABLE(HEATMAP_OPTS, o);
    int rc = run_opts_parse_with(&HEATMAP_SPEC, &own, r, argc, argv);
    if (rc) return rc;
    o->type = wtype_from_name(o->type_name);
    o->high = wtype_from_name(o->high_name);
    if (!o->window) o->window = r->s.n_ctx > 0 ? r->s.n_ctx : 128;   // a window is a whole context
    if (o->type < 0) { fprintf(stderr, "cabin heatmap: --type %s: unknown type\n", o->type_name); return OPTS_USAGE; }
    if (o->high < 0 || !wtype_get((uint32_t)o->high)->from_f32 ||
        (o->plan_out && wtype_bpw((uint32_t)o->high) <= wtype_bpw((uint32_t)o->type))) {
        fprintf(stderr, "cabin heatmap: --high %s: need a type cabin produces with more bits than --type %s (q8_0, q6_k, f16, ...)\n",
                o->high_name, o->type_name);
        return OPTS_USAGE;
    }
    if (o->window < 8 || o->tokens < o->window) { fprintf(stderr, "cabin heatmap: need a window of at least 8 tokens and --tokens >= the window\n"); return OPTS_USAGE; }
    if (o->plan_out && !(o->budget > 0)) { fprintf(stderr, "cabin heatmap: --plan-out needs --budget BPW\n"); return OPTS_USAGE; }
    if (r->s.n_ctx == 0) r->s.n_ctx = o->window;
    if (r->s.n_ctx < o->window) {
        fprintf(stderr, "cabin heatmap: --window %d is longer than the context (-c %d)\n", o->window, r->s.n_ctx);
        return OPTS_USAGE;
    }
    if (r->s.n_batch > o->window) r->s.n_batch = o->window;
    return OPTS_OK;
}

// The map: from the cache when it holds this (model, text, type, tokens, window), else measured
// (and cached). m is made here (zeroed on entry). -1 with err.
static int heatmap_compute(session *s, const char *model_path, const heatmap_cli_opts *o, const char *text,
                           sensitivity_map *m, errbuf *err) {
    heat_cache_entry ce;
    errbuf ce_err = {{0}};
    bool cache = !o->no_cache && heat_cache_find(&ce, model_path, (uint32_t)o->type, text, o->tokens, o->window, &ce_err) == 0
                 && ce.path[0];
    int n_layer = session_model(s)->hp.n_layer;
    if (cache && access(ce.path, F_OK) == 0) {
        if (heat_cache_load(&ce, m, n_layer, (uint32_t)o->type, &ce_err) == 0) {
            if (!o->quiet) fprintf(stderr, "cached: %s\n", ce.path);
            return 0;
        }
        fprintf(stderr, "cabin heatmap: not using the cache: %s\n", ce_err.msg);
    }
    progress_state ps = { now_sec(), o->quiet };
    heatmap_opts ho = { .type = (uint32_t)o->type, .max_tokens = o->tokens, .ctx = o->window,
                        .progress = show_progress, .ud = &ps };
    if (heatmap_measure(s, text, &ho, m, err)) return -1;   // m is left empty (freeing it is harmless)
    if (!o->quiet) fprintf(stderr, "%d tensors in %.1f s\n", m->n_layer * TK_LAYER_KINDS, now_sec() - ps.t0);
    if (!o->no_cache && ce.path[0] && heat_cache_save(&ce, m, &ce_err))
        fprintf(stderr, "cabin heatmap: cache not written: %s\n", ce_err.msg);
    return 0;
}

// The grid (unless the JSON goes to stdout), the JSON and CSV files, and the plan.
static int heatmap_report(const sensitivity_map *m, const heatmap_cli_opts *o, errbuf *err) {
    if (!opts_out_is_stdout(o->json_out)) print_grid(m, color_depth(o->color));
    if (o->json_out) {
        char *js = sensitivity_to_json(m);
        FILE *f = opts_open_out(o->json_out, err);
        int rc = f ? 0 : -1;
        if (f) {
            fprintf(f, "%s\n", js);
            rc = opts_close_out(f, o->json_out, err);
        }
        free(js);
        if (rc) return rc;
    }
    if (o->csv_out && write_csv(m, o->csv_out, err)) return -1;
    if (!o->plan_out) return 0;
    precision_plan p;
    double bpw = 0;
    int kept = 0;
    if (sensitivity_plan(m, (uint32_t)o->high, o->budget, &p, &bpw, &kept, err)) return -1;
    if (plan_save(&p, o->plan_out, err)) return -1;
    double kl_left = 0, kl_all = 0;
    for (int l = 0; l < m->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            kl_all += sens_at(m, l, k)->kl_mean;
            if (plan_type_for(&p, l, k) == (uint32_t)o->type) kl_left += sens_at(m, l, k)->kl_mean;
        }
    printf("plan %s: %d of %d tensors at %s, the rest %s: %.3f bits/weight (budget %.3f); "
           "summed single-tensor KL %.3g -> %.3g\n", o->plan_out, kept, m->n_layer * TK_LAYER_KINDS,
           wtype_name((uint32_t)o->high), wtype_name((uint32_t)o->type), bpw, o->budget, kl_all, kl_left);
    return 0;
}

int cmd_heatmap(int argc, char **argv) {
    heatmap_cli_opts o;
    run_opts r;
    int prc = heatmap_parse(argc, argv, &o, &r);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    char *text = o.file ? read_file_all(o.file, NULL, &err) : NULL;
    if (o.file && !text) { fprintf(stderr, "cabin heatmap: %s\n", err.msg); return 1; }
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin heatmap: %s\n", err.msg); free(text); return 1; }
    const char *what = o.file;
    bool prose = false;   // the built-in prose: maybe not the model's domain
    int rc = 0;
    if (!text && !(text = eval_default_text(s, r.s.template_name, &what, &prose, &err))) rc = -1;
    sensitivity_map m;
    memset(&m, 0, sizeof m);
    if (!rc && !o.file && !o.quiet) fprintf(stderr, "text: %s\n", what);
    if (!rc) rc = heatmap_compute(s, r.s.model_path, &o, text, &m, &err);
    if (!rc && prose) eval_note_domain("cabin heatmap", exp(m.base_nll), session_n_vocab(s));
    if (!rc) rc = heatmap_report(&m, &o, &err);
    if (rc) fprintf(stderr, "cabin heatmap: %s\n", err.msg);
    free(text);
    sensitivity_map_free(&m);
    session_close(s);
    return rc ? 1 : 0;
}
