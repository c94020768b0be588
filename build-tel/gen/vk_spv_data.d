build-tel/gen/vk_spv_data.o: build-tel/gen/vk_spv_data.c vulkan/vk_spv.h
vulkan/vk_spv.h:
