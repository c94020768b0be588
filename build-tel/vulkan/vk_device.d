build-tel/vulkan/vk_device.o: vulkan/vk_device.c vulkan/vk.h \
 engine/backend.h engine/kv_cache.h engine/util.h engine/tensor.h \
 engine/util.h
vulkan/vk.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/util.h:
