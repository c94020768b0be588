// The texts that cabin ppl, heatmap and sweep score when no -f is given, and the held-out
// dialogues laid out as the model reads them in a chat (also what eval-assistant scores).
#ifndef CABIN_EVAL_TEXT_H
#define CABIN_EVAL_TEXT_H

#include "engine/chat_template.h"
#include "engine/session.h"

#define CABIN_HELDOUT "assets/eval/heldout.jsonl"

// The chat template a session uses: by name (--chat-template), else the session's own.
const chat_template *eval_template(const session *s, const char *template_name);

// The dialogues of a held-out file (one {"turns": [{"user": ..., "reply": ...}, ...]} per line)
// in the chat layout: each dialogue's turns rendered with the template (the first turn of each
// dialogue as a conversation's first), each reply followed by the template's assistant_end.
// limit > 0: only the first limit dialogues. NULL with "FILE:LINE: ..." in err on a bad line.
char *heldout_chat_text(const char *path, const chat_template *t, int limit, errbuf *err);

// One line of a held-out file: its dialogue object (cJSON_Delete it); NULL with "FILE:LINE: ..."
// in err when the line is not JSON, has text after the object, or is not {"turns": [...]}.
struct cJSON;
struct cJSON *heldout_dialogue(const char *line, const char *path, int line_no, errbuf *err);

// The first user turn of each dialogue of a held-out file (limit > 0: of the first limit
// dialogues): *out gets a malloc'd array of malloc'd strings; returns the count, or -1 with
// "FILE:LINE: ..." in err. The prompts cabin compare uses on the embedded model by default.
int heldout_first_user_turns(const char *path, int limit, char ***out, errbuf *err);

// Whether the session runs the embedded model (held-out dialogues are its domain).
bool eval_is_embedded_model(const session *s);
// The same for a model file not opened (reads its name only): 1 or 0, -1 with err when the file
// cannot be read.
int eval_is_embedded_file(const char *model_path, errbuf *err);

// The text to score when no -f is given (malloc'd): the embedded model's held-out dialogues in
// its chat layout, or for another model a paragraph of plain prose repeated; *what names it and
// *prose says which (the prose may well not be the model's domain: eval_note_domain).
char *eval_default_text(const session *s, const char *template_name, const char **what, bool *prose, errbuf *err);

// The same for a model file not opened in a session (reads its name and chat template only).
char *eval_default_text_for_file(const char *model_path, const char *template_name, const char **what, bool *prose,
                                 errbuf *err);

// A one-line note on stderr when a perplexity is above a quarter of the vocabulary: the text is
// then probably not the model's domain and the figure says little.
void eval_note_domain(const char *cmd, double ppl, int n_vocab);
// The note under a perplexity of the embedded model's held-out dialogues (the default text):
// whole dialogues are scored, user turns too, so the figure is not the replies' perplexity.
void eval_note_dialogues(const char *cmd);

#endif
