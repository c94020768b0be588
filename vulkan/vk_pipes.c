// Pipelines from the embedded SPIR-V (created on first use, through a pipeline cache kept in
// $XDG_CACHE_HOME/cabin/vk-pipeline-cache.bin), the layouts (all bindings are storage buffers,
// 128 bytes of push constants) and a descriptor-set cache keyed by the bound buffers, so a
// decode step that binds the same buffers as the last one allocates and writes nothing.
#include "vulkan/vk.h"
#include "vulkan/vk_spv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool vk_have_shaders(void) { return vk_spv_count > 0; }

static const vk_spv *find_spv(const char *name) {
    for (int i = 0; i < vk_spv_count; i++)
        if (strcmp(vk_spv_table[i].name, name) == 0) return &vk_spv_table[i];
    return NULL;
}

// ---- pipeline cache file ----

static void cache_path(char *out, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    out[0] = 0;
    if (xdg && *xdg) snprintf(out, n, "%s/cabin/vk-pipeline-cache.bin", xdg);
    else if (home && *home) snprintf(out, n, "%s/.cache/cabin/vk-pipeline-cache.bin", home);
}

// The header the spec puts at the start of cache data: length, version, vendor, device, UUID.
static bool cache_matches(const vk_dev *d, const uint8_t *data, size_t n) {
    if (n < 16 + VK_UUID_SIZE) return false;
    uint32_t hdr[4];
    memcpy(hdr, data, sizeof hdr);
    return hdr[0] >= 16 + VK_UUID_SIZE && hdr[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
           hdr[2] == d->props.vendorID && hdr[3] == d->props.deviceID &&
           memcmp(data + 16, d->props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

static void cache_save(vk_pipes *p) {
    if (!p->cache || !p->cache_path[0]) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(p->d->dev, p->cache, &n, NULL) != VK_SUCCESS || n == 0) return;
    uint8_t *data = xmalloc(n);
    if (vkGetPipelineCacheData(p->d->dev, p->cache, &n, data) == VK_SUCCESS) {
        // mkdir -p the directory, then write a temporary file and rename it into place.
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", p->cache_path);
        for (char *s = dir + 1; *s; s++)
            if (*s == '/') { *s = 0; if (mkdir(dir, 0755) && errno != EEXIST) break; *s = '/'; }
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", p->cache_path, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            bool ok = fwrite(data, 1, n, f) == n;
            ok &= fclose(f) == 0;
            if (!ok || rename(tmp, p->cache_path)) remove(tmp);
        }
    }
    free(data);
}

// ---- layouts ----

int vk_pipes_init(vk_pipes *p, vk_dev *d, errbuf *err) {
    memset(p, 0, sizeof *p);
    p->d = d;
    cache_path(p->cache_path, sizeof p->cache_path);
    size_t n = 0;
    uint8_t *data = NULL;
    if (p->cache_path[0]) {
        errbuf ignore;
        data = (uint8_t *)read_file_all(p->cache_path, &n, &ignore);
        if (data && !cache_matches(d, data, n)) n = 0;
    }
    VkPipelineCacheCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                      .initialDataSize = data ? n : 0, .pInitialData = data };
    if (vkCreatePipelineCache(d->dev, &pci, NULL, &p->cache) != VK_SUCCESS) {
        pci.initialDataSize = 0;
        pci.pInitialData = NULL;
        if (vkCreatePipelineCache(d->dev, &pci, NULL, &p->cache) != VK_SUCCESS) p->cache = VK_NULL_HANDLE;
    }
    free(data);
    for (int nb = 1; nb <= VK_MAX_BINDINGS; nb++) {
        VkDescriptorSetLayoutBinding bind[VK_MAX_BINDINGS];
        for (int i = 0; i < nb; i++)
            bind[i] = (VkDescriptorSetLayoutBinding){ .binding = (uint32_t)i, .descriptorCount = 1,
                                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
        VkDescriptorSetLayoutCreateInfo lci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                                .bindingCount = (uint32_t)nb, .pBindings = bind };
        VkResult r = vkCreateDescriptorSetLayout(d->dev, &lci, NULL, &p->dsl[nb]);
        if (r != VK_SUCCESS) { err_set(err, "vulkan: cannot create a descriptor set layout: %s", vk_result_str(r)); goto fail; }
        VkPushConstantRange pcr = { .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = VK_PUSH_BYTES };
        VkPipelineLayoutCreateInfo plci = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                            .setLayoutCount = 1, .pSetLayouts = &p->dsl[nb],
                                            .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr };
        r = vkCreatePipelineLayout(d->dev, &plci, NULL, &p->layout[nb]);
        if (r != VK_SUCCESS) { err_set(err, "vulkan: cannot create a pipeline layout: %s", vk_result_str(r)); goto fail; }
    }
    return 0;
fail:
    vk_pipes_free(p);
    return -1;
}

void vk_pipes_free(vk_pipes *p) {
    if (!p->d) return;
    VkDevice dev = p->d->dev;
    cache_save(p);
    for (int i = 0; i < p->n_pools; i++) vkDestroyDescriptorPool(dev, p->pools[i], NULL);
    free(p->pools);
    free(p->ents);
    for (int nb = 1; nb <= VK_MAX_BINDINGS; nb++) {
        if (p->layout[nb]) vkDestroyPipelineLayout(dev, p->layout[nb], NULL);
        if (p->dsl[nb]) vkDestroyDescriptorSetLayout(dev, p->dsl[nb], NULL);
    }
    if (p->cache) vkDestroyPipelineCache(dev, p->cache, NULL);
    memset(p, 0, sizeof *p);
}

int vk_pipe_get(vk_pipes *p, vk_pipe *pipe, errbuf *err) {
    if (pipe->pipe) return 0;
    const vk_spv *s = find_spv(pipe->name);
    if (!s) return err_set(err, "vulkan: shader %s is missing from this build", pipe->name);
    if (pipe->n_bind < 1 || pipe->n_bind > VK_MAX_BINDINGS)
        return err_set(err, "vulkan: shader %s: %d bindings", pipe->name, pipe->n_bind);
    VkShaderModuleCreateInfo mci = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = s->bytes, .pCode = s->code };
    VkShaderModule mod;
    VkResult r = vkCreateShaderModule(p->d->dev, &mci, NULL, &mod);
    if (r != VK_SUCCESS) return err_set(err, "vulkan: shader %s: cannot create module: %s", pipe->name, vk_result_str(r));
    // specialization constants 0..n_spec-1: one uint32 each (e.g. the KV format and a mode)
    VkSpecializationMapEntry map[2];
    int ns = pipe->n_spec < 0 ? 0 : pipe->n_spec > 2 ? 2 : pipe->n_spec;
    for (int i = 0; i < ns; i++)
        map[i] = (VkSpecializationMapEntry){ (uint32_t)i, (uint32_t)(i * sizeof(uint32_t)), sizeof(uint32_t) };
    VkSpecializationInfo si = { (uint32_t)ns, map, (size_t)ns * sizeof(uint32_t), pipe->spec };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                   .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = "main",
                   .pSpecializationInfo = ns ? &si : NULL },
        .layout = p->layout[pipe->n_bind] };
    r = vkCreateComputePipelines(p->d->dev, p->cache, 1, &ci, NULL, &pipe->pipe);
    vkDestroyShaderModule(p->d->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        pipe->pipe = VK_NULL_HANDLE;
        return err_set(err, "vulkan: shader %s: cannot create pipeline: %s", pipe->name, vk_result_str(r));
    }
    return 0;
}

// ---- descriptor-set cache ----

#define POOL_SETS 256

static uint64_t key_hash(const vk_desc_key *k) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)k->n;
    for (int i = 0; i < k->n; i++) {
        uint64_t v[3] = { (uint64_t)(uintptr_t)k->buf[i], k->off[i], k->range[i] };
        for (int j = 0; j < 3; j++) { h ^= v[j]; h *= 1099511628211ull; h ^= h >> 29; }
    }
    return h;
}

static bool key_eq(const vk_desc_key *a, const vk_desc_key *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (a->buf[i] != b->buf[i] || a->off[i] != b->off[i] || a->range[i] != b->range[i]) return false;
    return true;
}

static void table_put(struct vk_desc_ent *ents, size_t cap, const vk_desc_key *k, VkDescriptorSet set) {
    size_t i = (size_t)key_hash(k) & (cap - 1);
    while (ents[i].used) i = (i + 1) & (cap - 1);
    ents[i].used = true;
    ents[i].key = *k;
    ents[i].set = set;
}

static int alloc_set(vk_pipes *p, int nb, VkDescriptorSet *out, errbuf *err) {
    if (p->pool_left == 0) {
        VkDescriptorPoolSize ps = { .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = POOL_SETS * VK_MAX_BINDINGS };
        VkDescriptorPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                           .maxSets = POOL_SETS, .poolSizeCount = 1, .pPoolSizes = &ps };
        VkDescriptorPool pool;
        VkResult r = vkCreateDescriptorPool(p->d->dev, &pci, NULL, &pool);
        if (r != VK_SUCCESS) return err_set(err, "vulkan: cannot create a descriptor pool: %s", vk_result_str(r));
        p->pools = xrealloc(p->pools, (size_t)(p->n_pools + 1) * sizeof *p->pools);
        p->pools[p->n_pools++] = pool;
        p->pool_left = POOL_SETS;
    }
    VkDescriptorSetAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = p->pools[p->n_pools - 1], .descriptorSetCount = 1,
                                       .pSetLayouts = &p->dsl[nb] };
    VkResult r = vkAllocateDescriptorSets(p->d->dev, &ai, out);
    if (r != VK_SUCCESS) return err_set(err, "vulkan: cannot allocate a descriptor set: %s", vk_result_str(r));
    p->pool_left--;
    return 0;
}

int vk_desc_get(vk_pipes *p, const vk_desc_key *key, VkDescriptorSet *out, errbuf *err) {
    if (p->cap_ents) {
        size_t i = (size_t)key_hash(key) & (p->cap_ents - 1);
        while (p->ents[i].used) {
            if (key_eq(&p->ents[i].key, key)) { *out = p->ents[i].set; return 0; }
            i = (i + 1) & (p->cap_ents - 1);
        }
    }
    if (alloc_set(p, key->n, out, err)) return -1;
    VkDescriptorBufferInfo bi[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    for (int i = 0; i < key->n; i++) {
        bi[i] = (VkDescriptorBufferInfo){ key->buf[i], key->off[i], key->range[i] };
        w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = *out,
                                       .dstBinding = (uint32_t)i, .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i] };
    }
    vkUpdateDescriptorSets(p->d->dev, (uint32_t)key->n, w, 0, NULL);
    if ((p->n_ents + 1) * 2 > p->cap_ents) {   // keep the table at most half full
        size_t cap = p->cap_ents ? p->cap_ents * 2 : 256;
        struct vk_desc_ent *ne = xcalloc(cap, sizeof *ne);
        for (size_t i = 0; i < p->cap_ents; i++)
            if (p->ents[i].used) table_put(ne, cap, &p->ents[i].key, p->ents[i].set);
        free(p->ents);
        p->ents = ne;
        p->cap_ents = cap;
    }
    table_put(p->ents, p->cap_ents, key, *out);
    p->n_ents++;
    return 0;
}

void vk_desc_clear(vk_pipes *p) {
    if (!p->d) return;
    if (p->n_ents) memset(p->ents, 0, p->cap_ents * sizeof *p->ents);
    p->n_ents = 0;
    for (int i = 0; i < p->n_pools; i++) vkResetDescriptorPool(p->d->dev, p->pools[i], 0);
    // Reuse the pools from the first again: keep them all, refill from the last one onwards is
    // simplest when every pool is empty, so drop all but the first.
    for (int i = 1; i < p->n_pools; i++) vkDestroyDescriptorPool(p->d->dev, p->pools[i], NULL);
    if (p->n_pools > 1) p->n_pools = 1;
    p->pool_left = p->n_pools ? POOL_SETS : 0;
}
