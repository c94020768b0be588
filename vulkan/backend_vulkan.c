// The Vulkan backend: weights uploaded once (repacked into 32-bit words), activations and the KV
// cache in device buffers, every op of a batch recorded into one command buffer that end_batch
// submits and waits for. The ops themselves are in vk_ops.c.
#include "vulkan/vk.h"
#include "engine/half.h"
#include "vulkan/vulkan_backend.h"
#include "engine/wtype.h"
#include "engine/wtype_codes.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int vk_type_slot(uint32_t t) {
    switch (t) {
    case WT_F32: return VT_F32;
    case WT_F16: return VT_F16;
    case WT_BF16: return VT_BF16;
    case WT_FP8: return VT_F8;
    default: break;
    }
    const wtype_codes *c = wtype_codes_get(t);
    if (!c) return -1;
    if (c->group == 32 && !c->has_min) return c->code_lo >= -8 && c->code_hi <= 7 ? VT_Q4_0 : VT_Q8_0;
    if (c->group == 32 && c->code_lo >= 0 && c->code_hi <= 15) return VT_Q4M;
    return VT_I8M;
}

void vk_fail(vk_backend *v, const char *fmt, ...) {
    if (v->failed) return;   // keep the first error
    v->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->err.msg, sizeof v->err.msg, fmt, ap);
    va_end(ap);
}

// ---- buffers that may die while a batch is being recorded ----

void vk_buf_retire(vk_backend *v, vk_buf *b) {
    if (!b->buf) return;
    if (v->recording) {
        v->grave = xrealloc(v->grave, (size_t)(v->n_grave + 1) * sizeof *v->grave);
        v->grave[v->n_grave++] = *b;
        v->desc_stale = true;
        memset(b, 0, sizeof *b);
        return;
    }
    vk_buf_destroy(&v->d, b);
    vk_desc_clear(&v->p);
}

bool vk_scratch(vk_backend *v, vk_buf *slot, VkDeviceSize bytes) {
    if (slot->buf && slot->size >= bytes) return true;
    vk_buf_retire(v, slot);
    errbuf e;
    if (vk_buf_create(&v->d, slot, bytes + bytes / 2, VKM_DEVICE, &e)) { vk_fail(v, "%s", e.msg); return false; }
    return true;
}

// ---- weights ----

static bool weight_matches(const vk_weight *w, const tensor *t) {
    return w->owner == t && w->src == t->data && w->src_type == t->type && w->ne0 == t->ne0 && w->ne1 == t->ne1;
}

vk_weight *vk_weight_of(vk_backend *v, const tensor *t) {
    for (vk_weight *w = v->weights; w; w = w->next)
        if (w == t->bk) return w;
    return NULL;
}

static void weight_free(vk_backend *v, vk_weight *w) {
    for (vk_weight **pp = &v->weights; *pp; pp = &(*pp)->next)
        if (*pp == w) { *pp = w->next; break; }
    for (int i = 0; i < w->n_parts; i++) vk_buf_retire(v, &w->parts[i].buf);
    free(w->parts);
    free(w);
}

// Words of one repacked row, and words of scales (and mins) per row, in device layout `slot`.
static void row_layout(int slot, int64_t ne0, uint64_t *row_words, uint64_t *scale_words) {
    const uint64_t k = (uint64_t)ne0;
    *scale_words = 0;
    switch (slot) {
    case VT_F32: *row_words = k; break;
    case VT_F16: case VT_BF16: *row_words = (k + 1) / 2; break;
    case VT_Q8_0: case VT_F8: *row_words = k / 4; *scale_words = k / 32; break;
    case VT_Q4_0: *row_words = k / 8; *scale_words = k / 32; break;
    case VT_Q4M: *row_words = k / 8; *scale_words = 2 * (k / 32); break;
    default: *row_words = k / 4; *scale_words = 2 * (k / 16); break;   // VT_I8M
    }
}

// One row's codes in device layout `slot` (not a float one): codes at row (words), the scales
// (and mins, interleaved) at sm. Q4_0 and Q4M: 32 codes in 16 bytes, byte j holding code j
// (low nibble) and code j+16 (high), Q4_0's biased by 8; Q8_0 and I8M: a byte per code.
static void repack_codes(int slot, int64_t k, const int8_t *code, const float *scale, const float *min, int group,
                         uint8_t *row, float *sm) {
    switch (slot) {
    case VT_Q4_0: case VT_Q4M: {
        const int bias = slot == VT_Q4_0 ? 8 : 0;
        for (int64_t b = 0; b < k / 32; b++) {
            for (int j = 0; j < 16; j++)
                row[b * 16 + j] = (uint8_t)((code[b * 32 + j] + bias) | (code[b * 32 + j + 16] + bias) << 4);
            if (slot == VT_Q4_0) sm[b] = scale[b];
            else sm[2 * b] = scale[b], sm[2 * b + 1] = min[b];
        }
        break;
    }
    case VT_Q8_0:
        memcpy(row, code, (size_t)k);
        for (int64_t b = 0; b < k / 32; b++) sm[b] = scale[b];
        break;
    default:   // VT_I8M: a (scale, min) per 16, a group of 32's pair written twice
        memcpy(row, code, (size_t)k);
        for (int64_t g = 0; g < k / 16; g++) {
            const int64_t src = g * 16 / group;
            sm[2 * g] = scale[src];
            sm[2 * g + 1] = min ? min[src] : 0.0f;
        }
        break;
    }
}

// Repacks rows [r0, r0+n) of t into dst in device layout `slot`: rows of row_words words, then
// the scales (quantized layouts, scale_words per row).
static void repack(const tensor *t, int slot, int64_t r0, int64_t n, uint64_t row_words, uint64_t scale_words,
                   uint32_t *dst) {
    const uint8_t *file_row = (const uint8_t *)t->data + (size_t)r0 * t->row_bytes;
    float *scales = (float *)(dst + (size_t)n * row_words);
    const wtype_codes *c = wtype_codes_get(t->type);
    int8_t *code = c ? xmalloc((size_t)t->ne0) : NULL;
    float *scale = c ? xmalloc((size_t)(t->ne0 / c->group) * sizeof(float)) : NULL;
    float *min = c && c->has_min ? xmalloc((size_t)(t->ne0 / c->group) * sizeof(float)) : NULL;
    for (int64_t r = 0; r < n; r++, file_row += t->row_bytes) {
        uint32_t *row = dst + (size_t)r * row_words;
        if (slot == VT_F8) {   // the E4M3 bytes as they are, the scales as floats
            const block_fp8 *blk = (const block_fp8 *)file_row;
            for (int64_t b = 0; b < t->ne0 / 32; b++) {
                memcpy((uint8_t *)row + b * 32, blk[b].qs, 32);
                scales[(size_t)r * scale_words + (size_t)b] = fp16_to_f32(blk[b].d);
            }
            continue;
        }
        if (!c) {   // F32, F16, BF16 as they are
            row[row_words - 1] = 0;   // the padding half of an odd-length 16-bit row
            memcpy(row, file_row, t->row_bytes);
            continue;
        }
        c->to_codes(file_row, code, scale, min, t->ne0);
        repack_codes(slot, t->ne0, code, scale, min, c->group, (uint8_t *)row, scales + (size_t)r * scale_words);
    }
    free(code);
    free(scale);
    free(min);
}

typedef struct copy_job { VkBuffer src, dst; VkDeviceSize bytes; } copy_job;

static void record_copy(VkCommandBuffer cb, void *ud) {
    copy_job *j = ud;
    VkBufferCopy c = { 0, 0, j->bytes };
    vkCmdCopyBuffer(cb, j->src, j->dst, 1, &c);
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_HOST_READ_BIT };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static int vkb_weight_prepare(backend *b, tensor *t, errbuf *err) {
    vk_backend *v = VKB(b);
    vk_weight *old = vk_weight_of(v, t);
    if (old && old->owner == t) {
        if (weight_matches(old, t)) return 0;
        weight_free(v, old);   // converted (precision switch) since the upload
    }
    t->bk = NULL;
    const int slot = vk_type_slot(t->type);
    if (slot < 0)
        return err_set(err, "vulkan: tensor %s has type %s, which this backend cannot use", t->name ? t->name : "?",
                       wtype_name(t->type));
    if (slot != VT_F32 && slot != VT_F16 && slot != VT_BF16 && t->ne0 % 32)
        return err_set(err, "vulkan: tensor %s: row length %lld is not a multiple of 32", t->name, (long long)t->ne0);
    uint64_t row_words, scale_words;
    row_layout(slot, t->ne0, &row_words, &scale_words);
    uint64_t row_bytes = (row_words + scale_words) * 4;
    // Parts of whole rows, each within one storage-buffer binding (and at most 1 GiB).
    uint64_t max_bytes = v->d.props.limits.maxStorageBufferRange;
    if (max_bytes > (1ull << 30)) max_bytes = 1ull << 30;
    int64_t rows_per = (int64_t)(max_bytes / row_bytes);
    if (rows_per < 1)
        return err_set(err, "vulkan: tensor %s: a row of %llu bytes exceeds the device's buffer range %llu",
                       t->name, (unsigned long long)row_bytes, (unsigned long long)max_bytes);
    vk_weight *w = xcalloc(1, sizeof *w);
    w->owner = t;
    w->src = t->data;
    w->src_type = t->type;
    w->slot = slot;
    w->ne0 = t->ne0;
    w->ne1 = t->ne1;
    w->row_words = (uint32_t)row_words;
    w->n_parts = (int)((t->ne1 + rows_per - 1) / rows_per);
    w->parts = xcalloc((size_t)w->n_parts, sizeof *w->parts);
    w->next = v->weights;
    v->weights = w;
    for (int i = 0; i < w->n_parts; i++) {
        vk_part *p = &w->parts[i];
        p->row0 = (int64_t)i * rows_per;
        p->rows = t->ne1 - p->row0 < rows_per ? t->ne1 - p->row0 : rows_per;
        p->scale_off = (uint32_t)((uint64_t)p->rows * row_words);
        VkDeviceSize bytes = (VkDeviceSize)p->rows * row_bytes;
        if (vk_buf_create(&v->d, &p->buf, bytes, VKM_DEVICE, err)) goto fail;
        if (p->buf.map) {   // device-local and host-visible (integrated GPUs, lavapipe): in place
            repack(t, slot, p->row0, p->rows, row_words, scale_words, p->buf.map);
            continue;
        }
        vk_buf stage;
        if (vk_buf_create(&v->d, &stage, bytes, VKM_HOST, err)) goto fail;
        repack(t, slot, p->row0, p->rows, row_words, scale_words, stage.map);
        copy_job j = { stage.buf, p->buf.buf, bytes };
        int rc = vk_run_once(&v->d, record_copy, &j, err);
        vk_buf_destroy(&v->d, &stage);
        if (rc) goto fail;
    }
    t->bk = w;
    return 0;
fail:
    err_prefix(err, "vulkan: uploading tensor %s", t->name ? t->name : "?");
    weight_free(v, w);
    return -1;
}

static void vkb_weight_release(backend *b, tensor *t) {
    vk_backend *v = VKB(b);
    vk_weight *w = vk_weight_of(v, t);
    if (w && w->owner == t) weight_free(v, w);
    t->bk = NULL;
}

static bool vkb_supports_type(backend *b, uint32_t t) { (void)b; return vk_type_slot(t) >= 0; }

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

// ---- recording ----

static bool in_set(const VkBuffer *set, int n, VkBuffer b) {
    for (int i = 0; i < n; i++)
        if (set[i] == b) return true;
    return false;
}

static void barrier(vk_backend *v) {
    VkBufferMemoryBarrier bb[32];
    for (int i = 0; i < v->n_written; i++)
        bb[i] = (VkBufferMemoryBarrier){ .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                                         .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                                         .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                         .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                         .buffer = v->written[i], .offset = 0, .size = VK_WHOLE_SIZE };
    // Written buffers get a memory dependency; a read-then-write hazard needs only the
    // execution dependency that every pipeline barrier makes.
    vkCmdPipelineBarrier(v->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0,
                         NULL, (uint32_t)v->n_written, bb, 0, NULL);
    v->n_written = v->n_reads = 0;
}

void vk_dispatch(vk_backend *v, vk_pipe *pipe, const vk_bind *b, int nb, const void *pc, size_t pc_bytes,
                 uint32_t gx, uint32_t gy, uint32_t gz) {
    if (!v->recording) { vk_fail(v, "vulkan: op recorded outside begin_batch/end_batch"); return; }
    if (v->failed || gx == 0 || gy == 0 || gz == 0) return;
    const uint32_t *lim = v->d.props.limits.maxComputeWorkGroupCount;
    if (gx > lim[0] || gy > lim[1] || gz > lim[2]) {
        vk_fail(v, "vulkan: %s: grid %ux%ux%u exceeds the device limit %ux%ux%u", pipe->name, gx, gy, gz,
                lim[0], lim[1], lim[2]);
        return;
    }
    if (vk_pipe_get(&v->p, pipe, &v->err)) { v->failed = true; return; }
    bool hazard = v->n_written + nb > 32 || v->n_reads + nb > 32;
    for (int i = 0; i < nb && !hazard; i++)
        hazard = in_set(v->written, v->n_written, b[i].buf) || (b[i].write && in_set(v->reads, v->n_reads, b[i].buf));
    if (hazard) barrier(v);
    for (int i = 0; i < nb; i++) {
        if (b[i].write) { if (!in_set(v->written, v->n_written, b[i].buf)) v->written[v->n_written++] = b[i].buf; }
        else if (!in_set(v->reads, v->n_reads, b[i].buf)) v->reads[v->n_reads++] = b[i].buf;
    }
    vk_desc_key key = { .n = nb };
    for (int i = 0; i < nb; i++) { key.buf[i] = b[i].buf; key.off[i] = b[i].off; key.range[i] = b[i].range; }
    VkDescriptorSet set;
    if (vk_desc_get(&v->p, &key, &set, &v->err)) { v->failed = true; return; }
    vkCmdBindPipeline(v->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipe);
    vkCmdBindDescriptorSets(v->cb, VK_PIPELINE_BIND_POINT_COMPUTE, v->p.layout[nb], 0, 1, &set, 0, NULL);
    if (pc_bytes) vkCmdPushConstants(v->cb, v->p.layout[nb], VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)pc_bytes, pc);
    vkCmdDispatch(v->cb, gx, gy, gz);
}

bool vk_upload(vk_backend *v, const void *data, size_t bytes, vk_bind *out) {
    if (v->failed) return false;
    VkDeviceSize align = v->d.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    for (int i = v->n_recent - 1; i >= 0; i--) {
        vk_chunk *c = &v->chunks[v->recent[i].chunk];
        if (v->recent[i].bytes == bytes && memcmp((uint8_t *)c->buf.map + v->recent[i].off, data, bytes) == 0) {
            *out = (vk_bind){ c->buf.buf, v->recent[i].off, bytes, false };
            return true;
        }
    }
    while (v->cur_chunk < v->n_chunks) {
        vk_chunk *c = &v->chunks[v->cur_chunk];
        VkDeviceSize off = (c->used + align - 1) / align * align;
        if (off + bytes <= c->buf.size) break;
        v->cur_chunk++;
    }
    if (v->cur_chunk == v->n_chunks) {
        v->chunks = xrealloc(v->chunks, (size_t)(v->n_chunks + 1) * sizeof *v->chunks);
        vk_chunk *c = &v->chunks[v->n_chunks];
        memset(c, 0, sizeof *c);
        errbuf e;
        if (vk_buf_create(&v->d, &c->buf, bytes > 65536 ? bytes : 65536, VKM_HOST, &e)) {
            vk_fail(v, "vulkan: upload buffer: %s", e.msg);
            return false;
        }
        v->n_chunks++;
    }
    vk_chunk *c = &v->chunks[v->cur_chunk];
    VkDeviceSize off = (c->used + align - 1) / align * align;
    memcpy((uint8_t *)c->buf.map + off, data, bytes);
    c->used = off + bytes;
    if (v->n_recent == 16) { memmove(v->recent, v->recent + 1, 15 * sizeof v->recent[0]); v->n_recent--; }
    v->recent[v->n_recent].chunk = v->cur_chunk;
    v->recent[v->n_recent].off = off;
    v->recent[v->n_recent].bytes = bytes;
    v->n_recent++;
    *out = (vk_bind){ c->buf.buf, off, bytes, false };
    return true;
}

void vk_prof_begin(vk_backend *v) {
    if (!v->profiling || !v->qpool || !v->recording || v->q_used + 2 > v->q_cap) return;
    vkCmdWriteTimestamp(v->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->qpool, v->q_used);
}

void vk_prof_end(vk_backend *v, enum op_kind k) {
    if (!v->profiling) return;
    v->op_calls[k]++;
    if (!v->qpool || !v->recording || v->q_used + 2 > v->q_cap) return;
    vkCmdWriteTimestamp(v->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->qpool, v->q_used + 1);
    v->q_kind[v->q_used / 2] = (uint8_t)k;
    v->q_used += 2;
}

static void vkb_begin_batch(backend *b) {
    vk_backend *v = VKB(b);
    if (v->recording) { vk_fail(v, "vulkan: begin_batch while a batch is being recorded"); return; }
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    VkResult r = vkBeginCommandBuffer(v->cb, &bi);
    if (r != VK_SUCCESS) { vk_fail(v, "vulkan: cannot begin a command buffer: %s", vk_result_str(r)); return; }
    v->recording = true;
    v->n_written = v->n_reads = 0;
    for (int i = 0; i < v->n_chunks; i++) v->chunks[i].used = 0;
    v->cur_chunk = 0;
    v->n_recent = 0;
    v->rope_valid = false;
    v->q_used = 0;
    if (v->profiling && v->qpool) vkCmdResetQueryPool(v->cb, v->qpool, 0, v->q_cap);
}

static void read_profile(vk_backend *v) {
    if (!v->q_used) return;
    uint64_t *ts = xmalloc(v->q_used * sizeof *ts);
    if (vkGetQueryPoolResults(v->d.dev, v->qpool, 0, v->q_used, v->q_used * sizeof *ts, ts, sizeof *ts,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
        for (uint32_t i = 0; i + 1 < v->q_used; i += 2)
            if (ts[i + 1] >= ts[i])
                v->op_secs[v->q_kind[i / 2]] += (double)(ts[i + 1] - ts[i]) * v->d.ts_period * 1e-9;
    free(ts);
}

static int vkb_end_batch(backend *b, errbuf *err) {
    vk_backend *v = VKB(b);
    int rc = 0;
    if (v->recording) {
        VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT };
        vkCmdPipelineBarrier(v->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                             NULL, 0, NULL);
        VkResult r = vkEndCommandBuffer(v->cb);
        v->recording = false;
        if (r != VK_SUCCESS) vk_fail(v, "vulkan: cannot record the batch: %s", vk_result_str(r));
        if (!v->failed && b->lost) {
            r = VK_ERROR_DEVICE_LOST;   // a lost device stays lost
        } else if (!v->failed && v->fail_after == 0) {
            r = VK_ERROR_DEVICE_LOST;   // injected (CABIN_VK_FAIL_AFTER)
            v->fail_after = -1;
        } else if (!v->failed) {
            if (v->fail_after > 0) v->fail_after--;
            VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &v->cb };
            r = vkQueueSubmit(v->d.queue, 1, &si, v->fence);
            if (r == VK_SUCCESS) {
                r = vkWaitForFences(v->d.dev, 1, &v->fence, VK_TRUE, UINT64_MAX);
                vkResetFences(v->d.dev, 1, &v->fence);
            }
        }
        if (r == VK_ERROR_DEVICE_LOST) b->lost = true;
        if (!v->failed && r != VK_SUCCESS) vk_fail(v, "vulkan: %s: batch failed: %s", v->d.props.deviceName, vk_result_str(r));
        else if (!v->failed && v->profiling) read_profile(v);
    } else if (!v->failed) {
        vk_fail(v, "vulkan: end_batch without begin_batch");
    }
    for (int i = 0; i < v->n_grave; i++) vk_buf_destroy(&v->d, &v->grave[i]);
    v->n_grave = 0;
    if (v->desc_stale) { vk_desc_clear(&v->p); v->desc_stale = false; }
    if (v->failed) {
        rc = err_set(err, "%s", v->err.msg);
        v->failed = false;
    }
    return rc;
}

// ---- profiling ----

static void vkb_set_profiling(backend *b, bool on) {
    vk_backend *v = VKB(b);
    v->profiling = on;
    if (on && !v->qpool && v->d.timestamps) {
        v->q_cap = 8192;
        VkQueryPoolCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                      .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = v->q_cap };
        if (vkCreateQueryPool(v->d.dev, &qci, NULL, &v->qpool) != VK_SUCCESS) { v->qpool = VK_NULL_HANDLE; return; }
        v->q_kind = xcalloc(v->q_cap / 2, 1);
    }
}

static void vkb_profile_read(backend *b, double secs[OP_COUNT], uint64_t calls[OP_COUNT]) {
    memcpy(secs, VKB(b)->op_secs, sizeof VKB(b)->op_secs);
    memcpy(calls, VKB(b)->op_calls, sizeof VKB(b)->op_calls);
}

static void vkb_profile_reset(backend *b) {
    memset(VKB(b)->op_secs, 0, sizeof VKB(b)->op_secs);
    memset(VKB(b)->op_calls, 0, sizeof VKB(b)->op_calls);
}

// ---- life cycle ----

int vk_backend_pipes(vk_backend *v, vk_pipe **all) {
    int n = 0;
    all[n++] = &v->rmsnorm; all[n++] = &v->attn_combine; all[n++] = &v->rope;
    all[n++] = &v->swiglu; all[n++] = &v->add; all[n++] = &v->bias;
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
        while (v->weights) weight_free(v, v->weights);
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
    free(v->rope_pos);
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
    v->swiglu = (vk_pipe){ "swiglu", 2, VK_NULL_HANDLE, 0, { 0, 0 } };
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
    b->weight_prepare = vkb_weight_prepare;
    b->weight_release = vkb_weight_release;
    b->supports_type = vkb_supports_type;
    b->act_new = vkb_act_new;
    b->act_free = vkb_act_free;
    b->act_read = vkb_act_read;
    b->act_write = vkb_act_write;
    b->kv_prepare = vk_kv_prepare;
    b->kv_release = vk_kv_release;
    b->begin_batch = vkb_begin_batch;
    b->end_batch = vkb_end_batch;
    b->set_profiling = vkb_set_profiling;
    b->profile_read = vkb_profile_read;
    b->profile_reset = vkb_profile_reset;
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
