// cabin power: the machine's power sources and their draw. cabin sweep: speed, energy, size and
// quality for each precision (and backend), with the Pareto frontier marked.
#include "cli/commands.h"
#include "engine/json_text.h"
#include "app/eval_text.h"
#include "engine/hwstate.h"
#include "engine/quality.h"
#include "engine/telemetry.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct power_opts { const char *root; int seconds; float hz, wpc; } power_opts;

#define PWO(field) offsetof(power_opts, field)
static const opt_def POWER_OPTS[] = {
    { "--root", NULL, OPT_STR, PWO(root), "DIR", "read sysfs under DIR instead of / (fixture trees)", "", NULL, NULL },
    { "--seconds", NULL, OPT_INT, PWO(seconds), "N", "sampling time (0 = list only)", NULL, NULL, NULL, OPT_RANGE(0, 86400) },
    { "--hz", NULL, OPT_FLOAT, PWO(hz), "H", "samples per second", NULL, NULL, NULL, OPT_RANGE(0.1, 1000) },
    { "--watts-per-core", NULL, OPT_FLOAT, PWO(wpc), "W", "for the estimate", "$CABIN_WATTS_PER_CORE or 15", NULL, NULL, OPT_RANGE(0.01, 10000) },
};

static const cmd_spec POWER_SPEC = {
    "cabin power", "cabin power [--root DIR] [--seconds N] [--hz H] [--watts-per-core W]",
    "Lists the power sources this machine has (RAPL, hwmon, NVIDIA NVML, batteries) with\n"
    "whether each is measured and readable (or why not), then samples every readable\n"
    "source for N seconds and prints watts once a second and joules at the end. The\n"
    "estimate (this process's CPU time x watts per core) is always listed and always\n"
    "labelled estimated; it is the total only where nothing can be measured. The\n"
    "hardware line: CPU clock now/max, thermal throttle count, the hottest thermal zone,\n"
    "battery or mains (engine/hwstate.h; \"?\" where it cannot be read, and why).\n",
};

int cmd_power(int argc, char **argv) {
    power_opts o = { .root = "/", .seconds = 3, .hz = 10, .wpc = -1 };
    opt_table own = OPT_TABLE(POWER_OPTS, &o);
    int prc = opts_parse(&POWER_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *root = o.root;
    int seconds = o.seconds;
    float hz = o.hz, wpc = o.wpc;
    if (seconds < 0 || hz <= 0) { fprintf(stderr, "cabin power: --seconds must be >= 0 and --hz > 0\n"); return 2; }
    errbuf err = {{0}};
    power_monitor *pm = power_monitor_open(root, &err);
    if (!pm) { fprintf(stderr, "cabin power: %s\n", err.msg); return 1; }
    if (wpc >= 0) power_monitor_set_watts_per_core(pm, wpc);
    power_reading rd[TEL_MAX_SOURCES];
    int n = power_monitor_read(pm, rd, TEL_MAX_SOURCES);
    bool measured = false;
    const char *from = power_monitor_total_from(pm, &measured);
    printf("%-32s %-8s %-9s %-7s %s\n", "source", "kind", "label", "reads", "status");
    for (int i = 0; i < n; i++)
        printf("%-32s %-8s %-9s %-7s %s%s\n", rd[i].name, power_kind_name(rd[i].kind),
               rd[i].measured ? "measured" : "estimated", rd[i].counter ? "energy" : "power",
               rd[i].readable ? "readable" : rd[i].reason,
               rd[i].kind == PWR_ESTIMATE ? (measured ? "" : " (the total)") : "");
    printf("total: %s (%s)", from, measured ? "measured" : "estimated");
    if (!measured) printf(", %.1f W per busy core", power_monitor_watts_per_core(pm));
    printf("\n");
    hw_state hw;
    hw_state_read(root, &hw);
    char hw_line[200];
    hw_state_line(&hw, hw_line, sizeof hw_line);
    printf("hardware: %s\n", hw_line);
    if (hw.why[0]) printf("hardware unknown: %s\n", hw.why);
    int rc = 0;
    if (seconds > 0) {
        if (power_monitor_start(pm, hz, &err)) { fprintf(stderr, "cabin power: %s\n", err.msg); power_monitor_close(pm); return 1; }
        power_mark m0, m1;
        power_monitor_mark(pm, &m0);
        for (int s = 1; s <= seconds; s++) {
            sleep_ms(1000.0);
            n = power_monitor_read(pm, rd, TEL_MAX_SOURCES);
            printf("t=%2ds", s);
            for (int i = 0; i < n; i++)
                if (rd[i].readable) printf("  %s %.2f W%s", rd[i].name, rd[i].watts, rd[i].measured ? "" : " (estimated)");
            printf("\n");
            fflush(stdout);
        }
        power_monitor_mark(pm, &m1);
        power_monitor_stop(pm);
        n = power_monitor_read(pm, rd, TEL_MAX_SOURCES);
        double dt = m1.t - m0.t;
        for (int i = 0; i < n && i < m1.n; i++)
            if (rd[i].readable)
                printf("%-32s %10.3f J  %8.2f W mean  (%s, %llu samples)\n", rd[i].name, m1.joules[i] - m0.joules[i],
                       (m1.joules[i] - m0.joules[i]) / dt, rd[i].measured ? "measured" : "estimated",
                       (unsigned long long)rd[i].samples);
        printf("total (%s, %s): %.3f J over %.2f s = %.2f W\n", from, measured ? "measured" : "estimated",
               m1.total_j - m0.total_j, dt, (m1.total_j - m0.total_j) / dt);
    }
    power_monitor_close(pm);
    return rc;
}

// ---- sweep ----

typedef struct sweep_point {
    char backend[32], weights[160];
    double tps, ttft_ms, j_per_tok, kl, ppl;
    int prompt_tokens, gen_tokens;   // of the last timed run: the depth its decode ran at
    int n_vocab;
    bool j_measured;
    uint64_t weight_bytes, kv_bytes;
    bool pareto, ok;
    char error[512];
} sweep_point;

static void add_bytes(tensor *t, void *ud) { *(uint64_t *)ud += t->n_bytes; }

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Speed, energy and size of one combination: the median over reps runs of the same completion.
static int sweep_measure(run_opts *r, const char *prompt, int n_gen, int reps, power_monitor *pm,
                         sweep_point *pt, errbuf *err) {
    session *s = session_open(&r->s, err);
    if (!s) return -1;
    session_set_power(s, pm);
    // One untimed completion first: pages the weights in and lets the caches, the allocator and
    // the CPU's clock settle, so the first timed run is not an outlier (cabin bench warms up too).
    int rc = session_complete(s, prompt, n_gen, NULL, NULL, err);
    double tps[16], ttft[16], jpt[16];
    if (reps > 16) reps = 16;
    session_stats st;
    for (int i = 0; i < reps && !rc; i++) {
        session_reset(s);
        rc = session_complete(s, prompt, n_gen, NULL, NULL, err);
        session_get_stats(s, &st);
        tps[i] = st.decode_tps;
        ttft[i] = st.ttft_ms;
        jpt[i] = st.energy.decode_j_per_token;
    }
    if (!rc) {
        pt->tps = median_of(tps, reps);
        pt->ttft_ms = median_of(ttft, reps);
        pt->j_per_tok = median_of(jpt, reps);
        pt->j_measured = st.energy.total_measured;
        pt->prompt_tokens = st.prompt_tokens;
        pt->gen_tokens = st.gen_tokens;
        pt->kv_bytes = st.kv_bytes;
        pt->weight_bytes = 0;
        model_for_each_tensor((model *)session_model(s), add_bytes, &pt->weight_bytes);
    }
    session_close(s);
    return rc;
}

static int sweep_quality(run_opts *r, const char *text, int tokens, int ctx, quality_base *save,
                         const quality_base *cmp, sweep_point *pt, errbuf *err) {
    session *s = session_open(&r->s, err);
    if (!s) return -1;
    int32_t *ids = NULL;
    int n = session_tokenize(s, text, false, &ids, err);
    int rc = n < 0 ? -1 : 0;
    if (!rc) {
        if (n > tokens) n = tokens;
        int body = ctx - (tokenizer_bos(session_model(s)->tok) >= 0 ? 1 : 0);
        quality_opts qo = { .ctx = ctx, .max_chunks = n / body, .save = save, .cmp = cmp };
        quality_result q = {0};
        rc = quality_eval(s, ids, n, &qo, &q, err);
        pt->kl = cmp ? q.kl_mean : 0.0;
        pt->ppl = q.ppl;
        pt->n_vocab = session_n_vocab(s);
    }
    free(ids);
    session_close(s);
    return rc;
}

// i dominated by j: j no worse in speed, energy, size and quality, and better in one.
static bool dominated(const sweep_point *i, const sweep_point *j) {
    double bi = (double)(i->weight_bytes + i->kv_bytes), bj = (double)(j->weight_bytes + j->kv_bytes);
    bool no_worse = j->tps >= i->tps && j->j_per_tok <= i->j_per_tok && bj <= bi && j->kl <= i->kl;
    bool better = j->tps > i->tps || j->j_per_tok < i->j_per_tok || bj < bi || j->kl < i->kl;
    return no_worse && better;
}

static char *sweep_json(const sweep_point *p, int n, const char *model, const char *energy_from) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddStringToObject(root, "energy_from", energy_from);
    cJSON *arr = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "backend", p[i].backend);
        cJSON_AddStringToObject(o, "weights", p[i].weights);
        cJSON_AddBoolToObject(o, "ok", p[i].ok);
        if (!p[i].ok) cJSON_AddStringToObject(o, "error", p[i].error);
        cJSON_AddNumberToObject(o, "decode_tps", p[i].tps);
        cJSON_AddNumberToObject(o, "ttft_ms", p[i].ttft_ms);
        cJSON_AddNumberToObject(o, "prompt_tokens", p[i].prompt_tokens);
        cJSON_AddNumberToObject(o, "gen_tokens", p[i].gen_tokens);
        cJSON_AddNumberToObject(o, "j_per_token", p[i].j_per_tok);
        cJSON_AddBoolToObject(o, "energy_measured", p[i].j_measured);
        cJSON_AddNumberToObject(o, "weight_bytes", (double)p[i].weight_bytes);
        cJSON_AddNumberToObject(o, "kv_bytes", (double)p[i].kv_bytes);
        cJSON_AddNumberToObject(o, "kl", p[i].kl);
        cJSON_AddNumberToObject(o, "ppl", p[i].ppl);
        cJSON_AddBoolToObject(o, "pareto", p[i].pareto);
        cJSON_AddItemToArray(arr, o);
    }
    return json_text(root, false);
}

typedef struct sweep_opts {
    const char *file, *weights, *kv_list, *backends, *json_out, *csv_out, *root;
    int n_gen, tokens, kl_ctx, reps;
} sweep_opts;

#define SO(field) offsetof(sweep_opts, field)
static const opt_def SWEEP_OPTS[] = {
    OPT_TEXT_FILE(SO(file), "text for KL (its first 200 bytes are the prompt)"),
    { "--weights", NULL, OPT_LIST, SO(weights), "LIST", "precisions or plan files, comma-separated", NULL, NULL, NULL },
    { "--kv-list", NULL, OPT_LIST, SO(kv_list), "LIST", "KV cache formats (only f16 so far)", "--kv, else f16", NULL, NULL },
    { "--backends", NULL, OPT_LIST, SO(backends), "LIST", "backends, comma-separated", "--backend, else cpu", NULL, NULL },
    { "--n-gen", "-n", OPT_INT, SO(n_gen), "N", "tokens generated for the speed figures", NULL, NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--reps", "-r", OPT_INT, SO(reps), "N", "runs per combination; speed and energy are the median (at most 16)", NULL, NULL, NULL, OPT_RANGE(1, 16) },
    { "--tokens", NULL, OPT_INT, SO(tokens), "N", "text tokens for KL", NULL, NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--kl-ctx", NULL, OPT_INT, SO(kl_ctx), "N", "window for KL", NULL, NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--root", NULL, OPT_STR, SO(root), "DIR", "sysfs root for the power sources", NULL, NULL, NULL },
    { "--json", NULL, OPT_OUT, SO(json_out), NULL, "write the points as JSON to FILE, or to standard output instead\n"
      "of the table (no FILE, or -)", NULL, NULL, NULL },
    { "--csv", NULL, OPT_STR, SO(csv_out), "FILE|-", "write the points as CSV ('-': standard output, instead of the table)", NULL, NULL, NULL, .writes = true },
};

static const cmd_spec SWEEP_SPEC = {
    "cabin sweep", "cabin sweep [-m MODEL] [-f TEXT] [--weights f16,q8_0,q4_0,PLAN.json] [--backends cpu,vulkan]\n"
    "                   [--json [FILE]] [--csv FILE|-]",
    "For each combination of weights and backend: decode tok/s, time to first token,\n"
    "joules per decoded token (measured where a power source can be read, else\n"
    "estimated from CPU time, and labelled so), weight + KV bytes, and the mean KL\n"
    "over the text against the highest-precision combination. The table marks the\n"
    "Pareto frontier (*): no other point is at least as good in speed, energy, size and\n"
    "quality and better in one.\n",
};

// The lists to sweep over, split from the options.
typedef struct sweep_lists { char *w[32], *b[8]; int nw, nb; } sweep_lists;

static int sweep_parse(int argc, char **argv, sweep_opts *o, run_opts *r, sweep_lists *l) {
    *o = (sweep_opts){ .weights = "f16,q8_0,q4_0", .root = "/", .n_gen = 64, .tokens = 256, .kl_ctx = 128, .reps = 1 };
    run_opts_init(r);
    const char *backend_default = r->s.backend.name, *kv_default = r->s.kv_format;
    opt_table own = OPT_TABLE(SWEEP_OPTS, o);
    int rc = run_opts_parse_with(&SWEEP_SPEC, &own, r, argc, argv);
    if (rc) return rc;
    // a --backend or --kv given is a list of one
    if (!o->backends) o->backends = r->s.backend.name != backend_default ? r->s.backend.name : "cpu";
    if (!o->kv_list) o->kv_list = r->s.kv_format != kv_default ? r->s.kv_format : "f16";
    char *kvs[8];
    int n_kv = opts_split_list(o->kv_list, kvs, 8);
    for (int i = 0; i < n_kv && !rc; i++)
        if (strcmp(kvs[i], "f16") != 0) {
            fprintf(stderr, "cabin sweep: KV format %s: only f16 is available so far\n", kvs[i]);
            rc = OPTS_USAGE;
        }
    opts_free_list(kvs, n_kv);
    if (rc) return rc;
    if (o->reps < 1 || o->reps > 16) { fprintf(stderr, "cabin sweep: -r must be 1..16\n"); return OPTS_USAGE; }
    if (o->n_gen < 2 || o->kl_ctx < 8 || o->tokens < o->kl_ctx) {
        fprintf(stderr, "cabin sweep: need -n >= 2, --kl-ctx >= 8, --tokens >= --kl-ctx\n");
        return OPTS_USAGE;
    }
    l->nw = opts_split_list(o->weights, l->w, 32);
    l->nb = opts_split_list(o->backends, l->b, 8);
    if (l->nw == 0 || l->nb == 0) {
        fprintf(stderr, "cabin sweep: empty --weights or --backends list\n");
        opts_free_list(l->w, l->nw);
        opts_free_list(l->b, l->nb);
        return OPTS_USAGE;
    }
    return OPTS_OK;
}

// Speed and energy of every combination, then KL against the one with the most weight bytes
// (the reference), then the frontier. Returns the reference's index, or -1 with err.
static int sweep_run(run_opts *r, const sweep_opts *o, const sweep_lists *l, const char *text, power_monitor *pm,
                     sweep_point *pts, errbuf *err) {
    int np = l->nw * l->nb;
    char prompt[512];
    snprintf(prompt, sizeof prompt, "%.200s", text);
    int ref = -1;
    for (int b = 0; b < l->nb; b++)
        for (int w = 0; w < l->nw; w++) {
            sweep_point *p = &pts[b * l->nw + w];
            snprintf(p->backend, sizeof p->backend, "%s", l->b[b]);
            snprintf(p->weights, sizeof p->weights, "%s", l->w[w]);
            r->s.backend.name = l->b[b];
            r->s.precision = l->w[w];
            fprintf(stderr, "\r[%d/%d] %s %s: speed and energy      ", b * l->nw + w + 1, np, l->b[b], l->w[w]);
            if (sweep_measure(r, prompt, o->n_gen, o->reps, pm, p, err)) {
                snprintf(p->error, sizeof p->error, "%s", err->msg);
                continue;
            }
            p->ok = true;
            if (ref < 0 || p->weight_bytes > pts[ref].weight_bytes) ref = b * l->nw + w;
        }
    if (ref < 0) { err_set(err, "no combination ran: %s", pts[0].error); return -1; }
    quality_base base = {0};
    r->s.backend.name = pts[ref].backend;
    r->s.precision = pts[ref].weights;
    fprintf(stderr, "\r[ref] %s %s: base log-probs            ", pts[ref].backend, pts[ref].weights);
    if (sweep_quality(r, text, o->tokens, o->kl_ctx, &base, NULL, &pts[ref], err)) {
        err_prefix(err, "%s %s", pts[ref].backend, pts[ref].weights);
        quality_base_free(&base);
        return -1;
    }
    for (int i = 0; i < np; i++) {
        if (!pts[i].ok || i == ref) continue;
        r->s.backend.name = pts[i].backend;
        r->s.precision = pts[i].weights;
        fprintf(stderr, "\r[%d/%d] %s %s: KL                    ", i + 1, np, pts[i].backend, pts[i].weights);
        if (sweep_quality(r, text, o->tokens, o->kl_ctx, NULL, &base, &pts[i], err)) {
            pts[i].ok = false;
            snprintf(pts[i].error, sizeof pts[i].error, "%s", err->msg);
        }
    }
    fprintf(stderr, "\r%60s\r", "");
    quality_base_free(&base);
    for (int i = 0; i < np; i++) {
        if (!pts[i].ok) continue;
        pts[i].pareto = true;
        for (int j = 0; j < np && pts[i].pareto; j++)
            if (j != i && pts[j].ok && dominated(&pts[i], &pts[j])) pts[i].pareto = false;
    }
    return ref;
}

static void sweep_table(const sweep_point *pts, int np, int ref, const char *model_path, const char *from, bool measured) {
    printf("model %s; energy: %s (%s); KL vs %s %s\n", model_path, from, measured ? "measured" : "estimated",
           pts[ref].backend, pts[ref].weights);
    printf("| %-8s | %-18s | %12s | %8s | %14s | %9s | %9s | %7s |\n", "backend", "weights", "decode tok/s",
           "TTFT ms", measured ? "J/token" : "J/token (est)", "weight MiB", "KV MiB", "KL");
    for (int i = 0; i < np; i++) {
        const sweep_point *p = &pts[i];
        if (!p->ok) { printf("| %-8s | %-18.18s | failed: %s\n", p->backend, p->weights, p->error); continue; }
        printf("| %-8s | %-18.18s | %12.2f | %8.1f | %14.4f | %10.2f | %9.2f | %7.4f |%s\n", p->backend, p->weights,
               p->tps, p->ttft_ms, p->j_per_tok, p->weight_bytes / 1048576.0, p->kv_bytes / 1048576.0, p->kl,
               p->pareto ? " * frontier" : "");
    }
    printf("* on the Pareto frontier: no other combination as fast, as frugal, as small and as close to the reference\n");
}

static int sweep_csv(const sweep_point *pts, int np, const char *path, errbuf *err) {
    FILE *f = opts_open_out(path, err);
    if (!f) return -1;
    fprintf(f, "backend,weights,decode_tps,ttft_ms,j_per_token,energy_measured,weight_bytes,kv_bytes,kl,pareto\n");
    for (int i = 0; i < np; i++)
        if (pts[i].ok)
            fprintf(f, "%s,\"%s\",%.4f,%.3f,%.6f,%d,%llu,%llu,%.8f,%d\n", pts[i].backend, pts[i].weights,
                    pts[i].tps, pts[i].ttft_ms, pts[i].j_per_tok, pts[i].j_measured,
                    (unsigned long long)pts[i].weight_bytes, (unsigned long long)pts[i].kv_bytes, pts[i].kl,
                    pts[i].pareto);
    return opts_close_out(f, path, err);
}

// The table (unless JSON or CSV go to stdout), the JSON and the CSV; 1 when a file cannot be written.
static int sweep_report(const sweep_point *pts, int np, int ref, const sweep_opts *o, const char *model_path,
                        const char *from, bool measured) {
    if (!opts_out_is_stdout(o->json_out) && !opts_out_is_stdout(o->csv_out))
        sweep_table(pts, np, ref, model_path, from, measured);
    int rc = 0;
    errbuf err = {{0}};
    if (o->json_out) {
        char *js = sweep_json(pts, np, model_path, from);
        FILE *f = opts_open_out(o->json_out, &err);
        if (f) fprintf(f, "%s\n", js);
        if (!f || opts_close_out(f, o->json_out, &err)) { fprintf(stderr, "cabin sweep: %s\n", err.msg); rc = 1; }
        free(js);
    }
    if (o->csv_out && sweep_csv(pts, np, o->csv_out, &err)) { fprintf(stderr, "cabin sweep: %s\n", err.msg); rc = 1; }
    return rc;
}

int cmd_sweep(int argc, char **argv) {
    sweep_opts o;
    run_opts r;
    sweep_lists l;
    int prc = sweep_parse(argc, argv, &o, &r, &l);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    const char *what = o.file;
    bool prose = false;   // the built-in prose: maybe not the model's domain
    char *text = o.file ? read_file_all(o.file, NULL, &err) : eval_default_text_for_file(r.s.model_path, r.s.template_name, &what, &prose, &err);
    power_monitor *pm = text ? power_monitor_open(o.root, &err) : NULL;
    if (!text || !pm || power_monitor_start(pm, 10, &err)) {
        fprintf(stderr, "cabin sweep: %s\n", err.msg);
        power_monitor_close(pm);
        free(text);
        opts_free_list(l.w, l.nw);
        opts_free_list(l.b, l.nb);
        return 1;
    }
    bool measured = false;
    const char *from = power_monitor_total_from(pm, &measured);
    r.s.sampling.temp = 0.0f;
    r.s.ignore_eog = true;
    // room for the prompt (at most 200 bytes: 201 tokens with BOS), the generation and the KL windows
    if (r.s.n_ctx < 256 + o.n_gen + o.kl_ctx) r.s.n_ctx = 256 + o.n_gen + o.kl_ctx;
    int np = l.nw * l.nb;
    sweep_point *pts = xcalloc((size_t)np, sizeof *pts);
    int ref = sweep_run(&r, &o, &l, text, pm, pts, &err);
    int rc = 0;
    if (ref < 0) {
        fprintf(stderr, "\ncabin sweep: %s\n", err.msg);
        rc = 1;
    } else {
        rc = sweep_report(pts, np, ref, &o, r.s.model_path, from, measured);
        if (!o.file) fprintf(stderr, "text: %s\n", what);
        if (prose) eval_note_domain("cabin sweep", pts[ref].ppl, pts[ref].n_vocab);
    }
    opts_free_list(l.w, l.nw);
    opts_free_list(l.b, l.nb);
    free(pts);
    free(text);
    power_monitor_close(pm);
    return rc;
}
