// Structured output: a JSON schema compiled into a matcher that says, character by character,
// whether a text can still become a JSON value the schema accepts, and a token filter
// (session.h) that masks every token that would leave that language — the reply is then JSON
// that parses and validates, whatever the model. Used by cabin serve's response_format.
//
// The subset of JSON Schema: "type" object (with "properties", "required"; the properties are
// written in the schema's order, optional ones may be left out; no other keys), array ("items"),
// string ("enum" of strings, "maxLength"), integer, number, boolean, null; "enum" of strings;
// "description", "title", "$schema", "default", "additionalProperties": false and "strict" are
// accepted and change nothing. Any other keyword is refused by name. A string without maxLength
// is held to JSON_SCHEMA_STRING_MAX bytes and a number to 15 digits, so a reply ends. Between
// the parts of the JSON one space or newline may stand; none after the value's end.
#ifndef CABIN_JSON_SCHEMA_H
#define CABIN_JSON_SCHEMA_H

#include "base/err.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_SCHEMA_STRING_MAX 128
#define JSON_SCHEMA_DEPTH 16

typedef struct json_schema json_schema;

// Compiles a schema (JSON text). "any object": schema_json NULL (response_format json_object):
// an object with any keys and any values. NULL with err on what is not supported.
json_schema *json_schema_compile(const char *schema_json, errbuf *err);
void json_schema_free(json_schema *s);
// A tool call: {"name": NAME, "arguments": ARGS} where NAME is one of the functions of an API's
// "tools" array (JSON text; only `only` when it is not NULL) and ARGS holds to that function's
// "parameters" schema (none: any object).
json_schema *json_schema_compile_tools(const char *tools_json, const char *only, errbuf *err);

// The matcher's state: small, copied freely.
typedef struct json_frame {
    const void *node;
    uint8_t phase;
    uint16_t idx;      // the property, enum candidate, or items written
    uint16_t len;      // bytes of the current key, string, number or literal
    uint16_t cand;     // the key or literal matched so far; \u digits left in a string
    uint16_t chosen;   // a tool call: the function its name chose
} json_frame;

typedef struct json_match {
    const json_schema *schema;
    json_frame f[JSON_SCHEMA_DEPTH];
    int depth;                  // frames in use; 0 once the value is complete
    bool done;
    uint8_t ws;                 // spaces and newlines in a row
} json_match;

void json_match_init(json_match *m, const json_schema *s);
// Feeds bytes: false (and m unchanged in meaning) when they cannot continue a valid value.
bool json_match_feed(json_match *m, const char *s, size_t n);
// Whether the text so far is a whole value the schema accepts.
bool json_match_done(const json_match *m);

// A session's vocabulary as the filter reads it (each token's text, by first byte), made once.
typedef struct json_vocab json_vocab;
json_vocab *json_vocab_new(session *sess);
void json_vocab_free(json_vocab *v);
// Whether a token ends the generation (end of turn, end of text).
bool json_vocab_eog(const json_vocab *v, int32_t id);

// A token filter over that vocabulary: masks the tokens that would leave the language, and all
// but end-of-generation tokens once the value is complete (and those until it is).
typedef struct json_filter json_filter;
json_filter *json_filter_new(const json_schema *s, const json_vocab *v);
void json_filter_free(json_filter *f);
token_filter json_filter_token_filter(json_filter *f);
// The mask's cost so far: calls and total seconds.
void json_filter_cost(const json_filter *f, int *calls, double *secs);
bool json_filter_complete(const json_filter *f);

#endif
