"""`GET /v1/usage?since=24h`: provider calls of the scope per instance and modality, from the audit log,
and the LLM token dashboard (seed 002 §9) under `llm`.

The same report as `zarniwoop usage --json` (`views/usage.py` over `UsageLedger.research`): calls,
hits, failures, p50/p95 latency and quota per instance and modality since `since` (`24h`, `7d`,
`30m` or an ISO date; a bad value is a 422 naming `since`). `"enabled": false` says so plainly when this runtime has no
audit log attached, rather than inventing numbers.

`llm` is `zarniwoop usage --llm --json` (`Runtime.usage_dashboard`): today and this month, by
project, provider (with the key's source) and account, estimated cost, quota bars. Who sees what:
- a user token bound to an account (`tokens create --account`) sees that account's calls in its
  project, nothing else (`?account=` of another account is a 403);
- a user token without an account sees its project's totals, but no single account;
- a project admin sees its project and any account's calls in it;
- a tenant admin (or the operator) may ask for the whole tenant (`?llmScope=tenant`) and for an
  account across the tenant's projects.

`GET /v1/usage/timeseries?kind=research|llm&since=7d&bucket=hour|day&by=…` is the same data over
time, for the console's charts (`ledger/series.py` has the rules: UTC buckets, zero-filled,
at most 2,000 buckets, p95 per bucket). `kind=research` (the default) is this project's provider
calls `by=instance|modality`; `kind=llm` is LLM tokens and estimated cost
`by=project|account|model|provider`, seen with the same rules as `llm` above (`account`, `llmScope`).
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from .... import operations
from ....contract.errors import AccessDeniedError, InvalidRequestError
from ....contract.names import check_name
from ....ledger import LLM_BY, RESEARCH_BY, SINCE_PATTERN, parse_since
from ....tenancy.tokens import Principal
from ..deps import NAME_PARAM, Caller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES
from ..responses import UsageReport, UsageTimeseries

SINCE_PARAM: dict[str, Any] = {"json_schema_extra": {"pattern": SINCE_PATTERN}}
AccountParam = Annotated[str | None, Query(description="LLM usage of one account.", **NAME_PARAM)]
LlmScopeParam = Annotated[
    Literal["project", "tenant"],
    Query(alias="llmScope", description="LLM usage of the project or (admin) the tenant."),
]


router = APIRouter(tags=["usage"], responses=ERROR_RESPONSES)


@router.get(
    "/v1/usage", summary="Provider calls of the scope per instance and modality", response_model=UsageReport
)
async def usage(
    ctx: Ctx,
    caller: Caller,
    since: Annotated[
        str,
        Query(max_length=40, description="Window start: 24h, 7d, 30m or an ISO date.", **SINCE_PARAM),
    ] = "24h",
    account: AccountParam = None,
    llm_scope: LlmScopeParam = "project",
) -> JSONResponse:
    # The model documents the shape; the report goes out as it is, without re-validation.
    account, project = _llm_view(caller, account, llm_scope)
    scope = {"tenant": caller.scope.tenant, "project": caller.scope.project}
    llm = await operations.usage_dashboard(ctx.runtime, caller.scope.tenant, account=account, project=project)
    if not ctx.runtime.ledger.enabled:
        return JSONResponse(
            {
                "scope": scope,
                "enabled": False,
                "message": "usage tracking not enabled: no audit log is attached",
                "llm": llm,
            }
        )
    research = await operations.research_usage(ctx.runtime, caller.scope, since=parse_since(since))
    research.pop("scope", None)
    return JSONResponse({"scope": scope, "enabled": True, "research": research, "llm": llm})


@router.get(
    "/v1/usage/timeseries",
    summary="Provider calls or LLM tokens per hour or day, one series per instance, project, account or model",
    response_model=UsageTimeseries,
)
async def usage_timeseries(
    ctx: Ctx,
    caller: Caller,
    kind: Annotated[
        Literal["research", "llm"], Query(description="Provider calls (research) or LLM tokens (llm).")
    ] = "research",
    since: Annotated[
        str,
        Query(
            max_length=40,
            description="Window start: 24h, 7d, 30m or an ISO date (rounded down to its bucket).",
            **SINCE_PARAM,
        ),
    ] = "24h",
    until: Annotated[
        str | None,
        Query(
            max_length=40,
            description="Window end (default now): a duration back from now or an ISO date.",
            **SINCE_PARAM,
        ),
    ] = None,
    bucket: Annotated[Literal["hour", "day"], Query(description="UTC hours or UTC days.")] = "hour",
    by: Annotated[
        str | None,
        Query(
            max_length=20,
            json_schema_extra={"enum": [*RESEARCH_BY, *LLM_BY]},
            description=f"research: {' | '.join(RESEARCH_BY)} (default instance); "
            f"llm: {' | '.join(LLM_BY)} (default project).",
        ),
    ] = None,
    account: AccountParam = None,
    llm_scope: LlmScopeParam = "project",
) -> JSONResponse:
    now = time.time()
    start = parse_since(since, now=now)
    end = now if until is None else _parse_until(until, now)
    if kind == "research":
        # without an audit log the report is empty, its parameters checked all the same
        report = await ctx.runtime.ledger.timeseries(
            "research", caller.scope, since=start, until=end, bucket=bucket, by=by
        )
        report["enabled"] = ctx.runtime.ledger.enabled
        if not ctx.runtime.ledger.enabled:
            report["message"] = "usage tracking not enabled: no audit log is attached"
        return JSONResponse(report)
    account, project = _llm_view(caller, account, llm_scope)
    return JSONResponse(
        await ctx.runtime.ledger.timeseries(
            "llm",
            caller.scope,
            since=start,
            until=end,
            bucket=bucket,
            by=by,
            account=account,
            project=project,
        )
    )


def _parse_until(text: str, now: float) -> float:
    try:
        return parse_since(text, now=now)
    except InvalidRequestError as error:
        raise InvalidRequestError("until", error.reason) from None


def _llm_view(caller: CallerInfo, account: str | None, llm_scope: str) -> tuple[str | None, str | None]:
    """The account and the project whose LLM usage this caller sees (None: not narrowed to one)."""
    if account is not None:
        check_name("account", account)
    account = _visible_account(caller.principal, account)
    if llm_scope == "tenant" and not caller.principal.tenant_admin:
        raise AccessDeniedError("the tenant-wide LLM usage needs a tenant-admin token")
    wide = caller.principal.tenant_admin and (llm_scope == "tenant" or account is not None)
    return account, None if wide else caller.scope.project


def _visible_account(principal: Principal, asked: str | None) -> str | None:
    """The account whose LLM usage this caller may see (None: the project's totals)."""
    if principal.admin:
        return asked
    if principal.account is None:
        if asked is not None:
            raise AccessDeniedError(
                "this token is not bound to an account; an account's usage needs an admin token"
            )
        return None
    if asked not in (None, principal.account):
        raise AccessDeniedError(f"this token acts as account {principal.account!r} and sees only its usage")
    return principal.account
