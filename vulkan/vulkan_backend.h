// What the rest of cabin may ask the Vulkan backend beyond engine/backend.h (whose
// backend_vulkan_new creates it): the device list for `cabin devices`, memory use per heap, and
// the count of validation errors (CABIN_VK_VALIDATE=1).
#ifndef CABIN_VULKAN_BACKEND_H
#define CABIN_VULKAN_BACKEND_H

#include "engine/backend.h"

#include <stdint.h>
#include <stdio.h>

// Prints every Vulkan device: index, name, type, driver, memory heaps, subgroup size, features.
int backend_vulkan_list_devices(FILE *f, errbuf *err);
// Bytes this backend has allocated in each memory heap (used[0..max)); returns the heap count
// (0 when b is not a Vulkan backend).
int backend_vulkan_heap_bytes(const backend *b, uint64_t *used, int max);
// Validation-layer messages of error severity seen so far (0 unless CABIN_VK_VALIDATE=1).
int backend_vulkan_validation_errors(const backend *b);

#endif
