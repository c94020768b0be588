// `cabin chat`'s loop (cli/chat.c): the options are parsed by cmd_chat (cli/cmd_run.c).
#ifndef CABIN_CLI_CHAT_H
#define CABIN_CLI_CHAT_H

#include "engine/session.h"

#include <stdbool.h>

// Chats on a session opened with o until the input ends or /quit. The exit status: 0, or 1
// when the session does not open (or, reading a pipe, a turn failed).
int chat_run(const session_opts *o, bool free_actions, const char *governor);   // governor: --governor SPEC or NULL

#endif
