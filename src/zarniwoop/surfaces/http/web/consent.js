// The consent page of the built-in OAuth server (docs/oauth.md): a signed-in admin (the token in this
// tab's sessionStorage, or pasted here) grants a sign-in request a tenant, project and role; the
// browser then goes back to the client with a code. Same API as every client: /v1/oauth/requests/{id}.
import { $, api, session } from "./core.js";

const request = new URLSearchParams(location.search).get("request") || "";
const token = () => $("token").value.trim() || session.token;
let registered = null; // the redirect URI the server says the client registered (and showed above)

// Where an answer may send the browser: the URI shown above (its query aside), and only a kind a
// client may register — https:, or http: on loopback (RFC 8252). The
// server checks the same (issue 45); this page does not take its word for it.
const LOOPBACK = ["127.0.0.1", "[::1]", "localhost"];
const withoutQuery = (uri) => uri.split(/[?#]/)[0];
export function mayNavigate(target, shown) {
  let url;
  try {
    url = new URL(target);
  } catch {
    return false;
  }
  const scheme = url.protocol.slice(0, -1);
  const kind = scheme === "https" || (scheme === "http" && LOOPBACK.includes(url.hostname));
  return kind && typeof shown === "string" && withoutQuery(target) === withoutQuery(shown);
}

async function show() {
  $("token").value = session.token || "";
  try {
    const pending = await api("GET", `/v1/oauth/requests/${encodeURIComponent(request)}`, { token: token() });
    registered = pending.redirectUri;
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
    if (registered === null) { // the token was pasted after the page loaded: ask now
      registered = (await api("GET", `/v1/oauth/requests/${encodeURIComponent(request)}`, { token: token() })).redirectUri;
    }
    const answer = await api("POST", `/v1/oauth/requests/${encodeURIComponent(request)}`, { body, token: token() });
    if (!mayNavigate(answer.redirect, registered)) {
      $("error").textContent = "The answer names a return address this client did not register: not followed.";
      return;
    }
    location.assign(answer.redirect);
  } catch (error) {
    $("error").textContent = error.message;
  }
}

$("approve").addEventListener("click", () => decide(true));
$("deny").addEventListener("click", () => decide(false));
show();
