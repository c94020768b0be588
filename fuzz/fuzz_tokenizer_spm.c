// SentencePiece-style tokenizer on arbitrary bytes, with the Llama 2 and Phi-3 vocabularies.
#include "fuzz/fuzz_tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    static const char *const names[] = { "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf" };
    fuzz_vocab_load(names, 2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_tokenizer_input(data, size); }
