// Grammar-constrained decoding of action lines (app/action_grammar.c): the text checker on
// chosen cases, then the whole path — session filter, sampler, parser, vehicle — on a model with
// the embedded model's vocabulary and random weights, so every token is a random choice among
// what the grammar allows.
#include "test.h"
#include "tests/rng.h"
#include "app/action_grammar.h"
#include "app/assistant.h"
#include "tests/random_vocab_model.h"
#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

static int check(const char *reply, const char *request) {
    return action_grammar_check(reply, strlen(reply), request);
}

#define EXPECT(reply, request, want) do { int r_ = check(reply, request); \
    CHECK(r_ == (want), "'%s' | '%s': %d, wanted %d", reply, request, r_, want); } while (0)

static void checker_cases(void) {
    // the opening tag, the intent, slots in the trained order
    EXPECT("", "", 0);
    EXPECT("<a", "", 0);
    EXPECT("Sure", "", -1);
    EXPECT("<act>", "", 0);
    EXPECT("<act>clim", "", 0);
    EXPECT("<act>climate.sex", "", -1);
    EXPECT("<act>none", "", 0);
    EXPECT("<act>none</", "", 0);
    EXPECT("<act>none</act> Sorry.", "", 1);
    EXPECT("<act>none zone=all</act>", "", -1);
    EXPECT("<act>climate.set zone=driver temp=22</act> Setting it.", "twenty two", 1);
    EXPECT("<act>climate.set temp=22 zone=driver</act>", "22", -1);        // order is fixed
    EXPECT("<act>climate.set zone=driver</act>", "", -1);                  // temp is required
    EXPECT("<act>climate.set zone=moon", "", -1);
    EXPECT("<act>climate.set zone=driver temp=31</act>", "", -1);          // out of range
    EXPECT("<act>climate.set zone=driver temp=30.5</act>", "", -1);
    EXPECT("<act>climate.set zone=driver temp=22.5</act>", "", 1);
    EXPECT("<act>climate.set zone=driver temp=22.7", "", -1);
    EXPECT("<act>climate.set zone=driver temp=0", "", -1);                 // no 0x in 16..30
    EXPECT("<act>climate.set zone=driver  temp=22</act>", "", -1);         // one space only
    EXPECT("<act>climate.fan level=8</act>", "", -1);
    EXPECT("<act>climate.fan delta=+1</act>", "", 1);
    EXPECT("<act>climate.fan delta=1</act>", "", -1);                      // deltas are signed
    EXPECT("<act>media.volume level=30</act>", "", 1);
    EXPECT("<act>media.volume level=31", "", -1);
    EXPECT("<act>window.set window=rear_left position=100</act>", "", 1);
    EXPECT("<act>window.set window=rear_left position=1000", "", -1);
    EXPECT("<act>window.set window=rear_left position=05", "", -1);
    EXPECT("<act>climate.set zone=all temp=22</act>", "", 1);
    EXPECT("<act>climate.set zone=all temp=22\n", "", -1);
    // numbers the request states are the ones a numeric slot takes
    EXPECT("<act>climate.set zone=all temp=22</act>", "make it twenty seven", -1);
    EXPECT("<act>climate.set zone=all temp=27</act>", "make it twenty seven", 1);
    EXPECT("<act>climate.set zone=all temp=2", "make it twenty seven", 0);
    EXPECT("<act>climate.set zone=all temp=27.5</act>", "make it twenty seven", -1);
    EXPECT("<act>climate.set zone=all temp=18.5</act>", "eighteen and a half degrees", 1);
    EXPECT("<act>climate.set zone=all temp=18.5</act>", "eighteen point uh five", 1);
    EXPECT("<act>climate.set zone=all temp=18</act>", "eighteen and a half degrees", -1);
    EXPECT("<act>climate.set zone=all temp=24.5</act>", "Set it to 24.5.", 1);
    EXPECT("<act>climate.set zone=rear temp=24.5</act>", "can the rear be twenty four point point five", 1);
    EXPECT("<act>media.volume level=23</act>", "volume to twenty er three", 1);
    EXPECT("<act>media.volume level=20</act>", "volume to twenty er three", -1);
    EXPECT("<act>media.volume level=2</act>", "volume to twenty er three", -1);
    EXPECT("<act>media.volume level=20</act>", "volume twenty twenty three", 1);  // a stutter
    EXPECT("<act>media.volume delta=-3</act>", "minus three volume", 1);
    EXPECT("<act>media.volume delta=-2</act>", "minus three volume", -1);
    // words of one direction fix a delta's sign; "warm" is none ("I'm too warm" is -2)
    EXPECT("<act>media.volume delta=+5</act>", "plus five volume", 1);
    EXPECT("<act>media.volume delta=-5</act>", "plus five volume", -1);
    EXPECT("<act>climate.adjust zone=all delta=+1</act>", "a bit colder", -1);
    EXPECT("<act>climate.adjust zone=all delta=-1</act>", "a bit colder", 1);
    EXPECT("<act>climate.adjust zone=all delta=-2</act>", "i'm too warm", 1);
    EXPECT("<act>climate.adjust zone=all delta=+2</act>", "i'm too warm", 1);
    EXPECT("<act>climate.fan delta=-1</act>", "fan up, no, down", 1);        // both ways: the model's call
    // "a bit" is a change: where a slot may be set or changed, it is changed
    EXPECT("<act>climate.fan level=7</act>", "crank the fan a bit", -1);
    EXPECT("<act>climate.fan l", "crank the fan a bit", -1);                 // no dead end at "level="
    EXPECT("<act>climate.fan delta=+1</act>", "crank the fan a bit", 1);
    EXPECT("<act>climate.fan level=7</act>", "crank the fan", 1);
    EXPECT("<act>climate.fan level=4</act>", "fan to uh four", 1);             // "to" a number sets it
    EXPECT("<act>climate.fan delta=+4</act>", "fan to uh four", -1);
    EXPECT("<act>media.volume delta=+5</act>", "louder by 5", 1);               // "by" a number changes it
    EXPECT("<act>media.volume level=5</act>", "louder by 5", -1);
    EXPECT("<act>media.volume level=5</act>", "volume five", 1);
    // words of a unit name the quantity
    EXPECT("<act>climate.fan delta=+4</act>", "up 4 degrees", -1);
    EXPECT("<act>climate.adjust zone=all delta=+4</act>", "up 4 degrees", 1);
    EXPECT("<act>climate.ac", "bump it up 1 degree on the passenger only", -1);
    EXPECT("<act>media.volume level=30</act>", "thirty percent", -1);
    EXPECT("<act>sunroof.set position=30</act>", "thirty percent", 1);
    // and words of switching fix state=on|off
    EXPECT("<act>climate.defrost target=front state=off</act>", "start defrosting the windscreen", -1);
    EXPECT("<act>climate.defrost target=front state=on</act>", "start defrosting the windscreen", 1);
    EXPECT("<act>climate.ac state=on</act>", "kill the ac", -1);
    EXPECT("<act>climate.ac state=off</act>", "kill the ac", 1);
    EXPECT("<act>climate.defrost target=front state=off</act>", "the windshield is clear now", 1);
    EXPECT("<act>climate.defrost target=front state=on</act>", "the windshield is clear now", 1);
    EXPECT("<act>lights.set target=fog state=on</act>", "fog lights off, the other ones on", 1);
    // a stated number above the slot's range is taken as said (the car refuses it with its
    // range); one below it is not a setting, and no other number stands in for it
    EXPECT("<act>media.volume level=100</act>", "volume one hundred", 1);
    EXPECT("<act>climate.set zone=all temp=72</act>", "set it to 72", 1);
    EXPECT("<act>climate.set zone=all temp=27</act>", "set it to 72", -1);
    EXPECT("<act>climate.set zone=all temp=22</act>", "up 2 degrees", -1);
    EXPECT("<act>climate.set zone=all temp=2", "up 2 degrees", -1);
    EXPECT("<act>climate.set", "up 2 degrees", -1);                          // no temperature stated
    EXPECT("<act>climate.adjust zone=all delta=+2</act>", "up 2 degrees", 1);
    EXPECT("<act>climate.fan level=1000", "fan to level 1000", -1);         // three digits at most
    EXPECT("<act>window.set window=all position=100</act>", "open them one hundred percent", 1);
    EXPECT("<act>window.set window=all position=20</act>", "crack them open", 1);   // none stated
    // free-text values: request words, in order
    EXPECT("<act>phone.call contact=aunt_maria</act> Calling.", "call aunt maria please", 1);
    EXPECT("<act>phone.call contact=aunt_ma", "call aunt maria please", 0);
    EXPECT("<act>phone.call contact=maria_aunt</act>", "call aunt maria please", -1);
    EXPECT("<act>phone.call contact=marva</act>", "call aunt maria please", -1);
    EXPECT("<act>phone.call contact=call</act>", "call aunt maria please", -1);     // a frame word
    EXPECT("<act>phone.call contact=", "", -1);   // no words to copy: no contact
    EXPECT("<act>phone.call", "", -1);            // so no call at all
    EXPECT("<act>phone.call", "call me", -1);     // (a frame word is no contact either)
    EXPECT("<act>phone.call", "call mom", 0);
    EXPECT("<act>phone.redial</act>", "", 1);
    EXPECT("<act>phone.call contact=x</act>", "", -1);
    EXPECT("<act>nav.go dest=city_hall</act>", "take me to city uh hall", 1);
    EXPECT("<act>nav.go dest=home</act>", "I want to go to the zoo", -1);    // home and work when said
    EXPECT("<act>nav.go dest=home</act>", "take me home", 1);
    EXPECT("<act>nav.go dest=home</act>", "back to the house please", 1);
    EXPECT("<act>nav.go dest=work</act>", "head to the office", 1);
    EXPECT("<act>nav.go dest=work</act>", "take me home", -1);
    EXPECT("<act>nav.go dest=wo", "get me to the velodrome", -1);
    EXPECT("<act>nav.go dest=42_elm_street</act>", "get me to 42 Elm Street", 1);
    EXPECT("<act>nav.go dest=zoo</act>", "I want to go to the zoo", 1);
    EXPECT("<act>nav.go dest=the_zoo</act>", "I want to go to the zoo", -1);   // places without "the"
    EXPECT("<act>phone.call contact=my_sister</act>", "call my sister", 1);
    EXPECT("<act>phone.call contact=sister</act>", "call my sister", 1);
    // a name is copied whole: contiguous (fillers and stutters aside), up to the request's end
    // or a word around names, and not from the middle of a run of words
    EXPECT("<act>nav.go dest=greenfield_outlet</act>", "go to the greenfield outlet", 1);
    EXPECT("<act>nav.go dest=greenfield</act>", "go to the greenfield outlet", -1);
    EXPECT("<act>nav.go dest=greenfield", "go to the greenfield outlet", 0);
    EXPECT("<act>nav.go dest=outlet</act>", "go to the greenfield outlet", -1);
    EXPECT("<act>nav.go dest=52_close</act>", "go to 52 heron close", -1);
    EXPECT("<act>nav.go dest=52_heron_close</act>", "go to 52 heron close please", 1);
    EXPECT("<act>nav.go dest=129_falcon_drive</act>", "get me to 129 129 falcon drive", 1);
    EXPECT("<act>phone.call contact=maria</act>", "give maria a call", 1);
    EXPECT("<act>phone.call contact=maria_a", "give maria a call", -1);
    EXPECT("<act>phone.call contact=uncle_teodor</act>", "call uncle teodor for me right now", 1);
    EXPECT("<act>phone.call contact=uncle_teodor_for", "call uncle teodor for me right now", -1);
    EXPECT("<act>phone.call contact=c</act>", "turn the a c on", -1);     // one letter is no name
    // a number alone is no place; an address spoken in words is copied in digits
    EXPECT("<act>nav.go dest=25</act>", "sorry i said 25", -1);
    EXPECT("<act>nav.go dest=2", "sorry i said 25", -1);
    EXPECT("<act>nav.go dest=28_queen_street</act>", "take me to twenty eight queen street", 1);
    EXPECT("<act>nav.go dest=139_mill_road</act>", "drive to one hundred thirty nine mill road", 1);
    EXPECT("<act>nav.go dest=twenty_eight_queen_street</act>", "take me to twenty eight queen street", -1);
    EXPECT("<act>nav.go dest=tw", "take me to twenty eight queen street", -1);
    // parts of the way
    EXPECT("<act>window.set window=all position=75</act>", "set every window to three quarters", 1);
    EXPECT("<act>window.set window=all position=3</act>", "set every window to three quarters", -1);
    EXPECT("<act>sunroof.set position=50</act>", "open the roof halfway", 1);
    EXPECT("<act>sunroof.set position=25</act>", "open the roof a quarter of the way", 1);
    EXPECT("<act>nav.go dest=zoo_the</act>", "I want to go to the zoo", -1);
    EXPECT("<act>nav.go dest=Zoo</act>", "I want to go to the Zoo", -1);  // values are lowercase
}

static void forbid_all(void *ud, float *logits, int n_vocab) {
    (void)ud;
    for (int i = 0; i < n_vocab; i++) logits[i] = -INFINITY;
}

// Every reply a random model writes under the grammar is a valid action the car accepts.

// The speller the test below reads spoken numbers with, against hand-written spellings.
static void spell_cases(void) {
    static const struct { long n; const char *words; } cases[] = {
        { 0, "zero" }, { 7, "seven" }, { 15, "fifteen" }, { 19, "nineteen" }, { 20, "twenty" },
        { 22, "twenty two" }, { 40, "forty" }, { 99, "ninety nine" },
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(action_grammar_spell_number(cases[i].n, buf, sizeof buf) == 0 && !strcmp(buf, cases[i].words),
              "spell %ld: '%s', want '%s'", cases[i].n, buf, cases[i].words);
    CHECK(action_grammar_spell_number(100, buf, sizeof buf) == -1, "100 is out of range");
    CHECK(action_grammar_spell_number(-1, buf, sizeof buf) == -1, "-1 is out of range");
    CHECK(action_grammar_spell_number(22, buf, 6) == -1, "'twenty two' does not fit in 6 bytes");
}

// Whether req spells the whole number in digits (below 100) in words: "fifteen" for "15",
// "twenty two" for "22" (the grammar copies a spoken house number into dest= as digits).
static bool spelled_in(const char *req, const char *digits) {
    char *end;
    long n = strtol(digits, &end, 10);
    char words[32];
    return end != digits && !*end && action_grammar_spell_number(n, words, sizeof words) == 0 &&
           strcasestr(req, words) != NULL;
}

static void random_model_replies(void) {
    if (access(RANDOM_VOCAB_FROM, R_OK) != 0) { SKIP("%s is not there (its vocabulary is needed)", RANDOM_VOCAB_FROM); return; }
    char path[] = "/tmp/cabin-test-grammar-XXXXXX";
    uint64_t seed = test_seed();
    errbuf err = {{0}};
    session_opts so;
    CHECK(random_vocab_model(path, 1, 1024, seed, &so, &err) == 0, "random model: %s", err.msg);
    if (err.msg[0]) return;
    so.max_reply_tokens = 64;
    session *s = session_open(&so, &err);
    CHECK(s != NULL, "session_open: %s", err.msg);
    if (!s) { unlink(path); return; }
    // the same replies decoded plainly, a token per forward pass: jump-forward must not change a byte
    so.no_jump_forward = true;
    session *plain = session_open(&so, &err);
    CHECK(plain != NULL, "session_open: %s", err.msg);
    if (!plain) { session_close(s); unlink(path); return; }
    action_grammar *g = action_grammar_new(s), *gp = action_grammar_new(plain);
    CHECK(g != NULL && gp != NULL, "a grammar for the assistant's vocabulary");
    vehicle *car = vehicle_new();   // a fresh car each run: its refusals become the sentence
    action_grammar_set_car(g, car);
    action_grammar_set_car(gp, car);
    long tokens = 0, passes = 0, forced = 0;
    strbuf pb = { 0 };
    static const char *const requests[] = {
        "call aunt maria please", "take me to the riverside clinic", "set it to twenty two and a half",
        "volume 27", "two degrees warmer on my side", "open the window fifteen percent",
        "what's the capital of France", "fan to seven", "get me to 42 elm street", "hey",
    };
    int n_req = (int)(sizeof requests / sizeof requests[0]), complete = 0, runs = 40, sentence_numbers = 0, refused_runs = 0;
    strbuf b = { 0 };
    for (int i = 0; i < runs && g; i++) {
        const char *req = requests[i % n_req];
        strbuf_clear(&b);
        session_reset(s);
        vehicle_reset(car);
        CHECK(action_grammar_chat(g, s, req, session_collect_text, &b, &err) == 0, "chat: %s", err.msg);
        session_stats st;
        session_get_stats(s, &st);
        tokens += st.gen_tokens;
        passes += st.decode_passes;
        forced += st.forced_tokens;
        strbuf_clear(&pb);
        session_reset(plain);
        CHECK(gp && action_grammar_chat(gp, plain, req, session_collect_text, &pb, &err) == 0, "chat: %s", err.msg);
        CHECK(strcmp(strbuf_str(&b), strbuf_str(&pb)) == 0, "seed %llu: '%s' -> '%s' with jump-forward, '%s' without",
              (unsigned long long)seed, req, strbuf_str(&b), strbuf_str(&pb));
        // 64 tokens may end inside the action: then it must still be a valid prefix
        int r = action_grammar_check(strbuf_str(&b), b.len, req);
        CHECK(r >= 0, "seed %llu: '%s' -> '%s' left the grammar", (unsigned long long)seed, req, strbuf_str(&b));
        if (r != 1) continue;
        complete++;
        action a;
        char sentence[4096], perr[128], change[512], reason[256];
        CHECK(action_parse(strbuf_str(&b), &a, sentence, sizeof sentence, perr, sizeof perr) == 0,
              "seed %llu: '%s' does not parse: %s", (unsigned long long)seed, strbuf_str(&b), perr);
        vehicle *v = vehicle_new();
        char would[256];
        bool refused = vehicle_check(car, &a, would, sizeof would) != 0;
        bool needs_state = !strcmp(a.intent, "nav.eta") || !strcmp(a.intent, "phone.redial") ||
                           action_slot_value(&a, "delta") != NULL;   // relative to the car's state
        // a number the request states above a slot's range is taken as said, and the car refuses it
        bool stated_number = false;
        for (int k = 0; k < a.n_slots; k++)
            if (isdigit((unsigned char)a.slots[k].value[0]) && (strstr(req, a.slots[k].value) || spelled_in(req, a.slots[k].value)))
                stated_number = true;
        int applied = vehicle_apply(v, &a, change, sizeof change, reason, sizeof reason);
        CHECK(applied == 0 || needs_state || stated_number, "seed %llu: the car refuses '%s': %s",
              (unsigned long long)seed, strbuf_str(&b), reason);
        const char *name = action_slot_value(&a, "contact");
        if (!name) name = action_slot_value(&a, "dest");
        if (name && strcmp(name, "home") && strcmp(name, "work")) {
            char words[256];
            snprintf(words, sizeof words, "%s", name);
            for (char *p = strtok(words, "_"); p; p = strtok(NULL, "_"))   // a spoken house number is copied as digits
                CHECK(strcasestr(req, p) != NULL || spelled_in(req, p), "seed %llu: '%s' is not from '%s'",
                      (unsigned long long)seed, p, req);
        }
        vehicle_free(v);
        // The sentence after </act> says only the action's numbers (a reply cut off at 64 tokens
        // may end inside one); of an action the car refuses, it is the car's reason.
        const char *after = strstr(strbuf_str(&b), "</act>") + 6;
        if (refused) {
            refused_runs++;
            CHECK(after[0] == 0 || (after[0] == ' ' && strncmp(after + 1, would, strlen(after + 1)) == 0),
                  "seed %llu: '%s' is refused by the car ('%s') and says something else", (unsigned long long)seed, strbuf_str(&b), would);
            continue;
        }
        CHECK(action_grammar_check_sentence(strbuf_str(&b), after, strlen(after), false) == 0,
              "seed %llu: the sentence of '%s' breaks the sentence rules", (unsigned long long)seed, strbuf_str(&b));
        if (strpbrk(after, "0123456789")) sentence_numbers++;
    }
    // A filter that forbids every token: the session falls back to the unmasked logits.
    token_filter none = { forbid_all, NULL, NULL, NULL };
    session_set_filter(s, &none);
    session_reset(s);
    strbuf_clear(&b);
    CHECK(session_chat(s, "hey", session_collect_text, &b, &err) == 0, "chat: %s", err.msg);
    session_stats st;
    session_get_stats(s, &st);
    CHECK(st.gen_tokens > 0, "a filter that forbids everything stopped generation");
    session_set_filter(s, NULL);
    CHECK(complete >= runs / 4, "only %d of %d random replies closed their action within 64 tokens", complete, runs);
    CHECK(forced > 0 && passes == tokens - forced, "jump-forward: %ld tokens, %ld forced, in %ld forward passes", tokens,
          forced, passes);
    printf("random model (seed %llu): %d of %d replies complete valid actions, %d of them with numbers in the sentence, "
           "%d refused by the car and saying its reason; %ld tokens, %ld forced, in %ld forward passes, the same text "
           "as a token per pass\n", (unsigned long long)seed, complete, runs, sentence_numbers, refused_runs, tokens,
           forced, passes);
    strbuf_free(&b);
    strbuf_free(&pb);
    action_grammar_free(g);
    action_grammar_free(gp);
    vehicle_free(car);
    session_close(s);
    session_close(plain);
    unlink(path);
}

// The spoken sentence's numbers must be the action's.
static void sentence_cases(void) {
    static const struct { const char *action, *sentence; bool ended; int want; } cases[] = {
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 24.5 degrees.", true, 0 },
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 25.5 degrees.", true, -1 },
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 24", false, 0 },     // 24.5 may follow
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 24.", false, 0 },
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 24", true, -1 },     // ended inside it
        { "<act>climate.set zone=all temp=24.5</act>", " Okay, 24 degrees", false, -1 },
        { "<act>climate.set zone=all temp=22</act>", " Okay, 22 degrees.", true, 0 },   // "." ends a sentence
        { "<act>climate.set zone=all temp=22</act>", " Setting it to 22.5", false, -1 },
        { "<act>nav.go dest=80_hill_road</act>", " Starting navigation to 80 hill road.", true, 0 },
        { "<act>nav.go dest=80_hill_road</act>", " Starting navigation to 88 hill road.", true, -1 },
        { "<act>nav.go dest=80_hill_road</act>", " Starting navigation to 8", false, 0 },
        { "<act>nav.go dest=115_baker_street</act>", " Starting navigation to 1515 baker street.", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling 7 now.", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt maria.", true, 0 },
        { "<act>climate.adjust zone=all delta=+2</act>", " Raising the temperature by 2 degrees.", true, 0 },
        { "<act>climate.adjust zone=all delta=+2</act>", " Raising it by 3 degrees.", true, -1 },
        { "<act>window.set window=rear_right position=15</act>", " Opening it to 5 percent.", true, -1 },
        { "<act>media.volume level=25</act>", " Volume set to 25.", true, 0 },
        { "<act>media.volume level=25</act>", " Volume set to 25, 25.", true, -1 },   // not a sentence of the corpus
        { "<act>phone.call contact=ximena</act>", " Calling felix now.", true, -1 },
        { "<act>phone.call contact=ximena</act>", " Calling ctor now.", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling Aunt Maria now.", true, 0 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling au", false, 0 },    // aunt may follow
        { "<act>phone.call contact=aunt_maria</act>", " Calling au", true, -1 },
        { "<act>nav.go dest=tennis_center</act>", " Starting navigation to the zoo.", true, -1 },
        { "<act>nav.go dest=home</act>", " Taking you home.", true, 0 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt now.", true, -1 },   // a name said whole
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt, maria.", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt maria.", true, 0 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling Aunt Maria.", true, 0 },
        { "<act>phone.call contact=aunt_maria</act>", " CaLling aunt maria.", true, -1 },  // odd case
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt maria!", true, -1 },  // the corpus's punctuation only
        { "<act>phone.call contact=aunt_maria</act>", " Calling climate now.", true, -1 },  // another intent's word
        { "<act>assist.set feature=lane_keep state=off</act>", " Lane keeping off.", true, 0 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling maria.", true, -1 },          // from its start
        { "<act>nav.go dest=riverside_clinic</act>", " Navigating to the clinic.", true, -1 },
        { "<act>nav.go dest=riverside_clinic</act>", " Navigating to riverside clinic clinic.", true, -1 },
        { "<act>nav.go dest=riverside_clinic</act>", " Navigating to riverside clinic.", true, 0 },
        { "<act>nav.go dest=24_copper_row</act>", " Navigating to copper row.", true, -1 },   // its number first
        { "<act>nav.go dest=24_copper_row</act>", " Navigating to 24 copper row.", true, 0 },
        { "<act>nav.go dest=24_copper_row</act>", " Navigating to  24 copper row.", false, -1 },  // one space
        { "<act>nav.go dest=24_copper_row</act>", " Navigating to 24 copper row", true, -1 },      // a full stop ends it
        { "<act>nav.go dest=24_copper_row</act>", " Route to 24 copper row set ", false, -1 },     // nothing follows "set"
        { "<act>phone.call contact=dial_6</act>", " Calling dial ", false, 0 },   // a number after a name's last word
        { "<act>status.query item=fuel</act>", " Checking the ETA.", true, -1 },
        { "<act>nav.go dest=work</act>", " Taking you home.", true, -1 },
        { "<act>climate.adjust zone=driver delta=+2</act>", " Warming it up on the driver side.", true, 0 },
        { "<act>climate.adjust zone=driver delta=+2</act>", " Warming it up on the passenger side.", true, -1 },
        { "<act>none</act>", " I'm only able to help with things in the car.", true, 0 },
        { "<act>none</act>", " I'm only able to help with", true, -1 },   // ends where no sentence does
        { "<act>none</act>", " I'm only able to help with", false, 0 },
        { "<act>none</act>", " Route 66 is nice.", true, -1 },
        { "<act>phone.call contact=aunt_maria</act>", " Calling aunt maria?", true, -1 },   // not phone.call's marks
        { "<act>none</act>", " Sorry, I can only help with the car?", true, -1 },          // nor none's
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r = action_grammar_check_sentence(cases[i].action, cases[i].sentence, strlen(cases[i].sentence), cases[i].ended);
        CHECK(r == cases[i].want, "%s%s%s: got %d, want %d", cases[i].action, cases[i].sentence,
              cases[i].ended ? " (ended)" : "", r, cases[i].want);
    }
}

// Every reference reply of the held-out set keeps the sentence rules (the rules hold on the
// corpus, so they cannot push the model away from the replies it was trained on).
static void heldout_sentences(void) {
    const char *path = "assets/eval/heldout.jsonl";
    FILE *f = fopen(path, "r");
    if (!f) { SKIP("%s is not there", path); return; }
    char line[8192];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        for (char *p = strstr(line, "\"reply\": \"<act>"); p; p = strstr(p, "\"reply\": \"<act>")) {
            p += strlen("\"reply\": \"");
            char *close = strstr(p, "</act>"), *end = close ? strchr(close, '"') : NULL;
            if (!end) break;
            n++;
            if (action_grammar_check_sentence(p, close + 6, (size_t)(end - close - 6), true) != 0 && bad++ < 5)
                printf("held-out reply against the sentence rules: %.*s\n", (int)(end - p), p);
            p = end;
        }
    }
    fclose(f);
    CHECK(n > 3000 && bad == 0, "%d of %d held-out reference replies break the sentence rules", bad, n);
}

// Every reference action of the held-out set is one the grammar allows for its request (the
// rules hold on the corpus, so they cannot push the model away from the right action).
static void heldout_actions(void) {
    const char *path = "assets/eval/heldout.jsonl";
    FILE *f = fopen(path, "r");
    if (!f) { SKIP("%s is not there", path); return; }
    static char line[1 << 16];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        cJSON *dialogue = cJSON_Parse(line), *turn;
        cJSON_ArrayForEach(turn, cJSON_GetObjectItem(dialogue, "turns")) {
            const char *user = cJSON_GetStringValue(cJSON_GetObjectItem(turn, "user"));
            const char *reply = cJSON_GetStringValue(cJSON_GetObjectItem(turn, "reply"));
            const char *close = reply ? strstr(reply, "</act>") : NULL;
            if (!user || !close) continue;
            n++;
            if (action_grammar_check(reply, (size_t)(close + 6 - reply), user) != 1 && bad++ < 5)
                printf("held-out action the grammar refuses: '%s' -> %.*s\n", user, (int)(close + 6 - reply), reply);
        }
        cJSON_Delete(dialogue);
    }
    fclose(f);
    CHECK(n > 3000 && bad == 0, "%d of %d held-out reference actions refused by the grammar", bad, n);
}

int main(void) {
    checker_cases();
    spell_cases();
    sentence_cases();
    heldout_sentences();
    heldout_actions();
    random_model_replies();
    return test_finish();
}
