"""The wall-clock check of tests/ (issue 41), run by scripts/check_test_clock.py. One job a module:

- syntax.py: reading the syntax tree (numbers, dotted names, comparisons, a function's own nodes)
- clocks.py: which calls read a wall clock and which sleep
- kinds.py: duration tracking (a reading, a duration, the time left), through names and helpers
- rules.py: the four kinds of finding (upper-bound, short-deadline, short-wait, fixed-sleep)
- walk.py: which rule judges which statement, and in whose name (where a sleep is the test waiting)
- allowlist.py: the allow-list's entries; report.py: the files checked and the findings let through
- cli.py: the command line's output and exit code
"""

from .cli import main
from .report import Report, check, check_file
from .rules import Finding

__all__ = ["Finding", "Report", "check", "check_file", "main"]
