build-tel/vulkan/vk_pipes.o: vulkan/vk_pipes.c vulkan/vk.h \
 engine/backend.h engine/kv_cache.h engine/util.h engine/tensor.h \
 engine/util.h vulkan/vk_spv.h
vulkan/vk.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/util.h:
vulkan/vk_spv.h:
