// Vulkan instance, physical device choice and listing, the logical device, buffers and memory.
#include "vulkan/vk.h"

#include <stdlib.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
#include <dlfcn.h>
#include <link.h>

// AddressSanitizer builds only. The Vulkan loader unloads the driver (dlclose) when the last
// instance goes; an allocation the driver made once per process and keeps in its own globals
// (lavapipe's LLVM on some CPUs: 128 bytes from a pthread_once) then looks like a leak to
// LeakSanitizer at exit, which no longer sees those globals, nor can it name the code that made
// it. Marking every object loaded by now RTLD_NODELETE keeps the driver mapped to the end, so
// its globals are scanned as usual and our own leaks stay reported.
static int pin_object(struct dl_phdr_info *info, size_t size, void *ud) {
    (void)size;
    (void)ud;
    if (info->dlpi_name && info->dlpi_name[0]) dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    return 0;
}

static void pin_vulkan_driver(void) { dl_iterate_phdr(pin_object, NULL); }
#else
static void pin_vulkan_driver(void) {}
#endif

const char *vk_result_str(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "success";
    case VK_NOT_READY: return "not ready";
    case VK_TIMEOUT: return "timeout";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_MEMORY_MAP_FAILED: return "memory map failed";
    case VK_ERROR_LAYER_NOT_PRESENT: return "layer not present";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "incompatible driver (no Vulkan driver installed?)";
    case VK_ERROR_TOO_MANY_OBJECTS: return "too many objects";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "out of pool memory";
    default: return "error";
    }
}

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                VkDebugUtilsMessageTypeFlagsEXT type,
                                                const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                void *ud) {
    (void)type;
    vk_dev *d = ud;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        d->validation_errors++;
        fprintf(stderr, "vulkan validation error: %s\n", data->pMessage);
    } else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        fprintf(stderr, "vulkan validation warning: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static bool have_layer(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *lp = xcalloc(n, sizeof *lp);
    bool found = false;
    if (vkEnumerateInstanceLayerProperties(&n, lp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(lp[i].layerName, name) == 0;
    free(lp);
    return found;
}

// Creates the instance; with validation (layer + messenger) when CABIN_VK_VALIDATE=1 and ud != NULL.
static int make_instance(VkInstance *inst, vk_dev *ud, errbuf *err) {
    const char *v = getenv("CABIN_VK_VALIDATE");
    bool validate = ud && v && strcmp(v, "1") == 0;
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (validate && !have_layer(layer)) {
        fprintf(stderr, "cabin: CABIN_VK_VALIDATE=1 but %s is not installed; running without it\n", layer);
        validate = false;
    }
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "cabin",
                              .pEngineName = "cabin", .apiVersion = VK_API_VERSION_1_1 };
    VkDebugUtilsMessengerCreateInfoEXT dci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_debug, .pUserData = ud };
    VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
    if (validate) {
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &layer;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = &ext;
        ci.pNext = &dci;   // also catches messages from vkCreateInstance / vkDestroyInstance
    }
    VkResult r = vkCreateInstance(&ci, NULL, inst);
    if (r != VK_SUCCESS)
        return err_set(err, "vulkan: cannot create an instance: %s", vk_result_str(r));
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT mk = (PFN_vkCreateDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(*inst, "vkCreateDebugUtilsMessengerEXT");
        if (mk) mk(*inst, &dci, NULL, &ud->messenger);
    }
    return 0;
}

static int list_phys(VkInstance inst, VkPhysicalDevice **out, uint32_t *n, errbuf *err) {
    *n = 0;
    *out = NULL;
    VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
    pin_vulkan_driver();            // the drivers are loaded by now
    if (r != VK_SUCCESS) return err_set(err, "vulkan: cannot list devices: %s", vk_result_str(r));
    if (*n == 0) return 0;
    *out = xcalloc(*n, sizeof **out);
    r = vkEnumeratePhysicalDevices(inst, n, *out);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(*out);
        *out = NULL;
        return err_set(err, "vulkan: cannot list devices: %s", vk_result_str(r));
    }
    return 0;
}

static bool find_compute_queue(VkPhysicalDevice p, uint32_t *family, uint32_t *ts_bits) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
    VkQueueFamilyProperties *qf = xcalloc(n ? n : 1, sizeof *qf);
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, qf);
    bool ok = false;
    // A compute queue; one without graphics first (a dedicated compute family on GPUs).
    for (int pass = 0; pass < 2 && !ok; pass++)
        for (uint32_t i = 0; i < n && !ok; i++) {
            if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            if (pass == 0 && (qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) continue;
            *family = i;
            *ts_bits = qf[i].timestampValidBits;
            ok = true;
        }
    free(qf);
    return ok;
}

static int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static void subgroup_info(VkPhysicalDevice p, uint32_t *size, bool *arith) {
    VkPhysicalDeviceSubgroupProperties sg = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg };
    vkGetPhysicalDeviceProperties2(p, &p2);
    *size = sg.subgroupSize;
    *arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
             (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
             (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) && sg.subgroupSize >= 4;
}

int vk_dev_open(vk_dev *d, int want, errbuf *err) {
    memset(d, 0, sizeof *d);
    if (!vk_have_shaders())
        return err_set(err, "vulkan: this cabin was built without its shaders (glslc was not found at build time)");
    if (make_instance(&d->inst, d, err)) return -1;
    VkPhysicalDevice *pd;
    uint32_t n;
    if (list_phys(d->inst, &pd, &n, err)) goto fail;
    if (n == 0) { err_set(err, "vulkan: no Vulkan device found"); goto fail; }
    if (want >= (int)n) {
        err_set(err, "vulkan: no device %d (there %s %u; see cabin devices)", want, n == 1 ? "is" : "are", n);
        free(pd);
        goto fail;
    }
    int best = -1, best_rank = 99;
    char why[256] = "";
    for (uint32_t i = 0; i < n; i++) {
        if (want >= 0 && (int)i != want) continue;
        VkPhysicalDeviceProperties pr;
        vkGetPhysicalDeviceProperties(pd[i], &pr);
        uint32_t fam, tsb;
        if (pr.apiVersion < VK_API_VERSION_1_1) {
            snprintf(why, sizeof why, "device %u (%.100s) supports only Vulkan %u.%u; cabin needs 1.1", i,
                     pr.deviceName, VK_API_VERSION_MAJOR(pr.apiVersion), VK_API_VERSION_MINOR(pr.apiVersion));
            continue;
        }
        if (!find_compute_queue(pd[i], &fam, &tsb)) {
            snprintf(why, sizeof why, "device %u (%.100s) has no compute queue", i, pr.deviceName);
            continue;
        }
        if (type_rank(pr.deviceType) < best_rank) { best = (int)i; best_rank = type_rank(pr.deviceType); }
    }
    if (best < 0) {
        err_set(err, "vulkan: no usable device: %s", why);
        free(pd);
        goto fail;
    }
    d->phys = pd[best];
    d->index = best;
    free(pd);
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
    uint32_t ts_bits = 0;
    find_compute_queue(d->phys, &d->queue_family, &ts_bits);
    d->timestamps = ts_bits > 0 && d->props.limits.timestampPeriod > 0;
    d->ts_period = d->props.limits.timestampPeriod;
    subgroup_info(d->phys, &d->subgroup_size, &d->subgroup_arith);
    const char *nosg = getenv("CABIN_VK_NO_SUBGROUP");
    if (nosg && strcmp(nosg, "1") == 0) d->subgroup_arith = false;
    const char *unmapped = getenv("CABIN_VK_UNMAPPED");
    d->unmapped_device = unmapped && strcmp(unmapped, "1") == 0;

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                    .queueFamilyIndex = d->queue_family, .queueCount = 1,
                                    .pQueuePriorities = &prio };
    VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &qci };
    VkResult r = vkCreateDevice(d->phys, &dci, NULL, &d->dev);
    if (r != VK_SUCCESS) {
        err_set(err, "vulkan: %s: cannot create the device: %s", d->props.deviceName, vk_result_str(r));
        d->dev = VK_NULL_HANDLE;
        goto fail;
    }
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = d->queue_family };
    r = vkCreateCommandPool(d->dev, &pci, NULL, &d->cmd_pool);
    if (r != VK_SUCCESS) {
        err_set(err, "vulkan: %s: cannot create a command pool: %s", d->props.deviceName, vk_result_str(r));
        goto fail;
    }
    return 0;
fail:
    vk_dev_close(d);
    return -1;
}

void vk_dev_close(vk_dev *d) {
    if (d->dev) {
        vkDeviceWaitIdle(d->dev);
        if (d->cmd_pool) vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
        vkDestroyDevice(d->dev, NULL);
    }
    if (d->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT rm = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(d->inst, "vkDestroyDebugUtilsMessengerEXT");
        if (rm) rm(d->inst, d->messenger, NULL);
    }
    if (d->inst) vkDestroyInstance(d->inst, NULL);
    int errors = d->validation_errors;
    memset(d, 0, sizeof *d);
    d->validation_errors = errors;
}

static void print_features(FILE *f, VkPhysicalDevice p, uint32_t api) {
    VkPhysicalDevice16BitStorageFeatures s16 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES };
    VkPhysicalDeviceVulkan12Features v12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16 };
    bool have12 = api >= VK_API_VERSION_1_2;
    if (have12) s16.pNext = &v12;
    vkGetPhysicalDeviceFeatures2(p, &f2);
    uint32_t sgs;
    bool arith;
    subgroup_info(p, &sgs, &arith);
#define YN(x) ((x) ? "yes" : "no")
    fprintf(f, "    features: 16-bit storage %s, 8-bit storage %s, shaderFloat16 %s, shaderInt8 %s, "
               "subgroup arithmetic %s\n", YN(s16.storageBuffer16BitAccess),
            have12 ? YN(v12.storageBuffer8BitAccess) : "?", have12 ? YN(v12.shaderFloat16) : "?",
            have12 ? YN(v12.shaderInt8) : "?", YN(arith));
#undef YN
}

int vk_dev_list(FILE *f, errbuf *err) {
    VkInstance inst;
    if (make_instance(&inst, NULL, err)) return -1;
    VkPhysicalDevice *pd;
    uint32_t n;
    if (list_phys(inst, &pd, &n, err)) { vkDestroyInstance(inst, NULL); return -1; }
    if (n == 0) fprintf(f, "no Vulkan devices\n");
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceDriverProperties drv = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
        VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 };
        VkPhysicalDeviceProperties pr;
        vkGetPhysicalDeviceProperties(pd[i], &pr);
        bool have_drv = pr.apiVersion >= VK_API_VERSION_1_2;
        if (have_drv) p2.pNext = &drv;
        vkGetPhysicalDeviceProperties2(pd[i], &p2);
        fprintf(f, "%u: %s (%s), Vulkan %u.%u.%u\n", i, pr.deviceName, type_name(pr.deviceType),
                VK_API_VERSION_MAJOR(pr.apiVersion), VK_API_VERSION_MINOR(pr.apiVersion),
                VK_API_VERSION_PATCH(pr.apiVersion));
        if (have_drv)
            fprintf(f, "    driver: %s %s (version 0x%x)\n", drv.driverName, drv.driverInfo, pr.driverVersion);
        else
            fprintf(f, "    driver: version 0x%x\n", pr.driverVersion);
        VkPhysicalDeviceMemoryProperties mp;
        vkGetPhysicalDeviceMemoryProperties(pd[i], &mp);
        for (uint32_t h = 0; h < mp.memoryHeapCount; h++) {
            bool host_vis = false;
            for (uint32_t t = 0; t < mp.memoryTypeCount; t++)
                if (mp.memoryTypes[t].heapIndex == h &&
                    (mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
                    host_vis = true;
            fprintf(f, "    heap %u: %.1f MiB%s%s\n", h, (double)mp.memoryHeaps[h].size / (1024.0 * 1024.0),
                    (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? ", device-local" : "",
                    host_vis ? ", host-visible" : "");
        }
        uint32_t sgs, fam, tsb;
        bool arith;
        subgroup_info(pd[i], &sgs, &arith);
        bool cq = find_compute_queue(pd[i], &fam, &tsb);
        fprintf(f, "    subgroup size %u; compute queue %s; timestamps %s\n", sgs, cq ? "yes" : "no",
                cq && tsb ? "yes" : "no");
        print_features(f, pd[i], pr.apiVersion);
    }
    free(pd);
    vkDestroyInstance(inst, NULL);
    return 0;
}

// Picks a memory type for `bits`: VKM_HOST needs host-visible+coherent (cached preferred);
// VKM_DEVICE prefers device-local, then device-local+host-visible+coherent among those (so the
// host can write weights in place), falling back to any allowed type.
static int pick_type(const vk_dev *d, uint32_t bits, enum vk_mem_kind kind) {
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
        if (!(bits & (1u << i))) continue;
        VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
        int score;
        if (kind == VKM_HOST) {
            if ((f & hv) != hv) continue;
            score = 1 + ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 1 : 0);
        } else {
            score = ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? 4 : 0) + ((f & hv) == hv ? 1 : 0);
        }
        if (score > best_score) { best = (int)i; best_score = score; }
    }
    return best;
}

int vk_buf_create(vk_dev *d, vk_buf *b, VkDeviceSize size, enum vk_mem_kind kind, errbuf *err) {
    memset(b, 0, sizeof *b);
    if (size < 16) size = 16;
    size = (size + 15) & ~(VkDeviceSize)15;
    VkBufferCreateInfo bci = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE };
    VkResult r = vkCreateBuffer(d->dev, &bci, NULL, &b->buf);
    if (r != VK_SUCCESS)
        return err_set(err, "vulkan: cannot create a buffer of %llu bytes: %s", (unsigned long long)size, vk_result_str(r));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
    int type = pick_type(d, req.memoryTypeBits, kind);
    if (type < 0) {
        vkDestroyBuffer(d->dev, b->buf, NULL);
        b->buf = VK_NULL_HANDLE;
        return err_set(err, "vulkan: no %s memory type for a buffer", kind == VKM_HOST ? "host-visible" : "device");
    }
    VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)type };
    r = vkAllocateMemory(d->dev, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(d->dev, b->buf, NULL);
        b->buf = VK_NULL_HANDLE;
        b->mem = VK_NULL_HANDLE;
        return err_set(err, "vulkan: cannot allocate %llu bytes of %s memory: %s", (unsigned long long)req.size,
                       kind == VKM_HOST ? "host-visible" : "device", vk_result_str(r));
    }
    vkBindBufferMemory(d->dev, b->buf, b->mem, 0);
    b->size = size;
    b->heap = (int)d->mem.memoryTypes[type].heapIndex;
    d->heap_used[b->heap] += req.size;
    VkMemoryPropertyFlags f = d->mem.memoryTypes[type].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
        !(kind == VKM_DEVICE && d->unmapped_device)) {
        if (vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map) != VK_SUCCESS) b->map = NULL;
    }
    return 0;
}

void vk_buf_destroy(vk_dev *d, vk_buf *b) {
    if (!b->buf) return;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
    d->heap_used[b->heap] -= req.size < d->heap_used[b->heap] ? req.size : d->heap_used[b->heap];
    if (b->map) vkUnmapMemory(d->dev, b->mem);
    vkDestroyBuffer(d->dev, b->buf, NULL);
    vkFreeMemory(d->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

int vk_run_once(vk_dev *d, void (*fn)(VkCommandBuffer cb, void *ud), void *ud, errbuf *err) {
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = d->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
    VkCommandBuffer cb;
    VkResult r = vkAllocateCommandBuffers(d->dev, &ai, &cb);
    if (r != VK_SUCCESS) return err_set(err, "vulkan: cannot allocate a command buffer: %s", vk_result_str(r));
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    vkBeginCommandBuffer(cb, &bi);
    fn(cb, ud);
    vkEndCommandBuffer(cb);
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    VkFence fence;
    r = vkCreateFence(d->dev, &fci, NULL, &fence);
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb };
        r = vkQueueSubmit(d->queue, 1, &si, fence);
        if (r == VK_SUCCESS) r = vkWaitForFences(d->dev, 1, &fence, VK_TRUE, UINT64_MAX);
        vkDestroyFence(d->dev, fence, NULL);
    }
    vkFreeCommandBuffers(d->dev, d->cmd_pool, 1, &cb);
    if (r != VK_SUCCESS) return err_set(err, "vulkan: one-off submit failed: %s", vk_result_str(r));
    return 0;
}
