"""Pass/fail counting for the Python test scripts, ending in the one line tests/run.sh reads:
"N passed, N failed[, N skipped]"."""


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what)
        return bool(cond)

    def line(self):
        s = "%d passed, %d failed" % (self.passed, self.failed)
        return s + (", %d skipped" % self.skipped if self.skipped else "")

    def exit_code(self):
        return 1 if self.failed else 0
