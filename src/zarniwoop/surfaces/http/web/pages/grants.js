// Sign-ins: the OAuth grants of the built-in authorization server (GET /v1/oauth/grants,
// DELETE /v1/oauth/grants/{id}, issue 45). A grant is what an admin approved on the consent page —
// a client, a project, a role — and it lives as long as the admin token that approved it; Revoke
// ends it at once (its refresh token stops working; its access token lapses within minutes).

import { $, h, api, busy, clearError, fail, replace, setStatus, table, ticket, when, registerPage } from "../core.js";

const PAGE = "grants";

async function load() {
  const current = ticket(PAGE);
  replace($("grants-confirm"));
  try {
    const answer = await api("GET", "/v1/oauth/grants");
    if (current()) render(answer.grants);
  } catch (error) {
    if (current()) fail(PAGE, error);
  }
}

function render(grants) {
  const rows = grants.map((g) => {
    const revoke = h("button", { type: "button", class: "secondary", "aria-label": `Revoke the grant of ${g.clientId}` }, "Revoke");
    revoke.addEventListener("click", () => askRevoke(g, revoke));
    return h("tr", { "data-grant": g.id },
      h("th", { scope: "row" }, h("code", {}, g.clientId)),
      h("td", {}, g.tenant), h("td", {}, g.project), h("td", {}, g.role),
      h("td", {}, g.approver ? h("code", {}, g.approver) : "—"),
      h("td", {}, g.grantedAt ? when(g.grantedAt) : "—"),
      h("td", {}, revoke));
  });
  replace($("grants-view"), h("section", { "aria-labelledby": "grants-list-title" },
    h("h2", { id: "grants-list-title" }, `Granted sign-ins (${grants.length})`),
    grants.length
      ? table(null, ["Client", "Tenant", "Project", "Role", "Approved by", "Granted", ""], rows, { className: "grants-list" })
      : h("p", { class: "muted" }, "No client holds a grant in this tenant.")));
}

function askRevoke(g, opener) {
  clearError(PAGE);
  const yes = h("button", { type: "button", class: "danger" }, "Revoke");
  const no = h("button", { type: "button", class: "secondary" }, "Cancel");
  const text = h("p", { id: "grants-confirm-text" },
    `Revoke the grant of ${g.clientId} (${g.project}, ${g.role})? The client must sign in again.`);
  const box = h("div", { class: "warn-box confirm", role: "group", "aria-labelledby": "grants-confirm-text" },
    text, h("div", { class: "row" }, yes, no));
  yes.addEventListener("click", () => revoke(g, box));
  no.addEventListener("click", () => { replace($("grants-confirm")); setStatus(PAGE, "Nothing revoked."); opener.focus(); });
  replace($("grants-confirm"), box);
  no.focus();
}

async function revoke(g, box) {
  try {
    await busy(box, () => api("DELETE", `/v1/oauth/grants/${encodeURIComponent(g.id)}`));
    replace($("grants-confirm"));
    await load();
    setStatus(PAGE, `Revoked the grant of ${g.clientId}.`);
    $("grants-title").focus();
  } catch (error) {
    replace($("grants-confirm"));
    fail(PAGE, error);
  }
}

registerPage(PAGE, { results: "grants-view", load });
