// The assistant layer: parses the embedded model's reply format and applies actions to a
// simulated vehicle. Reply grammar (docs/ASSISTANT.md):
//   reply  := "<act>" action "</act>" " " sentence
//   action := "none" | intent (" " key "=" value)*      intent := domain "." verb
//   key    := [a-z_]+      value := [a-z0-9_.+-]+
#ifndef CABIN_ASSISTANT_H
#define CABIN_ASSISTANT_H

#include <stdbool.h>
#include <stddef.h>

#define ACTION_MAX_SLOTS 8

typedef struct action_slot {
    char key[32];
    char value[64];
} action_slot;

typedef struct action {
    char intent[48];          // "climate.set", or "none"
    int n_slots;
    action_slot slots[ACTION_MAX_SLOTS];
} action;

// Splits a reply into its action and spoken sentence. Returns 0 if the reply has a well-formed
// <act>...</act> line (sentence may be empty), -1 otherwise (err says what is wrong; the whole
// reply is then the sentence).
int action_parse(const char *reply, action *a, char *sentence, size_t sentence_len, char *err, size_t err_len);
// "climate.set temp=22 zone=driver" (slots in the order given)
void action_format(const action *a, char *buf, size_t n);
const char *action_slot_value(const action *a, const char *key);   // NULL if absent
// Same intent and the same set of key=value pairs (order does not matter).
bool action_equal(const action *a, const action *b);

// ---- the simulated vehicle ----
typedef enum vfield_kind { VF_INT, VF_HALF, VF_BOOL, VF_ENUM, VF_TEXT } vfield_kind;

typedef struct vehicle vehicle;

vehicle *vehicle_new(void);
void vehicle_free(vehicle *v);
void vehicle_reset(vehicle *v);
// Applies an action. Returns 0 and writes what changed ("climate.driver_temp 21 -> 22") into
// change; or -1 with a spoken reason ("The temperature can be set between 16 and 30 degrees.")
// in reason. Queries (status.query) succeed and write the answer into reason-free `change`.
int vehicle_apply(vehicle *v, const action *a, char *change, size_t change_len, char *reason, size_t reason_len);
// Whether vehicle_apply would accept the action now, without changing anything: 0, or -1 with
// the reason it would give.
int vehicle_check(const vehicle *v, const action *a, char *reason, size_t reason_len);
// A field's value as text ("22", "on", "central_station"); -1 if there is no such field.
int vehicle_get(const vehicle *v, const char *field, char *buf, size_t n);
// Field names in display order; NULL-terminated.
const char *const *vehicle_fields(void);
// Units for display ("°C", "%", "kPa", ""), for the vehicle panel.
const char *vehicle_field_unit(const char *field);

#endif
