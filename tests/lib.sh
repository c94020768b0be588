# The shell tests' common start, sourced after setting TAG (names the temporary directory):
#   TAG=cli; . "$(dirname "$0")/lib.sh"
# gives BUILD (the test's first argument, default build), CABIN, T (a temporary directory removed
# at exit), the counters pass/fail/skip and:
#   ok | bad MESSAGE              count a check (bad prints FAIL: MESSAGE)
#   expect_rc RC WHAT -- CMD...   run CMD, its output in $T/out and $T/err, check its exit status
#   one_line_error TEXT WHAT      the last command failed (rc 1-127) with one line naming TEXT
#   test_finish                   the summary line run.sh reads; last line of a test: its status
#   skip_without_system_python    exits with a skip line unless /usr/bin/python3 exists (the tools'
#                                 interpreter; Debian's Python packages are seen only by it)
#   cabin_has_audio               true when $CABIN was built with audio (not make AUDIO=0):
#                                 `cabin devices` says so on its "audio:" line
#   skip_without_audio            exits with a skip line when it was not
BUILD=${1:-build}
CABIN="$BUILD/cabin"
T=$(mktemp -d "/tmp/cabin-${TAG:-test}-XXXXXX")
trap 'rm -rf "$T"' EXIT
# caches and state (the governor's sensitivity order, histories) stay out of the user's home
export XDG_CACHE_HOME="$T/cache" XDG_STATE_HOME="$T/state"
pass=0; fail=0; skip=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

expect_rc() {
    want=$1; what=$2; shift 3
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    if [ "$rc" = "$want" ]; then ok; else bad "$what: exit $rc, wanted $want"; head -5 "$T/err"; fi
}

one_line_error() {
    lines=$(wc -l <"$T/err")
    if [ "$lines" = 1 ] && grep -q -- "$1" "$T/err" && [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ]; then ok
    else bad "error for $2 should be one line naming '$1' (rc $rc):"; cat "$T/err"; fi
}

test_finish() {
    if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
    [ "$fail" -eq 0 ]
}

skip_without_system_python() {
    if ! [ -x /usr/bin/python3 ]; then
        echo "skipped: /usr/bin/python3 is not installed"; echo "0 passed, 0 failed, 1 skipped"; exit 0
    fi
}

cabin_has_audio() {
    "$CABIN" devices 2>/dev/null | grep -q '^audio: built in'
}

skip_without_audio() {
    if ! cabin_has_audio; then
        echo "skipped: $CABIN was built without audio (make AUDIO=1)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
    fi
}
