build-lead/gen/vk_spv_data.o: build-lead/gen/vk_spv_data.c \
 vulkan/vk_spv.h
vulkan/vk_spv.h:
