// cabin workbench --serve PORT (and cabin gui --serve): cabin serve's HTTP API on the workbench's
// own session, so a person watches what an app asks. A chat request's last user message is said
// into the workbench's conversation as a typed or spoken turn is (the worker's queue,
// worker_say_remote): it shows in the conversation and the panels, the reply streams back to the
// client, and the car's action comes back as a tool call. The conversation on the screen is the
// context: a request's earlier messages are not read. docs/SERVE.md "The workbench serving".
#ifndef CABIN_CLI_WORKBENCH_SERVE_H
#define CABIN_CLI_WORKBENCH_SERVE_H

#include "ui/session.h"

typedef struct workbench_serve workbench_serve;

// For a server on 127.0.0.1:port, the model's id taken from its file's name.
workbench_serve *workbench_serve_new(int port, const char *model_path);
// ui_opts.attach / detach (ud: the workbench_serve): starts the server on the open session (err:
// the port in use, ...), stops it.
int workbench_serve_attach(ui_session *s, void *ud, errbuf *err);
void workbench_serve_detach(ui_session *s, void *ud);
void workbench_serve_free(workbench_serve *w);

#endif
