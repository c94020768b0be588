// Unit tests of audio/: ring buffer, WAV read/write and refusal, resampler, VAD, clause splitting,
// the recogniser's helpers for choosing between its two readings.
#include "audio/asr.h"
#include "audio/ring.h"
#include "audio/vad.h"
#include "audio/voice.h"
#include "audio/wav.h"
#include "tests/test.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

#define N_STREAM 200000
static void *producer(void *ud) {
    sample_ring *r = ud;
    int16_t v = 0;
    for (int i = 0; i < N_STREAM;) {
        int16_t blk[37];
        int k = 0;
        for (; k < 37 && i + k < N_STREAM; k++) blk[k] = (int16_t)(v + k);
        size_t w = ring_write(r, blk, (size_t)k);
        v = (int16_t)(v + (int16_t)w);
        i += (int)w;
    }
    return NULL;
}

static char clauses[8][128];
static int n_clauses;
static char act_seen[128];
static void emit(void *ud, const char *c) { (void)ud; if (n_clauses < 8) snprintf(clauses[n_clauses++], 128, "%s", c); }
static void act(void *ud, const char *a) { (void)ud; snprintf(act_seen, sizeof act_seen, "%s", a); }

int main(void) {
    // ring: a producer thread and this consumer see every sample once, in order
    sample_ring r;
    CHECK(ring_init(&r, 1000) == 0 && r.cap == 1024, "ring init");
    pthread_t th;
    pthread_create(&th, NULL, producer, &r);
    int16_t expect = 0;
    int got = 0, bad = 0;
    while (got < N_STREAM) {
        int16_t buf[64];
        size_t k = ring_read(&r, buf, 64);
        for (size_t i = 0; i < k; i++, expect++) bad += buf[i] != expect;
        got += (int)k;
    }
    pthread_join(th, NULL);
    CHECK(bad == 0 && ring_used(&r) == 0, "%d samples out of order", bad);
    ring_free(&r);

    // WAV: write, read back; malformed files refused with the name
    int16_t x[1600];
    for (int i = 0; i < 1600; i++) x[i] = (int16_t)(8000 * sin(2 * M_PI * 440 * i / 16000.0));
    errbuf err = {{0}};
    char wav_path[64];   // this run's own file: two test runs may go at once
    snprintf(wav_path, sizeof wav_path, "/tmp/cabin_test_audio-%d.wav", (int)getpid());
    CHECK(wav_write(wav_path, x, 1600, 16000, &err) == 0, "%s", err.msg);
    wav_data w;
    CHECK(wav_read(wav_path, &w, &err) == 0 && w.n == 1600 && w.rate == 16000 &&
          memcmp(w.samples, x, sizeof x) == 0, "round trip: %s", err.msg);
    unlink(wav_path);
    wav_free(&w);
    const uint8_t junk[] = "RIFF\x04\0\0\0WAVEfmt \x10\0\0\0\x03\0\x01\0\x80\x3e\0\0\0\xfa\0\0\x04\0\x20\0data\0\0\0\0";
    CHECK(wav_parse(junk, sizeof junk - 1, "float.wav", &w, &err) != 0 && strstr(err.msg, "float.wav") &&
          strstr(err.msg, "16-bit"), "float WAV: %s", err.msg);
    CHECK(wav_parse((const uint8_t *)"RIFX", 4, "short.wav", &w, &err) != 0 && strstr(err.msg, "short.wav"), "short: %s", err.msg);
    const uint8_t nodata[] = "RIFF\x04\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0\x02\0\x10\0";
    CHECK(wav_parse(nodata, sizeof nodata - 1, "nodata.wav", &w, &err) != 0 && strstr(err.msg, "no data"), "%s", err.msg);
    const uint8_t huge[] = "RIFF\x04\0\0\0WAVEfmt \xff\xff\xff\x7f\x01\0\x01\0";
    CHECK(wav_parse(huge, sizeof huge - 1, "huge.wav", &w, &err) != 0 && strstr(err.msg, "huge.wav"), "%s", err.msg);
    // Limits before allocation: a recording longer than WAV_MAX_SECONDS, and a file larger than
    // any such recording (sparse: nothing is read), are refused with the limit named.
    size_t long_n = (size_t)WAV_MAX_SECONDS * 4000 + 1;
    uint8_t *long_wav = calloc(44 + 2 * long_n, 1);
    memcpy(long_wav, "RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\xa0\x0f\0\0\x40\x1f\0\0\x02\0\x10\0data", 40);
    for (int i = 0; i < 4; i++) long_wav[40 + i] = (uint8_t)((2 * long_n) >> (8 * i));
    CHECK(wav_parse(long_wav, 44 + 2 * long_n, "long.wav", &w, &err) != 0 && strstr(err.msg, "long.wav") &&
          strstr(err.msg, "600 s"), "recording over the limit: %s", err.msg);
    CHECK(wav_parse(long_wav, 44 + 2 * (long_n - 1), "limit.wav", &w, &err) == 0 && w.n == long_n - 1,
          "a recording of exactly the limit is read: %s", err.msg);
    wav_free(&w);
    free(long_wav);
    FILE *sparse = fopen(wav_path, "wb");
    CHECK(sparse && ftruncate(fileno(sparse), (off_t)WAV_MAX_FILE_BYTES + 1) == 0, "sparse file");
    if (sparse) fclose(sparse);
    CHECK(wav_read(wav_path, &w, &err) != 0 && strstr(err.msg, wav_path) && strstr(err.msg, "a WAV file may have"),
          "file over the limit: %s", err.msg);
    unlink(wav_path);

    // resampler: 22050 -> 16000 keeps a 440 Hz tone's amplitude and length; chunked = whole
    int16_t tone[22050], *whole, chunked[20000];
    for (int i = 0; i < 22050; i++) tone[i] = (int16_t)(10000 * sin(2 * M_PI * 440 * i / 22050.0));
    size_t nw = resample_all(tone, 22050, 22050, 16000, &whole);
    CHECK(nw >= 15970 && nw <= 16010, "length %zu", nw);
    double peak = 0;
    for (size_t i = 1000; i < nw - 1000; i++) peak = fmax(peak, fabs((double)whole[i]));
    CHECK(peak > 9500 && peak < 10500, "peak %.0f", peak);
    resampler rs;
    resampler_init(&rs, 22050, 16000);
    size_t nc = 0;
    for (int i = 0; i < 22050; i += 333) nc += resampler_run(&rs, tone + i, (size_t)(22050 - i < 333 ? 22050 - i : 333), chunked + nc);
    CHECK(nc == nw && memcmp(chunked, whole, nw * sizeof(int16_t)) == 0, "chunked %zu vs %zu", nc, nw);
    free(whole);

    // VAD: silence, 0.6 s of tone, silence -> one onset and one end
    vad v;
    vad_params p = vad_params_default();
    vad_init(&v, &p, 16000);
    int onsets = 0, ends = 0;
    for (int blk = 0; blk < 200; blk++) {   // 2 s in 10 ms blocks
        int16_t b[160];
        for (int i = 0; i < 160; i++) {
            int t = blk * 160 + i;
            b[i] = (int16_t)((blk >= 50 && blk < 110 ? 6000 * sin(2 * M_PI * 300 * t / 16000.0) : 0) + (rand() % 41 - 20));
        }
        size_t off = 0;
        while (off < 160) {
            size_t k;
            vad_event e = vad_feed(&v, b + off, 160 - off, &k);
            onsets += e == VAD_ONSET;
            ends += e == VAD_END;
            off += k;
        }
    }
    CHECK(onsets == 1 && ends == 1, "onsets %d ends %d", onsets, ends);
    vad_free(&v);

    // VAD pauses: tone, 0.3 s gap, tone, silence. Each silence run reports VAD_PAUSE once, at
    // pause_ms; the caller that ends the utterance at the second pause (vad_end_now) gets
    // VAD_END there, 200 ms into the silence, and no hangover end after; pause_ms 0 (the
    // default): no pauses.
    for (int mode = 0; mode < 3; mode++) {   // 0: pauses reported; 1: the second ends it; 2: pause_ms 0
        vad_params pp = p;
        pp.pause_ms = mode == 2 ? 0 : 200;
        vad_init(&v, &pp, 16000);
        int pauses = 0, pause_blk[4] = { 0 }, end_at = -1, n_ends = 0;
        for (int blk = 0; blk < 250; blk++) {
            bool tone = (blk >= 50 && blk < 100) || (blk >= 130 && blk < 180);
            int16_t b[160];
            for (int i = 0; i < 160; i++)
                b[i] = (int16_t)((tone ? 6000 * sin(2 * M_PI * 300 * (blk * 160 + i) / 16000.0) : 0) + (rand() % 41 - 20));
            size_t off = 0;
            while (off < 160) {
                size_t k;
                vad_event e = vad_feed(&v, b + off, 160 - off, &k);
                if (e == VAD_PAUSE && pauses < 4) pause_blk[pauses++] = blk;
                if (e == VAD_PAUSE && mode == 1 && pauses == 2) {
                    CHECK(vad_silence_ms(&v) == 200, "silence at the pause: %d ms", vad_silence_ms(&v));
                    e = vad_end_now(&v);
                }
                if (e == VAD_END) { n_ends++; end_at = blk; }
                off += k;
            }
        }
        if (mode == 2) CHECK(pauses == 0 && n_ends == 1, "pause_ms 0: %d pauses, %d ends", pauses, n_ends);
        else CHECK(pauses == 2 && pause_blk[0] == 119 && pause_blk[1] == 199 && n_ends == 1 &&
                   end_at == (mode == 1 ? 199 : 219), "mode %d: %d pauses at %d, %d; %d ends, at %d", mode, pauses,
                   pause_blk[0], pause_blk[1], n_ends, end_at);
        CHECK(vad_end_now(&v) == VAD_NONE, "vad_end_now outside an utterance");
        vad_free(&v);
    }

    // VAD in noise: loud speech, a weak stretch below the speech threshold (0.3 s, shorter than
    // the hangover), medium, loud again -> one utterance to the end of the last loud part. (With
    // the floor rising as fast inside an utterance as outside, it rose onto the weak stretch,
    // missed the medium part and ended at 1.0 s.)
    vad_init(&v, &p, 16000);
    onsets = ends = 0;
    int end_blk = -1;
    srand(1);
    for (int blk = 0; blk < 330; blk++) {   // 3.3 s in 10 ms blocks
        double a = blk >= 50 && blk < 100 ? 3000 : blk >= 100 && blk < 130 ? 600 : blk >= 130 && blk < 180 ? 1200
                 : blk >= 180 && blk < 230 ? 3000 : 0;
        int16_t b[160];
        for (int i = 0; i < 160; i++) {
            int t = blk * 160 + i;
            b[i] = (int16_t)(a * sin(2 * M_PI * 300 * t / 16000.0) + (rand() % 601 - 300));
        }
        size_t off = 0;
        while (off < 160) {
            size_t k;
            vad_event e = vad_feed(&v, b + off, 160 - off, &k);
            onsets += e == VAD_ONSET;
            if (e == VAD_END) { ends++; end_blk = blk; }
            off += k;
        }
    }
    CHECK(onsets == 1 && ends == 1 && end_blk >= 230, "in noise: onsets %d ends %d, end at %.2f s", onsets, ends,
          end_blk / 100.0);
    vad_free(&v);

    // clauses: the action is taken out, clauses cut at punctuation and after max words
    clause_splitter cs;
    clause_init(&cs, 6);
    const char *pieces[] = { "<a", "ct>climate.set temp", "=22</act> Setting", " it to 22", ". Anything", " else,",
                             " one two three four five six seven", " eight" };
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) clause_push(&cs, pieces[i], strlen(pieces[i]), emit, act, NULL);
    clause_finish(&cs, emit, act, NULL);
    clause_free(&cs);
    CHECK(strcmp(act_seen, "climate.set temp=22") == 0, "action '%s'", act_seen);
    CHECK(n_clauses == 4 && strcmp(clauses[0], "Setting it to 22.") == 0 && strcmp(clauses[1], "Anything else,") == 0 &&
          strcmp(clauses[2], "one two three four five six") == 0 && strcmp(clauses[3], "seven eight") == 0,
          "%d clauses: [%s] [%s] [%s] [%s]", n_clauses, clauses[0], clauses[1], clauses[2], clauses[3]);

    // --- the recogniser's choice between its two readings (asr_end)
    CHECK(asr_same_but_fillers("uh so turn the fan on", "turn um the fan on"), "fillers only");
    CHECK(asr_same_but_fillers("", "uh"), "nothing but fillers");
    CHECK(!asr_same_but_fillers("turn the fan on", "turn the fan off"), "a word differs");
    CHECK(!asr_same_but_fillers("turn the fan on", "turn the fan on please"), "a word more");
    CHECK(!asr_same_but_fillers("also call mom", "call mom"), "'also' is not 'so'");
    const char *pairs[][3] = {
        { "turn uh down the music", "turn um down the music",
          "public <pick> = turn ( uh | um ) down the music;" },
        { "so turn the ac off", "turn the ac off", "public <pick> = [ so ] turn the ac off;" },
        { "call mom", "call mom uh", "public <pick> = call mom [ uh ];" },
        { "okay drive home", "okay like fully", "public <pick> = okay ( drive home | like fully );" },
        { "play", "stop", "public <pick> = ( play | stop );" },
        { "a b c", "a b c", "public <pick> = a b c;" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char g[1024];
        int rc = asr_union_grammar(pairs[i][0], pairs[i][1], g, sizeof g);
        CHECK(rc == 0 && strncmp(g, "#JSGF V1.0;\ngrammar pick;\n", 26) == 0 && strstr(g, pairs[i][2]),
              "union of '%s' and '%s': %s", pairs[i][0], pairs[i][1], g);
    }
    char many[400] = "", big[4096];
    for (int i = 0; i < 70; i++) strcat(many, "go ");
    CHECK(asr_union_grammar(many, "go", big, sizeof big) == -1 && !asr_same_but_fillers(many, many),
          "over 64 words: no union, no filler match (the words would be cut short)");
    char tiny[40];
    CHECK(asr_union_grammar("turn the fan on", "turn the fan off", tiny, sizeof tiny) == -1, "too small a buffer refused");
    return test_finish();
}
