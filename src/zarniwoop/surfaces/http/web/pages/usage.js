// The Usage page: GET /v1/usage (the tables: provider calls, quotas, the LLM token dashboard) and
// GET /v1/usage/timeseries (the charts: calls and failures, p95 latency, LLM tokens and estimated
// cost per hour or day). Charts are drawn by uPlot, vendored under vendor/uplot/ with its licence
// (docs/console.md says which version and from where); its colours are the page's CSS variables, so
// it follows the light and dark theme, and it is resized with its box.
//
// Every chart has a text alternative: its caption summarises the figures, the plot is an image
// named by that summary, its legend is text, and "Show as table" holds every point. Quota bars mark
// the 80 / 95 / 100 % thresholds (an LLM quota line's own thresholds when it has them) and say in
// words which one was passed.

import uPlot from "../vendor/uplot/uPlot.esm.js";
import { $, h, table, when, replace, api, clearError, setStatus, fail, ticket, busy, genericSection, registerPage } from "../core.js";

const THRESHOLDS = [80, 95, 100];
const PALETTE = ["--chart-1", "--chart-2", "--chart-3", "--chart-4", "--chart-5", "--chart-6", "--chart-7", "--chart-8"];
const BY_LABEL = {
  project: "project", account: "account", model: "model", provider: "provider", instance: "instance", modality: "modality",
};

let last = null; // the last answers, to draw again when the theme changes
const plots = []; // live uPlot instances: destroyed before the next drawing
const sizes = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const plot = plots.find((p) => p.root.parentElement === entry.target);
    const width = Math.floor(entry.contentRect.width);
    if (plot && width > 0 && width !== plot.width) plot.setSize({ width, height: plot.height });
  }
});

async function loadUsage(event) {
  event?.preventDefault();
  clearError("usage");
  const current = ticket("usage");
  setStatus("usage", "Loading…");
  const since = $("usage-since").value.trim() || "24h";
  const until = $("usage-until").value.trim(); // blank: now (an empty parameter is not sent)
  const bucket = $("usage-bucket").value;
  const llm = {
    account: $("usage-account").value.trim(),
    llmScope: $("usage-llm-scope").value === "project" ? "" : $("usage-llm-scope").value,
  };
  try {
    const answers = await busy($("usage-form"), () => Promise.all([
      api("GET", "/v1/usage", { params: { since, ...llm } }),
      api("GET", "/v1/usage/timeseries", { params: { kind: "research", since, until, bucket, by: $("usage-calls-by").value } }),
      api("GET", "/v1/usage/timeseries", { params: { kind: "llm", since, until, bucket, by: $("usage-by").value, ...llm } }),
    ]));
    if (!current()) return;
    last = answers;
    renderUsage(...answers);
    setStatus("usage", `Updated ${new Date().toLocaleTimeString()}.`);
  } catch (error) {
    if (current()) {
      last = null;
      clearPlots();
      fail("usage", error);
    }
  }
}

function clearPlots() {
  for (const plot of plots.splice(0)) {
    sizes.unobserve(plot.root.parentElement);
    plot.destroy();
  }
}

function renderUsage(report, calls, llmSeries) {
  clearPlots();
  const mounts = [];
  const known = new Set(["scope", "enabled", "research", "message", "llm"]);
  replace($("usage-view"),
    report.enabled ? researchUsage(report.research, calls, mounts) : h("p", { class: "warn-box" }, report.message || "Usage tracking is not enabled."),
    report.llm ? llmUsage(report.llm, llmSeries, mounts) : null,
    Object.entries(report).filter(([key]) => !known.has(key)).map(([key, value]) => genericSection(key, value)));
  for (const mount of mounts) mount(); // once in the page: uPlot needs its box's width
}

// ---- numbers and words -------------------------------------------------------------------------

function tokens(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
}

const ms = (v) => v === null || v === undefined ? "—" : `${Number(v).toLocaleString("en-US")} ms`;
const usd = (v) => `$${Number(v ?? 0).toFixed(4)}`;
const plural = (n, word) => `${tokens(n)} ${word}${n === 1 ? "" : "s"}`;

// Bucket starts are UTC, and so is every time the charts show.
function bucketTime(iso, bucket) {
  const text = String(iso).replace("T", " ").replace(/:00Z$|Z$/, "");
  return bucket === "day" ? text.slice(0, 10) : `${text.slice(0, 16)}`;
}

function keyLabel(key) {
  if ("model" in key) return `${key.instance} / ${key.model}`;
  const [[name, value]] = Object.entries(key);
  return value ?? `(no ${name})`;
}

// ---- quota bars --------------------------------------------------------------------------------

function level(pct, [warn, high, full]) {
  if (pct === null) return "none";
  return pct >= full ? "full" : pct >= high ? "high" : pct >= warn ? "warn" : "ok";
}

// A bar of `used` against `limit` with the thresholds marked on it, and the same in words.
export function quotaBar(used, limit, { label, per = "", thresholds = THRESHOLDS } = {}) {
  if (!limit) return h("span", {}, `${tokens(used ?? 0)}${per ? ` per ${per}` : ""} (no limit)`);
  const pct = (100 * (used ?? 0)) / limit;
  const state = level(pct, thresholds);
  const words = {
    ok: `below the ${thresholds[0]} % mark`,
    warn: `past the ${thresholds[0]} % mark`,
    high: `past the ${thresholds[1]} % mark`,
    full: used > limit ? "over the limit" : "at the limit",
  }[state];
  const amount = `${tokens(used ?? 0)} / ${tokens(limit)}${per ? ` per ${per}` : ""}`;
  const shown = `${pct.toFixed(pct < 10 ? 1 : 0)} %`;
  const fill = h("span", { class: "qbar-fill" });
  fill.style.width = `${Math.min(100, pct)}%`;
  const ticks = thresholds.map((t) => {
    const tick = h("span", { class: "qbar-tick", "data-threshold": t });
    tick.style.left = `${Math.min(100, t)}%`;
    return tick;
  });
  return h("div", { class: `qbar qbar-${state}` },
    h("div", {
      class: "qbar-track", role: "meter", "aria-valuemin": 0, "aria-valuemax": limit, "aria-valuenow": Math.min(used ?? 0, limit),
      "aria-label": label, "aria-valuetext": `${amount}, ${shown}, ${words}; marks at ${thresholds.join(", ")} %`,
    }, fill, ticks),
    h("span", { class: "qbar-text" }, `${amount} · ${shown}`, state === "ok" ? null : h("strong", { class: "qbar-state" }, ` · ${words}`)),
    h("span", { class: "qbar-marks muted" }, `marks at ${thresholds.map((t) => `${t} %`).join(" · ")}`));
}

function providerQuota(q, name) {
  if (!q) return "—";
  return h("div", { class: "quota" },
    quotaBar(q.used, q.limit, { label: `quota of ${name}`, per: q.period }),
    q.resetsAt ? h("span", { class: "muted" }, "resets ", when(q.resetsAt)) : null,
    q.source ? h("span", { class: "muted" }, q.source === "local" ? "counted here" : `reported by the ${q.source}`) : null);
}

function llmThresholds(q) {
  const t = q.thresholds;
  return t && [t.notify, t.light, t.block].every(Number.isFinite) ? [t.notify, t.light, t.block] : THRESHOLDS;
}

// ---- charts ------------------------------------------------------------------------------------

// A colour of the page (a CSS variable, possibly `light-dark(…)`), resolved for the canvas.
let probe = null;
function cssColor(variable) {
  if (!probe) {
    probe = h("span", { hidden: true, "aria-hidden": "true" });
    document.body.append(probe);
  }
  probe.style.color = `var(${variable})`;
  return getComputedStyle(probe).color;
}

// Counts have whole-number gridlines; times are UTC, 24-hour, with the date at midnight.
const WHOLE = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9];
function tick(seconds, bucket) {
  const iso = new Date(seconds * 1000).toISOString();
  return bucket === "day" || iso.slice(11, 16) === "00:00" ? iso.slice(5, 10) : iso.slice(11, 16);
}

// The y axis's width: tick, gap and its widest label as the canvas measures it (uPlot calls this
// again when the labels change; a fixed width cut "12,000 ms" to ",000 ms").
function labelRoom(u, values, axisIndex, cycle) {
  const axis = u.axes[axisIndex];
  if (cycle > 1 && axis._size) return axis._size;
  u.ctx.font = axis.font[0];
  const widest = Math.max(0, ...(values ?? []).map((v) => u.ctx.measureText(String(v)).width / devicePixelRatio));
  return Math.ceil(axis.ticks.size + axis.gap + widest + 4);
}

// Right padding: half the width of an x label ("23:00"), so the last one, centred on the plot's
// edge, stays on the canvas.
function edgeRoom(u) {
  const axis = u.axes[0];
  u.ctx.font = axis.font[0];
  return Math.ceil(u.ctx.measureText("00:00").width / devicePixelRatio / 2) + 4;
}

// One figure: title and summary as its caption, the plot (an image named by the summary), a text
// legend, and every point in a table. `lines`: [{ label, values, colour, dashed }].
function chart({ id, title, summary, times, bucket, lines, format, columns, whole = false }, mounts) {
  const box = h("div", { class: "chart-plot", role: "img", "aria-label": `${title}. ${summary}` });
  const legend = h("ul", { class: "chart-legend", "aria-label": `${title}: legend` }, lines.map((line) => {
    const swatch = h("span", { class: `chart-swatch${line.dashed ? " dashed" : ""}`, "aria-hidden": "true" });
    swatch.style.borderTopColor = cssColor(line.colour);
    return h("li", {}, swatch, line.label);
  }));
  const rows = times.map((t, i) => [bucketTime(t, bucket), ...lines.map((line) => columns(line.values[i]))]);
  const figure = h("figure", { class: "chart", id, "aria-labelledby": `${id}-title` },
    h("figcaption", {},
      h("span", { class: "chart-title", id: `${id}-title` }, title),
      h("span", { class: "chart-summary" }, summary)),
    box, legend,
    h("details", { class: "chart-data" }, h("summary", {}, "Show as table"),
      table(`${title} (UTC)`, ["Time (UTC)", ...lines.map((line) => line.label)], rows)));
  mounts.push(() => {
    const text = cssColor("--text");
    const grid = cssColor("--line");
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: "12px system-ui, sans-serif" };
    const many = times.length > 200;
    const plot = new uPlot({
      width: Math.floor(box.clientWidth) || 600,
      height: 200,
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, (max > 0 ? max : 1) * 1.1] } },
      // room for the widest tick label on each side, so none is clipped ("12,000 ms", the last hour)
      padding: [8, (u) => edgeRoom(u), 0, 0],
      axes: [
        { ...axis, values: (u, splits) => splits.map((seconds) => tick(seconds, bucket)) },
        { ...axis, size: labelRoom, values: (u, splits) => splits.map(format), ...(whole ? { incrs: WHOLE } : {}) },
      ],
      series: [{}, ...lines.map((line) => ({
        label: line.label, stroke: cssColor(line.colour), width: 2, dash: line.dashed ? [6, 4] : undefined,
        points: { show: !many, size: 6, fill: cssColor("--panel") },
      }))],
    }, [times.map((t) => Date.parse(t) / 1000), ...lines.map((line) => line.values)], box);
    plot.root.querySelector(".u-wrap")?.setAttribute("aria-hidden", "true");
    plots.push(plot);
    box.uplotChart = plot; // a property, not an attribute: the browser tests read the drawn tick labels
    sizes.observe(box);
  });
  return figure;
}

function windowWords(series) {
  return `${series.bucket === "day" ? "per day" : "per hour"}, ${bucketTime(series.since, "hour")} to ${bucketTime(series.until, "hour")} UTC`;
}

function callCharts(ts, mounts) {
  if (!ts || ts.enabled === false) return null;
  const times = ts.series[0]?.points.map((p) => p.t) ?? [];
  if (!ts.series.length) return h("p", { class: "muted" }, `No provider calls to chart ${windowWords(ts)}.`);
  const colour = (i) => PALETTE[i % PALETTE.length];
  const names = ts.series.map((s) => keyLabel(s.key));
  const calls = chart({
    id: "chart-calls", title: `Provider calls and failures ${ts.bucket === "day" ? "per day" : "per hour"} by ${BY_LABEL[ts.by] ?? ts.by}`,
    summary: `${windowWords(ts)}: ${ts.series.map((s, i) => `${names[i]} ${plural(s.totals.calls, "call")}, ${plural(s.totals.failures, "failure")}`).join("; ")}.`,
    times, bucket: ts.bucket, format: (v) => tokens(v), columns: (v) => tokens(v), whole: true,
    lines: ts.series.flatMap((s, i) => [
      { label: `${names[i]} calls`, values: s.points.map((p) => p.calls), colour: colour(i) },
      { label: `${names[i]} failures`, values: s.points.map((p) => p.failures), colour: colour(i), dashed: true },
    ]),
  }, mounts);
  const p95 = chart({
    id: "chart-p95", title: `p95 latency ${ts.bucket === "day" ? "per day" : "per hour"} by ${BY_LABEL[ts.by] ?? ts.by}`,
    summary: `${windowWords(ts)}: ${ts.series.map((s, i) => `${names[i]} ${ms(s.totals.p95Ms)} over the window, worst ${worst(s.points, ts.bucket)}`).join("; ")}.`,
    times, bucket: ts.bucket, format: (v) => `${tokens(v)} ms`, columns: ms, whole: true,
    lines: ts.series.map((s, i) => ({ label: `${names[i]} p95`, values: s.points.map((p) => p.p95Ms), colour: colour(i) })),
  }, mounts);
  return h("div", { class: "charts" }, calls, p95);
}

function worst(points, bucket) {
  const top = points.reduce((best, p) => p.p95Ms !== null && (best === null || p.p95Ms > best.p95Ms) ? p : best, null);
  return top ? `${ms(top.p95Ms)} at ${bucketTime(top.t, bucket)}` : "—";
}

function llmCharts(ts, mounts) {
  if (!ts) return null;
  const by = BY_LABEL[ts.by] ?? ts.by;
  if (!ts.series.length) return h("p", { class: "muted" }, `No LLM calls to chart ${windowWords(ts)}.`);
  const times = ts.series[0].points.map((p) => p.t);
  const colour = (i) => PALETTE[i % PALETTE.length];
  const names = ts.series.map((s) => keyLabel(s.key));
  const per = ts.bucket === "day" ? "per day" : "per hour";
  const tokensChart = chart({
    id: "chart-tokens", title: `LLM tokens ${per} by ${by}`,
    summary: `${windowWords(ts)}: ${ts.series.map((s, i) => `${names[i]} ${tokens(s.totals.tokensTotal)} tokens (${tokens(s.totals.tokensInput)} in, ${tokens(s.totals.tokensOutput)} out)`).join("; ")}.`,
    times, bucket: ts.bucket, format: (v) => tokens(v), columns: (v) => tokens(v), whole: true,
    lines: ts.series.map((s, i) => ({ label: names[i], values: s.points.map((p) => p.tokensTotal), colour: colour(i) })),
  }, mounts);
  const costChart = chart({
    id: "chart-cost", title: `Estimated LLM cost ${per} by ${by}`,
    summary: `${windowWords(ts)}: ${ts.series.map((s, i) => `${names[i]} ${usd(s.totals.costUsd)}${s.totals.unpricedCalls ? ` (+${plural(s.totals.unpricedCalls, "unpriced call")})` : ""}`).join("; ")}.`,
    times, bucket: ts.bucket, format: usd, columns: usd,
    lines: ts.series.map((s, i) => ({ label: names[i], values: s.points.map((p) => p.costUsd), colour: colour(i) })),
  }, mounts);
  return h("div", { class: "charts" }, tokensChart, costChart);
}

// ---- the sections ------------------------------------------------------------------------------

function researchUsage(r, ts, mounts) {
  const rows = r.rows.map((row) => [
    h("code", {}, row.instance), row.protocol, row.modality, String(row.calls), String(row.hits),
    String(row.failures), ms(row.p50Ms), ms(row.p95Ms), providerQuota(row.quota, row.instance),
  ]);
  return [
    h("section", { "aria-labelledby": "usage-calls-title" },
      h("h2", { id: "usage-calls-title" }, "Provider calls"),
      h("p", { class: "hint" }, "From ", when(r.since), " to ", when(r.until), "."),
      callCharts(ts, mounts),
      rows.length
        ? table(null, ["Instance", "Protocol", "Modality", "Calls", "Hits", "Failures", "p50", "p95", "Quota"], rows, {
          className: "usage",
          foot: ["Total", "", "", String(r.totals.calls), String(r.totals.hits), String(r.totals.failures), "", "", ""],
        })
        : h("p", { class: "muted" }, "No provider calls in this window.")),
    h("section", { "aria-labelledby": "usage-quota-title" },
      h("h2", { id: "usage-quota-title" }, "Provider quotas"),
      (r.quotas || []).length
        ? table(null, ["Instance", "Quota"], r.quotas.map((q) => [h("code", {}, q.instance), providerQuota(q.quota, q.instance)]), { className: "provider-quotas" })
        : h("p", { class: "muted" }, "No instance has a quota configured.")),
  ];
}

// One breakdown (by project, provider, account or model) with today's and this month's tokens side by side.
function breakdown(title, today, month, columns, keyOf) {
  const merged = new Map();
  for (const [period, items] of [["today", today], ["month", month]]) {
    for (const item of items || []) {
      const key = keyOf(item);
      merged.set(key, { ...(merged.get(key) || { item }), [period]: item.tokens });
    }
  }
  if (!merged.size) return null;
  const rows = [...merged.values()].map((m) => [...columns.map(([, cell]) => cell(m.item)), tokens(m.today ?? 0), tokens(m.month ?? 0)]);
  return table(title, [...columns.map(([name]) => name), "Today", "This month"], rows, { className: "tokens" });
}

function llmUsage(llm, ts, mounts) {
  const { today = {}, month = {} } = llm;
  const who = llm.scope ? `${llm.scope.level}${llm.scope.name ? ` ${llm.scope.name}` : ""}` : "";
  const periods = [["Today", today], ["This month", month]].map(([name, p]) => [
    `${name} (${p.bucket ?? "—"})`, p.limit ? quotaBar(p.totalTokens, p.limit, { label: `${name}: tokens of the limit` }) : tokens(p.totalTokens),
    String(p.calls ?? 0), p.estimatedCostUsd === undefined ? "—" : usd(p.estimatedCostUsd),
    String(p.unpricedCalls ?? 0),
  ]);
  const quotas = (llm.quotas || []).map((q) => [
    q.scope, q.period, q.bucket,
    quotaBar(q.tokensUsed, q.tokensLimit, { label: `${q.scope} ${q.period} tokens`, thresholds: llmThresholds(q) }),
    tokens(q.tokensHeld), q.percent === null || q.percent === undefined ? "—" : `${q.percent} %`,
  ]);
  const tables = [
    breakdown("By project", today.byProject, month.byProject, [["Project", (i) => i.project]], (i) => i.project),
    breakdown("By provider", today.byProvider, month.byProvider,
      [["Provider", (i) => i.provider], ["Key from", (i) => i.credentialSource]], (i) => `${i.provider}\u0000${i.credentialSource}`),
    breakdown("By account", today.byAccount, month.byAccount, [["Account", (i) => i.account]], (i) => i.account),
    breakdown("By model", today.byModel, month.byModel,
      [["Instance", (i) => h("code", {}, i.instance)], ["Model", (i) => i.model]], (i) => `${i.instance}\u0000${i.model}`),
  ].filter(Boolean);
  return h("section", { "aria-labelledby": "usage-llm-title" },
    h("h2", { id: "usage-llm-title" }, "LLM tokens"),
    h("p", { class: "hint" }, `Tenant ${llm.tenant ?? "—"} · ${who} · as of `, when(llm.generatedAt), "."),
    table(null, ["Period", "Tokens (of limit)", "Calls", "Estimated cost", "Unpriced calls"], periods, { className: "llm-periods" }),
    llmCharts(ts, mounts),
    tables.length ? tables : h("p", { class: "muted" }, "No LLM calls this month."),
    h("h3", {}, "LLM quota lines"),
    quotas.length
      ? table(null, ["Scope", "Period", "Bucket", "Used (of limit)", "Held", "Percent"], quotas, { className: "llm-quotas" })
      : h("p", { class: "muted" }, "No LLM quota applies here."));
}

// ---- wiring ------------------------------------------------------------------------------------

function redraw() {
  if (last && !$("page-usage").hidden) renderUsage(...last);
}

$("usage-form").addEventListener("submit", loadUsage);
for (const id of ["usage-bucket", "usage-calls-by", "usage-by"]) $(id).addEventListener("change", () => loadUsage());
// the theme button sets <html data-theme>; the system's scheme can change too: the canvas is redrawn
new MutationObserver(redraw).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);

registerPage("usage", { results: "usage-view", load: loadUsage });
