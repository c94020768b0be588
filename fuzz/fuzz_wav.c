// WAV reader: wav_parse on any bytes; what it accepts is mono PCM16 at a rate in range, and
// resamples to the recogniser's 16 kHz.
#include "fuzz/fuzz.h"
#include "audio/wav.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wav_data w;
    errbuf err = {{0}};
    if (wav_parse(data, size, "fuzz.wav", &w, &err) == 0) {
        FUZZ_CHECK(w.rate >= 4000 && w.rate <= 192000, "rate %d", w.rate);
        FUZZ_CHECK(w.n <= size / 2, "%zu samples from %zu bytes", w.n, size);
        int64_t sum = 0;
        for (size_t i = 0; i < w.n; i++) sum += w.samples[i];   // every sample is readable
        (void)sum;
        int16_t *out = NULL;
        size_t n = resample_all(w.samples, w.n, w.rate, 16000, &out);
        FUZZ_CHECK(n == 0 || out != NULL, "%zu samples and no buffer", n);
        free(out);
        wav_free(&w);
    } else {
        FUZZ_CHECK(err.msg[0] != 0, "a refused file says why");
    }
    return 0;
}
