build-tel/vulkan/vk_ops.o: vulkan/vk_ops.c vulkan/vk.h engine/backend.h \
 engine/kv_cache.h engine/util.h engine/tensor.h engine/util.h \
 engine/wtype.h
vulkan/vk.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/util.h:
engine/wtype.h:
