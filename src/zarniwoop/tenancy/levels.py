"""The org levels, in the one order every cascade reads (DESIGN §8).

Innermost first: a call made by account `mike` on project `review` of team `nlp` looks for a
credential, and is held to a budget, at the account, then the project, then the team, then the
tenant. The two other orders in use are read from this one, not written again:

- preferences (`llm/choice`): the project's choice outranks the account's — a project is set up for
  its work, an account follows whoever uses it — then the same order;
- listings (org units, credentials): outermost first, as a tree is read.
"""

from __future__ import annotations

ORG_LEVELS: tuple[str, ...] = ("account", "project", "team", "tenant")
"""account → project → team → tenant: the credential and budget cascade."""

PREFERENCE_LEVELS: tuple[str, ...] = ("project", *(level for level in ORG_LEVELS if level != "project"))
"""project → account → team → tenant: where a model preference or a failover policy is looked up."""

LISTING_ORDER: dict[str, int] = {level: rank for rank, level in enumerate(reversed(ORG_LEVELS))}
"""Rank of a level in listings: the tenant first, the account last."""

__all__ = ["LISTING_ORDER", "ORG_LEVELS", "PREFERENCE_LEVELS"]
