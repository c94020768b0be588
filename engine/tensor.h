// A weight tensor as the engine and every backend see it: a row-major matrix (or a vector) of
// any weight type. Matrices are (ne1 rows) of (ne0 weights); y = W x maps ne0 inputs to ne1
// outputs.
#ifndef CABIN_TENSOR_H
#define CABIN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct tensor {
    const char *name;     // GGUF tensor name (owned by the model)
    uint32_t type;        // enum wtype
    int64_t ne0, ne1;     // row length (inputs), rows (outputs); a vector has ne1 == 1
    const void *data;     // host bytes: into the mapped file, or `owned`; NULL for a converted
                          // matrix whose one copy is the CPU backend's own (model_prepare_tensor)
    size_t row_bytes;
    size_t n_bytes;
    void *owned;          // heap copy when the weights were converted (freed with the model)
    const void *src_data; // the file's weights (what every conversion starts from)
    uint32_t src_type;
    size_t src_row_bytes;
    void *bk;             // backend-side handle (device copy); NULL on the CPU
} tensor;

#endif
