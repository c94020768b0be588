build-tel/vulkan/backend_vulkan.o: vulkan/backend_vulkan.c vulkan/vk.h \
 engine/backend.h engine/kv_cache.h engine/util.h engine/tensor.h \
 engine/util.h vulkan/vulkan_backend.h engine/wtype.h
vulkan/vk.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/util.h:
vulkan/vulkan_backend.h:
engine/wtype.h:
