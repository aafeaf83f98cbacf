"""The replayed agent trace (issue 27, tests/support/trace.py): the same searches — repeats and
identical concurrent bursts — make the same number of upstream calls, the trace's floor F (its
distinct searches), whether one server answers them, two workers on fresh connections, or one CLI
call per search on one ZARNIWOOP_HOME. In-process twins of each (`IN_PROCESS`): an app, two apps on
runtimes of their own dealt the searches in turn, a runtime of its own per search — what a process
adds, test_scale_out proves with real `serve --workers 2` and CLI calls, and `bench/trace_replay.py`
replays all 300 searches through real processes.

Shorter traces from the bench's generator: 60 searches over HTTP, 12 as CLI calls."""

from __future__ import annotations

import pytest

from ..support.trace import add_routes, agent_trace, floor, replay, searches_in


def test_the_generator_is_seeded_and_has_the_m6_shape():
    trace = agent_trace(300)
    assert trace == agent_trace(300) and trace != agent_trace(300, seed=7)
    assert searches_in(trace) == 300
    assert floor(trace) == 162  # 150 new single searches + 12 bursts
    assert [s.copies for s in trace].count(5) == 12
    assert sum(1 for s in trace if s.copies == 1) == 240  # 150 new + 90 repeats
    seen: set[tuple[str, str]] = set()
    repeats = 0
    for step in trace:
        repeats += step.key in seen  # a repeat always comes after its original
        seen.add(step.key)
    assert repeats == 90
    with pytest.raises(ValueError, match="searches: 3 leave no new single search"):
        agent_trace(3, repeat_share=0.5, burst_size=1, burst_share=0.5)


@pytest.mark.parametrize("mode", ["app", "apps2"])
def test_one_server_and_two_workers_reach_the_floor(tmp_path, emulator, mode):
    add_routes(emulator)
    trace = agent_trace(60)
    assert (searches_in(trace), floor(trace)) == (60, 34)
    assert replay(emulator, tmp_path, trace, mode) == 34


def test_a_runtime_per_search_as_cli_processes_have_reaches_the_floor(tmp_path, emulator):
    add_routes(emulator)
    trace = agent_trace(12, burst_size=3)
    assert (searches_in(trace), floor(trace)) == (12, 6)
    assert [s.copies for s in trace].count(3) == 1
    assert replay(emulator, tmp_path, trace, "runtimes") == 6
