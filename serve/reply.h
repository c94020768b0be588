// The API's answers as JSON text (serve/reply.c): a whole completion, a streamed one's chunks
// as server-sent events ("data: {...}\n\n", the last "data: [DONE]\n\n"), and the error object
// {"error": {"message", "type", "param", "code"}}.
#ifndef CABIN_SERVE_REPLY_H
#define CABIN_SERVE_REPLY_H

#include "base/str.h"
#include "serve/serve.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct reply_meta {
    char id[48];                   // "chatcmpl-…" / "cmpl-…"
    char call_id[48];              // "call_…": the tool call's id
    long created;                  // unix seconds
    const char *model;
    const char *fingerprint;       // cabin's version and commit
} reply_meta;

typedef struct reply_tool {
    const char *name, *arguments;  // arguments: JSON text
    const char *result;            // JSON text of what it did (cabin's own field), or NULL
} reply_tool;

// The bytes of s[0..n) that end on a whole UTF-8 character (a cut one is left for later).
size_t utf8_complete(const char *s, size_t n);

// s[0..n) as well-formed UTF-8 (malloc'd): each byte that is not part of a character becomes
// U+FFFD. A model's byte tokens may put out any bytes; JSON text must be UTF-8.
char *utf8_clean(const char *s, size_t n);
// malloc'd JSON of a whole answer (tool may be NULL).
char *reply_whole(const reply_meta *m, serve_kind kind, const char *content, const reply_tool *tool, const serve_result *res);
// Streamed chunks, appended to out as server-sent events.
void reply_chunk_role(const reply_meta *m, strbuf *out);
void reply_chunk_content(const reply_meta *m, serve_kind kind, const char *text, size_t n, strbuf *out);
void reply_chunk_tool(const reply_meta *m, const reply_tool *tool, strbuf *out);
void reply_chunk_end(const reply_meta *m, serve_kind kind, const serve_result *res, bool include_usage, strbuf *out);
// An error after the stream began: its object as one event, then [DONE].
void reply_chunk_error(int status, const char *message, strbuf *out);
// malloc'd error object
char *reply_error(int status, const char *message);

#endif
