// Kernel table selection and CPU feature detection. Compiled with baseline x86-64 flags: nothing
// here may execute an AVX instruction; the SIMD tables live in kernels_avx2.c/kernels_avx512.c
// and are only handed out once the processor and the OS have both said yes.
#include "engine/cpu/kernels.h"
#include "engine/half.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CABIN_X86 1
#endif

static cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#ifdef CABIN_X86
// XCR0: which register state the OS saves on context switch. Only valid when CPUID says OSXSAVE.
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

// Linux keeps AMX tile data disabled (XFD) until a process asks; an AMX instruction before that
// raises SIGILL. The request is the only honest test of "usable".
static int request_amx_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}
#endif

static void detect_features(void) {
    cpu_features f;
    memset(&f, 0, sizeof f);
#ifdef CABIN_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) goto done;
    const unsigned ecx1 = c;
    const int osxsave = (ecx1 >> 27) & 1, avx = (ecx1 >> 28) & 1;
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    // XCR0 bits: 1 SSE, 2 AVX (YMM upper halves), 5 opmask, 6 ZMM0-15 upper halves, 7 ZMM16-31,
    // 17 AMX TILECFG, 18 AMX TILEDATA.
    const int os_ymm = avx && (xcr0 & 0x6) == 0x6;
    const int os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
    const int os_amx = (xcr0 & 0x60000) == 0x60000;

    unsigned max_leaf = __get_cpuid_max(0, NULL);
    unsigned ebx7 = 0, ecx7 = 0, edx7 = 0, eax7_1 = 0;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        ebx7 = b; ecx7 = c; edx7 = d;
        if (a >= 1) { __cpuid_count(7, 1, a, b, c, d); eax7_1 = a; }
    }
    if (os_ymm) {
        f.fma = (ecx1 >> 12) & 1;
        f.f16c = (ecx1 >> 29) & 1;
        f.avx2 = (ebx7 >> 5) & 1;
    }
    if (os_zmm) {
        f.avx512f = (ebx7 >> 16) & 1;
        if (f.avx512f) {
            f.avx512dq = (ebx7 >> 17) & 1;
            f.avx512bw = (ebx7 >> 30) & 1;
            f.avx512vl = (ebx7 >> 31) & 1;
            f.avx512vnni = (ecx7 >> 11) & 1;
            f.avx512bf16 = (eax7_1 >> 5) & 1;
        }
    }
    f.amx_tile_advertised = (edx7 >> 24) & 1;
    f.amx_bf16 = (edx7 >> 22) & 1;
    f.amx_usable = f.amx_tile_advertised && os_amx && request_amx_permission();
done:
#endif
    features = f;
}

const cpu_features *cpu_get_features(void) {
    pthread_once(&features_once, detect_features);
    return &features;
}

const cpu_kernels *cpu_kernels_scalar(void) { return &cpu_kernels_scalar_table; }

const cpu_kernels *cpu_kernels_avx2(void) {
    const cpu_features *f = cpu_get_features();
    return f->avx2 && f->fma && f->f16c ? &cpu_kernels_avx2_table : NULL;
}

// The AVX-512 table with the BF16 dot-product kernels, for processors that have them, and
// whether they are the faster here (cpu_bf16_dot_pays, asked once).
// Both get the AMX prefill kernels where the processor and the OS allow them.
static cpu_kernels avx512_table, avx512_bf16_table;
static bool avx512_bf16_pays;
static pthread_once_t avx512_once = PTHREAD_ONCE_INIT;
static void avx512_make(void) {
    const cpu_features *f = cpu_get_features();
    const bool amx = f->amx_usable && f->amx_bf16;
    avx512_table = cpu_kernels_avx512_table;
    if (amx) cpu_kernels_add_amx(&avx512_table);
    if (!f->avx512bf16) return;
    avx512_bf16_table = cpu_kernels_avx512_table;
    cpu_kernels_avx512_add_bf16(&avx512_bf16_table);
    if (amx) cpu_kernels_add_amx(&avx512_bf16_table);
    avx512_bf16_pays = cpu_bf16_dot_pays();
}

static bool avx512_runs_here(void) {
    const cpu_features *f = cpu_get_features();
    // kernels_avx512.c is compiled with AVX2/FMA/F16C as well, so it needs all of them.
    return f->avx2 && f->fma && f->f16c && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512vnni;
}

const cpu_kernels *cpu_kernels_avx512_bf16(void) {
    if (!avx512_runs_here() || !cpu_get_features()->avx512bf16) return NULL;
    pthread_once(&avx512_once, avx512_make);
    return &avx512_bf16_table;
}

const cpu_kernels *cpu_kernels_avx512(void) {
    if (!avx512_runs_here()) return NULL;
    pthread_once(&avx512_once, avx512_make);
    const cpu_kernels *dot = cpu_kernels_avx512_bf16();
    return dot && avx512_bf16_pays ? dot : &avx512_table;
}

size_t cpu_act_row_bytes(enum act_format af, int64_t k) {
    switch (af) {
    case ACT_Q8_0: return (size_t)(k / QK8_0) * sizeof(block_q8_0);
    case ACT_Q8_K: return (size_t)(k / QK_K) * sizeof(block_q8_k);
    case ACT_BF16: return (size_t)((k + 31) / 32 * 32) * sizeof(uint16_t);
    case ACT_BF16_SPLIT: return (size_t)((k + 31) / 32 * 32) * 2 * sizeof(uint16_t);
    case ACT_F32: break;
    }
    return (size_t)k * sizeof(float);
}

void cpu_act_prepare(const cpu_kernels *kt, enum act_format af, const float *x, int64_t ldx,
                     int64_t k, int64_t n, void *dst) {
    const size_t rb = cpu_act_row_bytes(af, k);
    for (int64_t t = 0; t < n; t++) {
        const float *xr = x + t * ldx;
        uint8_t *row = (uint8_t *)dst + (size_t)t * rb;
        switch (af) {
        case ACT_Q8_0: kt->quantize_act_q8_0(xr, (block_q8_0 *)(void *)row, k); break;
        case ACT_Q8_K: kt->quantize_act_q8_k(xr, (block_q8_k *)(void *)row, k); break;
        case ACT_BF16: {
            uint16_t *b = (uint16_t *)(void *)row;
            int64_t i = 0;
            for (; i < k; i++) b[i] = f32_to_bf16(xr[i]);
            for (; i < (k + 31) / 32 * 32; i++) b[i] = 0;
            break;
        }
        case ACT_BF16_SPLIT: kt->act_bf16_split(xr, (uint8_t *)dst + (size_t)(t / 16 * 16) * rb, (int)(t % 16), k); break;
        case ACT_F32: memcpy(row, xr, rb); break;
        }
    }
}

const cpu_kernels *cpu_kernels_select(const char *name) {
    if (!name || !strcmp(name, "auto")) {
        const char *env = getenv("CABIN_KERNELS");
        name = env && *env ? env : "auto";
    }
    if (!strcmp(name, "auto")) {
        const cpu_kernels *k = cpu_kernels_avx512();
        if (!k) k = cpu_kernels_avx2();
        return k ? k : cpu_kernels_scalar();
    }
    if (!strcmp(name, "scalar")) return cpu_kernels_scalar();
    if (!strcmp(name, "avx2")) return cpu_kernels_avx2();
    if (!strcmp(name, "avx512")) return cpu_kernels_avx512();
    return NULL;
}
