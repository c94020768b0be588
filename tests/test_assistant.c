// The assistant layer: reply parsing and the simulated vehicle.
#include "test.h"
#include "app/assistant.h"

static action parse_ok(const char *reply, char *sentence) {
    action a;
    char err[128];
    int rc = action_parse(reply, &a, sentence, 256, err, sizeof err);
    CHECK(rc == 0, "parse '%s': %s", reply, err);
    return a;
}

static void expect_field(vehicle *v, const char *f, const char *want) {
    char buf[64];
    CHECK(vehicle_get(v, f, buf, sizeof buf) == 0 && strcmp(buf, want) == 0, "%s = %s, wanted %s", f, buf, want);
}

static int apply(vehicle *v, const char *reply, char *change, char *reason) {
    char sentence[256];
    action a = parse_ok(reply, sentence);
    return vehicle_apply(v, &a, change, 256, reason, 256);
}

int main(void) {
    char s[256], err[128], change[256], reason[256];
    action a = parse_ok("<act>climate.set zone=driver temp=22</act> Setting the driver side to 22 degrees.", s);
    CHECK(strcmp(a.intent, "climate.set") == 0 && a.n_slots == 2, "intent and slots");
    CHECK(strcmp(action_slot_value(&a, "temp"), "22") == 0, "slot value");
    CHECK(strcmp(s, "Setting the driver side to 22 degrees.") == 0, "sentence: %s", s);
    char buf[128];
    action_format(&a, buf, sizeof buf);
    CHECK(strcmp(buf, "climate.set zone=driver temp=22") == 0, "format: %s", buf);
    action b = parse_ok("<act>climate.set temp=22 zone=driver</act> x", s);
    CHECK(action_equal(&a, &b), "slot order does not matter");
    b = parse_ok("<act>climate.set temp=23 zone=driver</act> x", s);
    CHECK(!action_equal(&a, &b), "a different value differs");
    a = parse_ok("<act>none</act> Sorry, I can only help with the car.", s);
    CHECK(strcmp(a.intent, "none") == 0 && a.n_slots == 0, "none");
    a = parse_ok("<act>media.volume delta=-2</act> Turning it down.", s);
    CHECK(strcmp(action_slot_value(&a, "delta"), "-2") == 0, "signed delta");
    const char *bad[] = { "Hello there", "<act>climate.set temp=22 Setting", "<act>climate temp=22</act> x",
                          "<act>climate.set temp=</act> x", "<act>climate.set Temp=22</act> x",
                          "<act>climate.set temp=2 2</act> x", "<act></act> x", "text <act>none</act> x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(action_parse(bad[i], &a, s, sizeof s, err, sizeof err) == -1 && err[0], "malformed '%s' rejected", bad[i]);
        CHECK(strcmp(a.intent, "none") == 0, "malformed reply acts as none");
    }

    vehicle *v = vehicle_new();
    expect_field(v, "climate.driver_temp", "21");
    CHECK(apply(v, "<act>climate.set zone=driver temp=22.5</act> ok", change, reason) == 0, "set: %s", reason);
    expect_field(v, "climate.driver_temp", "22.5");
    expect_field(v, "climate.passenger_temp", "21");
    CHECK(strstr(change, "climate.driver_temp 21 -> 22.5") != NULL, "change described: %s", change);
    CHECK(apply(v, "<act>climate.adjust delta=+1</act> ok", change, reason) == 0, "adjust: %s", reason);
    expect_field(v, "climate.driver_temp", "23.5");
    expect_field(v, "climate.rear_temp", "22");
    CHECK(apply(v, "<act>climate.set temp=45</act> ok", change, reason) == -1 && strstr(reason, "16 and 30"), "out of range refused: %s", reason);
    expect_field(v, "climate.rear_temp", "22");
    CHECK(apply(v, "<act>climate.set temp=22.3</act> ok", change, reason) == -1, "non-half temp refused");
    CHECK(apply(v, "<act>climate.fan delta=+1</act> ok", change, reason) == 0, "fan");
    expect_field(v, "climate.fan", "3");
    CHECK(apply(v, "<act>climate.fan level=9</act> ok", change, reason) == -1, "fan 9 refused");
    CHECK(apply(v, "<act>window.set window=all position=20</act> ok", change, reason) == 0, "windows");
    expect_field(v, "window.rear_right", "20");
    CHECK(apply(v, "<act>seat.heat seat=passenger level=2</act> ok", change, reason) == 0, "seat");
    expect_field(v, "seat.passenger_heat", "2");
    CHECK(apply(v, "<act>nav.eta</act> ok", change, reason) == -1 && strstr(reason, "no route"), "eta without route: %s", reason);
    CHECK(apply(v, "<act>nav.go dest=central_station</act> ok", change, reason) == 0, "nav");
    expect_field(v, "nav.destination", "central_station");
    CHECK(apply(v, "<act>nav.eta</act> ok", change, reason) == 0 && strstr(change, "minutes"), "eta: %s", change);
    CHECK(apply(v, "<act>status.query item=range</act> ok", change, reason) == 0 && strstr(change, "420 kilometres"), "range: %s", change);
    CHECK(apply(v, "<act>phone.redial</act> ok", change, reason) == -1, "redial with nobody");
    CHECK(apply(v, "<act>phone.call contact=aunt_maria</act> ok", change, reason) == 0, "call");
    expect_field(v, "phone.contact", "aunt_maria");
    CHECK(apply(v, "<act>doors.lock state=unlocked</act> ok", change, reason) == 0, "unlock");
    expect_field(v, "doors.locked", "off");
    // A change that changes nothing says so: "already off", never "off -> off".
    CHECK(apply(v, "<act>doors.lock state=unlocked</act> ok", change, reason) == 0, "unlock again");
    CHECK(strcmp(change, "doors.locked already off") == 0, "no-op change said as such: %s", change);
    CHECK(apply(v, "<act>climate.ac state=on</act> ok", change, reason) == 0 &&
          apply(v, "<act>climate.ac state=on</act> ok", change, reason) == 0, "a/c on twice");
    CHECK(strcmp(change, "climate.ac already on") == 0 && !strstr(change, "->"), "a/c on again: %s", change);
    CHECK(apply(v, "<act>climate.set zone=all temp=23.5</act> ok", change, reason) == 0, "set all");
    CHECK(strstr(change, "climate.driver_temp already 23.5") && strstr(change, "climate.passenger_temp 22 -> 23.5"),
          "a partly changing action names both: %s", change);
    CHECK(apply(v, "<act>media.source source=usb</act> ok", change, reason) == 0, "source");
    expect_field(v, "media.source", "usb");
    CHECK(apply(v, "<act>media.volume delta=+40</act> ok", change, reason) == -1, "volume delta out of range");
    CHECK(apply(v, "<act>assist.set feature=cruise state=on</act> ok", change, reason) == 0, "assist");
    expect_field(v, "assist.cruise", "on");
    CHECK(apply(v, "<act>rocket.launch</act> ok", change, reason) == -1 && reason[0], "unknown domain refused");
    CHECK(apply(v, "<act>climate.set temp=22 colour=red</act> ok", change, reason) == -1 && strstr(reason, "colour"), "unknown slot refused: %s", reason);
    CHECK(apply(v, "<act>none</act> Sorry.", change, reason) == 0 && !change[0], "none changes nothing");
    CHECK(vehicle_get(v, "no.such", buf, sizeof buf) == -1, "unknown field");
    vehicle_reset(v);
    expect_field(v, "climate.driver_temp", "21");
    int n = 0;
    for (const char *const *f = vehicle_fields(); *f; f++) n++;
    CHECK(n > 30, "field list (%d)", n);
    vehicle_free(v);
    return test_finish();
}
