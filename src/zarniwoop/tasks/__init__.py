"""Tasks: tool calls that outlive their connection, kept in the database (issue 45, docs/tasks.md).

`store.py` is the table (ids, ownership leases, sealed request/progress/result, finished steps);
`runner.py` (`TaskRunner`, imported from there: it loads the tools) runs them, renews leases and
takes over the tasks of processes that died.
"""

from .store import TaskCaller, TaskRecord, TaskRequest, TaskState, TaskStore

__all__ = ["TaskCaller", "TaskRecord", "TaskRequest", "TaskState", "TaskStore"]
