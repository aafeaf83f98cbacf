// Zarniwoop web UI: a thin client of the /v1 HTTP API, plain ES modules, no build step, no
// third-party code. This module holds the built-in pages, navigation and sign-in; core.js the shared
// part (its two rules on API data and the token hold here too); pages/*.js the pages added since.

import {
  THEME_KEY, THEMES, EXTRAS, REACHABLE, $, h, safeUrl, link, badge, when, table, genericSection, quota,
  replace, session, ApiError, api, clearError, showError, setStatus, RESULTS, extraPages, hooks, fail,
  ticket, busy, strategyLine,
} from "./core.js";
import "./pages/index.js"; // registers the pages of pages/*.js before this module's body runs

const PAGES = ["search", "routing", "investigate", "settings", "tokens", ...extraPages.keys()]; // usage: pages/usage.js

// ---- navigation and sign-in --------------------------------------------------------------------

// `#routing`, or `#/search?q=…&m=…` (a shareable search: the page runs it when opened).
function currentPage() {
  const page = window.location.hash.slice(1).replace(/^\//, "").split("?")[0];
  return PAGES.includes(page) ? page : "search";
}

// Pages whose every call needs an admin token (AdminCaller on the server): a `user` token is not
// offered them, and an address naming one shows Search instead.
const ADMIN_PAGES = new Set(["settings", "tokens", "credentials", "grants"]);
const mayOpen = (page) => !ADMIN_PAGES.has(page) || caller === null || caller.role !== "user";

function applyRole() {
  for (const a of document.querySelectorAll("#nav a[data-page]")) a.hidden = !mayOpen(a.dataset.page);
  if (session.token && !mayOpen(currentPage())) location.hash = "#search";
}

function route({ focus = true } = {}) {
  if (!session.token) {
    showSignin();
    return;
  }
  if (!mayOpen(currentPage())) {
    location.hash = "#search"; // routes again
    return;
  }
  const page = currentPage();
  $("page-signin").hidden = true;
  $("nav").hidden = false;
  $("session").hidden = false;
  for (const name of PAGES) $(`page-${name}`).hidden = name !== page;
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  document.title = `${page[0].toUpperCase()}${page.slice(1)} — Zarniwoop`;
  if (page === "search" && restoreSearch()) focus = false;
  if (page === "routing") loadRouting();
  if (page === "settings") loadSettings();
  if (page === "tokens") loadTokens();
  if (page === "investigate") openInvestigate();
  extraPages.get(page)?.load();
  if (page !== "tokens") replace($("tokens-new")); // a new token is shown once, then forgotten
  if (focus) (page === "search" ? $("search-query") : $(`${page}-title`)).focus();
}

function showSignin() {
  for (const name of PAGES) $(`page-${name}`).hidden = true;
  $("nav").hidden = true;
  $("session").hidden = true;
  $("page-signin").hidden = false;
  document.title = "Sign in — Zarniwoop";
  $("token").focus();
}

function signOut(message) {
  session.clear();
  caller = null;
  for (const name of Object.values(RESULTS)) replace($(name));
  replace($("tokens-new"));
  showSignin();
  if (message) showError("signin", new ApiError(401, null, message));
  else clearError("signin");
}

// Who the token is (GET /v1/whoami), kept for the header: an operator token reaches every tenant
// although it acts on one scope at a time, and the header says so.
let caller = null;

function tokenBadge(admin) {
  if (caller?.operator) return badge("operator token: every tenant", "warn");
  if (caller?.role === "tenant-admin" || (caller?.tenantAdmin && admin)) return badge(`tenant admin of ${caller.binding.tenant}`, "info");
  return admin ? badge("admin view", "info") : null;
}

// What the routing view tells about the session: the scope, and whether admin-only fields come back.
function applySession(view) {
  applyRole();
  const admin = (view.search || []).some((row) => "lastError" in row);
  replace($("scope-label"),
    h("span", { class: "muted" }, "tenant "), h("strong", {}, view.scope.tenant),
    h("span", { class: "muted" }, " · project "), h("strong", {}, view.scope.project),
    tokenBadge(admin));
  const pinned = $("search-pinned");
  const chosen = pinned.value;
  replace(pinned, h("option", { value: "" }, "Any (the cascade decides)"),
    (view.search || []).map((row) => h("option", { value: row.id },
      `${row.id} (${row.protocol})${row.available ? "" : " — unavailable"}`)));
  pinned.value = [...pinned.options].some((o) => o.value === chosen) ? chosen : "";
}

async function signIn(event) {
  event.preventDefault();
  clearError("signin");
  const token = $("token").value.trim();
  $("token").value = ""; // read once; the page never holds it again
  if (!token) {
    showError("signin", new ApiError(0, null, "token: paste the API token that zarniwoop serve printed"));
    $("token").focus();
    return;
  }
  const scope = {};
  for (const key of ["tenant", "project"]) {
    const value = $(key).value.trim();
    if (value) scope[key] = value;
  }
  try {
    const [view, who] = await busy($("signin-form"), () => Promise.all([
      api("GET", "/v1/_routing", { token, scope }), api("GET", "/v1/whoami", { token, scope })]));
    session.save(token, scope);
    caller = who;
    applySession(view);
    route();
  } catch (error) {
    showError("signin", error.status === 401 ? new ApiError(401, null, `Sign-in failed: ${error.message}`) : error);
    if (error.status === 401) $("token").focus();
  }
}

async function refreshSession() {
  try {
    const [view, who] = await Promise.all([api("GET", "/v1/_routing"), api("GET", "/v1/whoami")]);
    caller = who;
    applySession(view);
  } catch (error) {
    if (error.status === 401) signOut(`Signed out: ${error.message}. Paste a valid token.`);
  }
}

// ---- search ------------------------------------------------------------------------------------

function restoreSearch() {
  const params = new URLSearchParams(window.location.hash.split("?")[1] ?? "");
  const form = $("search-form");
  const query = params.get("q");
  if (!query || query === latestShared) return false;
  form.query.value = query;
  const modality = params.get("m");
  if (modality && [...form.modality.options].some((o) => o.value === modality)) form.modality.value = modality;
  form.requestSubmit();
  return true;
}

let latestShared = null; // the search the address shows already (so going back to it does not re-run it)

function shareSearch(body) {
  latestShared = body.query;
  const params = new URLSearchParams({ q: body.query, m: body.modality });
  history.replaceState(null, "", `#/search?${params}`);
}

function count(value) {
  // A number when it is one; otherwise the text as typed, so that the API names the field.
  const text = String(value).trim();
  if (text === "") return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : text;
}

async function runSearch(event, { fresh = false } = {}) {
  event.preventDefault();
  clearError("search");
  const form = $("search-form");
  const body = { query: form.query.value, modality: form.modality.value, maxResults: count(form.maxResults.value) ?? 10 };
  if (fresh) body.cache = false; // Refresh: ask the providers again, and replace the cached answer
  const expert = {};
  for (const key of ["site", "filetype", "dateFrom", "dateTo", "language", "pinnedProviderId"]) {
    const value = form[key].value.trim();
    if (value) expert[key] = value;
  }
  // "rich": WEB, IMAGE, VIDEO and NEWS at once (research_rich takes no expert options)
  const rich = body.modality === RICH;
  const path = rich ? "/v1/research/rich"
    : Object.keys(expert).length ? "/v1/research/search_expert" : "/v1/research/search";
  const sent = rich ? { query: body.query, maxResults: body.maxResults, cache: body.cache } : { ...body, ...expert, ...searchFilters(form) };
  lastSearch = rich ? null : { path, sent };
  shareSearch(body);
  const current = ticket("search");
  setStatus("search", rich ? "Searching web, images, videos and news…" : "Searching…");
  $("search-results").setAttribute("aria-busy", "true");
  try {
    const result = await busy(form, () => api("POST", path, { body: sent }));
    if (!current()) return;
    if (rich) {
      renderRich(result);
      setStatus("search", richStatus(result, Object.keys(expert).length > 0), { quiet: true });
      return;
    }
    renderSearch(result);
    setStatus("search", result.errorMessage
      ? `No results: ${result.errorMessage}`
      : `${result.returnedCount} hit${result.returnedCount === 1 ? "" : "s"} from ${result.providerInstanceId ?? "no provider"}${result.cached ? ` (cached${result.cachedAt ? `, fetched ${new Date(result.cachedAt).toLocaleString()}` : ""}; Refresh asks again)` : ""}.`,
      { quiet: true });
  } catch (error) {
    if (current()) fail("search", error);
  } finally {
    $("search-results").removeAttribute("aria-busy");
  }
}

function extrasList(hit) {
  const extras = hit.extras || {};
  const known = EXTRAS[hit.modality] || [];
  const seen = new Set(["thumbnailProxy"]); // shown as the thumbnail itself
  const items = [];
  const add = (key, label) => {
    const value = extras[key];
    seen.add(key);
    if (value === null || value === undefined || value === "" || (Array.isArray(value) && !value.length)) return;
    if (typeof value === "object" && !Array.isArray(value)) return;
    let shown;
    if (Array.isArray(value)) shown = value.slice(0, 5).join(", ") + (value.length > 5 ? " et al." : "");
    else if (key === "doi" && !safeUrl(value)) shown = link(`https://doi.org/${value}`, String(value));
    else if (safeUrl(value)) shown = link(value);
    else shown = String(value);
    items.push(h("div", {}, h("dt", {}, label), h("dd", {}, shown)));
  };
  for (const [key, label] of known) add(key, label);
  for (const key of Object.keys(extras)) if (!seen.has(key)) add(key, key.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase());
  return items.length ? h("dl", { class: "extras" }, items) : null;
}

function hitItem(hit, ...more) {
  // Image and video hits: a thumbnail through the server's signed image proxy (the CSP allows
  // images from this origin only; no browser request ever goes to the image host).
  const thumb = thumbnail(hit);
  return h("li", { class: thumb ? "hit with-thumb" : "hit" },
    thumb,
    h("h3", {}, link(hit.url, hit.title || hit.url)),
    h("div", { class: "url" }, hit.url),
    ...more,
    hit.snippet ? h("p", { class: "snippet" }, snippetText(hit)) : null,
    extrasList(hit),
    h("p", { class: "meta" }, `source: ${hit.source ?? "—"} · ${hit.modality}`),
    contentAction(hit));
}

// The local index marks the matched words `**like this**` (for a model reading text); here they
// become <mark>, built as text nodes like everything else, never parsed as markup.
const LOCAL_MODALITIES = new Set(["INTERNAL_DOC", "RAG"]);
function snippetText(hit) {
  if (!LOCAL_MODALITIES.has(hit.modality) || !hit.snippet.includes("**")) return hit.snippet;
  return hit.snippet.split(/\*\*(.+?)\*\*/s).map((part, i) => (i % 2 ? h("mark", {}, part) : part));
}

function thumbnail(hit, className = "thumb") {
  const proxied = (hit.extras || {}).thumbnailProxy;
  if (typeof proxied !== "string" || !proxied.startsWith("/v1/image?")) return null;
  const img = h("img", { class: className, src: proxied, alt: "", loading: "lazy", width: "160" });
  // An image the proxy could not bring (offline: its 502; refused: 403) shows a placeholder, not the
  // browser's broken-image glyph; the <img> stays, hidden, so its address can still be read.
  img.addEventListener("error", () => {
    img.hidden = true;
    img.after(h("div", { class: `${className} no-thumb muted`, role: "img", "aria-label": "No preview" }, "no preview"));
  }, { once: true });
  return img;
}

// ---- load content: a hit's body through the content store (POST /v1/research/content) ----------
// Shown as text only (textContent of a <pre>), in a collapsible region under the hit.

let contentBoxes = 0;

function contentTarget(hit) {
  const content = hit.content || {};
  if (content.inline === "STASH_ON_DEMAND" && content.ref && hit.source) return { ref: `${hit.source}:${content.ref}` };
  return safeUrl(hit.url) ? { url: hit.url } : null;
}

function contentAction(hit) {
  const target = contentTarget(hit);
  if (!target) return null;
  const name = hit.title || hit.url;
  const box = h("div", { class: "loaded", id: `content-${++contentBoxes}` });
  const button = h("button", {
    type: "button", class: "secondary load-content", "aria-controls": box.id, "aria-label": `Load content of ${name}`,
  }, "Load content");
  button.addEventListener("click", () => loadContent(target, name, button, box));
  return h("div", { class: "content-action" }, button, box);
}

async function loadContent(target, name, button, box) {
  if (button.getAttribute("aria-disabled") === "true") return; // still loading (the button keeps the focus)
  button.setAttribute("aria-disabled", "true");
  replace(box, h("p", { class: "muted", role: "status" }, "Loading the content…"));
  try {
    const loaded = await api("POST", "/v1/research/content", { body: target });
    replace(box, loadedView(loaded, name));
  } catch (error) {
    if (error.status === 401) hooks.signOut(`Signed out: ${error.message}. Paste a valid token.`);
    else replace(box, h("p", { class: "error-text", role: "alert" }, `Could not load the content: ${error.message}`));
  } finally {
    button.removeAttribute("aria-disabled");
  }
}

const number = (n) => Number(n ?? 0).toLocaleString("en");

function loadedView(loaded, name) {
  const facts = [
    loaded.mimeType ?? "unknown type",
    `${number(loaded.bytes)} bytes`,
    loaded.truncated ? "cut at research.content.maxBytes" : null,
    loaded.textTruncated ? `showing ${number(loaded.text.length)} of ${number(loaded.textChars)} characters` : null,
  ].filter(Boolean).join(" · ");
  return h("details", { class: "loaded-content", open: true },
    h("summary", {}, `Content (${facts})`),
    loaded.text === null || loaded.text === undefined
      ? h("p", { class: "muted" }, loaded.note ?? "The body is not text.")
      : h("div", { class: "text-box", tabindex: "0", role: "region", "aria-label": `Content of ${name}` },
        h("pre", {}, loaded.text)));
}

const GATE_KIND = { ready: "ok", skipped_cooldown: "warn", skipped_exhausted: "bad", skipped_no_key: "warn" };
const OUTCOME_KIND = { success: "ok", empty: "muted", soft_error: "bad", hard_error: "bad", timeout: "bad", skipped_paced: "warn" };

function attemptsTable(attempts) {
  const rows = attempts.map((a, i) => h("tr", { class: `attempt outcome-${a.outcome}` },
    h("td", {}, String(i + 1)),
    h("td", {}, h("code", {}, a.providerInstanceId)),
    h("td", {}, badge(a.outcome, OUTCOME_KIND[a.outcome] ?? "skip"), a.panic ? badge("panic", "warn") : null),
    h("td", { class: "num" }, `${a.durationMs ?? 0} ms`),
    h("td", {}, a.errorMessage ?? "")));
  return table(null, ["#", "Provider", "Outcome", "Duration", "Detail"], rows, { className: "attempts" });
}

let lastSearch = null; // the request of the results shown: "More results" asks for its next page

function searchFilters(form) {
  // The filters as the API names them; domains typed comma- or space-separated.
  const filters = {};
  for (const key of ["includeDomains", "excludeDomains"]) {
    const domains = form[key].value.split(/[\s,]+/).filter(Boolean);
    if (domains.length) filters[key] = domains;
  }
  for (const key of ["timeRange", "safeSearch", "region"]) {
    const value = form[key].value.trim();
    if (value) filters[key] = value;
  }
  return filters;
}

async function moreResults(button, cursor) {
  // The next page, from the provider that served this one (the cursor pins it); its hits are appended.
  if (!lastSearch) return;
  clearError("search");
  const current = ticket("search");
  try {
    button.disabled = true; // one click, one page
    const result = await api("POST", lastSearch.path, { body: { ...lastSearch.sent, page: cursor } });
    if (!current()) return;
    const list = $("search-results").querySelector("ol.hits");
    for (const hit of result.hits) list.append(hitItem(hit));
    button.replaceWith(moreButton(result));
    setStatus("search", `${result.returnedCount} more hit${result.returnedCount === 1 ? "" : "s"} from ${result.providerInstanceId ?? "no provider"}.`, { quiet: true });
  } catch (error) {
    button.disabled = false;
    if (current()) fail("search", error);
  }
}

function moreButton(result) {
  if (!result.nextPage) return h("p", { class: "hint" }, "No more results from this provider.");
  const button = h("button", { type: "button", class: "secondary", id: "search-more" }, "More results");
  button.addEventListener("click", () => moreResults(button, result.nextPage));
  return button;
}

function renderSearch(result) {
  const summary = h("p", { class: "summary" },
    h("strong", {}, `${result.returnedCount} hit${result.returnedCount === 1 ? "" : "s"}`),
    result.providerInstanceId ? [" from ", h("code", {}, result.providerInstanceId)] : null,
    ` · ${result.modality} · ${result.tier} tier`,
    result.droppedCount ? ` · ${result.droppedCount} dropped` : null,
    result.cached ? [" ", badge("cached", "info")] : null);
  const attempts = result.attempts || [];
  replace($("search-results"),
    summary,
    result.errorMessage ? h("p", { class: "warn-box" }, `No provider answered: ${result.errorMessage}`) : null,
    result.note ? h("p", { class: "note" }, `Note: ${result.note}`) : null,
    (result.ignoredParams || []).length
      ? h("p", { class: "note" }, `Not honoured: ${result.ignoredParams.map((p) => `${p.param} (${p.reason})`).join("; ")}`)
      : null,
    result.hits.length ? h("ol", { class: "hits" }, result.hits.map((hit) => hitItem(hit))) : null,
    result.hits.length && lastSearch ? moreButton(result) : null,
    h("section", { class: "trail", "aria-labelledby": "attempts-title" },
      h("h2", { id: "attempts-title" }, "Attempts"),
      h("p", { class: "hint" },
        attempts.length
          ? "Each candidate the cascade considered, in order: which one answered, and why the others did not."
          : "No provider was asked.",
        result.cached ? " Served from the cache: these are the attempts of the search that filled it." : null),
      attempts.length ? attemptsTable(attempts) : null));
}

// ---- the rich view: WEB, IMAGE, VIDEO and NEWS of one query on one page (research_rich) ----------

const RICH = "rich";
const RICH_TITLES = { WEB: "Web", IMAGE: "Images", VIDEO: "Videos", NEWS: "News" };

function richStatus(rich, expert) {
  const sections = Object.values(rich.results || {});
  const total = sections.reduce((sum, r) => sum + (r.hits || []).length, 0);
  const failed = Object.entries(rich.results || {}).filter(([, r]) => r.errorMessage).map(([m]) => m);
  return `${total} hit${total === 1 ? "" : "s"} across ${sections.length} modalities`
    + (failed.length ? `; no provider answered ${failed.join(", ")}` : "")
    + (expert ? "; expert options do not apply to the rich view" : "") + ".";
}

function renderRich(rich) {
  const entries = Object.entries(rich.results || {});
  const total = entries.reduce((sum, [, r]) => sum + (r.hits || []).length, 0);
  replace($("search-results"),
    h("p", { class: "summary" },
      h("strong", {}, `${total} hit${total === 1 ? "" : "s"}`),
      ` · rich view: ${entries.map(([m]) => m).join(", ")} · up to ${rich.maxResults ?? "?"} per modality`),
    h("div", { class: "rich" }, entries.map(([modality, result]) => richSection(modality, result))));
}

function richSection(modality, result) {
  const id = `rich-${modality.toLowerCase()}`;
  const hits = (result.hits || []).map((hit) => ({ ...hit, modality: hit.modality ?? modality }));
  const attempts = result.attempts || [];
  const failures = attempts.filter((a) => ["soft_error", "hard_error", "timeout"].includes(a.outcome)).length;
  let body = null;
  if (hits.length && modality === "IMAGE") body = h("ul", { class: "thumbs" }, hits.map(thumbCard));
  else if (hits.length) body = h("ol", { class: "hits" }, hits.map((hit) => hitItem(hit)));
  else if (!result.errorMessage) body = h("p", { class: "muted" }, "No hits.");
  return h("section", { class: "rich-section", id, "data-modality": modality, "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title` }, RICH_TITLES[modality] ?? modality),
    h("p", { class: "rich-summary" },
      `${hits.length} hit${hits.length === 1 ? "" : "s"}`,
      result.providerInstanceId ? [" from ", h("code", {}, result.providerInstanceId)] : " — no provider answered",
      result.cached ? [" ", badge("cached", "info")] : null),
    result.errorMessage ? h("p", { class: "warn-box" }, `No provider answered: ${result.errorMessage}`) : null,
    result.note ? h("p", { class: "note" }, `Note: ${result.note}`) : null,
    body,
    attempts.length ? h("details", { class: "trail" },
      h("summary", {}, `Attempts (${attempts.length})`, failures ? ` — ${failures} failed` : null),
      attemptsTable(attempts)) : null);
}

function thumbCard(hit) {
  return h("li", { class: "thumb-card" },
    thumbnail(hit, "thumb") ?? h("div", { class: "no-thumb muted" }, "no preview"),
    h("p", { class: "thumb-title" }, link(hit.url, hit.title || hit.url)),
    h("p", { class: "meta" }, `source: ${hit.source ?? "—"}`),
    contentAction(hit));
}

// ---- routing -----------------------------------------------------------------------------------

async function loadRouting() {
  const current = ticket("routing");
  clearError("routing");
  setStatus("routing", "Loading…");
  try {
    const [view, providers, who] = await busy(null, () => Promise.all([
      api("GET", "/v1/_routing"), api("GET", "/v1/research/providers"), caller ?? api("GET", "/v1/whoami"),
    ]));
    if (!current()) return;
    caller = who;
    applySession(view);
    renderRouting(view, providers.providers || []);
    setStatus("routing", `Updated ${new Date().toLocaleTimeString()}.`);
  } catch (error) {
    if (current()) fail("routing", error);
  }
}

function availability(state) {
  return h("span", { class: "state" }, h("span", { class: `dot dot-${state.toLowerCase()}`, "aria-hidden": "true" }), state);
}

// An instance's state in the words of the providers list (READY, COOLDOWN, DISABLED, …), the same
// on Routing and Settings; the routing view's own flag where the list has no entry for it.
function instanceState(row, entry) {
  return availability(entry?.availability ?? (row?.available ? "READY" : "DISABLED"));
}

// A name and an id that spell the same ("Semantic Scholar", "semanticscholar") are shown once.
const sameName = (a, b) => String(a).toLowerCase().replace(/[^a-z0-9]/g, "") === String(b).toLowerCase().replace(/[^a-z0-9]/g, "");

function providerRow(row, entry, admin) {
  const cooldowns = entry?.cooldowns || [];
  return h("tr", { class: entry && !entry.enabled ? "off" : null, "data-instance": row.id },
    h("td", {}, instanceState(row, entry),
      row.statusText ? h("div", { class: "muted status-text" }, row.statusText) : null),
    h("th", { scope: "row" }, h("code", {}, row.id),
      h("div", { class: "muted" }, entry?.displayName ?? row.protocol,
        entry && !sameName(entry.displayName, row.protocol) && !sameName(row.id, row.protocol) ? ` (${row.protocol})` : null)),
    h("td", {}, (entry?.modalities || []).join(" ")),
    h("td", {}, row.keyable ? "yes" : badge("no key", "warn"),
      admin && entry?.keySource ? h("div", { class: "muted" }, entry.keySource) : null),
    h("td", {}, row.selected ? [badge("selected", "ok"), h("div", { class: "muted" }, row.selectedFor.join(" "))] : ""),
    h("td", {}, row.cooldownUntil ? [when(row.cooldownUntil),
      cooldowns.map((c) => h("div", { class: "muted" }, `${c.modality}: ${c.reason ?? "cooling down"}`))] : ""),
    h("td", {}, quota(row.quota)),
    h("td", {}, REACHABLE[row.reachable] ?? "—"),
    admin ? h("td", { class: "error-text" }, row.lastError ?? "") : null);
}

function renderRouting(view, providers) {
  const byId = Object.fromEntries(providers.map((p) => [p.id, p]));
  const rows = view.search || [];
  const admin = rows.some((row) => "lastError" in row);
  const off = rows.filter((row) => byId[row.id] && byId[row.id].enabled === false);
  const showOff = $("routing-show-off")?.checked ?? false;
  const shown = showOff ? rows : rows.filter((row) => !off.includes(row));
  const headers = ["State", "Instance", "Modalities", "Key", "Selected", "Cooldown until", "Quota", "Reachable"];
  if (admin) headers.push("Last error");
  const toggle = off.length ? h("label", { class: "toggle" },
    h("input", { type: "checkbox", id: "routing-show-off", checked: showOff }),
    ` Show the ${off.length} switched-off instance${off.length === 1 ? "" : "s"}`) : null;

  const cascades = Object.entries(view.searchCascades || {}).map(([modality, steps]) => h("tr", {},
    h("th", { scope: "row" }, modality),
    h("td", {}, h("ol", { class: "cascade" }, steps.map((step) => h("li", {},
      h("code", {}, step.id), " ",
      badge(step.gate, GATE_KIND[step.gate] ?? "skip"),
      step.selected ? [" ", badge("selected", "ok")] : null,
      step.panic ? [" ", badge("panic", "warn")] : null))))));

  const llm = view.llm || {};
  const target = (r) => r.error ? h("span", { class: "error-text" }, r.error)
    : [h("code", {}, r.model ?? ""), h("span", { class: "muted" },
      ` via ${r.displayName && !sameName(r.displayName, r.instance) ? `${r.displayName} (${r.instance})` : r.displayName ?? r.instance ?? r.providerType ?? "?"}`)];
  // No LLM at all is a choice, not a fault: research runs its built-in strategies then.
  const unset = llm.default?.code === "no_default";
  const llmBlock = h("section", { "aria-labelledby": "llm-title" },
    h("h2", { id: "llm-title" }, "LLM routing"),
    unset
      ? h("p", { class: "hint", id: "llm-default" }, h("strong", {}, "Default model: "),
        "none configured. Investigate plans and judges with its built-in strategies; to use an LLM, set ",
        h("code", {}, "ai.default.provider"), " and ", h("code", {}, "ai.default.model"), ".")
      : h("p", { id: "llm-default" }, h("strong", {}, "Default model: "), llm.default ? target(llm.default) : "—"),
    (llm.aliases || []).length
      ? table(null, ["Alias", "Target", "Resolves to"], llm.aliases.map((a) => [a.alias, a.target ?? "", h("span", {}, target(a))]))
      : h("p", { class: "muted" }, "No model aliases are configured."));

  const known = new Set(["scope", "search", "searchCascades", "tiers", "llm"]);
  replace($("routing-view"),
    h("section", { "aria-labelledby": "providers-title" },
      h("h2", { id: "providers-title" }, "Search providers"),
      h("p", { class: "hint" }, "Per instance: its state now, whether a key resolves, which modalities pick it, its cooldown, quota and last outcome."),
      toggle,
      table(null, headers, shown.map((row) => providerRow(row, byId[row.id], admin)), { className: "providers" })),
    h("section", { "aria-labelledby": "cascades-title" },
      h("h2", { id: "cascades-title" }, "Cascade per modality"),
      h("p", { class: "hint" }, "The order the dispatcher walks for each modality, with each candidate's gate right now."),
      cascades.length ? table(null, ["Modality", "Candidates in order"], cascades, { className: "cascades" })
        : h("p", { class: "muted" }, "No modality has a candidate.")),
    llmBlock,
    Object.entries(view).filter(([key]) => !known.has(key)).map(([key, value]) => genericSection(key, value)));
  const box = $("routing-show-off");
  if (box) {
    box.addEventListener("change", () => {
      renderRouting(view, providers);
      $("routing-show-off").focus(); // the view was rebuilt: keep the keyboard where it was
    });
  }
}

// ---- investigate -------------------------------------------------------------------------------

// The steps stream in (POST with `Accept: text/event-stream`, read with fetch: an EventSource can
// neither POST nor send the Authorization header) into an aria-live list; the JSON call is the
// fallback when no stream comes through.

class StreamBroken extends Error {}
let investigation = null; // the AbortController of the investigation in flight

async function runInvestigate(event) {
  event.preventDefault();
  clearError("investigate");
  const form = $("investigate-form");
  const body = { question: form.question.value, depth: count(form.depth.value) ?? 0 };
  const max = count(form.maxResults.value);
  if (max !== undefined) body.maxResults = max;
  const current = ticket("investigate");
  investigation?.abort(); // a newer question: the server stops the older research
  const controller = new AbortController();
  investigation = controller;
  const live = liveSteps();
  replace($("investigate-results"), live.section);
  setStatus("investigate", "Investigating… this runs several searches.");
  try {
    const ranked = await busy(form, async () => {
      if (form.background.checked) return investigateTask(body, live, current);
      try {
        return await investigateStream(body, (step) => { if (current()) live.add(step); }, controller.signal);
      } catch (error) {
        if (!(error instanceof StreamBroken) || !current()) throw error;
        live.note(`Live steps are unavailable (${error.message}); waiting for the whole answer.`);
        return api("POST", "/v1/research/investigate", { body });
      }
    });
    if (current()) showInvestigation(ranked, live);
  } catch (error) {
    if (current()) fail("investigate", error);
  } finally {
    if (investigation === controller) investigation = null;
  }
}

function showInvestigation(ranked, live) {
  const searches = ranked.searches || [];
  const failed = searches.filter((s) => s.errorMessage);
  if (searches.length && failed.length === searches.length) {
    // Nothing could be searched: that is an error, not an honest "no relevant hits".
    fail("investigate", new Error(`Every search failed: ${failed.map((s) => `${s.modality} “${s.query}”: ${s.errorMessage}`).join("; ")}`));
    return;
  }
  renderInvestigation(ranked, live.done());
  setStatus("investigate", `${ranked.hits.length} ranked hit${ranked.hits.length === 1 ? "" : "s"}, ${ranked.dropped.length} dropped.`, { quiet: true });
}

// "Run as a task": the server runs the investigation whatever becomes of this page (`Prefer:
// respond-async`, docs/tasks.md). Its id stays in this tab's sessionStorage until it ends, so a
// reload follows it again; the page lists this token's tasks, to cancel one or show its answer.
const TASK_KEY = "zarniwoop.investigateTask";
const TASK_POLL_MS = 1000;
let followed = null; // the id of the task this page is following

async function investigateTask(body, live, current) {
  const task = await api("POST", "/v1/research/investigate", { body, headers: { Prefer: "respond-async" } });
  sessionStorage.setItem(TASK_KEY, task.taskId);
  loadTasks();
  return followTask(task.taskId, live, current);
}

// Poll the task until it ends; each new step it reports joins the live list.
async function followTask(id, live, current) {
  followed = id;
  let seen = 0;
  try {
    for (;;) {
      const task = await api("GET", `/v1/tasks/${encodeURIComponent(id)}`);
      if (!current()) return null;
      if (task.progress && task.progress.done > seen) { seen = task.progress.done; live.add(task.progress); }
      if (task.status !== "working") {
        sessionStorage.removeItem(TASK_KEY);
        loadTasks();
        if (task.status === "completed") return task.result;
        throw new Error(task.status === "cancelled" ? "The task was cancelled." : `The task failed: ${task.error}`);
      }
      await new Promise((resolve) => setTimeout(resolve, TASK_POLL_MS));
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) sessionStorage.removeItem(TASK_KEY); // expired
    throw error;
  } finally {
    if (followed === id) followed = null;
  }
}

// The Investigate page opened (a reload lands here too): list the tasks, follow the one left running.
function openInvestigate() {
  loadTasks();
  const id = sessionStorage.getItem(TASK_KEY);
  if (!id || followed === id || investigation) return;
  const current = ticket("investigate");
  const live = liveSteps();
  replace($("investigate-results"), live.section);
  setStatus("investigate", "Following the investigation that was running…");
  followTask(id, live, current)
    .then((ranked) => { if (ranked && current()) showInvestigation(ranked, live); })
    .catch((error) => { if (current()) fail("investigate", error); });
}

async function loadTasks() {
  let tasks;
  try {
    ({ tasks } = await api("GET", "/v1/tasks"));
  } catch {
    return; // the list is secondary: the page's own request says what failed
  }
  replace($("investigate-tasks"), tasks.length
    ? table("Tasks", ["Task", "Status", "Progress", "Started", "Action"], tasks.map((t) => [
      h("code", {}, t.taskId.slice(0, 8)),
      badge(t.status, t.status === "failed" ? "bad" : "info"),
      t.error || (t.progress ? t.progress.message : "—"),
      t.createdAt,
      t.status === "working"
        ? h("button", { type: "button", class: "secondary", "data-cancel": t.taskId, "aria-label": `Cancel task ${t.taskId.slice(0, 8)}` }, "Cancel")
        : t.status === "completed"
          ? h("button", { type: "button", class: "secondary", "data-show": t.taskId, "aria-label": `Show task ${t.taskId.slice(0, 8)}` }, "Show")
          : "",
    ]), { className: "tasks" })
    : h("p", { class: "muted" }, "No tasks yet."));
}

async function taskAction(event) {
  const button = event.target.closest("button");
  if (!button) return;
  clearError("investigate");
  try {
    if (button.dataset.cancel) {
      await api("DELETE", `/v1/tasks/${encodeURIComponent(button.dataset.cancel)}`);
      loadTasks();
    } else if (button.dataset.show) {
      const current = ticket("investigate");
      const task = await api("GET", `/v1/tasks/${encodeURIComponent(button.dataset.show)}`);
      if (current() && task.result) showInvestigation(task.result, liveSteps());
    }
  } catch (error) {
    fail("investigate", error);
  }
}

// The list the steps arrive in; `done()` hands it over, closed, to the final view.
function liveSteps() {
  const list = h("ol", { class: "steps", id: "investigate-steps", "aria-live": "polite", "aria-relevant": "additions" });
  const meter = h("progress", { max: 1, value: 0, "aria-label": "Investigation progress" });
  const section = h("section", { class: "live-steps", "aria-labelledby": "investigate-steps-title" },
    h("h2", { id: "investigate-steps-title" }, "Steps"), meter, list);
  return {
    section,
    add(step) {
      if (step.total) { meter.max = step.total; meter.value = Math.min(step.done, step.total); }
      const detail = step.detail || {};
      list.append(h("li", { class: `step step-${step.step}`, "data-step": step.step },
        badge(step.step, step.step === "search" && !detail.providerInstanceId ? "bad" : "info"), " ",
        // "search 1/4: WEB via sx, 2 hits" under a "search" badge: the name once is enough
        h("span", { class: "step-message" }, step.message.startsWith(`${step.step} `) ? step.message.slice(step.step.length + 1) : step.message),
        detail.query ? h("span", { class: "muted" }, ` — “${detail.query}”`) : null));
    },
    note(text) { list.append(h("li", { class: "step step-note muted" }, text)); },
    done() {
      list.removeAttribute("aria-live");
      return list.children.length ? list : null;
    },
  };
}

async function investigateStream(body, onStep, signal) {
  const url = new URL("/v1/research/investigate", window.location.origin);
  for (const [key, value] of Object.entries(session.scope)) if (value) url.searchParams.set(key, value);
  let response;
  try {
    response = await fetch(url, {
      method: "POST", body: JSON.stringify(body), signal,
      headers: { Accept: "text/event-stream", "Content-Type": "application/json", Authorization: `Bearer ${session.token}` },
      cache: "no-cache", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch {
    throw new StreamBroken("the stream could not be opened");
  }
  if (!response.ok) { // a refusal before the research began (401, 422 naming the field, …): no fallback
    let data = null;
    try { data = await response.json(); } catch { data = null; }
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.field || null, error.message || `the server answered HTTP ${response.status}`);
  }
  if (!(response.headers.get("content-type") || "").startsWith("text/event-stream") || !response.body) {
    throw new StreamBroken("the server sent no event stream");
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      let chunk;
      try { chunk = await reader.read(); } catch { throw new StreamBroken("the stream broke off"); }
      if (chunk.done) break;
      buffer = (buffer + chunk.value).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event?.name === "progress") onStep(event.data);
        else if (event?.name === "result") return event.data;
        else if (event?.name === "error") {
          const error = (event.data && event.data.error) || {};
          throw new ApiError(400, error.field || null, error.message || "the investigation failed");
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  throw new StreamBroken("the stream ended before the result");
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  try { return { name, data: JSON.parse(data.join("\n")) }; } catch { return null; }
}

function renderInvestigation(ranked, steps = null) {
  const strategies = strategyLine(ranked.strategies);
  const usage = ranked.usage || {};
  const hits = ranked.hits.map((item) => {
    const finders = [...new Set((item.sources || []).map((s) => s.providerInstanceId))];
    return hitItem(item.hit,
      h("p", { class: "score" },
        badge(`score ${Number(item.score).toFixed(2)}`, "info"),
        ` relevance ${Number(item.relevanceScore).toFixed(2)} · affinity ${item.affinity} · found by `,
        finders.map((f, i) => [i ? ", " : "", h("code", {}, f)])),
      item.reason ? h("p", { class: "reason" }, h("strong", {}, "Why: "), item.reason) : null);
  });
  const plan = ranked.plan || {};
  replace($("investigate-results"),
    h("p", { class: "summary" },
      h("strong", {}, `${ranked.hits.length} ranked hit${ranked.hits.length === 1 ? "" : "s"}`),
      ` · ${ranked.dropped.length} dropped · ${strategies}`,
      usage.durationMs !== undefined ? ` · ${usage.durationMs} ms` : null,
      ranked.refineDepth ? ` · refined ${ranked.refineDepth}×` : null),
    ranked.rationale ? h("p", { class: "note" }, h("strong", {}, "Rationale: "), ranked.rationale) : null,
    hits.length ? h("ol", { class: "hits" }, hits) : h("p", { class: "warn-box" }, "No relevant hits."),
    h("section", { "aria-labelledby": "dropped-title" },
      h("h2", { id: "dropped-title" }, `Dropped (${ranked.dropped.length})`),
      ranked.dropped.length
        ? h("ul", { class: "dropped" }, ranked.dropped.map((d) => h("li", {}, link(d.hit.url, d.hit.title || d.hit.url), " — ", h("span", { class: "reason" }, d.reason))))
        : h("p", { class: "muted" }, "Nothing was dropped.")),
    h("section", { "aria-labelledby": "plan-title" },
      h("h2", { id: "plan-title" }, "Plan"),
      h("p", {}, h("strong", {}, "Strategy: "), plan.strategy ?? "—", plan.rationale ? ` — ${plan.rationale}` : ""),
      table(null, ["Planned query", "Modality", "Source affinity"], (plan.searches || []).map((s) => [
        s.query, s.modality, Object.entries(s.sourceAffinity || {}).map(([id, v]) => `${id} ${v}`).join(", "),
      ])),
      h("h3", {}, "Searches run"),
      table(null, ["Query", "Modality", "Provider", "Hits", "Error"], (ranked.searches || []).map((s) => [
        s.query, s.modality, s.providerInstanceId ? h("code", {}, s.providerInstanceId) : "—",
        String(s.hits ?? 0) + (s.cached ? " (cached)" : ""), s.errorMessage ?? "",
      ]))),
    steps ? h("details", { class: "steps-log" }, h("summary", {}, `Steps (${steps.children.length})`), steps) : null);
}

// ---- settings ----------------------------------------------------------------------------------
// One form per endpoint instance, shaped by its protocol's setting form; the routing order per
// modality as a list to reorder. Save sends only what changed, as one all-or-nothing PUT batch.

const ENDPOINT_PROTOCOL = /^research\.endpoint\.([^.]+)\.protocol$/;
const INPUT_TYPES = { int: "number", number: "number", url: "url", email: "email", password: "password", string: "text" };
let fieldCount = 0;

async function loadSettings(event) {
  event?.preventDefault();
  clearError("settings");
  const current = ticket("settings");
  setStatus("settings", "Loading…");
  const level = $("settings-level").value;
  try {
    const [forms, values, view, providers] = await busy($("settings-form"), () => Promise.all([
      api("GET", "/v1/setting-forms"), api("GET", "/v1/settings", { params: { level } }), api("GET", "/v1/_routing"),
      api("GET", "/v1/research/providers")]));
    if (!current()) return;
    renderSettings(forms.forms, values.settings, view, providers.providers || []);
    setStatus("settings", `Settings of ${level} level (tenant ${values.scope.tenant}, project ${values.scope.project}).`);
  } catch (error) {
    if (current()) fail("settings", error);
  }
}

function settingInput(key, field, row) {
  const id = `setting-${++fieldCount}`;
  const hint = `${id}-hint`;
  const common = { id, name: key, "data-field": key, "aria-describedby": field.help || field.secret ? hint : null };
  let input;
  if (field.type === "bool") {
    const on = String(row?.value ?? field.default ?? false) === "true";
    input = h("input", { ...common, type: "checkbox", checked: on, "data-initial": String(on) });
  } else if (field.secret) {
    input = h("input", { ...common, type: "password", autocomplete: "new-password", spellcheck: "false", "data-initial": "" });
  } else {
    const value = row?.value === undefined || row?.value === null ? "" : String(row.value);
    input = h("input", {
      ...common, type: INPUT_TYPES[field.type] ?? "text", value, "data-initial": value, spellcheck: "false",
      step: field.type === "number" ? "any" : field.type === "int" ? "1" : null,
    });
  }
  const state = field.secret ? h("span", { class: "key-state" }, row?.set ? "A key is set; type a new one to replace it. " : "No key is set. ") : null;
  const help = field.help || state ? h("p", { class: "hint", id: hint }, state, field.help ?? "") : null;
  const label = h("label", { for: id }, field.label ?? field.key);
  return h("div", { class: field.type === "bool" ? "field check" : "field" },
    field.type === "bool" ? [input, " ", label] : [label, input], help);
}

function instanceForm(id, protocol, form, rows, state) {
  const fields = (form?.fields || []).map((field) => {
    const key = `research.endpoint.${id}.${field.key}`;
    return settingInput(key, field, rows[key]);
  });
  return h("details", { class: "instance", "data-instance": id },
    h("summary", {}, h("code", {}, id), sameName(id, form?.title ?? protocol) ? " " : ` — ${form?.title ?? protocol} `, state),
    h("div", { class: "fields" }, fields.length ? fields : h("p", { class: "muted" }, `No form for protocol ${protocol}.`)));
}

function moveItem(li, step) {
  const list = li.parentElement;
  const target = step < 0 ? li.previousElementSibling : li.nextElementSibling?.nextElementSibling ?? null;
  if (step < 0 && !target) return;
  if (step > 0 && !li.nextElementSibling) return;
  list.insertBefore(li, target);
  labelOrder(list);
  li.querySelector(step < 0 ? "button.up" : "button.down")?.focus();
}

function labelOrder(list) {
  [...list.children].forEach((li, i) => {
    li.querySelector(".role").textContent = i === 0 ? "default" : "fallback";
  });
}

// A cascade step the settings name (`research.default.*` or `.fallback.*`), as opposed to one that
// stands where the endpoint order puts it.
const EXPLICIT = new Set(["default", "fallback"]);

// The order editor lists what the dispatcher would try: a keyed provider without a key is skipped
// at no cost wherever it stands, so unless the settings name it, it is shown apart and never
// written. `data-implicit` keeps the endpoint order of the unnamed ones, so Save writes only
// what the new order needs (`orderWrites`).
function orderEditor(modality, steps) {
  const setting = modality.toLowerCase();
  const unusable = steps.filter((s) => s.gate === "skipped_no_key" && !EXPLICIT.has(s.place));
  const shown = steps.filter((s) => !unusable.includes(s));
  if (shown.length < 2) return null;
  const ids = shown.map((s) => s.id);
  const list = h("ol", {
    class: "order", "data-field": `research.fallback.${setting}`, "data-default-key": `research.default.${setting}`,
    "data-initial": ids.join(","), tabindex: "-1", "aria-label": `${modality} order`,
    "data-default": shown.find((s) => s.place === "default")?.id ?? "",
    "data-fallbacks": shown.filter((s) => s.place === "fallback").map((s) => s.id).join(","),
    "data-implicit": shown.filter((s) => !EXPLICIT.has(s.place)).map((s) => s.id).join(","),
  }, shown.map(({ id, gate }) => {
    const li = h("li", { "data-id": id }, h("code", {}, id), " ", h("span", { class: "role muted" }),
      h("span", { class: "moves" },
        h("button", { type: "button", class: "secondary up", "aria-label": `Move ${id} up in ${modality}` }, "↑"),
        h("button", { type: "button", class: "secondary down", "aria-label": `Move ${id} down in ${modality}` }, "↓")),
      gate === "skipped_no_key" ? badge("no key", "warn") : null);
    li.querySelector("button.up").addEventListener("click", () => moveItem(li, -1));
    li.querySelector("button.down").addEventListener("click", () => moveItem(li, 1));
    return li;
  }));
  labelOrder(list);
  return h("div", { class: "modality", "data-field": `research.default.${setting}`, tabindex: "-1" },
    h("h3", {}, modality), list,
    unusable.length ? h("p", { class: "hint" }, `Skipped until a key is set, so not in this order: ${unusable.map((s) => s.id).join(", ")}.`) : null);
}

// The fewest settings that make the dispatcher walk `ids`: a default and fallbacks naming the
// shortest head of the order after which the unnamed endpoints follow in their own order anyway.
// Whatever the settings named before stays named; a key already holding its value is not written.
function orderWrites(list) {
  const ids = [...list.children].map((li) => li.dataset.id);
  const split = (text) => text ? text.split(",") : [];
  const implicit = split(list.dataset.implicit);
  const named = new Set([list.dataset.default, ...split(list.dataset.fallbacks)].filter(Boolean));
  const lastNamed = Math.max(-1, ...ids.map((id, i) => named.has(id) ? i : -1));
  let head = ids.length;
  for (let k = lastNamed + 1; k <= ids.length; k++) {
    const rest = implicit.filter((id) => !ids.slice(0, k).includes(id));
    if (rest.join(",") === ids.slice(k).join(",")) { head = k; break; }
  }
  const out = {};
  const [first, ...others] = ids.slice(0, head);
  if (first !== undefined && first !== list.dataset.default) out[list.dataset.defaultKey] = first;
  if (others.join(",") !== list.dataset.fallbacks) out[list.dataset.field] = others.join(",");
  return out;
}

function renderSettings(forms, settings, view, providers) {
  const byProtocol = Object.fromEntries(forms.map((f) => [f.protocol, f]));
  const routed = Object.fromEntries((view.search || []).map((r) => [r.id, r]));
  const listed = Object.fromEntries(providers.map((p) => [p.id, p]));
  const rows = Object.fromEntries(settings.map((r) => [r.key, r]));
  const instances = settings.map((r) => [r.key.match(ENDPOINT_PROTOCOL), r]).filter(([m]) => m)
    .map(([m, r]) => [m[1], String(r.value)]);
  const orders = Object.entries(view.searchCascades || {}).map(([modality, steps]) => orderEditor(modality, steps))
    .filter(Boolean);
  replace($("settings-view"),
    h("section", { "aria-labelledby": "settings-providers-title" },
      h("h2", { id: "settings-providers-title" }, "Search providers"),
      h("p", { class: "hint" }, "One form per instance, shaped by its protocol."),
      instances.map(([id, protocol]) => instanceForm(id, protocol, byProtocol[protocol], rows, instanceState(routed[id], listed[id])))),
    h("section", { "aria-labelledby": "settings-routing-title" },
      h("h2", { id: "settings-routing-title" }, "Routing order per modality"),
      h("p", { class: "hint" }, "The first is the modality's default, the others its fallbacks, tried in this order."),
      orders.length ? orders : h("p", { class: "muted" }, "No modality has more than one candidate.")));
}

function changedSettings() {
  const set = {};
  const remove = [];
  for (const input of document.querySelectorAll("#settings-view input[data-field]")) {
    const key = input.dataset.field;
    if (input.type === "checkbox") {
      if (String(input.checked) !== input.dataset.initial) set[key] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === input.dataset.initial) continue;
    if (text === "") remove.push(key);
    else if (input.type === "number" && text !== "" && Number.isFinite(Number(text))) set[key] = Number(text);
    else set[key] = text;
  }
  for (const list of document.querySelectorAll("#settings-view ol.order")) {
    const ids = [...list.children].map((li) => li.dataset.id);
    if (ids.join(",") === list.dataset.initial) continue;
    Object.assign(set, orderWrites(list));
  }
  return { set, delete: remove };
}

async function saveSettings(event) {
  event.preventDefault();
  clearError("settings");
  const batch = { level: $("settings-level").value, ...changedSettings() };
  if (!Object.keys(batch.set).length && !batch.delete.length) {
    setStatus("settings", "Nothing changed.");
    return;
  }
  // Switching a provider off is the one change here that stops searches working: ask first.
  const off = Object.entries(batch.set).filter(([key, value]) => value === false && /^research\.endpoint\.[^.]+\.enabled$/.test(key))
    .map(([key]) => key.split(".")[2]);
  if (off.length && !window.confirm(`Switch off ${off.join(", ")} at ${batch.level} level? Searches there stop asking ${off.length === 1 ? "it" : "them"} until switched on again.`)) {
    setStatus("settings", "Nothing saved.");
    return;
  }
  setStatus("settings", "Saving…");
  try {
    const answer = await busy($("settings-form"), () => api("PUT", "/v1/settings", { body: batch }));
    await loadSettings();
    setStatus("settings", `Saved: ${answer.written} setting${answer.written === 1 ? "" : "s"} written.`);
  } catch (error) {
    setStatus("settings", "");
    if (error.status === 401) signOut(`Signed out: ${error.message}. Paste a valid token.`);
    else showError("settings", error); // the form stays as typed, the bad field marked
  }
}

// ---- API tokens --------------------------------------------------------------------------------
// A new token is shown once, in a read-only field with a copy button; the list shows ids only.

async function loadTokens() {
  const current = ticket("tokens");
  try {
    const [answer, who] = await Promise.all([api("GET", "/v1/tokens"), caller ?? api("GET", "/v1/whoami")]);
    caller = who;
    if (current()) renderTokens(answer.tokens, who);
  } catch (error) {
    if (current()) fail("tokens", error);
  }
}

// Whose tokens the list holds: an operator token's reach is every tenant, a tenant token's its
// tenant, a project token's its project — said in the heading, and a filter narrows it to one tenant.
function reachWords(who) {
  if (!who) return "within this token's reach";
  const { tenant, project } = who.binding;
  if (tenant === "*") return "of every tenant (an operator token)";
  return project === "*" ? `of tenant ${tenant}` : `of ${tenant}/${project}`;
}

function renderTokens(items, who) {
  const tenants = [...new Set(items.map((t) => t.tenant))].sort();
  const previous = $("tokens-filter")?.value ?? "";
  const chosen = tenants.includes(previous) ? previous : "";
  const filter = tenants.length > 1 || chosen ? h("div", { class: "field" },
    h("label", { for: "tokens-filter" }, "Show tenant"),
    h("select", { id: "tokens-filter" }, h("option", { value: "" }, `every tenant (${tenants.length})`),
      tenants.map((name) => h("option", { value: name, selected: name === chosen }, name)))) : null;
  const shown = chosen ? items.filter((t) => t.tenant === chosen) : items;
  const rows = shown.map((t) => {
    const revoke = h("button", { type: "button", class: "secondary", "aria-label": `Revoke ${t.id}` }, "Revoke");
    revoke.addEventListener("click", () => revokeToken(t));
    return h("tr", { "data-token": t.id },
      h("th", { scope: "row" }, h("code", {}, t.id)), h("td", {}, t.tenant), h("td", {}, t.project),
      h("td", {}, t.role), h("td", {}, t.label ?? ""), h("td", {}, when(t.createdAt)), h("td", {}, revoke));
  });
  replace($("tokens-view"), h("section", { "aria-labelledby": "tokens-list-title" },
    h("h2", { id: "tokens-list-title" }, `Active tokens ${reachWords(who)} (${items.length})`),
    filter,
    table(chosen ? `Tokens of tenant ${chosen} (${shown.length})` : null,
      ["Id", "Tenant", "Project", "Role", "Label", "Created", ""], rows, { className: "tokens-list" })));
  $("tokens-filter")?.addEventListener("change", () => {
    renderTokens(items, who);
    $("tokens-filter").focus();
  });
}

async function createToken(event) {
  event.preventDefault();
  clearError("tokens");
  const form = $("tokens-form");
  const body = { role: form.role.value };
  for (const key of ["tenant", "project", "label"]) {
    const value = form[key].value.trim();
    if (value) body[key] = value;
  }
  try {
    const made = await busy(form, () => api("POST", "/v1/tokens", { body }));
    const value = h("input", { id: "tokens-new-value", type: "text", readonly: true, value: made.token, spellcheck: "false" });
    const copy = h("button", { type: "button", class: "secondary" }, "Copy");
    copy.addEventListener("click", async () => {
      value.select();
      try { await navigator.clipboard.writeText(made.token); } catch { document.execCommand("copy"); }
      setStatus("tokens", "Copied to the clipboard.");
    });
    replace($("tokens-new"), h("div", { class: "note new-token" },
      h("label", { for: "tokens-new-value" }, `New token ${made.id} (${made.role}, ${made.tenant}/${made.project}) — copy it now, it is not shown again`),
      h("div", { class: "row" }, value, copy)));
    setStatus("tokens", `Created ${made.id}.`);
    await loadTokens();
  } catch (error) {
    if (error.status === 401) fail("tokens", error);
    else showError("tokens", error);
  }
}

async function revokeToken(t) {
  clearError("tokens");
  const id = t.id;
  if (!window.confirm(`Revoke ${id} (${t.role} of ${t.tenant}/${t.project}${t.label ? `, “${t.label}”` : ""})? Whatever uses it is refused from now on; this cannot be undone.`)) {
    setStatus("tokens", `Nothing revoked; ${id} still works.`);
    return;
  }
  try {
    await api("DELETE", `/v1/tokens/${encodeURIComponent(id)}`);
    setStatus("tokens", `Revoked ${id}.`);
    await loadTokens();
  } catch (error) {
    fail("tokens", error);
  }
}

// ---- theme -------------------------------------------------------------------------------------

function applyTheme(theme) {
  const chosen = THEMES.includes(theme) ? theme : "system";
  if (chosen === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = chosen;
  $("theme").textContent = `Theme: ${chosen}`;
  return chosen;
}

function cycleTheme() {
  const next = THEMES[(THEMES.indexOf(localStorage.getItem(THEME_KEY) ?? "system") + 1) % THEMES.length];
  localStorage.setItem(THEME_KEY, applyTheme(next));
}

// ---- start -------------------------------------------------------------------------------------

function start() {
  hooks.signOut = signOut;
  applyTheme(localStorage.getItem(THEME_KEY));
  $("theme").addEventListener("click", cycleTheme);
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", () => signOut());
  $("search-form").addEventListener("submit", runSearch);
  $("investigate-form").addEventListener("submit", runInvestigate);
  $("investigate-tasks").addEventListener("click", taskAction);
  $("search-refresh").addEventListener("click", (event) => runSearch(event, { fresh: true }));
  $("routing-refresh").addEventListener("click", loadRouting);
  $("settings-level-form").addEventListener("submit", loadSettings);
  $("settings-form").addEventListener("submit", saveSettings);
  $("tokens-form").addEventListener("submit", createToken);
  window.addEventListener("hashchange", () => route());
  if (session.token) {
    route({ focus: false });
    if (currentPage() !== "routing") refreshSession(); // the routing page loads the same view itself
  } else {
    showSignin();
  }
  document.body.dataset.ready = "true"; // the browser tests wait for this
}

start();
