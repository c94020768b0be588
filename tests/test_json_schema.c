// Structured output's matcher (engine/json_schema.h): texts the schema accepts and refuses, the
// subset's refusals by name, and random walks: from the start, a byte the matcher takes is drawn
// at random until the value is complete; every such text must parse (cJSON) and validate against
// the schema (checked here independently of the matcher).
#include "test.h"
#include "engine/json_schema.h"

#include <cjson/cJSON.h>
#include <stdint.h>

static const char *SCHEMA3 =
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 12}, "
    "\"seats\": {\"type\": \"integer\"}, \"color\": {\"enum\": [\"red\", \"blue\"]}, "
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"price\": {\"type\": \"number\"}, "
    "\"used\": {\"type\": \"boolean\"}}, \"required\": [\"name\", \"seats\", \"color\"], \"additionalProperties\": false}";

static bool accepts(const json_schema *s, const char *text) {
    json_match m;
    json_match_init(&m, s);
    return json_match_feed(&m, text, strlen(text)) && json_match_done(&m);
}

static bool prefix_ok(const json_schema *s, const char *text) {
    json_match m;
    json_match_init(&m, s);
    return json_match_feed(&m, text, strlen(text));
}

// The schema's rules, checked on a parsed value without the matcher.
static bool valid3(const cJSON *v) {
    if (!cJSON_IsObject(v)) return false;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name"), *seats = cJSON_GetObjectItemCaseSensitive(v, "seats");
    const cJSON *color = cJSON_GetObjectItemCaseSensitive(v, "color");
    size_t chars = 0;   // maxLength counts characters
    for (const char *p = cJSON_IsString(name) ? name->valuestring : ""; *p; p++) chars += ((unsigned char)*p & 0xC0) != 0x80;
    if (!cJSON_IsString(name) || chars > 12 || !cJSON_IsNumber(seats) || seats->valuedouble != (double)(int64_t)seats->valuedouble)
        return false;
    if (!cJSON_IsString(color) || (strcmp(color->valuestring, "red") && strcmp(color->valuestring, "blue"))) return false;
    for (const cJSON *f = v->child; f; f = f->next) {
        if (strcmp(f->string, "tags") == 0) {
            if (!cJSON_IsArray(f)) return false;
            for (const cJSON *t = f->child; t; t = t->next)
                if (!cJSON_IsString(t)) return false;
        } else if (strcmp(f->string, "price") == 0) {
            if (!cJSON_IsNumber(f)) return false;
        } else if (strcmp(f->string, "used") == 0) {
            if (!cJSON_IsBool(f)) return false;
        } else if (strcmp(f->string, "name") && strcmp(f->string, "seats") && strcmp(f->string, "color")) {
            return false;
        }
    }
    return true;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)rng;
}

// A random text the matcher leads to its end; bytes drawn among those it takes, with a lean
// towards closing so that walks end.
static bool random_walk(const json_schema *s, char *out, size_t cap) {
    json_match m;
    json_match_init(&m, s);
    size_t n = 0;
    while (!json_match_done(&m) && n + 1 < cap) {
        unsigned char ok[256];
        int k = 0;
        for (int b = 1; b < 256; b++) {
            char c = (char)b;
            json_match t = m;
            if (json_match_feed(&t, &c, 1)) ok[k++] = (unsigned char)b;
        }
        if (k == 0) return false;
        unsigned char c = ok[next_rand() % (unsigned)k];
        for (int i = 0; i < k && n > 40; i++)   // past 40 bytes prefer a byte that closes something
            if (ok[i] == '"' || ok[i] == '}' || ok[i] == ']' || ok[i] == ',') { c = ok[next_rand() % 2 ? (unsigned)i : next_rand() % (unsigned)k]; break; }
        json_match_feed(&m, (const char *)&c, 1);
        out[n++] = (char)c;
    }
    out[n] = 0;
    return json_match_done(&m);
}

int main(void) {
    errbuf err = { { 0 } };
    json_schema *s = json_schema_compile(SCHEMA3, &err);
    CHECK(s != NULL, "compile: %s", err.msg);
    if (!s) return 1;
    CHECK(accepts(s, "{\"name\":\"Ann\",\"seats\":4,\"color\":\"red\"}"), "the required three");
    CHECK(accepts(s, "{ \"name\": \"A\\\"b\\u00e9\", \"seats\": -12, \"color\": \"blue\", \"tags\": [\"x\", \"y\"], \"price\": 1.5e3, \"used\": true}"),
          "all six, spaces, escapes");
    CHECK(accepts(s, "{\"name\":\"\",\"seats\":0,\"color\":\"red\",\"used\":false}"), "an optional one skipped");
    CHECK(!prefix_ok(s, "{\"seats\""), "a required property skipped");
    CHECK(!prefix_ok(s, "{\"name\":\"a\",\"seats\":01"), "a leading zero");
    CHECK(!prefix_ok(s, "{\"name\":\"a\",\"seats\":1.5"), "a fraction in an integer");
    CHECK(!prefix_ok(s, "{\"name\":\"a\",\"seats\":1,\"color\":\"green"), "outside the enum");
    CHECK(!prefix_ok(s, "{\"name\":\"1234567890123\""), "past maxLength");
    CHECK(!prefix_ok(s, "{\"name\":\"a\nb\""), "a raw newline in a string");
    CHECK(accepts(s, "{\"name\":\"\xC3\xA9t\xC3\xA9 \xE2\x82\xAC\",\"seats\":1,\"color\":\"red\"}"), "UTF-8 in a string");
    // base/utf8.h's rule, byte by byte: no overlong form, surrogate, or code point past U+10FFFF
    CHECK(accepts(s, "{\"name\":\"\xF0\x9F\x9A\x97\xF4\x8F\xBF\xBF\",\"seats\":1,\"color\":\"red\"}"), "4-byte characters");
    CHECK(!prefix_ok(s, "{\"name\":\"\xE0\x80\xAF"), "an overlong form refused");
    CHECK(!prefix_ok(s, "{\"name\":\"\xED\xA0\x80"), "a surrogate refused");
    CHECK(!prefix_ok(s, "{\"name\":\"\xF4\x90\x80\x80"), "past U+10FFFF refused");
    CHECK(!prefix_ok(s, "{\"name\":\"\xC0\xAF"), "a C0 lead refused");
    CHECK(!prefix_ok(s, "{\"name\":\"\xE2\x82\x41"), "a character cut short refused");
    CHECK(!prefix_ok(s, "{\"name\":\"\xA9") && !prefix_ok(s, "{\"name\":\"\xC3\"") && !prefix_ok(s, "{\"name\":\"\xFF"),
          "a stray continuation byte, a cut character, a byte that is never UTF-8");
    CHECK(prefix_ok(s, "{\"name\":\"\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\""),
          "maxLength counts characters: twelve euro signs");
    CHECK(!accepts(s, "{\"name\":\"a\",\"seats\":1}"), "color missing");
    CHECK(!prefix_ok(s, "{\"name\":\"a\",\"seats\":1,\"color\":\"red\",}"), "a trailing comma");
    CHECK(!prefix_ok(s, "{\"name\":\"a\",\"seats\":1,\"color\":\"red\"} "), "nothing after the end");
    CHECK(!prefix_ok(s, "{  \"name\""), "at most one space between parts");
    CHECK(prefix_ok(s, "{\"name\":\"a\",\"seats\":1,\"color\":\"red\",\"tags\":[\"a\",\"b\"") && !prefix_ok(s, "{\"name\":\"a\",\"seats\":1,\"color\":\"red\",\"tags\":[1"),
          "array items are strings");
    int walks = 0, good = 0;
    for (int i = 0; i < 400; i++) {
        char text[2048];
        if (!random_walk(s, text, sizeof text)) continue;
        walks++;
        cJSON *v = cJSON_Parse(text);
        bool ok = v && valid3(v);
        if (!ok) CHECK(false, "a walk the matcher took does not validate: %s", text);
        good += ok;
        cJSON_Delete(v);
    }
    CHECK(walks >= 300 && good == walks, "random walks: %d complete, %d valid", walks, good);
    json_schema_free(s);

    // any object (response_format json_object)
    json_schema *any = json_schema_compile(NULL, &err);
    CHECK(accepts(any, "{\"a\":[1,-2.5e-3,{\"b\":null}],\"c\":\"x\",\"d\":true,\"e\":{}}"), "any object");
    CHECK(accepts(any, "{}") && !prefix_ok(any, "[") && !prefix_ok(any, "{\"a\":}") && !prefix_ok(any, "{\"a\" 1"), "any object's refusals");
    int any_walks = 0, any_good = 0;
    for (int i = 0; i < 300; i++) {
        char text[2048];
        if (!random_walk(any, text, sizeof text)) continue;
        any_walks++;
        cJSON *v = cJSON_Parse(text);
        any_good += v && cJSON_IsObject(v);
        if (!(v && cJSON_IsObject(v))) CHECK(false, "an any-object walk does not parse: %s", text);
        cJSON_Delete(v);
    }
    CHECK(any_walks >= 200 && any_good == any_walks, "any-object walks: %d complete, %d parse", any_walks, any_good);
    json_schema_free(any);

    // the subset's refusals name what they refuse
    static const struct { const char *schema, *word; } bad[] = {
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":3}}}", "minimum" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"tuple\"}}}", "tuple" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[1,2]}}}", "only strings" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"b\"]}", "'b'" },
        { "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "must be an object" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":true}", "additionalProperties" },
        { "{\"type\":\"object\",\"oneOf\":[]}", "oneOf" },
        { "{nope", "not valid JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_schema *b = json_schema_compile(bad[i].schema, &err);
        CHECK(b == NULL && strstr(err.msg, bad[i].word), "%s: %s", bad[i].schema, err.msg);
        json_schema_free(b);
    }
    if (t_skipped) printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
    else printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed ? 1 : 0;
}
