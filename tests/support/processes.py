"""The two tiers of the suite (issue 41): which tests start a process, a guard, and the count.

A test that starts a process (a server, a worker, the CLI, stdio MCP, a browser, a proxy, node) is
marked `process`; the fast tier, `python -m pytest -q -n 4 -m "not process"`, runs the others and
starts none. Three parts:

- **Marking, at collection.** Tests are not marked by hand: a test is marked when it, one of its
  fixtures, or a helper of the tests' package they call (transitively) refers to a process starter —
  `subprocess`, `asyncio.create_subprocess_*`, `multiprocessing`, playwright, the MCP SDK's stdio
  client — or to a helper that declares itself with `@starts_process` (the shared helpers that
  start one through code the scan cannot see, and the ones everybody uses: `served`). The scan
  reads names in code objects, so it errs towards marking; what it misses the guard catches.
- **The guard.** An audit hook (`sys.addaudithook`: no library can remove or bypass it) sees every
  process the interpreter creates (multiprocessing's spawn, which raises no event in 3.11, through
  a wrapper). In a test not marked `process` it raises before the process exists, and the test
  fails naming itself and the command — even when a library swallowed the error. The fix is to
  declare the helper that started it, not to mark the test.
- **The count.** Every start in a test is counted, per test (`-v` lists them); xdist workers send
  theirs to the controller (`config.workeroutput`), which prints `process starts: N (…)` at the
  end. A start is a child of the test's interpreter: a server's own workers, or the browser
  playwright's driver starts, are the child's.
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

_Helper = TypeVar("_Helper")
_DECLARED = "__starts_process__"


def starts_process(helper: _Helper) -> _Helper:
    """Declare that calling `helper` (a function, context manager, fixture or class) starts a
    process: every test that uses it is marked `process` at collection. On a fixture, put it
    under `@pytest.fixture` (on the function itself)."""
    setattr(helper, _DECLARED, True)
    return helper


# --- marking -------------------------------------------------------------------------------------

# Modules whose use starts a process, and attribute names that do (`asyncio.create_subprocess_exec`
# is reached as an attribute of `asyncio`, which most tests use for other things). The MCP SDK's
# stdio client starts the server it is given (`Client(StdioServerParameters(...))`).
_STARTER_MODULES = (
    "subprocess",
    "asyncio.subprocess",
    "multiprocessing",
    "pty",
    "playwright",
    "mcp.client.stdio",
)
_STARTER_NAMES = frozenset(
    {"subprocess", "multiprocessing", "Popen", "create_subprocess_exec", "create_subprocess_shell"}
    | {"open_process", "run_process"}  # anyio's
    | {"async_playwright", "sync_playwright", "stdio_client"}
)
_PACKAGE = __name__.split(".", 1)[0]  # "tests": helpers of this package are scanned, others are not


def _from_starter_module(obj: object) -> bool:
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return isinstance(name, str) and name.startswith(_STARTER_MODULES)


def _ours(obj: object) -> bool:
    return isinstance(getattr(obj, "__module__", None), str) and obj.__module__.partition(".")[0] == _PACKAGE


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    """A code object and those nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


# What the scan reads; other objects a test names (data, instances, mocks) start nothing by a call.
_SCANNED = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, type, types.ModuleType)
_SCANNED += (staticmethod, classmethod)  # a helper class's members
_verdicts: dict[object, bool] = {}  # keyed by the object itself: held, its id() is never reused


def _starts(obj: object, seen: set[object] | None = None) -> bool:
    """Whether calling `obj` may start a process, by what its code refers to."""
    if not isinstance(obj, _SCANNED):
        return False
    obj = inspect.unwrap(getattr(obj, "__func__", obj))  # a bound method, a @contextmanager, a fixture
    if obj in _verdicts:
        return _verdicts[obj]
    top = seen is None
    seen = set() if seen is None else seen
    if obj in seen:  # a helper calling itself, or two calling each other: decided further up
        return False
    seen.add(obj)
    verdict = getattr(obj, _DECLARED, False) is True or _from_starter_module(obj)
    if not verdict and _ours(obj):
        if isinstance(obj, type):  # a helper class: its methods
            verdict = any(_starts(member, seen) for member in vars(obj).values())
        elif isinstance(obj, types.FunctionType):
            verdict = _code_starts(obj, seen)
    if verdict or top:  # a "no" inside a cycle may only be a "not yet"
        _verdicts[obj] = verdict
    return verdict


def _code_starts(function: types.FunctionType, seen: set[object]) -> bool:
    names = {name for code in _codes(function.__code__) for name in code.co_names}
    if names & _STARTER_NAMES:
        return True
    scope = function.__globals__
    return any(_starts(scope[name], seen) for name in names if name in scope)


def _fixture_functions(item: pytest.Item) -> Iterable[object]:
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the fixtures a test requests
    for name in getattr(item, "fixturenames", ()):
        for definition in info.name2fixturedefs.get(name, ()) if info else ():
            if not _declares_per_param(definition.params):
                yield definition.func


def _declares_per_param(params: object) -> bool:
    """A parametrized fixture that marks some of its params `process` (`pytest.param("serve",
    marks=pytest.mark.process)`) says itself which variants start one: the others (an in-process
    twin of the same tests) stay in the fast tier, and the guard still fails them if they start a
    process after all."""
    return any(
        any(mark.name == "process" for mark in getattr(param, "marks", ()))
        for param in (params if isinstance(params, (list, tuple)) else ())
    )


def _uses_a_starter(item: pytest.Item) -> bool:
    if not isinstance(item, pytest.Function):
        return False
    candidates = [item.obj, *_fixture_functions(item)]
    return any(_starts(c) for c in candidates if getattr(c, _DECLARED, False) is True or _ours(c))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("process") is None and _uses_a_starter(item):
            item.add_marker(pytest.mark.process)


# --- the guard ----------------------------------------------------------------------------------

# The audit events by which an interpreter creates a process (3.11). `os.exec` replaces the process
# (in a forked child: its fork was counted). multiprocessing's spawn and forkserver start methods
# call `_posixsubprocess.fork_exec`, which raises no event: see `_watch_fork_exec`.
_START_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.system"})


class ProcessStartBlockedError(RuntimeError):
    """Raised inside a test not marked `process`, before the process it tried to start exists."""


@dataclass(eq=False)  # one object per run of a test, found by identity
class _Running:
    """A test being run (setup, call, teardown). Pytester runs tests inside a test: a stack."""

    nodeid: str
    allowed: bool
    root: Path
    starts: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


_running: list[_Running] = []
_spawning = threading.local()  # the argv of a subprocess.Popen under way (see _audit)


def _command(event: str, args: tuple[Any, ...]) -> str:
    if event == "subprocess.Popen":
        argv = args[1]
        return argv if isinstance(argv, str | bytes) else " ".join(map(str, argv))
    if event in ("os.posix_spawn", "_posixsubprocess.fork_exec"):
        return " ".join(map(str, args[1 if event == "os.posix_spawn" else 0]))
    return f"{event}({', '.join(map(repr, args))})"


def _origin(root: Path) -> str:
    """Where in the project's code (tests/, src/) the start came from: the innermost three frames."""
    frames = []
    frame = sys._getframe(2)
    while frame is not None and len(frames) < 3:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(root) and path.name != "processes.py" and "site-packages" not in path.parts:
            frames.append(f"{path.relative_to(root)}:{frame.f_lineno} ({frame.f_code.co_name})")
        frame = frame.f_back
    return " ← ".join(frames) or "outside the project's code"


def _started(event: str, args: tuple[Any, ...]) -> None:
    if not _running:  # outside a test: the controller's own workers, pytest's start-up
        return
    test = _running[-1]
    command = _command(event, args)
    if all(t.allowed for t in _running):
        for running in _running:  # a test running tests (pytester) started it too: its run counts it
            running.starts.append(command)
        return
    test.blocked.append(f"{command!r} from {_origin(test.root)}")
    raise ProcessStartBlockedError(
        f"{test.nodeid} is not marked `process` and tried to start a process: {command!r}"
    )


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Every audit event of the interpreter (opens, imports, sockets…) comes here, for good: one set
    # lookup for those.
    if event not in _START_EVENTS:
        return
    if event == "subprocess.Popen":
        _spawning.argv = args[1]
    elif event == "os.posix_spawn" and args[1] is getattr(_spawning, "argv", None):
        return  # the same start, through subprocess's posix_spawn path
    _started(event, args)


def _watch_fork_exec() -> None:
    """multiprocessing's spawn and forkserver start their interpreter through this call, which no
    audit event covers in 3.11 (subprocess, which bound it at import, is seen by its own event)."""
    import _posixsubprocess

    fork_exec = _posixsubprocess.fork_exec

    def watched(*args: Any) -> int:
        _started("_posixsubprocess.fork_exec", args)
        return fork_exec(*args)

    _posixsubprocess.fork_exec = watched


_installed = False


def _install() -> None:
    """At the first test an interpreter runs (an xdist controller runs none); once, for an audit hook
    cannot be removed, and pytester runs sessions inside this one."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _watch_fork_exec()
        _installed = True


# --- the count ----------------------------------------------------------------------------------


@dataclass
class _Tally:
    """One run's starts (a worker's, or the controller's sum of them)."""

    starts: Counter[str] = field(default_factory=Counter)  # node id of a test marked process → count
    blocked: dict[str, list[str]] = field(default_factory=dict)  # node id → the blocked commands
    marked: int = 0  # tests marked process that ran

    def to_output(self) -> dict[str, Any]:
        return {"starts": dict(self.starts), "blocked": self.blocked, "marked": self.marked}

    def add_output(self, output: dict[str, Any]) -> None:
        self.starts.update(output["starts"])
        self.blocked.update(output["blocked"])
        self.marked += output["marked"]


_tally = pytest.StashKey[_Tally]()


def pytest_configure(config: pytest.Config) -> None:
    if not any(line.startswith("process:") for line in config.getini("markers")):  # a run without pyproject
        config.addinivalue_line("markers", "process: starts a process; the fast tier is -m 'not process'")
    config.stash[_tally] = _Tally()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    _install()
    marked = item.get_closest_marker("process") is not None
    test = _Running(item.nodeid, marked, item.config.rootpath)
    _running.append(test)
    try:
        return (yield)
    finally:
        _running.remove(test)  # the last one: the tests run inside it (pytester) are done
        tally = item.config.stash[_tally]
        tally.marked += marked
        if test.starts:
            tally.starts[item.nodeid] += len(test.starts)
        if test.blocked:
            tally.blocked[item.nodeid] = test.blocked


def _failing_on_a_blocked_start(item: pytest.Item) -> Generator[None, object, object]:
    """A phase of a test in which a start was blocked fails, whatever the test made of the error."""
    test = _running[-1]
    before = len(test.blocked)
    try:
        return (yield)
    finally:
        if len(test.blocked) > before:
            message = (
                f"{item.nodeid} is not marked `process` and tried to start a process (blocked): "
                + "; ".join(test.blocked[before:])
                + ". Declare the helper that starts it with tests.support.processes.starts_process"
                " (the test is then marked `process` and leaves the fast tier), or keep the test"
                " in-process."
            )
            # from None: the ProcessStartBlockedError (if the test let it through) says it again
            raise pytest.fail.Exception(message, pytrace=False) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _failing_on_a_blocked_start(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _failing_on_a_blocked_start(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _failing_on_a_blocked_start(item))


@pytest.hookimpl(tryfirst=True)  # the exit status is read by the hooks after
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    tally = config.stash[_tally]
    if hasattr(config, "workeroutput"):  # an xdist worker: its tally goes to the controller
        config.workeroutput["process_starts"] = tally.to_output()
    elif tally.blocked and session.exitstatus == pytest.ExitCode.OK:
        # a start blocked after its test's last check (a thread it left behind) fails the run
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", {}).get("process_starts")
    if output is not None:  # None: the worker crashed; its tests are reported as such
        node.config.stash[_tally].add_output(output)


def summary(tally: _Tally, *, verbose: bool = False) -> list[str]:
    """The lines printed at the end of a run; `verbose` (`-v`): each test's starts, most first (a
    module-scoped server's start is its first test's)."""
    total = sum(tally.starts.values())
    lines = [
        f"process starts: {total} (by {len(tally.starts)} of {tally.marked} tests marked process;"
        f" blocked in {len(tally.blocked)} unmarked tests)"
    ]
    lines += [f"process start BLOCKED in {nodeid}: {'; '.join(b)}" for nodeid, b in tally.blocked.items()]
    if verbose:
        lines += [f"{count:5d}  {nodeid}" for nodeid, count in tally.starts.most_common()]
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if config.option.collectonly:
        return
    for line in summary(config.stash[_tally], verbose=config.option.verbose > 0):
        terminalreporter.write_line(line, red="BLOCKED" in line)


__all__ = ["ProcessStartBlockedError", "starts_process"]
