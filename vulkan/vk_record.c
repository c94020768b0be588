// Recording a batch: every op of a batch goes into one command buffer (vk_dispatch, with the
// barriers its bindings need), small host arrays into this batch's upload buffers (vk_upload),
// and end_batch submits it and waits. The first error of a batch is kept (vk_fail) for end_batch
// to report; buffers that die while a batch is recorded wait until it has run (vk_buf_retire).
// With profiling on, timestamps around each op add its device time to its op kind.
#include "vulkan/vk.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
    for (int r = 0; r < KV_ROPES; r++) v->rope_tables[r].valid = false;
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

void vk_record_install(backend *b) {
    b->begin_batch = vkb_begin_batch;
    b->end_batch = vkb_end_batch;
    b->set_profiling = vkb_set_profiling;
    b->profile_read = vkb_profile_read;
    b->profile_reset = vkb_profile_reset;
}
