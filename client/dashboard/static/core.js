/* rocketmq-emu dashboard: the helpers every view uses: DOM building, the API call, tables, formatting, shared state
 * (the page: index.html loads core.js, the views, then main.js, as classic scripts sharing
 * their top-level names; plain ES2020, no dependencies, no build step).
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() in core.js with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

// ---------------------------------------------------------------------------------------
// DOM helpers
// ---------------------------------------------------------------------------------------

/** h("a", {href: "#/x", class: "y", onclick: fn}, "text", node, [more]) -> element.
 *  Attributes starting with "on" become listeners; strings become text nodes. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) {
      // Handlers are functions only: a string would become inline script (and CSP refuses it).
      if (typeof v === "function") el.addEventListener(k.slice(2), v);
    } else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && !k.startsWith("on")) el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const $ = (sel) => document.querySelector(sel);

/** A "#/..." route; every data-derived segment is URI-encoded. */
function route(...segments) {
  return "#/" + segments.map((x, i) => (i === 0 ? x : encodeURIComponent(x))).join("/");
}

function routeWithQuery(base, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== null && v !== undefined) q.set(k, v);
  const qs = q.toString();
  return qs ? base + "?" + qs : base;
}

// ---------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------

const pad = (n, w = 2) => String(n).padStart(w, "0");

/** Local "YYYY-MM-DD HH:MM:SS.mmm". */
function fmtTime(ms) {
  if (ms === null || ms === undefined || ms === "" || !isFinite(ms) || ms <= 0) return "—";
  const d = new Date(Number(ms));
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A time cell: formatted text, raw milliseconds in the title. */
function timeNode(ms) {
  const ok = ms !== null && ms !== undefined && isFinite(ms) && ms > 0;
  return h("time", {title: ok ? String(ms) + " ms" : null, class: "mono"}, fmtTime(ms));
}

/** Value for <input type="datetime-local" step="1">, in local time. */
function toLocalInput(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Milliseconds from a datetime-local value (parsed as local time), or NaN. */
const fromLocalInput = (v) => (v ? new Date(v).getTime() : NaN);

function fmtBytes(n) {
  if (n === null || n === undefined || !isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Number(n), i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

const fmtNum = (n) => (n === null || n === undefined || n === "" ? "—" : Number(n).toLocaleString("en-US"));

/** "in 1h 59m" / "3m 5s ago", relative durations for the Scheduled view. */
function fmtRelative(deltaMs) {
  const abs = Math.abs(deltaMs);
  const sec = Math.floor(abs / 1000);
  const d = Math.floor(sec / 86400), hr = Math.floor((sec % 86400) / 3600);
  const m = Math.floor((sec % 3600) / 60), sc = sec % 60;
  let text;
  if (d) text = `${d}d ${hr}h`;
  else if (hr) text = `${hr}h ${m}m`;
  else if (m) text = `${m}m ${sc}s`;
  else text = `${sc}s`;
  return deltaMs >= 0 ? `in ${text}` : `${text} ago`;
}

/** KEYS as one string (the API may give the tokens as a list). */
const fmtKeys = (k) => (Array.isArray(k) ? k.join(" ") : dash(k));
const yesNo = (b) => (b ? "yes" : "no");
const dash = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));

// ---------------------------------------------------------------------------------------
// Tables: one helper so every table has a scrolling wrapper, right-aligned numbers and an
// empty-state row. A column is {label, get(row) -> text|node, num?, mono?, title?(row)}.
// ---------------------------------------------------------------------------------------

function buildTable(id, columns, rows, emptyText) {
  const head = h("thead", {}, h("tr", {}, columns.map((c) =>
    h("th", {scope: "col", class: c.num ? "num" : null}, c.label))));
  const body = h("tbody", {});
  if (!rows.length) {
    body.appendChild(h("tr", {class: "empty"}, h("td", {colspan: columns.length}, emptyText || "none")));
  }
  for (const r of rows) {
    body.appendChild(h("tr", {}, columns.map((c) => {
      let v = c.get(r);
      if (v === null || v === undefined || v === "") v = "—";
      const cls = [c.num ? "num" : "", c.mono ? "mono" : "", c.cls || ""].filter(Boolean).join(" ") || null;
      return h("td", {class: cls, title: c.title ? c.title(r) : null}, v);
    })));
  }
  return h("table", {id}, head, body);
}

/** A wrapper whose table is replaced only when its data changed, so a poll that brings
 *  nothing new keeps focus, selection and scroll position inside it. */
function tableSlot(id) {
  const wrap = h("div", {class: "table-wrap", "data-for": id});
  let last = null;
  return {
    el: wrap,
    set(columns, rows, emptyText, key) {
      const sig = JSON.stringify([key === undefined ? rows : key, emptyText]);
      if (sig === last) return;
      last = sig;
      wrap.replaceChildren(buildTable(id, columns, rows, emptyText));
    },
  };
}

const section = (title, ...children) => h("section", {}, h("h2", {}, title), ...children);

/** Key/value rows, used for summaries. */
const kvColumns = [
  {label: "field", get: (r) => r[0], cls: "kv-key"},
  {label: "value", get: (r) => r[1], mono: true},
];

// ---------------------------------------------------------------------------------------
// Token, errors, fetch
// ---------------------------------------------------------------------------------------

const TOKEN_KEY = "rmq-emu-dashboard-token";
const BROKER_KEY = "rmq-emu-dashboard-broker";

// A ?token=XYZ in the page's URL is kept for this tab and removed from the address bar (and
// from history), so it does not end up in bookmarks or screenshots.
(function takeTokenFromUrl() {
  const params = new URLSearchParams(location.search);
  const t = params.get("token");
  if (t === null) return;
  try { sessionStorage.setItem(TOKEN_KEY, t); } catch (e) { /* storage disabled: no token kept */ }
  params.delete("token");
  const qs = params.toString();
  history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
})();

function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY); } catch (e) { return null; }
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

const errorBox = $("#error");
function showError(msg) {
  // One line, as the contract's errors are.
  $("#error-text").textContent = String(msg).split("\n")[0];
  errorBox.hidden = false;
}
function clearError() { errorBox.hidden = true; $("#error-text").textContent = ""; }
$("#error-dismiss").addEventListener("click", clearError);

function showTokenForm() {
  const form = $("#token-form");
  if (form.hidden) {
    form.hidden = false;
    $("#token").focus();
  }
}

$("#token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = $("#token").value.trim();
  if (!t) return;
  try { sessionStorage.setItem(TOKEN_KEY, t); } catch (e) { /* kept in memory below */ }
  memoryToken = t;
  $("#token").value = "";
  $("#token-form").hidden = true;
  clearError();
  tick(true);
});
let memoryToken = null;

/** fetch + JSON; throws ApiError with the answer's one-line `error` on a non-2xx status,
 *  or status 0 when the emulator cannot be reached. */
async function api(path, method = "GET", body) {
  const headers = {Accept: "application/json"};
  const token = getToken() || memoryToken;
  if (token) headers.Authorization = "Bearer " + token;
  const init = {method, headers, cache: "no-store"};
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "emulator unreachable");
  }
  const text = await res.text().catch(() => "");
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (res.status === 401) {
    showTokenForm();
    throw new ApiError(401, (data && data.error) || "this control API requires a bearer token");
  }
  if (!res.ok) {
    const msg = data && typeof data.error === "string" ? data.error : `HTTP ${res.status} on ${method} ${path.split("?")[0]}`;
    throw new ApiError(res.status, msg);
  }
  return data;
}

/** Runs an async action from an event handler; a failure goes to #error, never uncaught. */
function guard(fn) {
  return (...args) => {
    Promise.resolve().then(() => fn(...args)).catch((e) => showError(e && e.message ? e.message : String(e)));
  };
}

// Last resort: anything that slipped through is shown, not left in the console.
window.addEventListener("unhandledrejection", (ev) => {
  ev.preventDefault();
  showError(ev.reason && ev.reason.message ? ev.reason.message : String(ev.reason));
});

/** The broker picked in the header (multi-broker clusters), as a ?broker= parameter. */
function withBroker(path) {
  const b = state.broker;
  if (!b) return path;
  return path + (path.includes("?") ? "&" : "?") + "broker=" + encodeURIComponent(b);
}

// ---------------------------------------------------------------------------------------
// Shared state: the last heartbeat (GET /cluster) and the business clock's "now".
// ---------------------------------------------------------------------------------------

const state = {
  cluster: null,          // last /cluster answer (or a /health-derived stand-in)
  nowMs: null,            // business clock at the last heartbeat
  nowAt: 0,               // Date.now() when it was received
  clockMode: "follow",
  reachable: true,
  clusterMissing: false,  // /cluster answered 404: an older emulator, use /health instead
  broker: null,
  stoppedCount: 0,        // brokers seen stopped at the last heartbeat
};
try { state.broker = sessionStorage.getItem(BROKER_KEY) || null; } catch (e) { /* none */ }

/** A datetime-local input defaulting to the business clock now (+ offsetMs). Before the
 *  first heartbeat the clock is unknown, so the default is set again once it is, unless
 *  the user typed in the field meanwhile. */
const pendingClockDefaults = [];
function clockDefaultInput(attrs, offsetMs) {
  const el = h("input", {type: "datetime-local", step: "1", ...attrs, value: toLocalInput(clusterNow() + offsetMs)});
  if (state.nowMs === null) {
    el.addEventListener("input", () => { el.dataset.edited = "1"; });
    pendingClockDefaults.push(() => { if (!el.dataset.edited) el.value = toLocalInput(clusterNow() + offsetMs); });
  }
  return el;
}

/** The business clock now (the emulator's clock may be advanced far from the wall clock). */
function clusterNow() {
  if (state.nowMs === null) return Date.now();
  return state.nowMs + (state.clockMode === "follow" ? Date.now() - state.nowAt : 0);
}

// ---------------------------------------------------------------------------------------
// Views. Each view is {title, nav, render(params) -> builds the page once, refresh() -> loads
// and redraws only its data parts, poll: whether refresh runs every 2 s}.
// ---------------------------------------------------------------------------------------

const views = {};
let current = null;        // {name, view, params, gen}
let generation = 0;        // bumps on every route change; late answers for old routes are dropped

function page(title, ...children) {
  const h1 = h("h1", {tabindex: "-1"}, title);
  return [h1, ...children];
}
