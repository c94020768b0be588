// Weights on the device: each tensor uploaded once, repacked into 32-bit words in its device
// layout (vk_type_slot; shaders/common.glsl), split into parts of whole rows where one binding
// cannot hold it, and uploaded again when a precision switch changed the host tensor.
#include "vulkan/vk.h"
#include "engine/half.h"
#include "engine/wtype.h"
#include "engine/wtype_codes.h"

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

static bool weight_matches(const vk_weight *w, const tensor *t) {
    return w->owner == t && w->src == t->data && w->src_type == t->type && w->ne0 == t->ne0 && w->ne1 == t->ne1;
}

vk_weight *vk_weight_of(vk_backend *v, const tensor *t) {
    for (vk_weight *w = v->weights; w; w = w->next)
        if (w == t->bk) return w;
    return NULL;
}

void vk_weight_free(vk_backend *v, vk_weight *w) {
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
        vk_weight_free(v, old);   // converted (precision switch) since the upload
    }
    t->bk = NULL;
    if (!t->data)
        return err_set(err, "vulkan: tensor %s: no rows to upload (another backend's copy was its only one)", t->name);
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
    vk_weight_free(v, w);
    return -1;
}

static void vkb_weight_release(backend *b, tensor *t) {
    vk_backend *v = VKB(b);
    vk_weight *w = vk_weight_of(v, t);
    if (w && w->owner == t) vk_weight_free(v, w);
    t->bk = NULL;
}

static bool vkb_supports_type(backend *b, uint32_t t) { (void)b; return vk_type_slot(t) >= 0; }

void vk_weights_install(backend *b) {
    b->weight_prepare = vkb_weight_prepare;
    b->weight_release = vkb_weight_release;
    b->supports_type = vkb_supports_type;
}
