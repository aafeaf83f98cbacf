"""No decision by the clock in tests/ (issue 41): find the places where a test's outcome hangs on speed.

    python scripts/check_test_clock.py                  # tests/, with tests/clock-allowlist.txt
    python scripts/check_test_clock.py PATH... [--allowlist FILE]

A busy machine only ever makes things slower. So a lower bound on an elapsed time ("it waited at
least the back-off") holds on any machine, while an upper bound ("it answered within 2 s") or a
fixed sleep standing for an event ("after 1 s, no probe was sent") decides by the machine's speed.
The check reads each file's syntax tree (not its text, so a delta bound to a name and compared three
lines later is still seen) and flags upper bounds on a wall-clock duration, short deadlines, short
waits and fixed sleeps: scripts/clock_check/rules.py says what each is, allowlist.py what may
stay and how it is written down.

Prints `path:line: rule: what` per finding and exits 1; else one summary line, exit 0. `bench/` is
never checked: timing is what it measures.
"""

import sys

from clock_check import main  # this script's folder, scripts/, is first on sys.path

if __name__ == "__main__":
    sys.exit(main())
