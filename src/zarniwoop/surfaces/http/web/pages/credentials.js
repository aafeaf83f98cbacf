// Credentials: the API keys of the tenant and its accounts (GET/PUT /v1/credentials,
// DELETE /v1/credentials/{name}). A value is write-only: typed into a password field, sent once,
// and the field is emptied as soon as the request is sent. The server never answers a value, so the
// page cannot show one; the list says only that a credential is set, when and by whom.

import { $, h, api, badge, busy, clearError, fail, replace, setStatus, showError, table, ticket, when, registerPage } from "../core.js";

const PAGE = "credentials";

function where(c) {
  return c.level === "account" ? `account ${c.account}` : c.level === "tenant" ? "the tenant" : `${c.level} ${c.owner}`;
}

// An operator token may manage any tenant's credentials: the Tenant field (shown to it alone) says
// whose, for the list and every write; other tokens act on their own tenant.
function tenantParams() {
  const tenant = $("credentials-tenant-field").hidden ? "" : $("credentials-tenant").value.trim();
  return tenant ? { tenant } : {};
}

async function load() {
  const current = ticket(PAGE);
  clearConfirm();
  try {
    const who = await api("GET", "/v1/whoami");
    const field = $("credentials-tenant-field");
    if (field.hidden && who.operator) $("credentials-tenant").value = who.tenant;
    field.hidden = !who.operator;
    const answer = await api("GET", "/v1/credentials", { params: tenantParams() });
    if (current()) render(answer);
  } catch (error) {
    if (current()) fail(PAGE, error);
  }
}

function render(answer) {
  const items = answer.credentials;
  const rows = items.map((c) => {
    const label = `${c.name} of ${where(c)}`;
    const rotate = h("button", { type: "button", class: "secondary", "aria-label": `Rotate ${label}` }, "Rotate");
    rotate.addEventListener("click", () => startRotate(c));
    const remove = h("button", { type: "button", class: "secondary", "aria-label": `Delete ${label}` }, "Delete");
    remove.addEventListener("click", () => askDelete(c, remove));
    const writable = c.level === "tenant" || c.level === "account";
    return h("tr", { "data-credential": `${c.level}/${c.owner}/${c.name}` },
      h("th", { scope: "row" }, h("code", {}, c.name)),
      h("td", {}, c.tenant), h("td", {}, c.level), h("td", {}, c.account ?? ""),
      h("td", {}, badge("set", "ok")),
      h("td", {}, when(c.updatedAt)),
      h("td", {}, c.updatedBy ? h("code", {}, c.updatedBy) : c.origin),
      h("td", {}, c.usedBy.length ? c.usedBy.join("; ") : "—"),
      h("td", {}, writable ? h("span", { class: "actions" }, rotate, remove) : h("span", { class: "muted" }, "CLI only")));
  });
  replace($("credentials-view"), h("section", { "aria-labelledby": "credentials-list-title" },
    h("h2", { id: "credentials-list-title" }, `Stored for tenant ${answer.tenant} (${items.length})`),
    items.length
      ? table(null, ["Name", "Tenant", "Level", "Account", "State", "Updated", "By", "Used by", ""], rows, { className: "credentials-list" })
      : h("p", { class: "muted" }, "No credentials are stored for this tenant.")));
  suggest(answer.suggestedNames || []);
}

// The name field offers what something of the tenant looks up (an LLM entry's api_key_ref, a
// search endpoint's key variable); it stays free text.
function suggest(names) {
  replace($("credentials-names"), names.map((s) => h("option", { value: s.name }, s.usedFor)));
}

function syncLevel() {
  const account = $("credentials-level").value === "account";
  $("credentials-account-field").hidden = !account;
}

function startRotate(c) {
  clearError(PAGE);
  clearConfirm();
  const form = $("credentials-form");
  $("credentials-level").value = c.level;
  syncLevel();
  $("credentials-account").value = c.account ?? "";
  $("credentials-name").value = c.name;
  $("credentials-value").value = "";
  setStatus(PAGE, `Type the new value of ${c.name} (${where(c)}) and press Save: it replaces the stored one.`);
  $("credentials-value").focus();
}

async function save(event) {
  event.preventDefault();
  clearError(PAGE);
  clearConfirm();
  const form = $("credentials-form");
  const body = { level: $("credentials-level").value, name: $("credentials-name").value.trim(), value: $("credentials-value").value };
  if (body.level === "account") body.account = $("credentials-account").value.trim();
  $("credentials-value").value = ""; // the value leaves the page with this request and is never kept
  setStatus(PAGE, "Saving…");
  try {
    const saved = await busy(form, () => api("PUT", "/v1/credentials", { body, params: tenantParams() }));
    await load();
    const owner = saved.level === "tenant" ? `tenant ${saved.tenant}` : `${where(saved)} of tenant ${saved.tenant}`;
    setStatus(PAGE, `${saved.rotated ? "Rotated" : "Stored"} ${saved.name} for ${owner}.`);
  } catch (error) {
    setStatus(PAGE, "");
    if (error.status === 401) fail(PAGE, error);
    else showError(PAGE, error); // the list stays as it was; the bad field is marked
  }
}

function clearConfirm() {
  replace($("credentials-confirm"));
}

function askDelete(c, opener) {
  clearError(PAGE);
  const yes = h("button", { type: "button", class: "danger" }, `Delete ${c.name}`);
  const no = h("button", { type: "button", class: "secondary" }, "Cancel");
  const text = h("p", { id: "credentials-confirm-text" },
    `Delete ${c.name} of ${where(c)}? The value cannot be recovered; whatever uses it stops working.`);
  const box = h("div", { class: "warn-box confirm", role: "group", "aria-labelledby": "credentials-confirm-text" },
    text, h("div", { class: "row" }, yes, no));
  yes.addEventListener("click", () => remove(c, box));
  no.addEventListener("click", () => { clearConfirm(); setStatus(PAGE, "Nothing deleted."); opener.focus(); });
  replace($("credentials-confirm"), box);
  no.focus();
}

async function remove(c, box) {
  const params = { ...tenantParams(), level: c.level };
  if (c.level === "account") params.account = c.account;
  try {
    await busy(box, () => api("DELETE", `/v1/credentials/${encodeURIComponent(c.name)}`, { params }));
    clearConfirm();
    await load();
    setStatus(PAGE, `Deleted ${c.name} of ${where(c)}.`);
    $("credentials-title").focus();
  } catch (error) {
    clearConfirm();
    fail(PAGE, error);
  }
}

$("credentials-form").addEventListener("submit", save);
$("credentials-tenant").addEventListener("change", () => { clearError(PAGE); load(); });
$("credentials-level").addEventListener("change", syncLevel);
syncLevel();

registerPage(PAGE, { results: "credentials-view", load });
