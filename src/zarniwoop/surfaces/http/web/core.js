// Zarniwoop web UI, the shared part: DOM building, the session, the API client, messages and the
// page registry. app.js (the built-in pages) and pages/*.js (one page each) import from here.
//
// Two rules hold throughout:
// - Data from the API reaches the page only as text or attribute values (never innerHTML), and a
//   link is made only of an http(s) URL.
// - The token lives in this tab's sessionStorage and travels only in the Authorization header; it is
//   never written into the page (the sign-in field is cleared as soon as it is read).

export const TOKEN_KEY = "zarniwoop.token";
export const SCOPE_KEY = "zarniwoop.scope";
export const THEME_KEY = "zarniwoop.theme"; // localStorage: the one thing remembered across tabs
export const THEMES = ["system", "light", "dark"];

// Extras worth a label, per modality, in the order a reader wants them; the rest follow as they come.
export const EXTRAS = {
  ACADEMIC: [["authors", "Authors"], ["year", "Year"], ["venue", "Venue"], ["doi", "DOI"], ["pdfUrl", "PDF"], ["citedByCount", "Cited by"]],
  IMAGE: [["imageUrl", "Image"], ["width", "Width"], ["height", "Height"], ["siteName", "Site"]],
  VIDEO: [["channel", "Channel"], ["duration", "Duration"], ["publishedAt", "Published"], ["views", "Views"]],
  NEWS: [["outlet", "Outlet"], ["publishedAt", "Published"], ["author", "Author"]],
  BOOK: [["authors", "Authors"], ["firstPublishYear", "First published"], ["isbn", "ISBN"], ["editionCount", "Editions"]],
  PDF: [["authors", "Authors"], ["year", "Year"], ["pdfUrl", "PDF"]],
};
export const REACHABLE = { true: "yes", false: "last call failed", null: "not called yet" };

export const $ = (id) => document.getElementById(id);

// ---- building DOM from data --------------------------------------------------------------------

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function safeUrl(value) {
  try {
    const url = new URL(String(value));
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

export function link(url, text) {
  const href = safeUrl(url);
  return href ? h("a", { href, target: "_blank", rel: "noopener noreferrer" }, text ?? url) : text ?? String(url ?? "");
}

export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}`.trim() }, text);
}

export function when(iso) {
  if (!iso) return "—";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const seconds = Math.round((at.getTime() - Date.now()) / 1000);
  const span = Math.abs(seconds);
  const amount = span < 90 ? `${span} s` : span < 5400 ? `${Math.round(span / 60)} min` : `${Math.round(span / 3600)} h`;
  const relative = span < 5 ? "now" : seconds >= 0 ? `in ${amount}` : `${amount} ago`;
  return h("time", { datetime: iso, title: iso }, `${at.toLocaleString()} (${relative})`);
}

// Wrapped in a box that scrolls sideways on its own (focusable, so the keyboard can scroll it too):
// on a phone a wide table never widens the page.
export function table(caption, headers, rows, { foot = null, className = "" } = {}) {
  const box = h("div", { class: "table-box", tabindex: "0", role: "region", "aria-label": caption ? `${caption} (scrolls)` : "Scrollable table" }, h("table", { class: className || null },
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows.map((cells) => cells instanceof Node ? cells : h("tr", {}, cells.map((c) => h("td", {}, c ?? "—"))))),
    foot ? h("tfoot", {}, h("tr", {}, foot.map((c) => h("td", {}, c ?? "")))) : null,
  ));
  box.addEventListener("scroll", () => markHiddenSides(box), { passive: true });
  scrollingBoxes.observe(box);
  return box;
}

// A table wider than its box says so: a shade on each side that has more to scroll to (app.css,
// `.more-left` / `.more-right`), gone once scrolled there. Checked whenever the box's size changes
// (its first layout included) and as it scrolls.
const scrollingBoxes = new ResizeObserver((entries) => entries.forEach((entry) => markHiddenSides(entry.target)));

function markHiddenSides(box) {
  const hidden = box.scrollWidth - box.clientWidth;
  box.classList.toggle("more-left", hidden > 1 && box.scrollLeft > 1);
  box.classList.toggle("more-right", hidden > 1 && box.scrollLeft < hidden - 1);
}

// A table of an array of flat objects whose shape this page does not know (a newer server's section).
export function genericTable(caption, items) {
  const columns = [...new Set(items.flatMap((item) => Object.keys(item)))];
  const show = (v) => v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
  return table(caption, columns, items.map((item) => columns.map((c) => show(item[c]))));
}

export function genericSection(title, value) {
  const body = Array.isArray(value) && value.every((v) => v && typeof v === "object" && !Array.isArray(v))
    ? genericTable(null, value)
    : value && Array.isArray(value.rows) ? genericTable(null, value.rows)
    : h("pre", {}, JSON.stringify(value, null, 2));
  return h("section", {}, h("h2", {}, title), body);
}

export function quota(q) {
  if (!q) return "—";
  const used = q.used ?? "?";
  const text = q.limit != null ? `${used} / ${q.limit} per ${q.period}` : `${used} used per ${q.period}`;
  const meter = q.limit ? h("meter", {
    min: 0, max: q.limit, value: Math.min(q.used ?? 0, q.limit), low: 0.7 * q.limit, high: 0.9 * q.limit,
    optimum: 0, "aria-label": `quota ${text}`,
  }) : null;
  return h("div", { class: "quota" }, meter, h("span", {}, text),
    q.resetsAt ? h("span", { class: "muted" }, "resets ", when(q.resetsAt)) : null,
    q.source ? h("span", { class: "muted" }, q.source === "local" ? "counted here" : `reported by the ${q.source}`) : null);
}

export function replace(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

// ---- session and API ---------------------------------------------------------------------------

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  get scope() {
    try { return JSON.parse(sessionStorage.getItem(SCOPE_KEY) || "{}"); } catch { return {}; }
  },
  save(token, scope) {
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(SCOPE_KEY, JSON.stringify(scope));
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(SCOPE_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, field, message) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

export async function api(method, path, { body, params = {}, token = session.token, scope = session.scope, headers: extra = {} } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries({ ...scope, ...params })) {
    if (value) url.searchParams.set(key, value);
  }
  const headers = { ...extra, Accept: "application/json", Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      // "no-cache", not "no-store": with "no-store" the browser itself sends `Cache-Control: no-cache`,
      // which tells the server to skip its result cache on every search. API answers say no-store.
      cache: "no-cache", credentials: "omit", referrerPolicy: "no-referrer",
    });
  } catch {
    throw new ApiError(0, null, "cannot reach the server: is zarniwoop serve still running?");
  }
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.field || null, error.message || `the server answered HTTP ${response.status}`);
  }
  return data;
}

// ---- messages ----------------------------------------------------------------------------------

export function clearError(page) {
  const box = $(`${page}-error`);
  box.hidden = true;
  box.textContent = "";
  for (const input of document.querySelectorAll(`#page-${page} [aria-invalid]`)) {
    input.removeAttribute("aria-invalid");
    input.setAttribute("aria-describedby", (input.dataset.describedby ?? "").trim());
    if (!input.getAttribute("aria-describedby")) input.removeAttribute("aria-describedby");
  }
}

// One clear message naming the field; the field itself is marked invalid and gets the focus.
export function showError(page, error) {
  clearError(page);
  const box = $(`${page}-error`);
  let text = error.message;
  if (error.field && !text.toLowerCase().startsWith(`${error.field.toLowerCase()}:`)) text = `${error.field}: ${text}`;
  box.textContent = text;
  box.hidden = false;
  const input = error.field ? document.querySelector(`#page-${page} [data-field="${CSS.escape(error.field)}"]`) : null;
  if (input) {
    const details = input.closest("details");
    if (details) details.open = true;
    input.dataset.describedby = input.getAttribute("aria-describedby") ?? "";
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", `${input.dataset.describedby} ${box.id}`.trim());
    input.focus();
  }
}

// `quiet`: for screen readers only, when the page shows the same thing already.
export function setStatus(page, text, { quiet = false } = {}) {
  const status = $(`${page}-status`);
  status.textContent = text;
  status.classList.toggle("sr-only", quiet);
}

// Each page's results box, cleared when the page fails or the session ends. Pages in `pages/*.js`
// add themselves through `registerPage`.
export const RESULTS = { search: "search-results", routing: "routing-view", investigate: "investigate-results", usage: "usage-view", settings: "settings-view", tokens: "tokens-view" };

// The pages beyond the built-in ones, by name: `{ results, load }` (`load` runs each time the page is
// opened). app.js adds their names to the navigation's list; index.html holds their sections.
export const extraPages = new Map();
export function registerPage(name, { results, load }) {
  RESULTS[name] = results;
  extraPages.set(name, { load });
}

// app.js sets this: what a 401 does (sign out and ask for a token again).
export const hooks = { signOut: () => {} };

// Every page's failure goes through here: a 401 means the token no longer works, so sign in again.
// An older answer is cleared: under a new error it would read as the answer to the failed request.
export function fail(page, error) {
  setStatus(page, "");
  replace($(RESULTS[page]));
  if (error.status === 401) {
    hooks.signOut(`Signed out: ${error.message}. Paste a valid token.`);
    return;
  }
  showError(page, error);
}

// Answers to a page's older request are dropped when a newer one was sent meanwhile.
export const latest = {};
export function ticket(page) {
  latest[page] = (latest[page] ?? 0) + 1;
  const mine = latest[page];
  return () => latest[page] === mine;
}

export async function busy(form, work) {
  const buttons = form ? [...form.querySelectorAll("button")] : [];
  for (const b of buttons) b.disabled = true;
  try { return await work(); } finally { for (const b of buttons) b.disabled = false; }
}

// A curated run's strategies, one step each ("plan: heuristic · evaluate: lexical"), and each
// fallback reason once, after the steps that fell back for it — not once per step (issue 46).
export function strategyLine(strategies) {
  const steps = Object.entries(strategies || {}).map(([step, name]) => {
    const fallback = /^(.*?) \(fallback: (.*)\)$/s.exec(String(name));
    return fallback ? { step, name: fallback[1], reason: fallback[2] } : { step, name: String(name), reason: null };
  });
  const line = steps.map(({ step, name }) => `${step}: ${name}`).join(" · ");
  const reasons = [...new Set(steps.map((s) => s.reason).filter(Boolean))];
  const why = reasons.map((reason) => `${steps.filter((s) => s.reason === reason).map((s) => s.step).join(", ")} fell back: ${reason}`);
  return why.length ? `${line} (${why.join("; ")})` : line;
}
