#!/usr/bin/env python3
"""`cabin tokenize`, `cabin logits` (also with a q8 KV cache), `cabin generate --temp 0 --ids` and
`cabin info` against the reference outputs in ../shared/ref/models and ../shared/ref/next/models
(see ../shared/ref/README.md for the tolerances).
Prints one closing line "N passed, N failed[, N skipped]"."""
import atexit, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytally import Tally  # noqa: E402

cabin = sys.argv[1] if len(sys.argv) > 1 else "build/cabin"
extra = sys.argv[2:]           # e.g. --backend vulkan
# CABIN_REF_CASES=N: the first N cases of each file (the wrappers under AddressSanitizer, where
# the other cases would retrace the same code paths at ten times the cost); default all
max_cases = int(os.environ.get("CABIN_REF_CASES") or 0)
cases_left_out = 0
ref = os.environ.get("CABIN_REF_DIR") or "../shared/ref"
tally = Tally()
check = tally.check
# files this run writes: its own folder (runs for cpu and vulkan, or from two checkouts, may run
# at once)
tmp = tempfile.mkdtemp(prefix="cabin-ref-")
atexit.register(shutil.rmtree, tmp, True)

def run(args):
    # extra options (e.g. --backend vulkan) go to the commands that run the model
    more = extra if args[0] in ("logits", "generate") else []
    p = subprocess.run([cabin] + args + more, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

def read_f32(path):
    import array
    a = array.array("f")
    a.frombytes(open(path, "rb").read())
    return a

def check_logits(what, path, prompt, case, out, tol, more):
    """`cabin logits --top 32` output against the record's top logits, within tol of the largest;
    ids missing from our top 32 are read from the full dump. For a record without exact logits,
    where the reference may itself lie near the tolerance from the exact numbers
    (tests/test_model_ref.c says why): within tol of the scalar path, and that within tol of the
    reference, passes too."""
    got = {}
    for line in out.splitlines():
        t, v = line.split()
        got[int(t)] = float(v)
    top = case["top_logits"]
    scale = max(abs(v) for _, v in top)
    worst = max(abs(got[t] - v) if t in got else float("inf") for t, v in top)
    if worst == float("inf"):
        dump = os.path.join(tmp, "logits.f32")
        run(["logits", "-m", path, "-p", prompt, "--top", "0", "--out", dump] + more)
        a = read_f32(dump)
        worst = max(abs(a[t] - v) for t, v in top)
    if worst > tol * scale and "exact_logits_at_top" not in case:
        sp, fp = os.path.join(tmp, "scalar.f32"), os.path.join(tmp, "fast.f32")
        p = subprocess.run([cabin, "logits", "-m", path, "-p", prompt, "--top", "0", "--out", sp, "--backend", "cpu-scalar"],
                           capture_output=True, text=True)
        rc, _, _ = run(["logits", "-m", path, "-p", prompt, "--top", "0", "--out", fp] + more)
        ok = p.returncode == 0 and rc == 0
        sc, full = (read_f32(sp), read_f32(fp)) if ok else ([], [])
        to_scalar = max(abs(full[t] - sc[t]) for t, _ in top) if ok else float("inf")
        scalar_to_ref = max(abs(sc[t] - v) for t, v in top) if ok else float("inf")
        check(to_scalar <= tol * scale and scalar_to_ref <= tol * scale,
              f"{what}: logits max diff {worst:.5f} > {tol * scale:.5f} (vs scalar {to_scalar:.5f}, "
              f"scalar vs reference {scalar_to_ref:.5f})")
        print(f"note: {what}: {worst:.5f} from the reference (tolerance {tol * scale:.5f}), {to_scalar:.5f} "
              f"from the scalar path, which is {scalar_to_ref:.5f} from the reference")
    else:
        check(worst <= tol * scale, f"{what}: logits max diff {worst:.5f} > {tol * scale:.5f}")
    return worst

if not os.path.isdir(os.path.join(ref, "models")):
    print("skipped: ../shared/ref not present")
    tally.skipped = 1
    print(tally.line())
    sys.exit(0)

NOT_LOADABLE_YET = []   # as the loader names them, e.g. "architecture 'xyz'"; none at present

# models/ and next/models (the files the README keeps apart until cabin handles them)
records = []
for root in (ref, os.path.join(ref, "next")):
    folder = os.path.join(root, "models")
    if os.path.isdir(folder):
        records += [(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".json")]

for folder, name in records:
    spec = json.load(open(os.path.join(folder, name)))
    path = os.path.join(folder, spec["model"])
    # A file in a type or architecture cabin does not load yet (NOT_LOADABLE_YET, as the loader
    # names it) must give one clear error that names the file; then its cases are skipped with
    # that reason. A file refused for anything else is a failure.
    rc, out, err = run(["logits", "-m", path, "-p", "hi"])
    if rc != 0:
        one_line = len(err.strip().splitlines()) == 1
        unsupported = ("not support" in err or "unsupported" in err) and any(w in err for w in NOT_LOADABLE_YET)
        check(rc == 1 and one_line and unsupported and path in err,
              f"{name}: an unloadable file should give one clear error, got rc {rc}: {err}")
        if unsupported:
            print(f"skipped: {name}: not loadable yet ({err.strip()})")
            tally.skipped += 1
        continue
    wtype = spec["model"].rsplit("-", 1)[1].split(".")[0]
    # cabin info: the type mix, with the bits per weight of the whole file. A single-type file
    # names its type; a preset mix (Q4_K_M) may have fallen back to other types where rows are
    # not a multiple of 256 (the d64 files), so any quantized type line will do there.
    rc, out, err = run(["info", path])
    type_lines = [line.split()[0] for line in out.splitlines() if "bits/weight" in line]
    named = any(t != "F32" for t in type_lines) if wtype.endswith("_M") else wtype in type_lines
    check(rc == 0 and named and "bits per weight" in out,
          f"{name}: cabin info lacks the type mix or the bits per weight: {out}{err}")
    # ... and what the architecture adds to the llama block, from the file itself
    extras = {"phi3": ["fused attn_qkv", "ffn_up holds gate and up", "NeoX rope"],
              "phi3longrope": ["fused attn_qkv", "ffn_up holds gate and up", "NeoX rope"],
              "qwen3": ["per-head RMSNorm of q and k", "tied embeddings", "NeoX rope"],
              "qwen2": ["q/k/v biases", "NeoX rope"],
              "gemma3": ["per-head RMSNorm of q and k", "tied embeddings", "NeoX rope"]}.get(name.split("-")[0], [])
    # the rope variant, as the loader reads it
    rope_word = {"llama3rope": "per-frequency factors", "phi3longrope": "longrope"}.get(name.split("-")[0], "plain")
    rope_line = next((line for line in out.splitlines() if line.strip().startswith("rope variant")), "")
    check(rope_word in rope_line, f"{name}: cabin info's rope line {rope_line!r} does not say {rope_word!r}")
    # ... and its window layout (gemma3: a window of 8 on layers 0-4, layer 5 global)
    attn_line = next((line for line in out.splitlines() if line.strip().startswith("attention ")), "")
    want_attn = "sliding window of 8 on 5 of 6 layers" if name.startswith("gemma3") else "every layer sees the whole context"
    check(want_attn in attn_line and ("0,1,2,3,4" in attn_line) == name.startswith("gemma3"),
          f"{name}: cabin info's attention line {attn_line!r} does not say {want_attn!r}")
    extras_line = next((line for line in out.splitlines() if line.strip().startswith("extras")), "")
    check(all(x in extras_line for x in extras) and (extras or "fused" not in extras_line),
          f"{name}: cabin info's extras line {extras_line!r} lacks {extras}")
    tol = {"F32": 0.003, "F16": 0.003, "BF16": 0.006}.get(wtype, 0.025)
    # cabin quantize of a file with fused tensors (phi3): the fused ones are kept whole, the rest
    # become Q8_0, and the written file still gives the reference's top logit within tolerance
    if "phi3" in name:
        q8 = os.path.join(tmp, "phi3-q8_0.gguf")
        rc, out, err = run(["quantize", path, q8, "q8_0"])
        check(rc == 0 and "attn_qkv.weight: a fused tensor" in err, f"{name}: cabin quantize q8_0: rc {rc}: {err}")
        case = spec["cases"][0]
        rc, out, err = run(["logits", "-m", q8, "-p", case["prompt"], "--top", "1"])
        top = case["top_logits"][0]
        got = out.split() if rc == 0 else []
        check(len(got) == 2 and int(got[0]) == top[0] and abs(float(got[1]) - top[1]) <= tol * abs(top[1]),
              f"{name}: the Q8_0 file's top logit {got} against the reference {top}: {err}")
    for i, case in enumerate(spec["cases"], 1):
        if max_cases and i > max_cases:
            cases_left_out += 1
            continue
        prompt = case["prompt"]
        rc, out, err = run(["tokenize", "-m", path, prompt])
        ids = [int(x) for x in out.split()] if rc == 0 else None
        check(ids == case["tokens"], f"{name} case {i}: tokens {ids} != {case['tokens']}")
        rc, out, err = run(["logits", "-m", path, "-p", prompt, "--top", "32"])
        if rc != 0:
            check(False, f"{name} case {i}: cabin logits failed: {err}")
            continue
        top = case["top_logits"]
        scale = max(abs(v) for _, v in top)
        worst = check_logits(f"{name} case {i}", path, prompt, case, out, tol, [])
        if i == 1:   # the same with a q8 KV cache: its rounding stays within the weights' tolerance
            rc, out8, err8 = run(["logits", "-m", path, "-p", prompt, "--top", "32", "--kv", "q8"])
            check(rc == 0, f"{name} case {i}: cabin logits --kv q8 failed: {err8}")
            if rc == 0:
                check_logits(f"{name} case {i} (KV q8)", path, prompt, case, out8, tol, ["--kv", "q8"])
        first = int(out.split()[0])
        check(first == top[0][0] or case["greedy_margins"][0] < 2 * tol * scale,
              f"{name} case {i}: argmax {first} != {top[0][0]}")
        n = len(case["greedy"])
        rc, out, err = run(["generate", "-m", path, "-p", prompt, "-n", str(n), "--temp", "0",
                            "--ids", "--ignore-eos"])
        gen = [int(x) for x in out.split()] if rc == 0 else []
        agree = 0
        for step, (want, margin) in enumerate(zip(case["greedy"], case["greedy_margins"])):
            if margin < 2 * tol * scale:
                break
            if step >= len(gen) or gen[step] != want:
                check(False, f"{name} case {i}: greedy step {step}: {gen[step] if step < len(gen) else None} != {want}")
                break
            agree += 1
            tally.passed += 1
        if name.startswith("gemma3"):
            # the window layers in rings of 8 + 1 slots (passes of 2 tokens: the prompt goes in
            # pairs), with a q8 cache on the global layer: the same greedy steps
            rc, out, err = run(["generate", "-m", path, "-p", prompt, "-n", str(n), "--temp", "0",
                                "--ids", "--ignore-eos", "-b", "2", "--kv", "q8"])
            ring = [int(x) for x in out.split()] if rc == 0 else []
            want = case["greedy"][:agree]
            check(rc == 0 and ring[:agree] == want,
                  f"{name} case {i}: with rings (-b 2 --kv q8) the first {agree} greedy steps {ring[:agree]} "
                  f"!= the reference's {want}: {err}")
        print(f"note: {name} case {i}: logits max diff {worst:.5f} (tolerance {tol * scale:.4f}); "
              f"greedy agrees for {agree} steps")

if cases_left_out:
    print(f"skipped: {cases_left_out} cases past the first {max_cases} of each file (CABIN_REF_CASES)")
    tally.skipped += cases_left_out
print(tally.line())
sys.exit(tally.exit_code())
