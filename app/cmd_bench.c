// cabin bench: prefill and decode speed, judged against this machine's memory bandwidth.
#include "app/commands.h"
#include "engine/cpu/threadpool.h"
#include "engine/precision.h"

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

int cmd_bench(int argc, char **argv) {
    args a = { argc, argv, 1, "cabin bench", false };
    run_opts r;
    run_opts_init(&r);
    int n_prompt = 64, n_gen = 32, reps = 3, depth = 0;
    bool json = false, profile = false;
    const char *switch_spec = NULL;
    while (a.i < argc) {
        if (arg_help(&a)) {
            printf("usage: cabin bench -m MODEL [-p 64] [-n 32] [-r 3] [-t THREADS] [--kv F] [--depth D] [--json]\n\n"
                   "Prefill (a batch of -p tokens) and decode (-n tokens one by one) speed, the median\n"
                   "of -r repetitions, next to this machine's measured streaming-read bandwidth and\n"
                   "the decode ceiling it implies (weight bytes read per token / bandwidth).\n"
                   "  -p N        prompt tokens (default 64)\n"
                   "  -n N        generated tokens (default 32)\n"
                   "  -r N        repetitions (default 3)\n"
                   "  --depth D   fill the KV cache to D tokens first (the prefill, in batches of -b),\n"
                   "              then time -n decode tokens at depths D..D+n; with --kv and\n"
                   "              --kv-policy this compares cache formats at a depth (docs/KV.md)\n"
                   "  --profile   time per op kind\n"
                   "  --switch PLAN  first time a live precision switch to PLAN (e.g. \"q4_0;token_embd=q4_0\"\n"
                   "              for every weight), then bench at that precision\n"
                   "  --json      one JSON object instead of the table\n%s", RUN_OPTS_HELP);
            return 0;
        }
        if (arg_int(&a, "-p", "--n-prompt", &n_prompt)) continue;
        if (arg_int(&a, "-n", "--n-gen", &n_gen)) continue;
        if (arg_int(&a, "-r", "--reps", &reps)) continue;
        if (arg_int(&a, "--depth", NULL, &depth)) continue;
        if (arg_flag(&a, "--json", NULL)) { json = true; continue; }
        if (arg_flag(&a, "--profile", NULL)) { profile = true; continue; }
        if (arg_str(&a, "--switch", NULL, &switch_spec)) continue;
        if (run_opts_parse(&r, &a)) continue;
        arg_unknown(&a);
        return 2;
    }
    if (a.failed) return 2;
    if (n_prompt < 1 || n_gen < 1 || reps < 1) { fprintf(stderr, "cabin bench: -p, -n and -r must be positive\n"); return 2; }
    if (depth < 0) { fprintf(stderr, "cabin bench: --depth must be 0 or more\n"); return 2; }
    if (depth > 0) n_prompt = depth;              // the prefill fills the cache to the depth
    else if (r.s.n_batch < n_prompt) r.s.n_batch = n_prompt;
    if (r.s.n_ctx == 0) r.s.n_ctx = n_prompt + n_gen + 8;
    errbuf err = {{0}};
    r.s.model_path = run_opts_model(&r);
    session *s = session_open(&r.s, &err);
    if (!s) { fprintf(stderr, "cabin bench: %s\n", err.msg); return 1; }
    const model *m = session_model(s);
    backend *b = session_backend(s);
    int n_threads = r.s.backend.n_threads > 0 ? r.s.backend.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (profile) b->set_profiling(b, true);
    if (switch_spec) {
        precision_plan plan;
        // touch the file's pages first, so the switch is timed on weights in memory, as in a
        // running session (the conversion reads every source weight once)
        if (session_eval(s, (int32_t[]){ 1 }, 1, NULL, &err) == 0) session_reset(s);
        if (plan_parse_any(&plan, switch_spec, m->hp.n_layer, &err) || session_set_plan(s, &plan, &err)) {
            fprintf(stderr, "cabin bench: --switch %s: %s\n", switch_spec, err.msg);
            session_close(s);
            return 1;
        }
        session_stats st;
        session_get_stats(s, &st);
        printf("switch to %s: %d tensors converted in %.0f ms (conversion %.0f ms), weights now %.1f MiB\n",
               switch_spec, st.last_switch_tensors, st.last_switch_ms, st.last_switch_convert_ms,
               (double)st.weight_bytes / (1 << 20));
    }

    int32_t *prompt = xmalloc((size_t)n_prompt * sizeof(int32_t));
    uint64_t rng = 12345;
    for (int i = 0; i < n_prompt; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        prompt[i] = (int32_t)((rng >> 33) % (uint64_t)m->hp.n_vocab);
    }
    double *pp = xmalloc((size_t)reps * sizeof(double)), *tg = xmalloc((size_t)reps * sizeof(double));
    int rc = 0;
    // one warm-up pass (page in the weights)
    if (session_eval(s, prompt, n_prompt < 8 ? n_prompt : 8, NULL, &err)) rc = 1;
    for (int rep = 0; rep < reps && !rc; rep++) {
        session_reset(s);
        double t0 = now_sec();
        if (session_eval(s, prompt, n_prompt, NULL, &err)) { rc = 1; break; }
        double t1 = now_sec();
        for (int i = 0; i < n_gen && !rc; i++) {
            int32_t tok = prompt[i % n_prompt];
            if (session_eval(s, &tok, 1, NULL, &err)) rc = 1;
        }
        double t2 = now_sec();
        pp[rep] = n_prompt / (t1 - t0);
        tg[rep] = n_gen / (t2 - t1);
    }
    if (rc) {
        fprintf(stderr, "cabin bench: %s\n", err.msg);
    } else {
        double pp_med = median(pp, reps), tg_med = median(tg, reps);
        double bw = measure_bandwidth(n_threads);
        uint64_t bytes_tok = model_decode_bytes(m);
        double ceiling = bw / (double)bytes_tok;
        session_stats st;
        session_get_stats(s, &st);
        if (json) {
            printf("{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"n_prompt\": %d, "
                   "\"n_gen\": %d, \"reps\": %d, \"kv_format\": \"%s\", \"kv_policy\": \"%s\", \"depth\": %d, "
                   "\"kv_bytes\": %llu, \"kv_used_bytes\": %llu, \"prefill_tps\": %.3f, \"decode_tps\": %.3f, "
                   "\"bandwidth_gbs\": %.3f, \"decode_bytes_per_token\": %llu, "
                   "\"decode_ceiling_tps\": %.3f, \"decode_pct_of_ceiling\": %.1f, \"weights_copied_bytes\": %llu}\n",
                   r.s.model_path, st.backend, n_threads, n_prompt, n_gen, reps, st.kv_format, st.kv_policy, depth,
                   (unsigned long long)st.kv_bytes, (unsigned long long)st.kv_used_bytes, pp_med, tg_med,
                   bw / 1e9, (unsigned long long)bytes_tok, ceiling, 100.0 * tg_med / ceiling,
                   (unsigned long long)m->weights_copy_bytes);
        } else {
            printf("model      %s (%s, %d layers, dim %d)\n", r.s.model_path, m->hp.arch_name, m->hp.n_layer, m->hp.dim);
            printf("backend    %s\n", st.backend);
            if (m->weights_copy_bytes)
                printf("weights    %.1f MiB copied into 2 MiB pages at load (--mmap: read from the file)\n",
                       (double)m->weights_copy_bytes / (1 << 20));
            else if (backend_has(b, BACKEND_CAP_HOST_WEIGHTS))
                printf("weights    read from the mapped file\n");
            else
                printf("weights    in the device's memory\n");
            printf("kv cache   %s, policy %s, depth %d, %.2f MiB allocated (%.2f MiB used after the last run)\n",
                   st.kv_format, st.kv_policy, depth, (double)st.kv_bytes / (1 << 20), (double)st.kv_used_bytes / (1 << 20));
            printf("| test            | kv  | tok/s (median of %d) | runs |\n", reps);
            char ppname[32];
            snprintf(ppname, sizeof ppname, depth ? "pp%d (fill)" : "pp%d", n_prompt);
            printf("| %-15s | %-3s | %20.2f |", ppname, st.kv_format, pp_med);
            for (int i = 0; i < reps; i++) printf(" %.1f", pp[i]);
            char tgname[32];
            if (depth) snprintf(tgname, sizeof tgname, "tg%d @ d%d", n_gen, depth);
            else snprintf(tgname, sizeof tgname, "tg%d", n_gen);
            printf(" |\n| %-15s | %-3s | %20.2f |", tgname, st.kv_format, tg_med);
            for (int i = 0; i < reps; i++) printf(" %.2f", tg[i]);
            printf(" |\n");
            printf("memory bandwidth (streaming read, %d threads): %.2f GB/s\n", n_threads, bw / 1e9);
            printf("weights read per decoded token: %.1f MiB -> decode ceiling %.2f tok/s\n",
                   (double)bytes_tok / (1 << 20), ceiling);
            printf("decode at %.1f%% of the bandwidth ceiling (%.2f GB/s of weights)\n",
                   100.0 * tg_med / ceiling, tg_med * (double)bytes_tok / 1e9);
        }
        if (profile) {
            double secs[OP_COUNT];
            uint64_t calls[OP_COUNT];
            b->profile_read(b, secs, calls);
            double total = 0;
            for (int k = 0; k < OP_COUNT; k++) total += secs[k];
            fprintf(json ? stderr : stdout, "op profile (all runs):\n");
            for (int k = 0; k < OP_COUNT; k++)
                if (calls[k])
                    fprintf(json ? stderr : stdout, "  %-10s %9.1f ms %5.1f%% %8llu calls\n",
                            op_kind_name((enum op_kind)k), secs[k] * 1e3, 100 * secs[k] / total,
                            (unsigned long long)calls[k]);
        }
    }
    free(pp);
    free(tg);
    free(prompt);
    session_close(s);
    return rc;
}
