// The device copy of a KV cache. Each layer is one buffer holding the host layer of
// engine/kv_cache.h byte for byte (sections in shaders/kvq.glsl), so the host code stays the
// authority on everything but the per-token work: eviction and format conversion pull the used
// part of every section into the host arrays (kv->bk_sync, KV_SYNC_PULL), run the CPU code, and
// push the result back (KV_SYNC_PUSH, which re-creates the store when the format or window
// changed). With h2o/entropy the attention statistics (mass, last) and the entropy mask travel
// the same way. kv_store and attention (vk_attn.c) work on the device copy only.
#include "vulkan/vk.h"

#include <stdlib.h>
#include <string.h>


// ---- layout ----

// Section sizes in bytes for kv's format and shape (what kv_cache_init_windows allocates per
// layer, without its +1 guard bytes): a layer of the cache's format, or a ring (K, V rows).
static void section_bytes(const kv_cache *kv, bool ring, uint64_t b[VKS_COUNT]) {
    uint64_t D = (uint64_t)kv->kv_dim, rb = kv->row_bytes;
    memset(b, 0, VKS_COUNT * sizeof b[0]);
    if (ring) {
        b[VKS_K] = b[VKS_V] = (uint64_t)kv->ring_rows * rb;
        return;
    }
    if (!kv_format_quantized(kv->format)) {
        b[VKS_K] = b[VKS_V] = (uint64_t)kv->n_ctx * rb;
        return;
    }
    uint64_t codes = kv_format_code_bytes(kv->format, D);   // bytes of D codes (D % 8 == 0)
    uint64_t vslots = (uint64_t)(kv->n_ctx - kv->vcap);
    b[VKS_K] = (uint64_t)kv->res_cap * rb;
    b[VKS_V] = (uint64_t)kv->vcap * rb;
    b[VKS_KQ] = (uint64_t)kv->q_groups * KV_GROUP * codes;
    b[VKS_KP] = (uint64_t)kv->q_groups * D * 4;
    b[VKS_VQ] = vslots * codes;
    b[VKS_VP] = vslots * (D / (uint64_t)kv->gv) * 4;
}

// Bytes of section `sec` of layer l that hold data (the filled slots), from its start.
static uint64_t used_bytes(const kv_cache *kv, int l, int sec) {
    uint64_t D = (uint64_t)kv->kv_dim, rb = kv->row_bytes, n = (uint64_t)(kv->n_used > 0 ? kv->n_used : 0);
    if (kv_layer_ring(kv, l)) return sec == VKS_K || sec == VKS_V ? (uint64_t)kv->ring_rows * rb : 0;   // a ring: all of it
    if (!kv_format_quantized(kv->format)) return n * rb;
    uint64_t codes = kv_format_code_bytes(kv->format, D), nq = (uint64_t)kv->nq[l], nqv = (uint64_t)kv->nqv[l];
    uint64_t win = n > nq ? n - nq : 0;
    switch (sec) {
    case VKS_K: return (win < (uint64_t)kv->res_cap ? win : (uint64_t)kv->res_cap) * rb;
    case VKS_V: return (uint64_t)kv->vcap * rb;   // a ring: all of it
    case VKS_KQ: return nq * codes;
    case VKS_KP: return nq / KV_GROUP * D * 4;
    case VKS_VQ: return nqv * codes;
    default: return nqv * (D / (uint64_t)kv->gv) * 4;
    }
}

static void *host_section(kv_cache *kv, int l, int sec) {
    switch (sec) {
    case VKS_K: return kv->k[l];
    case VKS_V: return kv->v[l];
    case VKS_KQ: return kv->kq[l];
    case VKS_KP: return kv->kp[l];
    case VKS_VQ: return kv->vq[l];
    default: return kv->vp[l];
    }
}

static bool layout_same(const vk_kv *k, const kv_cache *kv) {
    return k->format == kv->format && k->n_ctx == kv->n_ctx && k->kv_dim == kv->kv_dim && k->n_layer == kv->n_layer &&
           k->recent == kv->recent && k->res_cap == kv->res_cap && k->vcap == kv->vcap &&
           k->q_groups == kv->q_groups && k->gv == kv->gv && k->ring_rows == kv->ring_rows &&
           (!kv->ring_rows || memcmp(k->ring_layer, kv->ring_layer, (size_t)kv->n_layer) == 0);
}

// ---- transfers between host memory and a device buffer ----

typedef struct xfer_job { VkBuffer src, dst; VkDeviceSize src_off, dst_off, bytes; } xfer_job;

static void record_xfer(VkCommandBuffer cb, void *ud) {
    xfer_job *j = ud;
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    VkBufferCopy c = { j->src_off, j->dst_off, j->bytes };
    vkCmdCopyBuffer(cb, j->src, j->dst, 1, &c);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

// Copies `bytes` between host memory and b at byte offset off (to_dev: host -> device). Mapped
// (host-visible) buffers are copied directly, others through a staging buffer.
static int buf_io(vk_backend *v, vk_buf *b, VkDeviceSize off, void *host, size_t bytes, bool to_dev, errbuf *err) {
    if (!bytes) return 0;
    if (b->map) {
        if (to_dev) memcpy((uint8_t *)b->map + off, host, bytes);
        else memcpy(host, (const uint8_t *)b->map + off, bytes);
        return 0;
    }
    vk_buf st;
    if (vk_buf_create(&v->d, &st, bytes, VKM_HOST, err)) return err_prefix(err, "vulkan: KV cache transfer");
    if (to_dev) memcpy(st.map, host, bytes);
    xfer_job j = to_dev ? (xfer_job){ st.buf, b->buf, 0, off, bytes } : (xfer_job){ b->buf, st.buf, off, 0, bytes };
    int rc = vk_run_once(&v->d, record_xfer, &j, err);
    if (rc == 0 && !to_dev) memcpy(host, st.map, bytes);
    vk_buf_destroy(&v->d, &st);
    return rc;
}

static void record_zero(VkCommandBuffer cb, void *ud) {
    vk_buf *b = ud;
    vkCmdFillBuffer(cb, b->buf, 0, VK_WHOLE_SIZE, 0);
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
}

// A zero-filled device buffer.
static int buf_zeroed(vk_backend *v, vk_buf *b, VkDeviceSize bytes, errbuf *err) {
    if (vk_buf_create(&v->d, b, bytes, VKM_DEVICE, err)) return -1;
    if (b->map) { memset(b->map, 0, (size_t)b->size); return 0; }
    if (vk_run_once(&v->d, record_zero, b, err)) { vk_buf_destroy(&v->d, b); return -1; }
    return 0;
}

// ---- the store ----

static void store_free(vk_backend *v, vk_kv *k) {
    for (int l = 0; l < k->n_layer && k->L; l++) vk_buf_retire(v, &k->L[l]);
    free(k->L);
    free(k->ring_layer);
    k->L = NULL;
    k->ring_layer = NULL;
}

// Makes k's layer buffers for kv's layout (k's former buffers are left alone).
static int store_make(vk_backend *v, kv_cache *kv, vk_kv *k, errbuf *err) {
    if (kv_format_quantized(kv->format)) {
        if (kv->kv_dim % 8 || kv->kv_dim / kv->gv > 256)
            return err_set(err, "vulkan: KV format %s needs rows of a multiple of 8 channels in at most 256 value "
                           "groups (this model's rows: %d channels, groups of %d)", kv_format_name(kv->format),
                           kv->kv_dim, kv->gv);
    }
    uint64_t total[2] = { 0, 0 };
    for (int ring = 0; ring < 2; ring++) {
        uint64_t b[VKS_COUNT];
        section_bytes(kv, ring, b);
        for (int i = 0; i < VKS_COUNT; i++) {
            k->off[ring][i] = (uint32_t)(total[ring] / 4);
            k->bytes[ring][i] = b[i];
            total[ring] += (b[i] + 3) / 4 * 4;
        }
    }
    if (total[0] > v->d.props.limits.maxStorageBufferRange || total[0] >= (1ull << 34))
        return err_set(err, "vulkan: a %s KV cache layer of %d positions x %d takes %llu bytes, more than the "
                       "device's buffer range %u", kv_format_name(kv->format), kv->n_ctx, kv->kv_dim,
                       (unsigned long long)total[0], v->d.props.limits.maxStorageBufferRange);
    k->format = kv->format;
    k->n_ctx = kv->n_ctx;
    k->kv_dim = kv->kv_dim;
    k->recent = kv->recent;
    k->res_cap = kv->res_cap;
    k->vcap = kv->vcap;
    k->q_groups = kv->q_groups;
    k->gv = kv->gv;
    k->n_layer = kv->n_layer;
    k->ring_rows = kv->ring_rows;
    k->ring_layer = NULL;
    if (kv->ring_rows) k->ring_layer = memcpy(xmalloc((size_t)kv->n_layer), kv->ring_layer, (size_t)kv->n_layer);
    k->L = xcalloc((size_t)kv->n_layer, sizeof *k->L);
    for (int l = 0; l < kv->n_layer; l++) {
        uint64_t bytes = total[kv_layer_ring(kv, l) ? 1 : 0];
        if (buf_zeroed(v, &k->L[l], bytes, err)) {
            err_prefix(err, "vulkan: KV cache layer %d (%s, %llu bytes)", l, kv_format_name(kv_layer_format(kv, l)),
                       (unsigned long long)bytes);
            for (int i = 0; i < l; i++) vk_buf_destroy(&v->d, &k->L[i]);
            free(k->L);
            free(k->ring_layer);
            k->L = NULL;
            k->ring_layer = NULL;
            return -1;
        }
    }
    return 0;
}

// Copies the used part of every section, and the statistics and mask when the device has them.
static int transfer_all(vk_backend *v, kv_cache *kv, vk_kv *k, bool to_dev, errbuf *err) {
    for (int l = 0; l < kv->n_layer; l++) {
        int nsec = kv_format_quantized(kv_layer_format(kv, l)) ? VKS_COUNT : 2;
        const uint32_t *off = k->off[kv_layer_ring(kv, l) ? 1 : 0];
        for (int s = 0; s < nsec; s++)
            if (buf_io(v, &k->L[l], (VkDeviceSize)off[s] * 4, host_section(kv, l, s), (size_t)used_bytes(kv, l, s),
                       to_dev, err))
                return -1;
    }
    if (k->stats.buf && kv->mass && kv->last && k->stats_heads == kv->shape.n_head) {
        size_t per = (size_t)kv->n_layer * (size_t)kv->shape.n_head * (size_t)kv->n_ctx * sizeof(float);
        if (buf_io(v, &k->stats, 0, kv->mass, per, to_dev, err) || buf_io(v, &k->stats, per, kv->last, per, to_dev, err))
            return -1;
    }
    return 0;
}

static int push_mask(vk_backend *v, kv_cache *kv, vk_kv *k, errbuf *err) {
    k->mask_n = 0;
    if (!kv->mask || kv->shape.n_kv_head <= 0) return 0;
    size_t bytes = (size_t)kv->n_layer * (size_t)kv->shape.n_kv_head * (size_t)kv->n_ctx;
    if (k->mask.buf && k->mask.size < bytes) vk_buf_retire(v, &k->mask);
    if (!k->mask.buf && buf_zeroed(v, &k->mask, bytes, err)) return err_prefix(err, "vulkan: KV mask");
    if (buf_io(v, &k->mask, 0, kv->mask, bytes, true, err)) return -1;
    k->mask_n = kv->n_used;
    return 0;
}

// kv->bk_sync: see engine/kv_cache.h.
static int kv_sync(kv_cache *kv, int dir, errbuf *err) {
    vk_kv *k = kv->bk;
    if (!k || k->owner != kv) return err_set(err, "vulkan: KV cache sync without a device copy");
    vk_backend *v = k->v;
    if (v->recording) return err_set(err, "vulkan: KV cache sync while a batch is being recorded");
    if (dir == KV_SYNC_PULL) {
        if (!layout_same(k, kv))
            return err_set(err, "vulkan: the KV cache changed format (%s -> %s) without reaching the device",
                           kv_format_name(k->format), kv_format_name(kv->format));
        return transfer_all(v, kv, k, false, err);
    }
    if (!layout_same(k, kv)) {   // a format switch: a new store; the former one stays until it exists
        vk_kv nk = *k;
        nk.L = NULL;
        if (store_make(v, kv, &nk, err)) return -1;
        store_free(v, k);
        *k = nk;
    }
    if (transfer_all(v, kv, k, true, err)) return -1;
    return push_mask(v, kv, k, err);
}

// ---- life cycle ----

void vk_kv_free(vk_backend *v, vk_kv *k) {
    for (vk_kv **pp = &v->kvs; *pp; pp = &(*pp)->next)
        if (*pp == k) { *pp = k->next; break; }
    store_free(v, k);
    vk_buf_retire(v, &k->rope);
    vk_buf_retire(v, &k->stats);
    vk_buf_retire(v, &k->mask);
    free(k);
}

static int kv_make(vk_backend *v, kv_cache *kv, errbuf *err) {
    vk_kv *k = xcalloc(1, sizeof *k);
    k->owner = kv;
    k->v = v;
    if (store_make(v, kv, k, err)) { free(k); return -1; }
    k->next = v->kvs;
    v->kvs = k;
    kv->bk = k;
    kv->bk_sync = kv_sync;
    if (kv->n_used > 0 && kv_sync(kv, KV_SYNC_PUSH, err)) {   // a filled cache: its contents
        vk_kv_free(v, k);
        kv->bk = NULL;
        kv->bk_sync = NULL;
        return -1;
    }
    return 0;
}

vk_kv *vk_kv_of(vk_backend *v, kv_cache *kv) {
    for (vk_kv *k = v->kvs; k; k = k->next)
        if (k == kv->bk && k->owner == kv) {
            if (layout_same(k, kv)) return k;
            vk_fail(v, "vulkan: the KV cache changed format (%s -> %s) without reaching the device",
                    kv_format_name(k->format), kv_format_name(kv->format));
            return NULL;
        }
    // Not prepared (or prepared by another backend): prepare now; only outside a batch can the
    // one-off fill be submitted, so a batch that finds no cache fails instead.
    if (v->recording) { vk_fail(v, "vulkan: KV cache used without kv_prepare"); return NULL; }
    errbuf e;
    if (kv_make(v, kv, &e)) { vk_fail(v, "%s", e.msg); return NULL; }
    return kv->bk;
}

int vk_kv_prepare(backend *b, kv_cache *kv, errbuf *err) {
    vk_backend *v = VKB(b);
    for (vk_kv *k = v->kvs; k; k = k->next)
        if (k == kv->bk && k->owner == kv) { vk_kv_free(v, k); break; }
    kv->bk = NULL;
    kv->bk_sync = NULL;
    return kv_make(v, kv, err);
}

void vk_kv_release(backend *b, kv_cache *kv) {
    vk_backend *v = VKB(b);
    for (vk_kv *k = v->kvs; k; k = k->next)
        if (k == kv->bk && k->owner == kv) { vk_kv_free(v, k); break; }
    kv->bk = NULL;
    kv->bk_sync = NULL;
}

// ---- rope table, statistics ----

// Whether the device tables hold the cache's rotations (each absent, or the same angles).
static bool rope_current(const vk_kv *k, const kv_cache *kv) {
    for (int r = 0; r < KV_ROPES; r++) {
        bool held = k->rope_freqs[r].rope_dim > 0, want = kv->rope_cs[r] != NULL;
        if (held != want || (want && !rope_freqs_same(&k->rope_freqs[r], &kv->rope[r]))) return false;
    }
    return true;
}

bool vk_kv_rope(vk_backend *v, kv_cache *kv, vk_kv *k, vk_bind *out) {
    if (!k->rope.buf || !rope_current(k, kv)) {
        vk_buf_retire(v, &k->rope);
        int rd = kv->rope_cs[0] ? kv->rope[0].rope_dim : 0, n_tables = kv->rope_cs[1] ? 2 : 1;
        size_t table = (size_t)kv->n_ctx * (size_t)(rd / 2) * 2 * sizeof(float);
        size_t bytes = rd ? table * (size_t)n_tables : 16;
        errbuf e;
        bool bad = buf_zeroed(v, &k->rope, bytes, &e);
        for (int r = 0; r < n_tables && rd && !bad; r++) bad = buf_io(v, &k->rope, table * (size_t)r, kv->rope_cs[r], table, true, &e);
        if (bad) {
            vk_fail(v, "vulkan: KV rope table: %s", e.msg);
            return false;
        }
        for (int r = 0; r < KV_ROPES; r++) {
            memset(&k->rope_freqs[r], 0, sizeof k->rope_freqs[r]);
            if (kv->rope_cs[r]) k->rope_freqs[r] = kv->rope[r];
        }
    }
    *out = (vk_bind){ k->rope.buf, 0, VK_WHOLE_SIZE, false };
    return true;
}

bool vk_kv_stats(vk_backend *v, kv_cache *kv, vk_kv *k, int n_head) {
    if (k->stats.buf && k->stats_heads == n_head) return true;
    vk_buf_retire(v, &k->stats);
    size_t per = (size_t)kv->n_layer * (size_t)n_head * (size_t)kv->n_ctx * sizeof(float);
    errbuf e;
    // starts from the host's figures (zero, or what an earlier push left there)
    if (buf_zeroed(v, &k->stats, 2 * per, &e) || buf_io(v, &k->stats, 0, kv->mass, per, true, &e) ||
        buf_io(v, &k->stats, per, kv->last, per, true, &e)) {
        vk_fail(v, "vulkan: KV attention statistics: %s", e.msg);
        vk_buf_retire(v, &k->stats);
        return false;
    }
    k->stats_heads = n_head;
    return true;
}
