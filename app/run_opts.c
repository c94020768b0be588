#include "app/commands.h"

#include <stdlib.h>

const char *const RUN_OPTS_HELP =
    "  -m, --model FILE     GGUF model (default: $CABIN_MODEL or " CABIN_DEFAULT_MODEL ")\n"
    "  -t, --threads N      CPU threads (default: all cores)\n"
    "  --backend NAME       auto | cpu | cpu-scalar (the scalar reference path) | vulkan\n"
    "  --device N           Vulkan device index (cabin devices lists them; default: the best)\n"
    "  --kernels NAME       CPU kernel set: auto | avx512 | avx2 | scalar\n"
    "  -c, --ctx N          context length in tokens (default: the model's, at most 4096)\n"
    "  -b, --batch N        prompt tokens per forward pass (default 256)\n"
    "  --temp T             temperature; 0 = greedy (default 0.7)\n"
    "  --top-k K            (default 40; 0 = off)\n"
    "  --top-p P            (default 0.95; 1 = off)\n"
    "  --min-p P            (default 0.05; 0 = off)\n"
    "  --repeat-penalty R   (default 1 = off)\n"
    "  --repeat-last-n N    tokens the penalty looks back (default 64)\n"
    "  --seed S             sampling seed (default 42): the same seed gives the same text\n"
    "  --template NAME      chat template: llama-3, chatml, llama-2, zephyr, phi-3, plain\n"
    "  --precision TYPE     convert every layer matrix to f32 | f16 | bf16 | q8_0 | q4_0 at load\n"
    "                       (token embedding and output stay as in the file)\n"
    "  --kv FORMAT          KV cache: f16 (default) | q8 | q4 | f32 (docs/KV.md)\n"
    "  --kv-policy P        when the context fills: none (stop) | window:N | h2o:N | entropy:N\n"
    "                       (keep N slots and go on; cpu backend)\n"
    "  --kv-recent R        newest tokens the q8/q4 caches keep in f16 (default 32)\n"
    "  --ignore-eos         keep generating past end-of-generation tokens (benchmarks)\n"
    "  --mmap               cpu: read the weights from the mapped file (no copy into 2 MiB pages:\n"
    "                       less anonymous memory, slower decode)\n"
    "  --free-actions       do not constrain the assistant's <act> lines to the action grammar\n"
    "                       nor its spoken sentence to what the action holds (the model's raw\n"
    "                       output; docs/ASSISTANT.md)\n";

void run_opts_init(run_opts *r) {
    r->s = session_opts_default();
    r->model = NULL;
    r->seed_set = 0;
    r->free_actions = false;
}

bool run_opts_parse(run_opts *r, args *a) {
    uint64_t seed64 = 0;
    if (arg_str(a, "-m", "--model", &r->model)) return true;
    if (arg_int(a, "-t", "--threads", &r->s.backend.n_threads)) return true;
    if (arg_str(a, "--backend", NULL, &r->s.backend.name)) return true;
    if (arg_str(a, "--kernels", NULL, &r->s.backend.kernels)) return true;
    if (arg_str(a, "--device", NULL, &r->s.backend.device)) return true;
    if (arg_int(a, "-c", "--ctx", &r->s.n_ctx)) return true;
    if (arg_int(a, "-b", "--batch", &r->s.n_batch)) return true;
    if (arg_float(a, "--temp", NULL, &r->s.sampling.temp)) return true;
    if (arg_int(a, "--top-k", NULL, &r->s.sampling.top_k)) return true;
    if (arg_float(a, "--top-p", NULL, &r->s.sampling.top_p)) return true;
    if (arg_float(a, "--min-p", NULL, &r->s.sampling.min_p)) return true;
    if (arg_float(a, "--repeat-penalty", NULL, &r->s.sampling.repeat_penalty)) return true;
    if (arg_int(a, "--repeat-last-n", NULL, &r->s.sampling.repeat_last_n)) return true;
    if (arg_u64(a, "--seed", NULL, &seed64)) { r->s.sampling.seed = seed64; r->seed_set = 1; return true; }
    if (arg_str(a, "--template", NULL, &r->s.template_name)) return true;
    if (arg_str(a, "--precision", NULL, &r->s.precision)) return true;
    if (arg_str(a, "--kv", NULL, &r->s.kv_format)) return true;
    if (arg_str(a, "--kv-policy", NULL, &r->s.kv_policy)) return true;
    if (arg_int(a, "--kv-recent", NULL, &r->s.kv_recent)) return true;
    if (arg_flag(a, "--ignore-eos", NULL)) { r->s.ignore_eog = true; return true; }
    if (arg_flag(a, "--mmap", NULL)) { r->s.mmap_weights = true; return true; }
    if (arg_flag(a, "--free-actions", NULL)) { r->free_actions = true; return true; }
    return false;
}

const char *run_opts_model(const run_opts *r) {
    if (r->model) return r->model;
    const char *env = getenv("CABIN_MODEL");
    return env && *env ? env : CABIN_DEFAULT_MODEL;
}
