// The requests that generate (serve/jobs.c): the queue in front of the slots (first come, first
// served, bounded; a request takes the slot the engine prefers of those free), a job's run through the engine with its stop sequences, its answer
// whole or as a stream of events, and the counts /metrics gives.
#ifndef CABIN_SERVE_JOBS_H
#define CABIN_SERVE_JOBS_H

#include "base/str.h"
#include "serve/reply.h"
#include "serve/serve.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#define JOBS_HIST_BUCKETS 10
#define JOBS_MAX_SLOTS 16

typedef struct hist {
    unsigned long n[JOBS_HIST_BUCKETS + 1];   // per upper bound (jobs.c), the last +Inf
    double sum;
    unsigned long count;
} hist;

typedef struct jobs {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long next_ticket, serving;     // the ticket to give next, and the one whose turn it is to take a slot
    int waiting;                   // tickets given that have not begun
    int n_slots, n_busy;
    bool slot_busy[JOBS_MAX_SLOTS];
    int queue_max;
    bool cancel;                   // the server stops: every job ends at its next token
    int live;                      // jobs not yet freed
    // /metrics
    struct { char kind[12]; int status; unsigned long n; } counts[48];
    int n_counts;
    unsigned long prompt_tokens, cached_tokens, completion_tokens, cancelled;
    hist ttft, duration, decode_tps;
} jobs;

typedef struct jobs_state {
    int slots, busy;               // slots, and those generating
    int waiting;
} jobs_state;

void jobs_init(jobs *q, int queue_max, int n_slots);
void jobs_free(jobs *q);              // waits for every job to end
void jobs_cancel_all(jobs *q);
void jobs_get_state(jobs *q, jobs_state *out);
void jobs_count(jobs *q, const char *kind, int status);
// The Prometheus text of the counts (appended to out).
void jobs_metrics(jobs *q, const char *model_id, strbuf *out);

typedef struct job {
    jobs *q;
    const serve_engine *e;
    serve_request rq;
    reply_meta meta;
    long ticket;
    int slot;                      // the slot it runs in (-1: every slot, a command)
    stop_filter sf;
    strbuf pending;                // text not yet sent: it ends inside a UTF-8 character
    strbuf content;                // the whole reply's text (a whole answer)
    char *tool_name, *tool_args, *tool_result;
    serve_result res;
    int status;                    // 0, or the HTTP status of a failure (err says why)
    errbuf err;
    double t0, t_first;            // when it began to run, and its first output (seconds)
    // a stream: events waiting for the client
    pthread_mutex_t mu;
    pthread_cond_t cv;
    strbuf out;
    size_t out_pos;
    bool started, done, client_gone;
    int refs;                      // holders: the connection, and the job's thread
    int client_fd;                 // a whole answer's connection, watched for the client leaving; -1: none
} job;

job *job_new(jobs *q, const serve_engine *e);
void job_free(job *j);                // a job that never entered the queue, or ran in place
// Takes a place in the queue: 0, or -1 when queue_max requests wait already.
int jobs_enter(jobs *q, job *j);
// Waits for its turn and a free slot, runs, and leaves the slot to the next (the caller's thread).
void job_run(job *j);
// A whole answer's job watches its connection's socket (fd): a client that closed it ends the
// generation at the next token, as a stream's does. A client that only shuts down its sending
// side counts as gone too (HTTP clients keep both open while they wait).
void job_watch_client(job *j, int fd);
// The whole answer's JSON (malloc'd) after job_run.
char *job_whole(job *j);
// A stream: the job runs on a thread of its own; job_wait_started returns once the reply began
// (0) or the job failed before it did (its status).
void job_start_thread(job *j);
int job_wait_started(job *j);
// The connection lets go of the job (the thread frees it when it ends).
void job_release(job *j);
// Runs fn(ud) holding every slot (what runs ends first), in its turn in the queue (the caller's
// thread): fn's result, or -1 without running it when queue_max requests wait already.
int jobs_run_exclusive(jobs *q, int (*fn)(void *ud), void *ud, int *result);
// libmicrohttpd's content reader and its end: the events as they come; the client gone.
ssize_t job_read_stream(void *cls, uint64_t pos, char *buf, size_t max);
void job_stream_closed(void *cls);

#endif
