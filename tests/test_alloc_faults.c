// Allocation failure at every fallible allocation of a model load, a session's start and one
// chat turn, the CPU backend's per-op scratch included (base/mem.h: mem_fault_arm). The path is run once counting its allocations, then
// once for each N with the Nth failing: either the failure is absorbed (the weights stay read
// from the file's mapping when their copy cannot be made; a weight the CPU cannot pack for its
// r16 kernels is multiplied from its rows) or an error that says "out of memory"
// comes back; a session that existed before the failing turn answers the next turn; nothing
// leaks (ASan, make test-asan). Then the limits checked before a large allocation.
#include "test.h"
#include "base/mem.h"
#include "engine/cpu/kernels.h"
#include "engine/modelgen.h"
#include "engine/session.h"
#include "engine/wtype.h"

#include <unistd.h>

static bool count_cb(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok; (void)piece; (void)len;
    (*(int *)ud)++;
    return true;
}

static session_opts opts_for(const char *path) {
    session_opts o = session_opts_default();
    o.model_path = path;
    o.backend.name = "cpu";
    o.backend.n_threads = 1;
    o.n_ctx = 64;
    o.max_reply_tokens = 4;
    o.sampling.seed = 7;
    return o;
}

// One run of the path with the nth fallible allocation failing (0: none). Returns the number of
// fallible allocations the run made; *outcome says what happened.
enum outcome { RAN_CLEAN, ABSORBED, OPEN_FAILED, TURN_FAILED };

static long run_once(const char *path, long nth, enum outcome *outcome, char *msg, size_t msg_cap) {
    session_opts o = opts_for(path);
    errbuf err = {{0}};
    cpu_kernels_scratch_release();   // every run allocates the kernels' scratch afresh (and may fail it)
    mem_fault_arm(nth);
    session *s = session_open(&o, &err);
    int n_tokens = 0;
    *outcome = RAN_CLEAN;
    msg[0] = 0;
    if (!s) {
        *outcome = OPEN_FAILED;
        snprintf(msg, msg_cap, "%s", err.msg);
        return mem_fault_count();
    }
    int rc = session_chat(s, "turn on the lights", count_cb, &n_tokens, &err);
    long count = mem_fault_count();
    if (rc) {
        *outcome = TURN_FAILED;
        snprintf(msg, msg_cap, "%s", err.msg);
        // The conversation goes on: the next turn, with memory back, answers.
        mem_fault_arm(0);
        n_tokens = 0;
        errbuf err2 = {{0}};
        int rc2 = session_chat(s, "and the radio", count_cb, &n_tokens, &err2);
        CHECK(rc2 == 0 && n_tokens > 0, "allocation %ld: the turn after the failed one answers (%s)", nth, err2.msg);
    } else if (mem_fault_fired()) {
        *outcome = ABSORBED;
        CHECK(n_tokens > 0, "allocation %ld: absorbed, and the turn still answered", nth);
    }
    session_close(s);
    return count;
}

int main(void) {
    char dir[] = "/tmp/cabin-alloc-XXXXXX";
    if (!mkdtemp(dir)) { CHECK(0, "mkdtemp"); return test_finish(); }
    char path[512];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    modelgen_opts g = modelgen_defaults();
    g.type = g.embd_type = WT_Q4_0;
    g.dim = 64; g.n_head = 4; g.n_kv_head = 2; g.ffn_dim = 128; g.n_vocab = 300;
    g.seed = 11;
    errbuf err = {{0}};
    if (modelgen_write(&g, path, &err)) { CHECK(0, "%s", err.msg); return test_finish(); }

    enum outcome oc;
    char msg[sizeof ((errbuf *)0)->msg];
    long total = run_once(path, 0, &oc, msg, sizeof msg);
    CHECK(oc == RAN_CLEAN && total > 0, "the path runs with no failure (%ld fallible allocations): %s", total, msg);
    long again = run_once(path, 0, &oc, msg, sizeof msg);
    CHECK(again == total, "the count repeats (%ld, then %ld)", total, again);

    int n_open = 0, n_turn = 0, n_absorbed = 0, n_silent = 0, n_scratch = 0;
    for (long n = 1; n <= total; n++) {
        run_once(path, n, &oc, msg, sizeof msg);
        switch (oc) {
        case OPEN_FAILED: n_open++; break;
        case TURN_FAILED: n_turn++; break;
        case ABSORBED: n_absorbed++; break;
        case RAN_CLEAN: n_silent++; break;
        }
        if (oc == OPEN_FAILED || oc == TURN_FAILED)
            CHECK(strstr(msg, "out of memory") && !strchr(msg, '\n'),
                  "allocation %ld: one line saying out of memory: %s", n, msg);
        n_scratch += oc == TURN_FAILED && strstr(msg, "cpu: out of memory for the") != NULL;
        CHECK(mem_fault_fired() || oc == TURN_FAILED, "allocation %ld of %ld was reached", n, total);
    }
    mem_fault_arm(0);
    CHECK(n_silent == 0, "every failure is reported or absorbed (%d ran as if nothing failed)", n_silent);
    CHECK(n_open > 0 && n_turn > 0, "failures both while opening (%d) and in the turn (%d)", n_open, n_turn);
    // the CPU backend's per-op scratch (quantized activations, attention scores, the kernels'
    // prepared activations) fails the turn, not the process
    CHECK(n_scratch >= 3, "the CPU's scratch failing fails the turn: %d times", n_scratch);
    printf("%ld fallible allocations: %d fail the open, %d fail the turn, %d absorbed\n", total, n_open,
           n_turn, n_absorbed);

    // Limits before allocation: a context whose KV cache cannot fit in memory is refused naming
    // the file, the size and the largest context that fits, and nothing is counted as allocated
    // for it.
    session_opts o = opts_for(path);
    o.n_ctx = 1 << 30;
    mem_fault_arm(0);
    session *s = session_open(&o, &err);
    CHECK(!s && strstr(err.msg, path) && strstr(err.msg, "memory available") && strstr(err.msg, "--ctx"),
          "a context larger than memory: %s", err.msg);
    session_close(s);
    unlink(path);
    rmdir(dir);
    return test_finish();
}
