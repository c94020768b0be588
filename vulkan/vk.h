// Vulkan compute backend internals, shared by vulkan/*.c (not by the engine: the engine sees only
// engine/backend.h and vulkan/vulkan_backend.h).
//   vk_device.c   instance, physical device choice and listing, device, buffers and memory
//   vk_pipes.c    embedded SPIR-V -> pipelines (lazily), pipeline cache file, descriptor-set cache
//   backend_vulkan.c  the backend: activations, life cycle, registry row
//   vk_weights.c  weights: device layouts, repacking, upload (again after a precision switch)
//   vk_record.c   batch recording: dispatches and their barriers, uploads, begin/end batch, profiling
//   vk_ops.c      the ops: one or two dispatches each
//   vk_kv.c       the device copy of the KV cache: layout, pull/push for eviction and format switches
//   vk_attn.c     the KV ops: kv_store (store + fold into the quantized store), attention (+ statistics)
#ifndef CABIN_VK_H
#define CABIN_VK_H

#include "engine/backend.h"
#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

// ---- device (vk_device.c) ----

// A buffer with its own memory allocation. map is non-NULL when the memory is host-visible and
// coherent (then the host reads and writes it directly).
typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map;
    int heap;
} vk_buf;

// Where a buffer should live: DEVICE prefers device-local memory (host-visible too if the device
// has such memory, as integrated GPUs and lavapipe do); HOST needs host-visible coherent memory
// (staging, uploads of small host arrays, read-back).
enum vk_mem_kind { VKM_DEVICE, VKM_HOST };

typedef struct vk_dev {
    VkInstance inst;
    VkDebugUtilsMessengerEXT messenger;   // CABIN_VK_VALIDATE=1 only
    int validation_errors;                // messages of error severity seen
    VkPhysicalDevice phys;
    int index;                            // as `cabin devices` numbers it
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t queue_family;
    VkDevice dev;
    VkQueue queue;
    VkCommandPool cmd_pool;
    bool subgroup_arith;                  // subgroupAdd/Max in compute shaders
    uint32_t subgroup_size;
    bool timestamps;                      // the queue can write timestamps
    float ts_period;                      // ns per timestamp tick
    uint64_t heap_used[VK_MAX_MEMORY_HEAPS];  // bytes allocated per heap by this backend
    bool unmapped_device;                 // CABIN_VK_UNMAPPED=1: VKM_DEVICE buffers are never mapped, as
                                          // on a discrete GPU (tests the staging paths on lavapipe)
} vk_dev;

// Opens device `want` (-1: discrete, then integrated, then any other, then CPU), with validation
// when CABIN_VK_VALIDATE=1.
int vk_dev_open(vk_dev *d, int want, errbuf *err);
void vk_dev_close(vk_dev *d);
// Prints every device (index, name, type, driver, heaps, subgroup size, features) to f.
int vk_dev_list(FILE *f, errbuf *err);

int vk_buf_create(vk_dev *d, vk_buf *b, VkDeviceSize size, enum vk_mem_kind kind, errbuf *err);
void vk_buf_destroy(vk_dev *d, vk_buf *b);
// Records into a one-off command buffer with fn, submits it and waits.
int vk_run_once(vk_dev *d, void (*fn)(VkCommandBuffer cb, void *ud), void *ud, errbuf *err);
const char *vk_result_str(VkResult r);

// ---- pipelines and descriptors (vk_pipes.c) ----

#define VK_MAX_BINDINGS 6
#define VK_PUSH_BYTES 128

typedef struct vk_pipe {
    const char *name;          // SPIR-V blob name (vulkan/shaders/NAME.comp + variant)
    int n_bind;
    VkPipeline pipe;           // created on first use
    int n_spec;                // specialization constants 0..n_spec-1 (uint32 each)
    uint32_t spec[2];
} vk_pipe;

typedef struct vk_desc_key {
    VkBuffer buf[VK_MAX_BINDINGS];
    VkDeviceSize off[VK_MAX_BINDINGS], range[VK_MAX_BINDINGS];
    int n;
} vk_desc_key;

typedef struct vk_pipes {
    vk_dev *d;
    VkPipelineCache cache;
    char cache_path[1024];
    VkDescriptorSetLayout dsl[VK_MAX_BINDINGS + 1];   // by binding count
    VkPipelineLayout layout[VK_MAX_BINDINGS + 1];
    // descriptor-set cache: key -> set, open addressing; sets come from a list of pools
    struct vk_desc_ent { vk_desc_key key; VkDescriptorSet set; bool used; } *ents;
    size_t n_ents, cap_ents;
    VkDescriptorPool *pools;
    int n_pools;
    uint32_t pool_left;        // sets left in the last pool
} vk_pipes;

int vk_pipes_init(vk_pipes *p, vk_dev *d, errbuf *err);
void vk_pipes_free(vk_pipes *p);     // saves the pipeline cache
int vk_pipe_get(vk_pipes *p, vk_pipe *pipe, errbuf *err);
// A descriptor set binding key's buffers in order (cached: the same buffers give the same set).
int vk_desc_get(vk_pipes *p, const vk_desc_key *key, VkDescriptorSet *out, errbuf *err);
// Forgets every cached set (call when a buffer is destroyed, outside a batch).
void vk_desc_clear(vk_pipes *p);
// True if the build has the shaders (glslc was found at build time).
bool vk_have_shaders(void);

// ---- the backend's state (backend_vulkan.c; its parts below) ----

// Device layouts of weights, each with its pipelines (shaders/common.glsl describes them). The
// float types keep their own; every quantized type is repacked from its codes
// (engine/wtype_codes.h) into the smallest layout that holds them exactly: Q4_0 (4-bit codes,
// a scale per 32), Q8_0 (8-bit codes, a scale per 32), Q4M (4-bit codes, scale and min per 32)
// or I8M (8-bit codes, scale and min per 16). FP8 has a layout of its own, F8 (E4M3 bytes, a
// scale per 32).
enum { VT_F32, VT_F16, VT_BF16, VT_Q8_0, VT_Q4_0, VT_Q4M, VT_I8M, VT_F8, VT_COUNT };
int vk_type_slot(uint32_t wtype);   // the layout a weight type is uploaded in; -1: none (vk_weights.c)

struct bk_act {
    vk_buf buf;          // (rows, cols) float32, rows are tokens
    int64_t rows, cols;
};

// A weight tensor on the device, repacked into 32-bit words (layouts: shaders/common.glsl).
// Tensors larger than one storage-buffer binding allows are split into parts of whole rows.
typedef struct vk_part {
    vk_buf buf;
    int64_t row0, rows;
    uint32_t scale_off;   // Q types: word index of the part's scales
} vk_part;

typedef struct vk_weight {
    const tensor *owner;  // the tensor whose bk points here (checked: bk may be stale)
    const void *src;      // its host data when uploaded (a precision switch changes it)
    uint32_t src_type;    // its type when uploaded
    int slot;             // its device layout (vk_type_slot of src_type)
    int64_t ne0, ne1;
    uint32_t row_words;
    vk_part *parts;
    int n_parts;
    struct vk_weight *next;
} vk_weight;

// The device copy of a KV cache (vk_kv.c): one buffer per layer holding the host layer of
// engine/kv_cache.h byte for byte, one section per host array at a word offset (layout:
// shaders/kvq.glsl), so eviction and format switches copy sections between host and device and
// run the CPU code in between. The counters (n_used, nq, nqv) live in the host kv_cache only:
// kv_store advances nq/nqv as it records the folds.
enum { VKS_K, VKS_V, VKS_KQ, VKS_KP, VKS_VQ, VKS_VP, VKS_COUNT };   // F formats: K, V only
typedef struct vk_kv {
    kv_cache *owner;
    struct vk_backend *v;
    int n_layer;
    // the layout the device store was made for (a format switch re-creates it)
    enum kv_format format;
    int n_ctx, kv_dim, recent, res_cap, vcap, q_groups, gv, ring_rows;
    uint8_t *ring_layer;           // (n_layer) copy of kv->ring_layer; NULL: no rings
    // [0]: a layer of the cache's format, [1]: a window layer's ring (K, V sections only)
    uint32_t off[2][VKS_COUNT];    // word offset of each section in a layer buffer
    uint64_t bytes[2][VKS_COUNT];  // bytes of each section
    vk_buf *L;                     // per layer
    vk_buf rope;                   // (tables, n_ctx, rope_dim/2, 2) f32 cos/sin of kv->rope_cs[0] (and
                                   // [1] after it when the cache has a second rotation); 16 bytes if none
    rope_freqs rope_freqs[KV_ROPES];   // the angles it holds (rope_dim 0: none)
    vk_buf stats;                  // (2, n_layer, n_head, n_ctx) f32: mass, then last (h2o/entropy)
    int stats_heads;
    vk_buf mask;                   // (n_layer, n_kv_head, n_ctx) bytes (entropy)
    int mask_n;                    // slots the device mask holds; later slots are visible
    struct vk_kv *next;
} vk_kv;

typedef struct vk_bind {
    VkBuffer buf;
    VkDeviceSize off, range;
    bool write;
} vk_bind;

typedef struct vk_chunk {    // host-visible buffer for small host arrays (ids, positions, rope)
    vk_buf buf;
    VkDeviceSize used;
} vk_chunk;

typedef struct vk_backend {
    vk_dev d;
    vk_pipes p;
    vk_pipe matmul[VT_COUNT][2], matmul_rows[VT_COUNT][2], embed[VT_COUNT], rmsnorm, attn_combine, rope, glu, scale,
            add, bias;   // [..][0]: n = 1, [..][1]: tiles of 8 tokens
    // KV pipelines by kv_format (KV_F16, KV_F32, KV_Q8, KV_Q4): attention [..][split], the
    // statistics pass, kv_store [..][mode: store, fold keys, fold values, copy]
    vk_pipe attention[KV_FORMAT_COUNT][2], attn_stats[KV_FORMAT_COUNT], kv_store[KV_FORMAT_COUNT][4];
    VkCommandBuffer cb;
    VkFence fence;
    bool recording;
    bool failed;             // an op could not be recorded: end_batch reports err
    errbuf err;
    // hazards since the last barrier
    VkBuffer written[32], reads[32];
    int n_written, n_reads;
    // uploads of host arrays this batch
    vk_chunk *chunks;
    int n_chunks, cur_chunk;
    struct { int chunk; VkDeviceSize off, bytes; } recent[16];
    int n_recent;
    // rope tables of this batch: cos/sin for (positions, rotation), one per rotation the model's
    // layers turn by (gemma3's window and global layers alternate between two)
    struct vk_rope_table {
        int32_t *pos;
        int n;
        rope_freqs freqs;
        vk_bind bind;
        bool valid;
    } rope_tables[KV_ROPES];
    int rope_next;           // the entry of rope_tables a new table replaces
    vk_buf attn_scratch;     // split attention partials
    vk_buf attn_ml;          // (n, n_head, 2) final softmax max and sum, for the statistics pass
    vk_buf kv_scratch;       // kv_store: the key window while it moves down after a fold
    vk_buf *grave;           // buffers replaced during a batch, destroyed at end_batch
    int n_grave;
    bool desc_stale;         // a buffer was destroyed while recording: clear the cache after
    int attn_split_force;    // CABIN_VK_ATTN_SPLIT: split count for every attention (tests)
    long fail_after;         // CABIN_VK_FAIL_AFTER=N: the batch after N more is lost as on a device
                             // reset (VK_ERROR_DEVICE_LOST; tests); -1: never
    bool rows_matmul;        // matmul_rows.comp (CPU devices) instead of matmul.comp; CABIN_VK_MATMUL
                             // = rows | wg overrides
    vk_weight *weights;
    vk_kv *kvs;
    // profiling
    bool profiling;
    VkQueryPool qpool;
    uint32_t q_cap, q_used;
    uint8_t *q_kind;         // op kind of each begin/end pair
    double op_secs[OP_COUNT];
    uint64_t op_calls[OP_COUNT];
} vk_backend;

#define VKB(b) ((vk_backend *)(b)->impl)

// ---- recording (vk_record.c) ----

// Sets begin_batch, end_batch and the profiling functions of b.
void vk_record_install(backend *b);
// Keeps the first error (since the last end_batch) for end_batch to report; ops stop recording.
void vk_fail(vk_backend *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Records one dispatch of pipe with bindings b (barrier first if a binding was written, or is
// about to be written after a read, since the last barrier) and push constants pc.
void vk_dispatch(vk_backend *v, vk_pipe *pipe, const vk_bind *b, int nb, const void *pc, size_t pc_bytes,
                 uint32_t gx, uint32_t gy, uint32_t gz);
// Copies a host array into this batch's upload buffer; identical recent uploads are shared.
bool vk_upload(vk_backend *v, const void *data, size_t bytes, vk_bind *out);
// Timestamps around one op's dispatches (profiling on): its device time and a call go to kind k.
void vk_prof_begin(vk_backend *v);
void vk_prof_end(vk_backend *v, enum op_kind k);
// A buffer for this batch that stays valid until end_batch (attention partials).
bool vk_scratch(vk_backend *v, vk_buf *slot, VkDeviceSize bytes);
// Destroys b now, or at end_batch when a batch is being recorded.
void vk_buf_retire(vk_backend *v, vk_buf *b);

// ---- weights (vk_weights.c) ----

// Sets weight_prepare, weight_release and supports_type of b.
void vk_weights_install(backend *b);
// The device weight t->bk points to when it is one of v's, else NULL (callers check that it
// is t's and still matches t: bk may be stale).
vk_weight *vk_weight_of(vk_backend *v, const tensor *t);
// Unlinks w from v->weights and retires its buffers.
void vk_weight_free(vk_backend *v, vk_weight *w);

// vk_ops.c
void vk_ops_install(backend *b);

// vk_kv.c
int vk_kv_prepare(backend *b, kv_cache *kv, errbuf *err);
void vk_kv_release(backend *b, kv_cache *kv);
void vk_kv_free(vk_backend *v, vk_kv *k);
// The device copy of kv, checked against the cache's layout (fails the batch otherwise).
vk_kv *vk_kv_of(vk_backend *v, kv_cache *kv);
// Binding of the rope table (uploaded from kv->rope_cs when the shape changed).
bool vk_kv_rope(vk_backend *v, kv_cache *kv, vk_kv *k, vk_bind *out);
// The statistics buffer for n_head heads (created zeroed on first use) and the mask buffer.
bool vk_kv_stats(vk_backend *v, kv_cache *kv, vk_kv *k, int n_head);

// vk_attn.c
void vk_op_kv_store(backend *b, kv_cache *kv, int layer, const bk_act *k, const bk_act *val, int n,
                    const int32_t *slots);
void vk_op_attention(backend *b, const bk_act *q, kv_cache *kv, int layer, int n, int n_past,
                     const attn_params *p, bk_act *out);

// ---- the build's shader-variant check (vk_variants.c) ----

// A backend with no device, its pipelines named as a device with(out) subgroup arithmetic
// would name them (backend_vulkan.c); b->destroy frees it.
backend *vk_backend_names_only(bool subgroup_arith);
// Every pipeline of v, by field (the one list: vkb_destroy frees them, the check reads their
// names): fills all[] (VK_MAX_PIPES at most) and returns how many.
#define VK_MAX_PIPES (9 + 5 * VT_COUNT + 7 * KV_FORMAT_COUNT)
int vk_backend_pipes(vk_backend *v, vk_pipe **all);
// How many variants the backend asks for are not embedded; each is printed to out.
int vk_variants_missing(FILE *out);

#endif
