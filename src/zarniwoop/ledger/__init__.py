"""The usage ledger: what Zarniwoop records of every provider call and every LLM call, and every
report read from it — one package, one interface (`UsageLedger`).

    ledger = UsageLedger(db, ZarniwoopUsageCounter(db, home / "spool"))   # Runtime.ledger
    ledger.calls.on_attempt(...)        # a provider call (the dispatcher's observer), spooled
    await ledger.llm.record(record)     # an LLM call's charge, written in its call
    await ledger.research(scope, since=since)            # `zarniwoop usage`, GET /v1/usage
    await ledger.llm_dashboard(tenant, budgets=b, directory=d)   # its `llm` section
    await ledger.timeseries("llm", scope, since=s, until=u, bucket="day", by="model")   # the charts

Layout, one job a module: `tables.py` (each table described once: columns, time column, how a
moment is stored, retention), `records.py` (the row shapes), `audit.py` (the provider-call writer
and the one spool both writers share), `llm_store.py` (the LLM usage writer), `query.py` (the one
query engine every report reads through; exact money sums), `reports.py` (what the window reports
add up), `series.py` (per hour or day), `usage_ledger.py` (the interface, and the reports). It sits under `llm` and `dispatch`,
which write it, and over `limits` and `tenancy`, whose budgets and org tree the LLM dashboard
shows beside the usage (pyproject `[tool.importlinter]`).

Why two tables and not one record shape with a kind (DESIGN §8, §9): the rows differ in grain,
in keys, in durability and in retention.
- A provider call (`research_call_records`, DESIGN §9) is one attempt of one search in a scope
  (tenant, project), keyed by the query's SHA-256 — never the plaintext — with hits, an outcome and
  a latency. It costs no money the ledger knows of; it is written *after* the answer, spooled and
  inserted in batches (an audit row must never slow a search), with a "started" line so that a
  call cut by `kill -9` still becomes a row. Kept `research.log.retentionDays` (30) per scope.
- An LLM usage record (`llm_usage_records`, seed 002 §5, DESIGN §8) is one *charge*: tokens, the
  cost from catalog pricing (NULL = unpriced, never a guess), the key's source, and the account,
  project, team and tenant it is billed to, with every attempt and failover switch inside the call.
  It is the receipt of a budget settle: written *in* its call (in the budgets' transaction where
  they share the database) and read back by `usage_id`, so a budget reading never lags it. Kept
  `ai.usage.retentionDays` (90), system-wide, with its traces.
One wide table would be mostly NULLs, every reader would filter on the kind, and the search path
would wait on the charge's transaction. What the two share is shared once: the spool and its
flusher, the retention job, the query engine and the reports' rules (buckets, percentiles, money).
"""

from .audit import ZarniwoopUsageCounter
from .llm_store import UsageStore
from .query import SINCE_PATTERN, parse_since, percentile, usd_total
from .records import AttemptRecord, CallRecord, Switch, UsageRecord, new_usage_id
from .series import LLM_BY, RESEARCH_BY, timeseries
from .tables import LLM_USAGE, RESEARCH_CALLS, TABLES, LedgerTable
from .usage_ledger import UsageLedger

__all__ = [
    "LLM_BY",
    "LLM_USAGE",
    "RESEARCH_BY",
    "RESEARCH_CALLS",
    "SINCE_PATTERN",
    "TABLES",
    "AttemptRecord",
    "CallRecord",
    "LedgerTable",
    "Switch",
    "UsageLedger",
    "UsageRecord",
    "UsageStore",
    "ZarniwoopUsageCounter",
    "new_usage_id",
    "parse_since",
    "percentile",
    "timeseries",
    "usd_total",
]
