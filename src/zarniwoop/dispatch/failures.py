"""A total failure told by its cause first, in one line, with the next step where one is plain.

    summarize(attempts)
    # 'offline? 3 providers could not resolve their host; 2 need a key (BRAVE_API_KEY, SERPER_API_KEY)
    #  — check the network connection, or set HTTPS_PROXY'
    summarize(attempts)
    # 'proxy 127.0.0.1:18159 answered HTTP 502 for 3 providers (check HTTPS_PROXY / http.proxy)'

Each attempt carries its `cause` (`ProviderError.cause` for a failed call, the gate's outcome for a
skip); attempts are grouped by it, each provider counted once (its first failure), biggest group
first. Providers skipped because they are disabled or do not serve the modality are not failures
and are left out. The per-provider reasons stay in `errorMessage` (`--verbose`, `--json`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from ..config.endpoints import operator_env
from ..contract.enums import Outcome
from ..contract.errors import ProviderError, ZarniwoopError
from ..contract.results import Attempt
from ..protocols import load_protocols

MAX_SUMMARY_CHARS = 190
"""A summary fits on the one error line a CLI prints (≤ 200 characters with its `error: `)."""

SKIP_CAUSES = {
    Outcome.SKIPPED_NO_KEY: "no_key",
    Outcome.SKIPPED_COOLDOWN: "cooldown",
    Outcome.SKIPPED_EXHAUSTED: "exhausted",
    Outcome.SOFT_ERROR: "soft_error",
    Outcome.EMPTY: "empty",
    Outcome.TIMEOUT: "timeout",
}
NOT_FAILURES = frozenset({Outcome.SKIPPED_DISABLED, Outcome.SKIPPED_UNSUPPORTED, Outcome.SUCCESS})

OFFLINE_STEP = " — check the network connection, or set HTTPS_PROXY"

_PHRASES = {
    "dns": "could not resolve their host",
    "refused": "refused the connection",
    "reset": "reset the connection",
    "closed": "closed the connection before answering",
    "unreachable": "have no route to their host",
    "tls": "failed the TLS handshake",
    "network": "failed on the network",
    "timeout": "did not answer in time",
    "http": "answered an HTTP error",
    "overloaded": "are overloaded",
    "rate_limited": "are rate-limited",
    "auth": "refused their key (HTTP 401/403)",
    "too_large": "sent a body over the size cap",
    "malformed": "sent a body that could not be read",
    "soft_error": "answered with an error",
    "empty": "found nothing",
    "cooldown": "are cooling down after earlier failures",
    "exhausted": "have used up their quota",
    "paced": "had no free slot in their rate limit",
    "provider": "failed",
}
_PROXY = re.compile(r"(?:cannot reach )?proxy (\S+?)(?: \((.+)\)| answered HTTP (\d+))")
_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_HOST_PORT = re.compile(r"(?:from|to|with) (\S+:\d+)")


def cause_of(error: BaseException) -> str:
    """The one-word kind of a failed call (`ProviderError.cause`); an add-on's own exception is
    `provider`, another of ours (not a provider error) `other`."""
    if isinstance(error, ProviderError):
        return error.cause
    return "provider" if not isinstance(error, ZarniwoopError) else "other"


def with_cause(attempt: Attempt, protocol_id: str | None = None) -> Attempt:
    """`attempt` with the cause its outcome implies, where the call did not set one, and for a
    `no_key` skip the key's environment variable (`SERPER_API_KEY`) as its hint."""
    if attempt.cause is None and attempt.outcome is Outcome.SKIPPED_COOLDOWN:
        attempt = replace(attempt, cause=_cooled(attempt.error_message or ""))
    elif attempt.cause is None and attempt.outcome in SKIP_CAUSES:
        attempt = replace(attempt, cause=SKIP_CAUSES[attempt.outcome])
    if attempt.outcome is Outcome.SKIPPED_NO_KEY and attempt.hint is None and protocol_id:
        protocol = load_protocols().get(protocol_id)
        env = operator_env(protocol) if protocol is not None else None
        attempt = replace(attempt, hint=env or f"research.endpoint.{attempt.provider_instance_id}.apiKey")
    return attempt


def _cooled(reason: str) -> str:
    """A cooldown skip's cause: what benched the provider, read from the reason the transport
    worded (`cooling down for 49s (network error: cannot resolve en.wikipedia.org)`), else `cooldown`."""
    return next((cause for cause, pattern in _BENCHED_BY if pattern.search(reason)), "cooldown")


_BENCHED_BY = (
    ("proxy", re.compile(r"\(network error[^:]*: (?:cannot reach )?proxy ")),
    ("dns", re.compile(r"\(network error[^:]*: cannot resolve ")),
    ("refused", re.compile(r"\(network error[^:]*: connection to \S+ refused")),
    ("timeout", re.compile(r"\(no answer |\(deadline reached")),
)


def summarize(attempts: Iterable[Attempt]) -> str | None:
    """The failure by cause in one line (at most `MAX_SUMMARY_CHARS`), or None with nothing failed."""
    first: dict[str, Attempt] = {}
    for attempt in attempts:  # per provider its first call's failure, else its first skip
        if attempt.outcome in NOT_FAILURES:
            continue
        known = first.get(attempt.provider_instance_id)
        if known is None or (known.outcome.is_skip and not attempt.outcome.is_skip):
            first[attempt.provider_instance_id] = attempt
    groups: dict[str, list[Attempt]] = {}
    for attempt in first.values():
        cause = attempt.cause or SKIP_CAUSES.get(attempt.outcome) or "provider"
        groups.setdefault(cause, []).append(attempt)
    if not groups:
        return None
    if len(first) == 1:  # one provider: its own reason says it best
        [only] = first.values()
        text = f"{only.provider_instance_id}: {only.error_message or only.outcome.value}"
        return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"
    skips = ("no_key", "cooldown", "exhausted")
    ordered = sorted(groups.items(), key=lambda item: (item[0] in skips, -len(item[1])))
    text = "; ".join(_part(cause, group) for cause, group in ordered)
    if [c for c in groups if c not in skips] == ["dns"]:  # nothing resolved: the machine is offline
        text = f"offline? {text}"
        if len(text) + len(OFFLINE_STEP) <= MAX_SUMMARY_CHARS:
            text += OFFLINE_STEP
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def _part(cause: str, group: list[Attempt]) -> str:
    count = len(group)
    who = "1 provider" if count == 1 else f"{count} providers"
    if cause == "no_key":
        keys = sorted({a.hint for a in group if a.hint})
        shown = ", ".join(keys[:2]) + (", …" if len(keys) > 2 else "")
        return f"{count} {'needs' if count == 1 else 'need'} a key" + (f" ({shown})" if shown else "")
    if cause == "proxy":
        found = _PROXY.search(next((a.error_message or "" for a in group), ""))
        if found:
            proxy, why, status = found.groups()
            what = f"answered HTTP {status}" if status else f"failed: {why}" if why else "failed"
            return f"proxy {proxy} {what} for {who} (check HTTPS_PROXY / http.proxy)"
        return f"{who} could not go through the proxy (check HTTPS_PROXY / http.proxy)"
    if cause == "timeout":
        hosts = [m.group(1) for a in group if (m := _HOST_PORT.search(a.error_message or ""))]
        shown = f" ({', '.join(hosts[:2])}{', …' if len(hosts) > 2 else ''})" if hosts else ""
        return f"{who} {_PHRASES['timeout']}{shown}"
    phrase = _PHRASES.get(cause, "failed")
    if cause in ("soft_error", "provider", "other") and group[0].error_message:
        phrase += f" ({group[0].provider_instance_id}: {group[0].error_message[:80]})"
    if cause in ("http", "overloaded", "auth", "rate_limited"):
        statuses = sorted({m.group(1) for a in group if (m := _STATUS.search(a.error_message or ""))})
        if statuses and cause != "auth":
            phrase += f" (HTTP {', '.join(statuses)})"
    if count == 1:  # `1 provider is cooling down`, `… has used up its quota`
        phrase = re.sub(r"^are ", "is ", re.sub(r"^have ", "has ", phrase)).replace("their", "its")
    return f"{who} {phrase}"


__all__ = ["MAX_SUMMARY_CHARS", "cause_of", "summarize", "with_cause"]
