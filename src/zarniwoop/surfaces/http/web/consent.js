// The consent page of the built-in OAuth server (docs/oauth.md): a signed-in admin (the token in this
// tab's sessionStorage, or pasted here) grants a sign-in request a tenant, project and role; the
// browser then goes back to the client with a code. Same API as every client: /v1/oauth/requests/{id}.
import { $, api, session } from "./core.js";

const request = new URLSearchParams(location.search).get("request") || "";
const token = () => $("token").value.trim() || session.token;

async function show() {
  $("token").value = session.token || "";
  try {
    const pending = await api("GET", `/v1/oauth/requests/${encodeURIComponent(request)}`, { token: token() });
    $("who").textContent = `${pending.client} asks for access; it will be sent back to ${pending.redirectUri}.`;
    $("tenant").value = pending.tenant;
  } catch (error) {
    $("who").textContent = "Paste an admin API token to see this request.";
    $("error").textContent = error.message;
  }
  $("grant").hidden = false;
}

async function decide(approve) {
  const body = { approve, tenant: $("tenant").value, project: $("project").value, role: $("role").value };
  try {
    const answer = await api("POST", `/v1/oauth/requests/${encodeURIComponent(request)}`, { body, token: token() });
    location.assign(answer.redirect);
  } catch (error) {
    $("error").textContent = error.message;
  }
}

$("approve").addEventListener("click", () => decide(true));
$("deny").addEventListener("click", () => decide(false));
show();
