"""Which agent profile a search routes through, and the cascade it narrows to (docs/providers.md).

A call names a profile in up to three ways; the rules, from strongest:

1. a token bound to a profile (`tokens create --profile`) fixes it: its calls always route through
   it, and asking for another profile (header, `?profile=`, tool argument) is refused;
2. the tool argument `profile` (or `SearchRequest.profile`): this one call;
3. the connection's profile — `Zarniwoop-Profile` header, `/mcp?profile=`, `zarniwoop mcp --profile`.

None of them (or an empty one) = the global order. Surfaces hand the connection's choice to
`Toolbox.run`, which narrows it by the tool argument and carries it in `ToolContext.profile` to
every search the call starts (a rich fan-out, an investigation's planned searches), each of which
passes it to `Dispatcher.search(profile=…)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config.profiles import Profile, profiles
from ..contract.errors import AccessDeniedError, UnknownNameError
from ..contract.query import check_profile
from ..contract.replacing import slot_init

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings


@slot_init
@dataclass(frozen=True, slots=True)
class ProfileChoice:
    """The profile a caller asked for (`asked`) and the one its token is bound to (`bound`)."""

    asked: str | None = None
    bound: str | None = None

    def pick(self, argument: str | None = None) -> str | None:
        """The profile a search routes through, given a per-call `argument` (rules in the module doc)."""
        if argument is None and self.asked is None:  # most calls name none: nothing to check
            return self.bound
        wanted = check_profile("profile", argument) or check_profile("profile", self.asked)
        if self.bound is None:
            return wanted
        if wanted not in (None, self.bound):
            raise AccessDeniedError(
                f"this token is bound to profile {self.bound!r}; it cannot use {wanted!r}"
            )
        return self.bound

    def narrowed(self, argument: str | None) -> ProfileChoice:
        """The choice with a tool argument applied (refused at once if the token forbids it)."""
        return ProfileChoice(self.pick(argument), self.bound)


GLOBAL_ORDER = ProfileChoice()
"""No profile asked for, none bound: the global order."""


def find_profile(settings: ScopedSettings, name: str) -> Profile:
    """The profile `name` of this scope; `UnknownNameError` naming `profile` when it is not defined."""
    defined = profiles(settings)
    profile = defined.get(name)
    if profile is None:
        known = ", ".join(defined) or "none"
        raise UnknownNameError("profile", f"unknown profile {name!r}; defined here: {known}")
    return profile


__all__ = ["GLOBAL_ORDER", "ProfileChoice", "find_profile"]
