// cabin bench: prefill and decode speed, judged against this machine's memory bandwidth.
#include "cli/bench_floor.h"
#include "cli/commands.h"
#include "base/threads.h"
#include "engine/precision.h"
#include "engine/telemetry.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    { "--n-prompt", "-p", OPT_INT, BO(n_prompt), "N", "prompt tokens", NULL, NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--n-gen", "-n", OPT_INT, BO(n_gen), "N", "generated tokens", NULL, NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
    { "--reps", "-r", OPT_INT, BO(reps), "N", "repetitions", NULL, NULL, NULL, OPT_RANGE(1, 1000) },
    { "--depth", NULL, OPT_INT, BO(depth), "D", "fill the KV cache to D tokens first (the prefill, in batches of -b),\n"
      "then time -n decode tokens at depths D..D+n; with --kv and\n--kv-policy this compares cache formats at a depth (docs/KV.md)", "", NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--profile", NULL, OPT_FLAG, BO(profile), NULL, "time per op kind", NULL, NULL, NULL },
    { "--switch", NULL, OPT_STR, BO(switch_spec), "PLAN", "first time a live precision switch to PLAN (e.g. \"q4_0;token_embd=q4_0\"\n"
      "for every weight), then bench at that precision", NULL, NULL, NULL },
    { "--json", NULL, OPT_OUT, BO(json_out), NULL, "write one JSON object to FILE, or to standard output instead of\n"
      "the table (no FILE, or -)", NULL, NULL, NULL },
};

static const cmd_spec BENCH_SPEC = {
    "cabin bench", "cabin bench [-m MODEL] [-p 64] [-n 32] [-r 3] [-t THREADS] [--kv F] [--depth D] [--json [FILE]]",
    "Prefill (a batch of -p tokens) and decode (-n tokens one by one) speed, the median\n"
    "of -r repetitions, next to this machine's streaming-read bandwidth and the decode\n"
    "ceiling it implies (bytes read per decoded token: weights and KV cache, over the\n"
    "bandwidth). The bandwidth is the best of short passes run between the repetitions,\n"
    "with their spread; a decode above 100% of that ceiling is flagged as disturbed.\n",
};

// The timings of every repetition (tokens per second), and the bandwidth passes between them
// (bytes per second: BW_PASSES after the warm-up and after each repetition).
enum { BW_PASSES = 2 };
typedef struct bench_result { double *pp, *tg, *bw; int n_bw; size_t bw_bytes, llc_bytes; } bench_result;

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
    printf("switch to %s: %d tensors converted in %.0f ms (conversion %.0f ms), weights now %.1f MiB, resident set "
           "%.1f MiB\n", spec, st.last_switch_tensors, st.last_switch_ms, st.last_switch_convert_ms,
           (double)st.weight_bytes / (1 << 20), (double)telemetry_rss_bytes() / (1 << 20));
    return 0;
}

static void bw_passes(bw_probe *probe, bench_result *res) {
    for (int i = 0; i < BW_PASSES; i++) res->bw[res->n_bw++] = bw_probe_pass(probe);
}

// A warm-up pass, then reps of (prefill n_prompt, decode n_gen), with bandwidth passes after
// the warm-up and after each repetition; -1 with err.
static int bench_run(session *s, const bench_opts *o, bw_probe *probe, bench_result *res, errbuf *err) {
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
    if (!rc) bw_passes(probe, res);
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
        bw_passes(probe, res);
    }
    free(prompt);
    return rc;
}

// The floor of this run: the passes summarised and the decode judged against them.
typedef struct bench_floor { bw_summary bw; floor_verdict v; double weight_bytes, kv_bytes; } bench_floor;

static bench_floor bench_floor_of(session *s, const bench_opts *o, const bench_result *res, double tg_med) {
    const model *m = session_model(s);
    session_stats st;
    session_get_stats(s, &st);
    bench_floor f;
    f.bw = bw_summarize(res->bw, res->n_bw);
    f.weight_bytes = (double)model_decode_bytes(m);
    f.kv_bytes = floor_kv_bytes(st.kv_token_bytes, m->hp.n_layer, o->n_prompt, o->n_gen);
    f.v = floor_judge(tg_med, f.weight_bytes, f.kv_bytes, &f.bw, res->llc_bytes);
    return f;
}

static void bench_table(session *s, const bench_opts *o, const char *model_path, const bench_result *res,
                        double pp_med, double tg_med, const bench_floor *f, int n_threads) {
    const model *m = session_model(s);
    session_stats st;
    session_get_stats(s, &st);
    printf("model      %s (%s, %d layers, dim %d)\n", model_path, m->hp.arch_name, m->hp.n_layer, m->hp.dim);
    printf("backend    %s\n", st.backend);
    const uint64_t own = session_backend(s)->own_weight_bytes;
    if (own)
        printf("weights    %.1f MiB packed into the kernels' row-interleaved layout, %.1f MiB copied into 2 MiB pages\n",
               (double)own / (1 << 20), (double)m->weights_copy_bytes / (1 << 20));
    else if (m->weights_copy_bytes)
        printf("weights    %.1f MiB copied into 2 MiB pages at load (--mmap: read from the file)\n",
               (double)m->weights_copy_bytes / (1 << 20));
    else if (backend_has(session_backend(s), BACKEND_CAP_HOST_WEIGHTS))
        printf("weights    read from the mapped file\n");
    else
        printf("weights    in the device's memory\n");
    printf("kv cache   %s, policy %s, depth %d, %.2f MiB allocated (%.2f MiB used after the last run)",
           st.kv_format, st.kv_policy, o->depth, (double)st.kv_bytes / (1 << 20), (double)st.kv_used_bytes / (1 << 20));
    if (st.kv_ring_layers)
        printf("; %d of %d layers slide a window: rings of %d slots", st.kv_ring_layers, m->hp.n_layer, st.kv_ring_rows);
    printf("\n");
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
    printf("memory bandwidth (streaming read of %.0f MiB, %d threads, %d passes between the runs): best %.2f GB/s, "
           "median %.2f, worst %.2f\n", (double)res->bw_bytes / (1 << 20), n_threads, f->bw.n, f->bw.best / 1e9,
           f->bw.median / 1e9, f->bw.worst / 1e9);
    printf("bytes read per decoded token: %.1f MiB weights + %.2f MiB KV cache -> decode ceiling %.2f tok/s\n",
           f->weight_bytes / (1 << 20), f->kv_bytes / (1 << 20), f->v.ceiling_tps);
    if (f->v.cache_resident)
        printf("decode from cache: the %.1f MiB read per token fit in the %.0f MiB last-level cache, so the memory "
               "ceiling does not bound this decode (it runs at %.1f%% of it)\n", f->v.bytes_per_token / (1 << 20),
               (double)res->llc_bytes / (1 << 20), f->v.pct);
    else if (f->v.disturbed)
        printf("decode at %.1f%% of the ceiling: DISTURBED (above 100%%: no bandwidth pass reached the rate the decode "
               "read at, %.2f GB/s, so the machine was busy during the passes; the percentage means nothing)\n",
               f->v.pct, tg_med * f->v.bytes_per_token / 1e9);
    else
        printf("decode at %.1f%% of the bandwidth ceiling (%.2f GB/s read)\n", f->v.pct,
               tg_med * f->v.bytes_per_token / 1e9);
}

static cJSON *json_passes(const bench_result *res) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < res->n_bw; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(res->bw[i] / 1e9));
    return a;
}

static int bench_json(FILE *out, session *s, const bench_opts *o, const char *model_path, const bench_result *res,
                      double pp_med, double tg_med, const bench_floor *f, int n_threads) {
    const model *m = session_model(s);
    session_stats st;
    session_get_stats(s, &st);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", model_path);
    cJSON_AddStringToObject(j, "backend", st.backend);
    cJSON_AddNumberToObject(j, "threads", n_threads);
    cJSON_AddNumberToObject(j, "n_prompt", o->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", o->n_gen);
    cJSON_AddNumberToObject(j, "reps", o->reps);
    cJSON_AddStringToObject(j, "kv_format", st.kv_format);
    cJSON_AddStringToObject(j, "kv_policy", st.kv_policy);
    cJSON_AddNumberToObject(j, "depth", o->depth);
    cJSON_AddNumberToObject(j, "kv_bytes", (double)st.kv_bytes);
    cJSON_AddNumberToObject(j, "kv_used_bytes", (double)st.kv_used_bytes);
    cJSON_AddNumberToObject(j, "kv_ring_layers", st.kv_ring_layers);
    cJSON_AddNumberToObject(j, "kv_ring_slots", st.kv_ring_rows);
    cJSON_AddNumberToObject(j, "prefill_tps", pp_med);
    cJSON_AddNumberToObject(j, "decode_tps", tg_med);
    cJSON_AddItemToObject(j, "bandwidth_passes_gbs", json_passes(res));
    cJSON_AddNumberToObject(j, "bandwidth_gbs", f->bw.best / 1e9);   // the best pass: the floor's
    cJSON_AddNumberToObject(j, "bandwidth_median_gbs", f->bw.median / 1e9);
    cJSON_AddNumberToObject(j, "bandwidth_worst_gbs", f->bw.worst / 1e9);
    cJSON_AddNumberToObject(j, "bandwidth_buffer_bytes", (double)res->bw_bytes);
    cJSON_AddNumberToObject(j, "decode_weight_bytes_per_token", f->weight_bytes);
    cJSON_AddNumberToObject(j, "decode_kv_bytes_per_token", f->kv_bytes);
    cJSON_AddNumberToObject(j, "decode_bytes_per_token", f->v.bytes_per_token);
    cJSON_AddNumberToObject(j, "decode_ceiling_tps", f->v.ceiling_tps);
    cJSON_AddNumberToObject(j, "decode_pct_of_ceiling", f->v.pct);
    cJSON_AddBoolToObject(j, "cache_resident", f->v.cache_resident);
    cJSON_AddNumberToObject(j, "llc_bytes", (double)res->llc_bytes);
    cJSON_AddBoolToObject(j, "disturbed", f->v.disturbed);
    cJSON_AddNumberToObject(j, "weights_copied_bytes", (double)m->weights_copy_bytes);
    char *text = cJSON_PrintUnformatted(j);
    int rc = fprintf(out, "%s\n", text) < 0 ? -1 : 0;
    free(text);
    cJSON_Delete(j);
    return rc;
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
    bench_floor fl = bench_floor_of(s, o, res, tg_med);
    bool json_stdout = opts_out_is_stdout(o->json_out);
    if (!json_stdout) bench_table(s, o, model_path, res, pp_med, tg_med, &fl, n_threads);
    int rc = 0;
    if (o->json_out) {
        errbuf err = {{0}};
        FILE *f = opts_open_out(o->json_out, &err);
        bool failed = !f;
        if (f) {   // opts_close_out closes f whatever happened, once
            failed = bench_json(f, s, o, model_path, res, pp_med, tg_med, &fl, n_threads) != 0;
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
    int n_threads = r.s.backend.n_threads > 0 ? r.s.backend.n_threads : default_threads();
    if (o.profile) session_backend(s)->set_profiling(session_backend(s), true);
    if (o.switch_spec && bench_switch(s, o.switch_spec, &err)) {
        fprintf(stderr, "cabin bench: %s\n", err.msg);
        session_close(s);
        return 1;
    }
    bench_result res = { xmalloc((size_t)o.reps * sizeof(double)), xmalloc((size_t)o.reps * sizeof(double)),
                         xmalloc((size_t)(o.reps + 1) * BW_PASSES * sizeof(double)), 0, 0, 0 };
    bw_probe *probe = bw_probe_new(n_threads);
    res.bw_bytes = bw_probe_bytes(probe);
    res.llc_bytes = bw_probe_llc_bytes(probe);
    int rc = bench_run(s, &o, probe, &res, &err);
    bw_probe_free(probe);
    if (rc) fprintf(stderr, "cabin bench: %s\n", err.msg);
    else rc = bench_report(s, &o, r.s.model_path, &res, n_threads);
    free(res.pp);
    free(res.tg);
    free(res.bw);
    session_close(s);
    return rc ? 1 : 0;
}
