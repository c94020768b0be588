// What the rest of cabin may ask the Vulkan backend beyond its registry row
// (backend_vulkan_info, listed in engine/backend.c): memory use per heap and the count of validation
// errors (CABIN_VK_VALIDATE=1).
#ifndef CABIN_VULKAN_BACKEND_H
#define CABIN_VULKAN_BACKEND_H

#include "engine/backend.h"

#include <stdint.h>
#include <stdio.h>

// device_index -1 picks the best device. Fails with one line (no loader, no device, missing
// feature) and the caller may fall back to the CPU.
backend *backend_vulkan_new(int device_index, errbuf *err);
// Prints every Vulkan device: index, name, type, driver, memory heaps, subgroup size, features.
int backend_vulkan_list_devices(FILE *f, errbuf *err);
// Bytes this backend has allocated in each memory heap (used[0..max)); returns the heap count
// (0 when b is not a Vulkan backend).
int backend_vulkan_heap_bytes(const backend *b, uint64_t *used, int max);
// Validation-layer messages of error severity seen so far (0 unless CABIN_VK_VALIDATE=1).
int backend_vulkan_validation_errors(const backend *b);

#endif
