// The SPIR-V of vulkan/shaders/*.comp, compiled by glslc at build time and embedded by
// tools/embed_spv.py into a generated C file ($(BUILD)/gen/vk_spv_data.c). One entry per
// compiled variant (e.g. "matmul_q4_0_n8_sg": source matmul.comp with its defines).
#ifndef CABIN_VK_SPV_H
#define CABIN_VK_SPV_H

#include <stddef.h>
#include <stdint.h>

typedef struct vk_spv {
    const char *name;
    const uint32_t *code;
    size_t bytes;
} vk_spv;

extern const vk_spv vk_spv_table[];
extern const int vk_spv_count;   // 0 when the build had no glslc

#endif
