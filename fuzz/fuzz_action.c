// The assistant's reply line: action_parse on any text, then the action it gives checked and
// applied to a simulated vehicle (vehicle_check, vehicle_apply), formatted and parsed back.
#include "fuzz/fuzz.h"
#include "app/assistant.h"

static vehicle *car;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    car = vehicle_new();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *reply = fuzz_text(data, size);
    action a;
    char sentence[512], err[256];
    int rc = action_parse(reply, &a, sentence, sizeof sentence, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(a.n_slots >= 0 && a.n_slots <= ACTION_MAX_SLOTS, "%d slots", a.n_slots);
        char line[1024], change[256], reason[256], reason2[256];
        action_format(&a, line, sizeof line);
        int ok = vehicle_check(car, &a, reason, sizeof reason);
        int applied = vehicle_apply(car, &a, change, sizeof change, reason2, sizeof reason2);
        FUZZ_CHECK(ok == applied, "check %d and apply %d disagree on '%s'", ok, applied, line);
        // The formatted action reads back as the same action.
        char again[1200];
        snprintf(again, sizeof again, "<act>%s</act> ok", line);
        action b;
        if (strlen(line) < sizeof line - 1) {
            FUZZ_CHECK(action_parse(again, &b, sentence, sizeof sentence, err, sizeof err) == 0, "'%s': %s", again, err);
            FUZZ_CHECK(action_equal(&a, &b), "'%s' reads back as another action", line);
        }
    } else {
        FUZZ_CHECK(err[0] != 0, "a refused reply says why");
    }
    free(reply);
    return 0;
}
