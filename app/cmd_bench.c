// cabin bench: prefill and decode speed, judged against this machine's memory bandwidth.
#include "app/commands.h"
#include "engine/cpu/threadpool.h"
#include "engine/precision.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bw_job { const uint64_t *buf; size_t n; uint64_t sums[256]; } bw_job;

static void bw_worker(void *ctx, int ith, int nth) {
    bw_job *j = ctx;
    int64_t lo, hi;
    split_range((int64_t)j->n, ith, nth, 64, &lo, &hi);
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t i = lo; i + 4 <= hi; i += 4) {
        a0 += j->buf[i]; a1 += j->buf[i + 1]; a2 += j->buf[i + 2]; a3 += j->buf[i + 3];
    }
    j->sums[ith] = a0 + a1 + a2 + a3;
}

// Streaming read bandwidth in bytes/s with n_threads threads over a buffer far larger than cache.
static double measure_bandwidth(int n_threads) {
    size_t bytes = (size_t)1 << 30;
    bw_job j = { .n = bytes / 8 };
    uint64_t *buf = xmalloc(bytes);
    memset(buf, 1, bytes);
    j.buf = buf;
    threadpool *p = threadpool_new(n_threads);
    double best = 0.0;
    for (int r = 0; r < 4; r++) {
        double t0 = now_sec();
        threadpool_run(p, bw_worker, &j);
        double dt = now_sec() - t0;
        if (bytes / dt > best) best = bytes / dt;
    }
    threadpool_free(p);
    free(buf);
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct bench_opts {
    int n_prompt, n_gen, reps, depth;
    bool profile;
    const char *json_out, *switch_spec;
} bench_opts;

#define BO(field) offsetof(bench_opts, field)
static const opt_def BENCH_OPTS[] = {
    { "--n-prompt", "-p", OPT_INT, BO(n_prompt), "N", "prompt tokens", NULL, NULL, NULL },
    { "--n-gen", "-n", OPT_INT, BO(n_gen), "N", "generated tokens", NULL, NULL, NULL },
    { "--reps", "-r", OPT_INT, BO(reps), "N", "repetitions", NULL, NULL, NULL },
    { "--depth", NULL, OPT_INT, BO(depth), "D", "fill the KV cache to D tokens first (the prefill, in batches of -b),\n"
      "then time -n decode tokens at depths D..D+n; with --kv and\n--kv-policy this compares cache formats at a depth (docs/KV.md)", "", NULL, NULL },
    { "--profile", NULL, OPT_FLAG, BO(profile), NULL, "time per op kind", NULL, NULL, NULL },
    { "--switch", NULL, OPT_STR, BO(switch_spec), "PLAN", "first time a live precision switch to PLAN (e.g. \"q4_0;token_embd=q4_0\"\n"
      "for every weight), then bench at that precision", NULL, NULL, NULL },
    { "--json", NULL, OPT_OUT, BO(json_out), NULL, "write one JSON object to FILE, or to standard output instead of\n"
      "the table (no FILE, or -)", NULL, NULL, NULL },
};

static const cmd_spec BENCH_SPEC = {
    "cabin bench", "cabin bench [-m MODEL] [-p 64] [-n 32] [-r 3] [-t THREADS] [--kv F] [--depth D] [--json [FILE]]",
    "Prefill (a batch of -p tokens) and decode (-n tokens one by one) speed, the median\n"
    "of -r repetitions, next to this machine's measured streaming-read bandwidth and\n"
    "the decode ceiling it implies (weight bytes read per token / bandwidth).\n",
};

// The timings of every repetition (tokens per second).
typedef struct bench_result { double *pp, *tg; } bench_result;

static int bench_parse(int argc, char **argv, bench_opts *o, run_opts *r) {
    *o = (bench_opts){ .n_prompt = 64, .n_gen = 32, .reps = 3 };
    run_opts_init(r);
    opt_table own = OPT_TABLE(BENCH_OPTS, o);
    int rc = run_opts_parse_with(&BENCH_SPEC, &own, r, argc, argv);
    if (rc) return rc;
    if (o->n_prompt < 1 || o->n_gen < 1 || o->reps < 1) { fprintf(stderr, "cabin bench: -p, -n and -r must be positive\n"); return OPTS_USAGE; }
    if (o->depth < 0) { fprintf(stderr, "cabin bench: --depth must be 0 or more\n"); return OPTS_USAGE; }
    if (o->depth > 0) o->n_prompt = o->depth;              // the prefill fills the cache to the depth
    else if (r->s.n_batch < o->n_prompt) r->s.n_batch = o->n_prompt;
    if (r->s.n_ctx == 0) r->s.n_ctx = o->n_prompt + o->n_gen + 8;
    return OPTS_OK;
}

// --switch PLAN: the switch is timed, then the bench runs at that precision.
static int bench_switch(session *s, const char *spec, errbuf *err) {
    precision_plan plan;
    // touch the file's pages first, so the switch is timed on weights in memory, as in a
    // running session (the conversion reads every source weight once)
    if (session_eval(s, (int32_t[]){ 1 }, 1, NULL, err) == 0) session_reset(s);
    if (plan_parse_any(&plan, spec, session_model(s)->hp.n_layer, err) || session_set_plan(s, &plan, err))
        return err_prefix(err, "--switch %s", spec);
    session_stats st;
    session_get_stats(s, &st);
    printf("switch to %s: %d tensors converted in %.0f ms (conversion %.0f ms), weights now %.1f MiB\n",
           spec, st.last_switch_tensors, st.last_switch_ms, st.last_switch_convert_ms,
           (double)st.weight_bytes / (1 << 20));
    return 0;
}

// A warm-up pass, then reps of (prefill n_prompt, decode n_gen); -1 with err.
static int bench_run(session *s, const bench_opts *o, bench_result *res, errbuf *err) {
    const model *m = session_model(s);
    int32_t *prompt = xmalloc((size_t)o->n_prompt * sizeof(int32_t));
    uint64_t rng = 12345;
    for (int i = 0; i < o->n_prompt; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        prompt[i] = (int32_t)((rng >> 33) % (uint64_t)m->hp.n_vocab);
    }
    int rc = 0;
    // one warm-up pass (page in the weights)
    if (session_eval(s, prompt, o->n_prompt < 8 ? o->n_prompt : 8, NULL, err)) rc = -1;
    for (int rep = 0; rep < o->reps && !rc; rep++) {
        session_reset(s);
        double t0 = now_sec();
        if (session_eval(s, prompt, o->n_prompt, NULL, err)) { rc = -1; break; }
        double t1 = now_sec();
        for (int i = 0; i < o->n_gen && !rc; i++) {
            int32_t tok = prompt[i % o->n_prompt];
            if (session_eval(s, &tok, 1, NULL, err)) rc = -1;
        }
        double t2 = now_sec();
        res->pp[rep] = o->n_prompt / (t1 - t0);
        res->tg[rep] = o->n_gen / (t2 - t1);
    }
    free(prompt);
    return rc;
}

static void bench_table(session *s, const bench_opts *o, const char *model_path, const bench_result *res,
                        double pp_med, double tg_med, double bw, int n_threads) {
    const model *m = session_model(s);
    uint64_t bytes_tok = model_decode_bytes(m);
    double ceiling = bw / (double)bytes_tok;
    session_stats st;
    session_get_stats(s, &st);
    printf("model      %s (%s, %d layers, dim %d)\n", model_path, m->hp.arch_name, m->hp.n_layer, m->hp.dim);
    printf("backend    %s\n", st.backend);
    if (m->weights_copy_bytes)
        printf("weights    %.1f MiB copied into 2 MiB pages at load (--mmap: read from the file)\n",
               (double)m->weights_copy_bytes / (1 << 20));
    else if (backend_has(session_backend(s), BACKEND_CAP_HOST_WEIGHTS))
        printf("weights    read from the mapped file\n");
    else
        printf("weights    in the device's memory\n");
    printf("kv cache   %s, policy %s, depth %d, %.2f MiB allocated (%.2f MiB used after the last run)\n",
           st.kv_format, st.kv_policy, o->depth, (double)st.kv_bytes / (1 << 20), (double)st.kv_used_bytes / (1 << 20));
    printf("| test            | kv  | tok/s (median of %d) | runs |\n", o->reps);
    char ppname[32];
    snprintf(ppname, sizeof ppname, o->depth ? "pp%d (fill)" : "pp%d", o->n_prompt);
    printf("| %-15s | %-3s | %20.2f |", ppname, st.kv_format, pp_med);
    for (int i = 0; i < o->reps; i++) printf(" %.1f", res->pp[i]);
    char tgname[32];
    if (o->depth) snprintf(tgname, sizeof tgname, "tg%d @ d%d", o->n_gen, o->depth);
    else snprintf(tgname, sizeof tgname, "tg%d", o->n_gen);
    printf(" |\n| %-15s | %-3s | %20.2f |", tgname, st.kv_format, tg_med);
    for (int i = 0; i < o->reps; i++) printf(" %.2f", res->tg[i]);
    printf(" |\n");
    printf("memory bandwidth (streaming read, %d threads): %.2f GB/s\n", n_threads, bw / 1e9);
    printf("weights read per decoded token: %.1f MiB -> decode ceiling %.2f tok/s\n",
           (double)bytes_tok / (1 << 20), ceiling);
    printf("decode at %.1f%% of the bandwidth ceiling (%.2f GB/s of weights)\n",
           100.0 * tg_med / ceiling, tg_med * (double)bytes_tok / 1e9);
}

static int bench_json(FILE *f, session *s, const bench_opts *o, const char *model_path, double pp_med, double tg_med,
                      double bw, int n_threads) {
    const model *m = session_model(s);
    uint64_t bytes_tok = model_decode_bytes(m);
    double ceiling = bw / (double)bytes_tok;
    session_stats st;
    session_get_stats(s, &st);
    return fprintf(f, "{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"n_prompt\": %d, "
                   "\"n_gen\": %d, \"reps\": %d, \"kv_format\": \"%s\", \"kv_policy\": \"%s\", \"depth\": %d, "
                   "\"kv_bytes\": %llu, \"kv_used_bytes\": %llu, \"prefill_tps\": %.3f, \"decode_tps\": %.3f, "
                   "\"bandwidth_gbs\": %.3f, \"decode_bytes_per_token\": %llu, "
                   "\"decode_ceiling_tps\": %.3f, \"decode_pct_of_ceiling\": %.1f, \"weights_copied_bytes\": %llu}\n",
                   model_path, st.backend, n_threads, o->n_prompt, o->n_gen, o->reps, st.kv_format, st.kv_policy, o->depth,
                   (unsigned long long)st.kv_bytes, (unsigned long long)st.kv_used_bytes, pp_med, tg_med,
                   bw / 1e9, (unsigned long long)bytes_tok, ceiling, 100.0 * tg_med / ceiling,
                   (unsigned long long)m->weights_copy_bytes) < 0 ? -1 : 0;
}

static void bench_profile(backend *b, FILE *f) {
    double secs[OP_COUNT];
    uint64_t calls[OP_COUNT];
    b->profile_read(b, secs, calls);
    double total = 0;
    for (int k = 0; k < OP_COUNT; k++) total += secs[k];
    fprintf(f, "op profile (all runs):\n");
    for (int k = 0; k < OP_COUNT; k++)
        if (calls[k])
            fprintf(f, "  %-10s %9.1f ms %5.1f%% %8llu calls\n", op_kind_name((enum op_kind)k), secs[k] * 1e3,
                    100 * secs[k] / total, (unsigned long long)calls[k]);
}

// The table (unless the JSON goes to stdout), the JSON and the op profile.
static int bench_report(session *s, const bench_opts *o, const char *model_path, bench_result *res, int n_threads) {
    double pp_med = median(res->pp, o->reps), tg_med = median(res->tg, o->reps);
    double bw = measure_bandwidth(n_threads);
    bool json_stdout = opts_out_is_stdout(o->json_out);
    if (!json_stdout) bench_table(s, o, model_path, res, pp_med, tg_med, bw, n_threads);
    int rc = 0;
    if (o->json_out) {
        errbuf err = {{0}};
        FILE *f = opts_open_out(o->json_out, &err);
        bool failed = !f;
        if (f) {   // opts_close_out closes f whatever happened, once
            failed = bench_json(f, s, o, model_path, pp_med, tg_med, bw, n_threads) != 0;
            if (opts_close_out(f, o->json_out, &err)) failed = true;
        }
        if (failed) {
            if (!err.msg[0]) err_set(&err, "%s: write failed", o->json_out);
            fprintf(stderr, "cabin bench: %s\n", err.msg);
            rc = 1;
        }
    }
    if (o->profile) bench_profile(session_backend(s), json_stdout ? stderr : stdout);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    run_opts r;
    int prc = bench_parse(argc, argv, &o, &r);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin bench: %s\n", err.msg); return 1; }
    int n_threads = r.s.backend.n_threads > 0 ? r.s.backend.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (o.profile) session_backend(s)->set_profiling(session_backend(s), true);
    if (o.switch_spec && bench_switch(s, o.switch_spec, &err)) {
        fprintf(stderr, "cabin bench: %s\n", err.msg);
        session_close(s);
        return 1;
    }
    bench_result res = { xmalloc((size_t)o.reps * sizeof(double)), xmalloc((size_t)o.reps * sizeof(double)) };
    int rc = bench_run(s, &o, &res, &err);
    if (rc) fprintf(stderr, "cabin bench: %s\n", err.msg);
    else rc = bench_report(s, &o, r.s.model_path, &res, n_threads);
    free(res.pp);
    free(res.tg);
    session_close(s);
    return rc ? 1 : 0;
}
