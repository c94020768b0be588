// cabin power: the machine's power sources and their draw. cabin sweep: speed, energy, size and
// quality for each precision (and backend), with the Pareto frontier marked.
#include "app/commands.h"
#include "engine/quality.h"
#include "engine/telemetry.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int cmd_power(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin power", false };
    const char *root = "/";
    int seconds = 3;
    float hz = 10, wpc = -1;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin power [--root DIR] [--seconds N] [--hz H] [--watts-per-core W]\n\n"
                   "Lists the power sources this machine has (RAPL, hwmon, NVIDIA NVML, batteries) with\n"
                   "whether each is measured and readable (or why not), then samples every readable\n"
                   "source for N seconds and prints watts once a second and joules at the end. The\n"
                   "estimate (this process's CPU time x watts per core) is always listed and always\n"
                   "labelled estimated; it is the total only where nothing can be measured.\n"
                   "  --root DIR            read sysfs under DIR instead of / (fixture trees)\n"
                   "  --seconds N           sampling time (default 3; 0 = list only)\n"
                   "  --hz H                samples per second (default 10)\n"
                   "  --watts-per-core W    for the estimate (default $CABIN_WATTS_PER_CORE or 15)\n");
            return 0;
        }
        if (arg_str(&a, "--root", NULL, &root)) continue;
        if (arg_int(&a, "--seconds", NULL, &seconds)) continue;
        if (arg_float(&a, "--hz", NULL, &hz)) continue;
        if (arg_float(&a, "--watts-per-core", NULL, &wpc)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
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
    bool j_measured;
    uint64_t weight_bytes, kv_bytes;
    bool pareto, ok;
    char error[512];
} sweep_point;

static void add_bytes(tensor *t, void *ud) { *(uint64_t *)ud += t->n_bytes; }

static const char *DEFAULT_TEXT =
    "The cabin assistant keeps the car comfortable: it sets the temperature, opens the windows, "
    "plays music and reads messages aloud. Every answer it gives names one action and its slots. ";

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
    char *t = cJSON_Print(root);
    cJSON_Delete(root);
    char *copy = xstrdup(t);
    cJSON_free(t);
    return copy;
}

// Splits a comma list into at most max malloc'd items (the string is copied).
static int split_list(const char *s, char **out, int max) {
    int n = 0;
    char *copy = xstrdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        if (*t) out[n++] = xstrdup(t);
    free(copy);
    return n;
}

int cmd_sweep(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin sweep", false };
    run_opts r;
    run_opts_init(&r);
    const char *file = NULL, *weights = "f16,q8_0,q4_0", *kv = "f16", *backends = "cpu";
    const char *json_out = NULL, *csv_out = NULL, *root = "/";
    int n_gen = 64, tokens = 256, ctx = 128, reps = 1;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin sweep -m MODEL [-f TEXT] [--weights f16,q8_0,q4_0,PLAN.json] [--kv f16]\n"
                   "                   [--backend cpu] [--json FILE|-] [--csv FILE|-]\n\n"
                   "For each combination of weights and backend: decode tok/s, time to first token,\n"
                   "joules per decoded token (measured where a power source can be read, else\n"
                   "estimated from CPU time, and labelled so), weight + KV bytes, and the mean KL\n"
                   "over the text against the highest-precision combination. The table marks the\n"
                   "Pareto frontier (*): no other point is at least as good in speed, energy, size and\n"
                   "quality and better in one.\n"
                   "  -f, --file TEXT   text for KL (default: a short built-in paragraph)\n"
                   "  --weights LIST    precisions or plan files, comma-separated (default f16,q8_0,q4_0)\n"
                   "  --kv LIST         KV cache formats (only f16 so far)\n"
                   "  --backend LIST    backends (default cpu)\n"
                   "  -n N              tokens generated for the speed figures (default 64)\n"
                   "  -r N              runs per combination; speed and energy are the median (default 1, at most 16)\n"
                   "  --tokens N        text tokens for KL (default 256); --kl-ctx N window (default 128)\n"
                   "  --root DIR        sysfs root for the power sources (default /)\n"
                   "  --json FILE|-     write the points as JSON ('-': stdout, instead of the table)\n"
                   "  --csv FILE|-      write the points as CSV\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (arg_str(&a, "-f", "--file", &file)) continue;
        if (arg_str(&a, "--weights", NULL, &weights)) continue;
        if (arg_str(&a, "--kv", NULL, &kv)) continue;
        if (arg_str(&a, "--backend", NULL, &backends)) continue;
        if (arg_int(&a, "-n", "--n-gen", &n_gen)) continue;
        if (arg_int(&a, "--tokens", NULL, &tokens)) continue;
        if (arg_int(&a, "-r", "--reps", &reps)) continue;
        if (arg_int(&a, "--kl-ctx", NULL, &ctx)) continue;
        if (arg_str(&a, "--root", NULL, &root)) continue;
        if (arg_str(&a, "--json", NULL, &json_out)) continue;
        if (arg_str(&a, "--csv", NULL, &csv_out)) continue;
        if (run_opts_parse(&r, &a)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    char *kvs[8];
    int n_kv = split_list(kv, kvs, 8);
    for (int i = 0; i < n_kv; i++)
        if (strcmp(kvs[i], "f16") != 0) {
            fprintf(stderr, "cabin sweep: --kv %s: only f16 is available so far\n", kvs[i]);
            for (int k = 0; k < n_kv; k++) free(kvs[k]);
            return 2;
        }
    for (int k = 0; k < n_kv; k++) free(kvs[k]);
    if (reps < 1 || reps > 16) { fprintf(stderr, "cabin sweep: -r must be 1..16\n"); return 2; }
    if (n_gen < 2 || ctx < 8 || tokens < ctx) { fprintf(stderr, "cabin sweep: need -n >= 2, --kl-ctx >= 8, --tokens >= --kl-ctx\n"); return 2; }
    char *wl[32], *bl[8];
    int nw = split_list(weights, wl, 32), nb = split_list(backends, bl, 8);
    if (nw == 0 || nb == 0) { fprintf(stderr, "cabin sweep: empty --weights or --backend list\n"); return 2; }
    errbuf err = {{0}};
    char *text = NULL;
    if (file && !(text = read_file_all(file, NULL, &err))) { fprintf(stderr, "cabin sweep: %s\n", err.msg); return 1; }
    if (!text) {   // repeat the paragraph to fill the windows
        size_t len = strlen(DEFAULT_TEXT);
        text = xmalloc(len * 40 + 1);
        for (int i = 0; i < 40; i++) memcpy(text + i * len, DEFAULT_TEXT, len);
        text[len * 40] = 0;
    }
    power_monitor *pm = power_monitor_open(root, &err);
    if (!pm || power_monitor_start(pm, 10, &err)) { fprintf(stderr, "cabin sweep: %s\n", err.msg); power_monitor_close(pm); free(text); return 1; }
    bool measured = false;
    const char *from = power_monitor_total_from(pm, &measured);
    r.s.model_path = run_opts_model(&r);
    r.s.sampling.temp = 0.0f;
    r.s.ignore_eog = true;
    // room for the prompt (at most 200 bytes: 201 tokens with BOS), the generation and the KL windows
    if (r.s.n_ctx < 256 + n_gen + ctx) r.s.n_ctx = 256 + n_gen + ctx;
    int np = nw * nb;
    sweep_point *pts = xcalloc((size_t)np, sizeof *pts);
    char prompt[512];
    snprintf(prompt, sizeof prompt, "%.200s", text);
    int ref = -1;
    for (int b = 0; b < nb; b++)
        for (int w = 0; w < nw; w++) {
            sweep_point *p = &pts[b * nw + w];
            snprintf(p->backend, sizeof p->backend, "%s", bl[b]);
            snprintf(p->weights, sizeof p->weights, "%s", wl[w]);
            r.s.backend.name = bl[b];
            r.s.precision = wl[w];
            fprintf(stderr, "\r[%d/%d] %s %s: speed and energy      ", b * nw + w + 1, np, bl[b], wl[w]);
            if (sweep_measure(&r, prompt, n_gen, reps, pm, p, &err)) {
                snprintf(p->error, sizeof p->error, "%s", err.msg);
                continue;
            }
            p->ok = true;
            if (ref < 0 || p->weight_bytes > pts[ref].weight_bytes) ref = b * nw + w;
        }
    int rc = 0;
    if (ref < 0) { fprintf(stderr, "\ncabin sweep: no combination ran: %s\n", pts[0].error); rc = 1; goto out; }
    quality_base base = {0};
    r.s.backend.name = pts[ref].backend;
    r.s.precision = pts[ref].weights;
    fprintf(stderr, "\r[ref] %s %s: base log-probs            ", pts[ref].backend, pts[ref].weights);
    if (sweep_quality(&r, text, tokens, ctx, &base, NULL, &pts[ref], &err)) {
        fprintf(stderr, "\ncabin sweep: %s %s: %s\n", pts[ref].backend, pts[ref].weights, err.msg);
        quality_base_free(&base);
        rc = 1;
        goto out;
    }
    for (int i = 0; i < np; i++) {
        if (!pts[i].ok || i == ref) continue;
        r.s.backend.name = pts[i].backend;
        r.s.precision = pts[i].weights;
        fprintf(stderr, "\r[%d/%d] %s %s: KL                    ", i + 1, np, pts[i].backend, pts[i].weights);
        if (sweep_quality(&r, text, tokens, ctx, NULL, &base, &pts[i], &err)) {
            pts[i].ok = false;
            snprintf(pts[i].error, sizeof pts[i].error, "%s", err.msg);
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
    bool json_stdout = json_out && strcmp(json_out, "-") == 0, csv_stdout = csv_out && strcmp(csv_out, "-") == 0;
    if (!json_stdout && !csv_stdout) {
        printf("model %s; energy: %s (%s); KL vs %s %s\n", r.s.model_path, from, measured ? "measured" : "estimated",
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
    if (json_out) {
        char *js = sweep_json(pts, np, r.s.model_path, from);
        if (json_stdout) printf("%s\n", js);
        else {
            FILE *f = fopen(json_out, "w");
            if (!f || fprintf(f, "%s\n", js) < 0 || fclose(f) != 0) {
                fprintf(stderr, "cabin sweep: %s: cannot write (%s)\n", json_out, strerror(errno));
                rc = 1;
            }
        }
        free(js);
    }
    if (csv_out) {
        FILE *f = csv_stdout ? stdout : fopen(csv_out, "w");
        if (!f) { fprintf(stderr, "cabin sweep: %s: cannot write (%s)\n", csv_out, strerror(errno)); rc = 1; }
        else {
            fprintf(f, "backend,weights,decode_tps,ttft_ms,j_per_token,energy_measured,weight_bytes,kv_bytes,kl,pareto\n");
            for (int i = 0; i < np; i++)
                if (pts[i].ok)
                    fprintf(f, "%s,\"%s\",%.4f,%.3f,%.6f,%d,%llu,%llu,%.8f,%d\n", pts[i].backend, pts[i].weights,
                            pts[i].tps, pts[i].ttft_ms, pts[i].j_per_tok, pts[i].j_measured,
                            (unsigned long long)pts[i].weight_bytes, (unsigned long long)pts[i].kv_bytes, pts[i].kl,
                            pts[i].pareto);
            if (!csv_stdout) fclose(f);
        }
    }
out:
    for (int i = 0; i < nw; i++) free(wl[i]);
    for (int i = 0; i < nb; i++) free(bl[i]);
    free(pts);
    free(text);
    power_monitor_close(pm);
    return rc;
}
