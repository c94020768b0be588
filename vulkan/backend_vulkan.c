// The Vulkan backend: activations in device buffers, the backend's life cycle (device,
// pipelines' names, command buffer) and its row in the registry. Its parts: weights
// (vk_weights.c), batch recording and profiling (vk_record.c), the ops (vk_ops.c, vk_attn.c)
// and the device copy of the KV cache (vk_kv.c).
#include "vulkan/vk.h"
#include "vulkan/vulkan_backend.h"

#include <stdlib.h>
#include <string.h>

// ---- activations ----

static bk_act *vkb_act_new(backend *b, int64_t rows, int64_t cols) {
    vk_backend *v = VKB(b);
    uint64_t bytes;
    if (rows < 1 || cols < 1 || !mul_u64((uint64_t)rows, (uint64_t)cols * 4, &bytes) ||
        bytes > v->d.props.limits.maxStorageBufferRange)
        return NULL;
    bk_act *a = xcalloc(1, sizeof *a);
    errbuf e;
    if (vk_buf_create(&v->d, &a->buf, bytes, VKM_DEVICE, &e)) { free(a); return NULL; }
    a->rows = rows;
    a->cols = cols;
    if (a->buf.map) memset(a->buf.map, 0, bytes);
    return a;
}

static void vkb_act_free(backend *b, bk_act *a) {
    if (!a) return;
    vk_buf_retire(VKB(b), &a->buf);
    free(a);
}

typedef struct read_job { VkBuffer src, dst; VkDeviceSize off, bytes; } read_job;

static void record_read(VkCommandBuffer cb, void *ud) {
    read_job *j = ud;
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    VkBufferCopy c = { j->off, 0, j->bytes };
    vkCmdCopyBuffer(cb, j->src, j->dst, 1, &c);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void vkb_act_read(backend *b, const bk_act *a, int64_t row0, int64_t n_rows, float *dst) {
    vk_backend *v = VKB(b);
    size_t off = (size_t)(row0 * a->cols) * 4, bytes = (size_t)(n_rows * a->cols) * 4;
    if (row0 < 0 || n_rows < 0 || row0 + n_rows > a->rows) { memset(dst, 0, bytes); return; }
    if (a->buf.map) { memcpy(dst, (const uint8_t *)a->buf.map + off, bytes); return; }
    vk_buf stage;
    errbuf e;
    if (vk_buf_create(&v->d, &stage, bytes, VKM_HOST, &e)) { memset(dst, 0, bytes); return; }
    read_job j = { a->buf.buf, stage.buf, off, bytes };
    if (vk_run_once(&v->d, record_read, &j, &e) == 0) memcpy(dst, stage.map, bytes);
    else memset(dst, 0, bytes);
    vk_buf_destroy(&v->d, &stage);
}

static void record_write(VkCommandBuffer cb, void *ud) {
    read_job *j = ud;   // src: the host staging buffer, dst: the activation at offset off
    VkBufferCopy c = { 0, j->off, j->bytes };
    vkCmdCopyBuffer(cb, j->src, j->dst, 1, &c);
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
}

// Outside a batch, as act_read: in place where the buffer is host-visible, else through staging.
static void vkb_act_write(backend *b, bk_act *a, int64_t row0, int64_t n_rows, const float *src) {
    vk_backend *v = VKB(b);
    if (n_rows == 0) return;   // as act_read: nothing to copy
    if (row0 < 0 || n_rows < 0 || row0 + n_rows > a->rows) {
        vk_fail(v, "vulkan: act_write: rows [%lld, +%lld) do not fit the activation (%lld rows)", (long long)row0,
                (long long)n_rows, (long long)a->rows);
        return;
    }
    size_t off = (size_t)(row0 * a->cols) * 4, bytes = (size_t)(n_rows * a->cols) * 4;
    if (a->buf.map) { memcpy((uint8_t *)a->buf.map + off, src, bytes); return; }
    vk_buf stage;
    errbuf e;
    if (vk_buf_create(&v->d, &stage, bytes, VKM_HOST, &e)) { vk_fail(v, "vulkan: act_write: %s", e.msg); return; }
    memcpy(stage.map, src, bytes);
    read_job j = { stage.buf, a->buf.buf, off, bytes };
    if (vk_run_once(&v->d, record_write, &j, &e)) vk_fail(v, "vulkan: act_write: %s", e.msg);
    vk_buf_destroy(&v->d, &stage);
}

// ---- life cycle ----

int vk_backend_pipes(vk_backend *v, vk_pipe **all) {
    int n = 0;
    all[n++] = &v->rmsnorm; all[n++] = &v->attn_combine; all[n++] = &v->rope;
    all[n++] = &v->glu; all[n++] = &v->add; all[n++] = &v->bias; all[n++] = &v->scale;
    for (int t = 0; t < VT_COUNT; t++) {
        all[n++] = &v->embed[t];
        for (int k = 0; k < 2; k++) { all[n++] = &v->matmul[t][k]; all[n++] = &v->matmul_rows[t][k]; }
    }
    for (int f = 0; f < KV_FORMAT_COUNT; f++) {
        all[n++] = &v->attention[f][0]; all[n++] = &v->attention[f][1]; all[n++] = &v->attn_stats[f];
        for (int m = 0; m < 4; m++) all[n++] = &v->kv_store[f][m];
    }
    return n;
}

static void vkb_destroy(backend *b) {
    vk_backend *v = VKB(b);
    if (v->d.dev) {
        vkDeviceWaitIdle(v->d.dev);
        v->recording = false;
        while (v->weights) vk_weight_free(v, v->weights);
        while (v->kvs) vk_kv_free(v, v->kvs);
        for (int i = 0; i < v->n_grave; i++) vk_buf_destroy(&v->d, &v->grave[i]);
        for (int i = 0; i < v->n_chunks; i++) vk_buf_destroy(&v->d, &v->chunks[i].buf);
        vk_buf_destroy(&v->d, &v->attn_scratch);
        vk_buf_destroy(&v->d, &v->attn_ml);
        vk_buf_destroy(&v->d, &v->kv_scratch);
        vk_pipe *all[VK_MAX_PIPES];
        int n = vk_backend_pipes(v, all);
        for (int i = 0; i < n; i++)
            if (all[i]->pipe) vkDestroyPipeline(v->d.dev, all[i]->pipe, NULL);
        if (v->qpool) vkDestroyQueryPool(v->d.dev, v->qpool, NULL);
        if (v->fence) vkDestroyFence(v->d.dev, v->fence, NULL);
        vk_pipes_free(&v->p);
    }
    vk_dev_close(&v->d);
    free(v->grave);
    free(v->chunks);
    for (int r = 0; r < KV_ROPES; r++) free(v->rope_tables[r].pos);
    free(v->q_kind);
    for (int t = 0; t < VT_COUNT; t++) {
        free((char *)v->embed[t].name);
        for (int k = 0; k < 2; k++) {
            free((char *)v->matmul[t][k].name);
            free((char *)v->matmul_rows[t][k].name);
        }
    }
    for (int f = 0; f < KV_FORMAT_COUNT; f++) {
        free((char *)v->attention[f][0].name);
        free((char *)v->attention[f][1].name);
        free((char *)v->attn_stats[f].name);
    }
    free((char *)v->rmsnorm.name);
    free(v);
    free(b);
}

static void name_pipes(vk_backend *v) {
    static const char *const tn[VT_COUNT] = { "f32", "f16", "bf16", "q8_0", "q4_0", "q4m", "i8m", "f8" };
    const char *red = v->d.subgroup_arith ? "sg" : "sh";
    char n[64];
    for (int t = 0; t < VT_COUNT; t++) {
        for (int k = 0; k < 2; k++) {
            snprintf(n, sizeof n, "matmul_%s_n%d_%s", tn[t], k ? 8 : 1, red);
            v->matmul[t][k] = (vk_pipe){ xstrdup(n), 3, VK_NULL_HANDLE, 0, { 0, 0 } };
            snprintf(n, sizeof n, "matmul_rows_%s_n%d", tn[t], k ? 8 : 1);
            v->matmul_rows[t][k] = (vk_pipe){ xstrdup(n), 3, VK_NULL_HANDLE, 0, { 0, 0 } };
        }
        snprintf(n, sizeof n, "embed_%s", tn[t]);
        v->embed[t] = (vk_pipe){ xstrdup(n), 3, VK_NULL_HANDLE, 0, { 0, 0 } };
    }
    // The KV shaders take the format (and a mode) as specialization constants, whose codes are
    // 0 f32, 1 f16, 2 q8, 3 q4 (shaders/kvq.glsl); the build's f32/f16 variants of a file differ
    // only in the constant's default, so every format uses the f16 blob but f32 its own.
    for (int f = 0; f < KV_FORMAT_COUNT; f++) {
        uint32_t code = f == KV_F32 ? 0u : f == KV_F16 ? 1u : (uint32_t)f;
        const char *blob = f == KV_F32 ? "f32" : "f16";
        for (int s = 0; s < 2; s++) {
            snprintf(n, sizeof n, "attention_%s_%s_%s", blob, s ? "split" : "full", red);
            v->attention[f][s] = (vk_pipe){ xstrdup(n), 6, VK_NULL_HANDLE, 2, { code, 0 } };
        }
        snprintf(n, sizeof n, "attention_%s_full_%s", blob, red);
        v->attn_stats[f] = (vk_pipe){ xstrdup(n), 6, VK_NULL_HANDLE, 2, { code, 1 } };
        for (uint32_t mode = 0; mode < 4; mode++)
            v->kv_store[f][mode] = (vk_pipe){ f == KV_F32 ? "kv_store_f32" : "kv_store_f16", 5, VK_NULL_HANDLE, 2,
                                              { code, mode } };
    }
    snprintf(n, sizeof n, "rmsnorm_%s", red);
    v->rmsnorm = (vk_pipe){ xstrdup(n), 3, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->attn_combine = (vk_pipe){ "attn_combine", 3, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->rope = (vk_pipe){ "rope", 2, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->glu = (vk_pipe){ "glu", 2, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->scale = (vk_pipe){ "scale", 1, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->add = (vk_pipe){ "add", 2, VK_NULL_HANDLE, 0, { 0, 0 } };
    v->bias = (vk_pipe){ "bias", 2, VK_NULL_HANDLE, 0, { 0, 0 } };
}

static backend *vulkan_create(const backend_opts *o, errbuf *err) {
    const char *dev = o->device;
    int index = -1;
    if (dev && *dev && strcmp(dev, "auto") != 0) {
        char *end;
        long v = strtol(dev, &end, 10);
        if (*end || v < 0 || v > 1000)
            return err_set(err, "vulkan: device '%s' is not an index (see cabin devices)", dev), NULL;
        index = (int)v;
    }
    return backend_vulkan_new(index, err);
}

const backend_info backend_vulkan_info = {
    .name = "vulkan",
    .summary = "Vulkan compute: a GPU, or the processor through lavapipe (--device N)",
    .caps = BACKEND_CAP_DEVICES,
    .create = vulkan_create,
    .list_devices = backend_vulkan_list_devices,
};

backend *backend_vulkan_new(int device_index, errbuf *err) {
    vk_backend *v = xcalloc(1, sizeof *v);
    backend *b = xcalloc(1, sizeof *b);
    b->impl = v;
    b->name = backend_vulkan_info.name;
    b->caps = backend_vulkan_info.caps;
    b->destroy = vkb_destroy;
    if (vk_dev_open(&v->d, device_index, err)) { free(v); free(b); return NULL; }
    if (vk_pipes_init(&v->p, &v->d, err)) { vkb_destroy(b); return NULL; }
    name_pipes(v);
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = v->d.cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    VkResult r = vkAllocateCommandBuffers(v->d.dev, &ai, &v->cb);
    if (r == VK_SUCCESS) r = vkCreateFence(v->d.dev, &fci, NULL, &v->fence);
    if (r != VK_SUCCESS) {
        err_set(err, "vulkan: %s: cannot create the command buffer: %s", v->d.props.deviceName, vk_result_str(r));
        vkb_destroy(b);
        return NULL;
    }
    const char *fail_after = getenv("CABIN_VK_FAIL_AFTER");
    v->fail_after = fail_after && *fail_after ? atol(fail_after) : -1;
    const char *split = getenv("CABIN_VK_ATTN_SPLIT");
    if (split) v->attn_split_force = atoi(split);
    const char *mm = getenv("CABIN_VK_MATMUL");
    v->rows_matmul = mm && strcmp(mm, "rows") == 0 ? true : mm && strcmp(mm, "wg") == 0 ? false
                   : v->d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    snprintf(b->description, sizeof b->description, "vulkan %d: %.80s%s", v->d.index, v->d.props.deviceName,
             v->d.subgroup_arith ? "" : " (no subgroup ops)");
    vk_weights_install(b);
    b->act_new = vkb_act_new;
    b->act_free = vkb_act_free;
    b->act_read = vkb_act_read;
    b->act_write = vkb_act_write;
    b->kv_prepare = vk_kv_prepare;
    b->kv_release = vk_kv_release;
    vk_record_install(b);
    vk_ops_install(b);
    return b;
}

// ---- vulkan/vulkan_backend.h ----

int backend_vulkan_list_devices(FILE *f, errbuf *err) { return vk_dev_list(f, err); }

int backend_vulkan_validation_errors(const backend *b) {
    return b && b->name && strcmp(b->name, "vulkan") == 0 ? VKB(b)->d.validation_errors : 0;
}

int backend_vulkan_heap_bytes(const backend *b, uint64_t *used, int max) {
    if (!b || !b->name || strcmp(b->name, "vulkan") != 0) return 0;
    const vk_backend *v = VKB(b);
    int n = (int)v->d.mem.memoryHeapCount;
    for (int i = 0; i < n && i < max; i++) used[i] = v->d.heap_used[i];
    return n;
}

// A backend with no device whose pipelines are named as on a device with (or without) subgroup
// arithmetic: the build's shader-variant check (vulkan/vk_variants.c) reads the names.
// b->destroy frees it.
backend *vk_backend_names_only(bool subgroup_arith) {
    vk_backend *v = xcalloc(1, sizeof *v);
    backend *b = xcalloc(1, sizeof *b);
    b->impl = v;
    b->name = backend_vulkan_info.name;
    b->destroy = vkb_destroy;
    v->d.subgroup_arith = subgroup_arith;
    name_pipes(v);
    return b;
}
