// Models: the model catalog of the signed-in scope (GET /v1/ai-models) — every model per provider
// instance, its merged fields and, under each value, the layer that set it (one of the scope's seven:
// bundled, then system, tenant and project, each auto then manual). The seed's two actions sit on
// top: Refresh catalog (POST /v1/admin/ai-models/refresh) and Discover AI Models
// (POST /v1/admin/ai-models/discover); their counters are shown in the page's status region.

import { $, h, api, badge, busy, clearError, fail, replace, setStatus, showError, table, ticket, registerPage } from "../core.js";

const PAGE = "models";

const num = (value) => (value === null || value === undefined ? "—" : Number(value).toLocaleString("en-US"));
const plural = (n, one, many = `${one}s`) => `${num(n)} ${n === 1 ? one : many}`;

// A layer's label (`acme/ui manual`) by its place among the seven: `project manual`; the legend
// above the tables says which scope each place is.
function place(label) {
  const match = /^(\S+)\/(\S+) (auto|manual)$/.exec(label);
  if (!match) return label === "model-quirks.yaml" ? "quirks" : label;
  const [, tenant, project, kind] = match;
  return `${tenant === "_system" ? "system" : project === "_tenant" ? "tenant" : "project"} ${kind}`;
}

// The value of a field with the layer that set it beneath (read as "set by …" to a screen reader).
function cell(value, layer, className = null) {
  return h("td", { class: className }, value ?? "—",
    layer ? h("span", { class: "layer", title: `set by ${layer}` }, h("span", { class: "sr-only" }, "set by "), place(layer)) : null);
}

function price(model, key) {
  const layers = model.fieldLayers;
  const value = model.pricing ? model.pricing[key] : null;
  const layer = layers[`pricing.${key}`] ?? layers.pricing ?? null;
  if (!model.pricing) return cell("unpriced", layer);
  return cell(value === null || value === undefined ? "—" : `${value} ${model.pricing.currency}`, layer);
}

function modelRow(m) {
  const f = m.fieldLayers;
  return h("tr", { "data-model": `${m.instance}/${m.wireName}` },
    h("th", { scope: "row" }, h("code", {}, m.wireName), m.displayName ? h("span", { class: "layer" }, m.displayName) : null),
    cell(num(m.contextWindowTokens), f.contextWindowTokens),
    cell(num(m.defaultMaxOutputTokens), f.defaultMaxOutputTokens),
    cell(m.size, f.size),
    cell(m.kind, f.kind),
    cell(m.capabilities.length ? m.capabilities.join(", ") : "—", f.capabilities, "wrap"),
    price(m, "inputPerMTok"),
    price(m, "outputPerMTok"),
    cell(m.messageParser, f.messageParser),
    cell(m.stripThinkTags ? "stripped" : "kept", f.stripThinkTags),
    h("td", { class: "wrap" }, m.layers.map(place).join(" → ")));
}

// An instance as people know it: `ai.provider.<instance>.displayName` when set, with the id beside it.
const named = (instance, displayName) => (displayName ? `${displayName} — ${instance}` : instance);

const HEADERS = ["Model", "Context window", "Max output", "Size", "Kind", "Capabilities", "Input / 1M", "Output / 1M", "Message parser", "Think tags", "Documents from"];

function render(answer) {
  const select = $("models-instance");
  const chosen = answer.instance ?? "";
  replace(select, h("option", { value: "" }, `Every instance (${answer.instances.reduce((n, i) => n + i.models, 0)})`),
    answer.instances.map((i) => h("option", { value: i.instance }, `${named(i.instance, i.displayName)} (${i.models})`)));
  select.value = chosen;
  const names = Object.fromEntries(answer.instances.map((i) => [i.instance, i.displayName]));
  const groups = new Map();
  for (const m of answer.models) {
    if (!groups.has(m.instance)) groups.set(m.instance, []);
    groups.get(m.instance).push(m);
  }
  const scope = `${answer.scope.tenant}/${answer.scope.project}`;
  replace($("models-view"),
    h("details", { class: "layers" },
      h("summary", {}, `The seven layers of ${scope}, outer → inner`),
      h("p", { class: "hint" }, "Each layer overwrites the fields it sets; manual beats auto within a scope, and an inner scope beats the outer ones. Under each value: the layer that set it (quirks: the bundled name patterns of model-quirks.yaml)."),
      h("ol", {}, answer.layers.map((label) => h("li", {}, h("strong", {}, place(label)), label === "bundled" ? " (package data)" : [": ", h("code", {}, label)])))),
    [...groups].map(([instance, models]) => h("section", { "aria-labelledby": `models-${instance}-title` },
      h("h2", { id: `models-${instance}-title` }, `${named(instance, names[instance])} `, badge(plural(models.length, "model"), "info")),
      table(null, HEADERS, models.map(modelRow), { className: "models" }))),
    answer.models.length ? null : h("p", { class: "muted" }, "The catalog has no models in this scope."));
  return `${plural(answer.models.length, "model")} of ${plural(groups.size, "instance")} in ${scope}.`;
}

async function load({ quiet = false } = {}) {
  const current = ticket(PAGE);
  const instance = $("models-instance").value;
  try {
    const answer = await api("GET", "/v1/ai-models", { params: instance ? { instance } : {} });
    if (!current()) return;
    const summary = render(answer);
    if (!quiet) setStatus(PAGE, summary, { quiet: true });
  } catch (error) {
    if (current()) fail(PAGE, error);
  }
}

function refreshText(r) {
  const what = r.scope === "tenant" ? `Catalog of tenant ${r.tenant} refreshed` : "Catalog refreshed";
  return `${what}: ${plural(r.documentsLoaded, "document")} loaded — ` +
    `${plural(r.bundledModelsLoaded, "bundled model")} of ${plural(r.bundledProvidersLoaded, "bundled provider")}, ` +
    `${plural(r.overrideScopes, "scope")} with documents, ${plural(r.skipped.length, "document")} skipped — in ${r.durationMs} ms.`;
}

function skippedDocuments(r) {
  const ignored = r.ignoredFields || [];
  if (!r.skipped.length && !ignored.length) return null;
  const list = (title, items) => items.length ? [h("p", {}, title),
    h("ul", {}, items.map((s) => h("li", {}, h("code", {}, s.file), `: ${s.reason}`)))] : [];
  return h("div", { class: "warn-box" }, ...list("Skipped documents:", r.skipped),
    ...list("Ignored fields (the rest of the document loaded):", ignored));
}

function discoveryReport(d) {
  const rows = d.scopes.flatMap((s) => s.instances.map((i) => [
    `${s.tenant}/${s.project}`, h("code", {}, i.instance), i.providerType, num(i.models), num(i.written), num(i.removed), `${i.durationMs} ms`,
  ]));
  const skipped = d.scopes.flatMap((s) => s.skippedInstances.map((i) => ({ ...i, scope: `${s.tenant}/${s.project}` })));
  return [
    rows.length
      ? table("Instances listed", ["Scope", "Instance", "Type", "Models", "Written", "Removed", "Took"], rows, { className: "discovery" })
      : h("p", { class: "muted" }, "This scope configures no LLM provider instance (ai.provider.<instance>.type, apiKey, baseUrl)."),
    skipped.length ? h("div", { class: "warn-box" }, h("p", {}, `Skipped ${plural(skipped.length, "instance")}:`),
      h("ul", { class: "skipped-instances" }, skipped.map((s) => h("li", {}, h("code", {}, s.instance), ` (${s.scope}): ${s.error}`)))) : null,
  ];
}

async function act(button, path, describe, params = async () => ({})) {
  clearError(PAGE);
  setStatus(PAGE, button === $("models-discover") ? "Discovering…" : "Refreshing…");
  replace($("models-report"));
  try {
    const answer = await busy($("models-actions"), async () => api("POST", path, { params: await params() }));
    const { text, report } = describe(answer);
    await load({ quiet: true });
    setStatus(PAGE, text);
    replace($("models-report"), ...[report].flat(Infinity));
  } catch (error) {
    setStatus(PAGE, "");
    if (error.status === 401) fail(PAGE, error);
    else showError(PAGE, error); // e.g. 403: the catalog is process-wide, its actions the operator's
  }
}

// An operator refreshes every layer (the system's catalog); a tenant admin its own tenant's.
async function refreshScope() {
  const who = await api("GET", "/v1/whoami");
  return who.operator ? { tenant: "_system" } : {};
}

function refreshCatalog() {
  return act($("models-refresh"), "/v1/admin/ai-models/refresh", (r) => ({ text: refreshText(r), report: skippedDocuments(r) }), refreshScope);
}

function discover() {
  return act($("models-discover"), "/v1/admin/ai-models/discover", (d) => {
    const instances = d.scopes.reduce((n, s) => n + s.instances.length, 0);
    const written = d.scopes.reduce((n, s) => n + s.instances.reduce((m, i) => m + i.written, 0), 0);
    const removed = d.scopes.reduce((n, s) => n + s.instances.reduce((m, i) => m + i.removed, 0), 0);
    const text = `Discovery: ${plural(d.models, "model")} listed by ${plural(instances, "instance")} ` +
      `(${num(written)} written, ${num(removed)} removed), ${plural(d.skipped, "instance")} skipped, in ${d.durationMs} ms. ` +
      refreshText(d.refresh);
    return { text, report: [discoveryReport(d), skippedDocuments(d.refresh)] };
  });
}

$("models-form").addEventListener("submit", (event) => { event.preventDefault(); clearError(PAGE); load(); });
$("models-refresh").addEventListener("click", refreshCatalog);
$("models-discover").addEventListener("click", discover);

registerPage(PAGE, { results: "models-view", load: () => load() });
