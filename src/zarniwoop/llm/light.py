"""LightLlm: one structured LLM call from a recipe — a Jinja2 prompt and the JSON schema of the answer.

A recipe is a YAML document:

    name: zarniwoop-classify
    purpose: light                     # picks the model through the preferences cascade
    system: You sort abstracts into topics.
    prompt: |
      Topics: {{ topics | join(", ") }}
      Abstract: {{ abstract }}
    schema:                            # JSON Schema (2020-12) of the answer
      type: object
      properties: {topic: {type: string}, confidence: {type: number}}
      required: [topic, confidence]
    max_tokens: 512
    temperature: 0
    params:                            # optional (seed 002 recipes)
      model: default:arthur,default:chat           # the recipe's model spec (a caller's --model wins)
      fallbackModels: [gemini:gemini-2.5-flash, "default:fast,default:chat"]   # runtime chain
    variants:                          # optional: the resolved model's catalog `size` picks one
      SMALL: {prompt: "Topic of: {{ abstract }}. One word."}       # or just the prompt text
      LARGE: {system: You are a careful librarian.}

`params.fallbackModels` is the seed's runtime fallback chain: tried, in order, only after the primary
model was really called and failed (provider error, overload, quota); each element may itself be a
comma cascade. A variant replaces the recipe's `prompt` and/or `system` when the model the call
resolves to has that `size` (SMALL | LARGE); a model of unknown size keeps the recipe's own.

`call_for_json(recipe, variables)` renders the prompt (sandboxed; a variable the prompt needs but
the caller did not give is an `InvalidRequestError` naming it), asks for JSON through the whole
call path (`LlmManager`: budgets, keys, failover), and validates the answer against the schema.
An answer that is not valid JSON for the schema gets one repair turn — the model sees its answer
and what was wrong with it; a second failure is a `ParseError`.

Recipes load from `<home>/documents/<tenant>/<project>/recipes/<name>.yaml`, then the tenant's
(`_tenant`), then the system's, then the ones bundled in `zarniwoop/llm/recipes/`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ..contract.errors import ConfigError, InvalidRequestError, ParseError
from .adapters import ChatMessage, ChatRequest

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

    from .manager import LlmCall, LlmManager, LlmResult

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class _ParamsModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, min_length=1)
    fallbackModels: list[str] = Field(default_factory=list)  # the seed's spelling


class _VariantModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str | None = Field(None, min_length=1)
    system: str | None = None


class _RecipeModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    purpose: str = "light"
    system: str | None = None
    prompt: str = Field(min_length=1)
    schema_: dict[str, Any] = Field(alias="schema")
    max_tokens: int = Field(1024, ge=1, le=200_000)
    temperature: float | None = Field(0.0, ge=0.0, le=2.0)
    params: _ParamsModel = Field(default_factory=_ParamsModel)
    variants: dict[Literal["SMALL", "LARGE"], _VariantModel | str] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecipeVariant:
    """What a size tier replaces: the prompt, the system prompt, or both (None keeps the recipe's)."""

    prompt: str | None = None
    system: str | None = None


@dataclass(frozen=True, slots=True)
class Recipe:
    name: str
    prompt: str
    schema: Mapping[str, Any]
    purpose: str = "light"
    system: str | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    description: str = ""
    model: str | None = None
    """`params.model`: the recipe's model spec (a caller's own model spec wins)."""
    fallback_models: tuple[str, ...] = ()
    """`params.fallbackModels`: the runtime fallback chain."""
    variants: Mapping[str, RecipeVariant] = field(default_factory=dict)
    """`SMALL` / `LARGE` → what that size tier replaces."""

    def for_size(self, size: str | None) -> Recipe:
        """The recipe as the model's size tier wants it (itself when no variant matches)."""
        variant = self.variants.get(size or "")
        if variant is None:
            return self
        return replace(
            self,
            prompt=variant.prompt or self.prompt,
            system=variant.system if variant.system is not None else self.system,
        )

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "recipe") -> Recipe:
        """Parse and check a recipe document; every problem is a `ConfigError` naming the field."""
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(source, f"malformed YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise ConfigError(source, "a recipe is a YAML mapping")
        try:
            model = _RecipeModel.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"{source}.{'.'.join(str(p) for p in first['loc'])}", first["msg"]) from None
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(model.schema_)
        except SchemaError as exc:
            raise ConfigError(f"{source}.schema", f"not a valid JSON schema: {exc.message}") from None
        from jinja2 import TemplateSyntaxError

        variants: dict[str, RecipeVariant] = {
            size: RecipeVariant(prompt=v)
            if isinstance(v, str)
            else RecipeVariant(prompt=v.prompt, system=v.system)
            for size, v in model.variants.items()
        }
        prompts = [("prompt", model.prompt)] + [
            (f"variants.{size}.prompt", v.prompt) for size, v in variants.items() if v.prompt
        ]
        for where, prompt in prompts:
            try:
                _environment().parse(prompt)  # a template syntax error shows at load, not at the call
            except TemplateSyntaxError as exc:
                raise ConfigError(f"{source}.{where}", f"template syntax error: {exc.message}") from None
        return cls(
            name=model.name,
            prompt=model.prompt,
            schema=model.schema_,
            purpose=model.purpose,
            system=model.system,
            max_tokens=model.max_tokens,
            temperature=model.temperature,
            description=model.description,
            model=model.params.model,
            fallback_models=tuple(spec.strip() for spec in model.params.fallbackModels if spec.strip()),
            variants=variants,
        )

    def render(self, variables: Mapping[str, Any]) -> str:
        from jinja2 import TemplateSyntaxError, UndefinedError

        try:
            return _template(self.prompt).render(**variables)
        except UndefinedError as exc:
            raise InvalidRequestError("variables", f"recipe {self.name!r}: {exc.message}") from None
        except TemplateSyntaxError as exc:
            raise ConfigError(f"{self.name}.prompt", exc.message or "template syntax error") from None


@functools.lru_cache(maxsize=64)
def _template(prompt: str) -> Template:
    """The compiled prompt: compiling costs ~10 ms, rendering a compiled one well under 1 ms."""
    return _environment().from_string(prompt)


@functools.lru_cache(maxsize=64)
def _parsed(text: str, source: str) -> Recipe:
    """A recipe document parsed and checked once per text (YAML, JSON schema, template: ~50 ms)."""
    return Recipe.from_yaml(text, source=source)


def _environment() -> SandboxedEnvironment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


class RecipeStore:
    """Finds recipes by name: the scope's documents first, then the bundled ones."""

    def __init__(self, documents: Path | None = None) -> None:
        self.documents = documents

    def load(self, name: str, tenant: str = "default", project: str = "default") -> Recipe:
        if not _NAME.match(name):
            raise InvalidRequestError(
                "recipe", f"expected a recipe name (letters, digits, '-', '_', '.'), got {name!r}"
            )
        if self.documents is not None:
            for t, p in ((tenant, project), (tenant, TENANT_LEVEL), (SYSTEM_TENANT, TENANT_LEVEL)):
                path = self.documents / t / p / "recipes" / f"{name}.yaml"
                if path.is_file():  # read each time, so an edited override applies at once
                    return _parsed(path.read_text(encoding="utf-8"), str(path))
        bundled = resources.files("zarniwoop.llm") / "recipes" / f"{name}.yaml"
        if bundled.is_file():
            return _parsed(bundled.read_text(encoding="utf-8"), f"bundled:{name}")
        raise InvalidRequestError("recipe", f"no recipe named {name!r}")


@dataclass(frozen=True, slots=True)
class LightResult:
    data: Any
    """The validated JSON answer."""
    result: LlmResult
    """The call that produced it (provider, usage, cost, failover)."""
    repaired: bool = False
    calls: tuple[LlmResult, ...] = field(default=())


class LightLlm:
    """Structured calls for one caller (tenant, project, account)."""

    def __init__(self, manager: LlmManager, call: LlmCall, *, recipes: RecipeStore | None = None) -> None:
        self.manager = manager
        self.call = call
        self.recipes = recipes or RecipeStore()

    def recipe(self, name: str) -> Recipe:
        """The recipe `name` as this caller's scope sees it (its override, else the bundled one)."""
        return self.recipes.load(name, self.call.tenant, self.call.project)

    async def context_window(self, recipe: Recipe) -> int | None:
        """The catalog's context window of the model a call with this recipe would go to first."""
        from dataclasses import replace

        return await self.manager.context_window(replace(self.call, purpose=recipe.purpose))

    async def call_for_json(
        self, recipe: Recipe | str, variables: Mapping[str, Any] | None = None
    ) -> LightResult:
        if isinstance(recipe, str):
            recipe = self.recipes.load(recipe, self.call.tenant, self.call.project)
        call = replace(
            self.call,
            purpose=recipe.purpose,
            model=self.call.model or recipe.model,
            fallback_models=(*self.call.fallback_models, *recipe.fallback_models),
        )
        if recipe.variants:
            choice = await self.manager.choose_model(call)
            size = choice.doc.size.value if choice.doc is not None and choice.doc.size else None
            recipe = recipe.for_size(size)
        prompt = recipe.render(variables or {})
        messages = ((ChatMessage("system", recipe.system),) if recipe.system else ()) + (
            ChatMessage("user", prompt),
        )
        request = ChatRequest(
            messages, max_tokens=recipe.max_tokens, temperature=recipe.temperature, json_schema=recipe.schema
        )
        first = await self.manager.chat(call, request)
        data, problem = check_answer(first.response.text, recipe.schema)
        if problem is None:
            return LightResult(data, first, False, (first,))
        fix = f"That answer is not valid: {problem}. Reply with only the corrected JSON object."
        turn = (ChatMessage("assistant", first.response.text), ChatMessage("user", fix))
        repair = replace(request, messages=(*request.messages, *turn))
        second = await self.manager.chat(call, repair)
        data, problem = check_answer(second.response.text, recipe.schema)
        if problem is not None:
            raise ParseError(
                f"recipe {recipe.name!r}: the answer is not valid JSON for its schema after one repair: {problem}",
                instance_id=second.instance,
            )
        return LightResult(data, second, True, (first, second))


def check_answer(text: str, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """`(value, None)` when `text` holds JSON matching `schema`, else `(None, what is wrong)`."""
    from jsonschema import Draft202012Validator

    candidate = text.strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1)
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        start = candidate.find("{")
        try:
            value = json.JSONDecoder().raw_decode(candidate[start:])[0] if start >= 0 else None
        except json.JSONDecodeError as exc:
            return None, f"not JSON ({exc.msg} at position {exc.pos})"
        if value is None:
            return None, "no JSON object in the answer"
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        return None, f"{where}: {first.message}"
    return value, None
