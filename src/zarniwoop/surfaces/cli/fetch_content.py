"""`zarniwoop fetch-content URL_OR_REF`: load a hit's body into the project's workspace.

    zarniwoop fetch-content https://arxiv.org/pdf/2202.12139v1          # a hit URL (SSRF-guarded GET)
    zarniwoop fetch-content pubmed:11748933                             # a STASH_ON_DEMAND reference
    zarniwoop fetch-content --provider pubmed 'https://…/efetch.fcgi?db=pubmed&id=11748933'
    zarniwoop fetch-content pubmed:11748933 --json --out abstract.txt

A `PROVIDER:REF` argument (or `--provider`) loads the reference through that provider instance
(or the first instance of that protocol); an http(s) URL is fetched directly, refusing private,
loopback and link-local targets unless `research.content.allowPrivate` is true.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .app import print_json, run

if TYPE_CHECKING:
    from ...content.store import LoadedContent
    from ...runtime import Runtime


def register(app: typer.Typer) -> None:
    app.command("fetch-content")(fetch_content)


def split_target(target: str, provider: str | None) -> tuple[str | None, str]:
    """`(provider, ref)` for a reference, `(None, url)` for a plain URL; `ValueError` when neither."""
    target = target.strip()
    if provider:
        return provider, target
    scheme = target.split(":", 1)[0].lower() if ":" in target else ""
    if scheme in ("http", "https"):
        return None, target
    if scheme and target.split(":", 1)[1]:
        name, ref = target.split(":", 1)
        return name, ref
    raise ValueError(f"expected an http(s) URL or PROVIDER:REF (e.g. pubmed:11748933), got {target!r}")


def fetch_content(
    ctx: typer.Context,
    target: str = typer.Argument(..., metavar="URL_OR_REF", help="An http(s) URL, or PROVIDER:REF."),
    provider: str | None = typer.Option(
        None, "--provider", help="Load TARGET as a content reference of this provider instance."
    ),
    out: str | None = typer.Option(None, "--out", help="Also write the bytes to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print what was saved as JSON."),
) -> None:
    """Fetch a hit's content (a URL or a STASH_ON_DEMAND reference) into the project's workspace."""
    try:
        name, ref = split_target(target, provider)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None

    async def body(rt: Runtime) -> LoadedContent:
        from ...content.store import ContentStore

        # one command, one store (closed below), over the runtime's transport: its proxies and pools
        store = ContentStore(rt.home, rt.settings, rt.factory, transport=rt.transport)
        try:
            if name is None:
                return await store.fetch_url(ref, ctx.obj.scope)
            return await store.load_ref(name, ref, ctx.obj.scope)
        finally:
            await store.aclose()

    loaded = run(ctx, body)
    if out is not None:
        try:
            Path(out).write_bytes(loaded.path.read_bytes())
        except OSError as exc:
            typer.echo(f"error: --out {out}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
    if as_json:
        print_json(loaded.to_json())
        return
    cut = " (cut at research.content.maxBytes)" if loaded.truncated else ""
    typer.echo(f"saved {loaded.size} bytes ({loaded.mime_type or 'unknown type'}){cut} → {loaded.path}")
    if out is not None:
        typer.echo(f"written to {out}")
