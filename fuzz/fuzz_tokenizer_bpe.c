// Byte-level BPE tokenizer on arbitrary bytes, with the GPT-2 and DeepSeek-LLM vocabularies (two
// pre-tokenizers).
#include "fuzz/fuzz_tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    static const char *const names[] = { "ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-llm.gguf" };
    fuzz_vocab_load(names, 2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_tokenizer_input(data, size); }
