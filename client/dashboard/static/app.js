/* rocketmq-emu dashboard: a single page over the control API's JSON endpoints
 * (docs/dashboard-api.md). Plain ES2020, no dependencies, no build step.
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() below with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

(function () {
  // ---------------------------------------------------------------------------------------
  // DOM helpers
  // ---------------------------------------------------------------------------------------

  /** h("a", {href: "#/x", class: "y", onclick: fn}, "text", node, [more]) -> element.
   *  Attributes starting with "on" become listeners; strings become text nodes. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
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
      if (v !== null && v !== undefined) el.setAttribute(k, String(v));
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

  // ----- Cluster --------------------------------------------------------------------------
  views.cluster = {
    nav: "cluster",
    poll: false, // the heartbeat already fetches /cluster every 2 s and calls show()
    render() {
      this.brokers = tableSlot("brokers");
      this.info = tableSlot("cluster-info");
      this.chart = h("div", {class: "chart-wrap"});
      return page("Cluster",
        section("Brokers", this.brokers.el),
        section("Put / get rate", this.chart),
        section("Endpoints", this.info.el));
    },
    async refresh() { if (state.cluster) this.show(state.cluster); },
    show(c) {
      if (!this.brokers) return;
      const brokers = c.brokers || [];
      this.brokers.set([
        {label: "name", get: (b) => b.name, cls: "nowrap"},
        {label: "addr", get: (b) => b.addr, mono: true},
        {label: "version", get: (b) => dash(b.version)},
        {label: "TLS", get: (b) => dash(b.tls)},
        {label: "ACL", get: (b) => (b.acl === undefined ? "—" : yesNo(b.acl))},
        {label: "store", get: (b) => dash(b.store), cls: "mono path"},
        {label: "store size", num: true, get: (b) => diskUse(b.disk),
          title: (b) => (b.disk ? `store ${fmtBytes(b.disk.storeBytes)}, free ${fmtBytes(b.disk.free)} of ${fmtBytes(b.disk.total)}` : null)},
        {label: "put total", num: true, get: (b) => fmtNum(b.putTotal)},
        {label: "get total", num: true, get: (b) => fmtNum(b.getTotal)},
        {label: "running", get: (b) => h("span", {class: b.running ? "ok" : "bad"}, b.running ? "running" : "stopped")},
      ], brokers.map((b) => ({...b, tps: undefined})), "No broker", brokers.map((b) => ({...b, tps: undefined})));
      const rec = c.recording || {};
      const clock = c.clock || {};
      this.info.set(kvColumns, [
        ["cluster", dash(c.clusterName)],
        ["name server", dash(c.namesrv)],
        ["gRPC endpoint", dash(c.grpc)],
        ["business clock", h("span", {}, timeNode(c.now_ms !== undefined ? c.now_ms : clock.now_ms), ` (${dash(clock.mode)})`)],
        ["recording", rec.enabled ? `on — ${dash(rec.file)} (${fmtBytes(rec.bytes)})` : "off"],
      ], "none", [c.clusterName, c.namesrv, c.grpc, c.now_ms, clock.mode, rec]);
      // Drawn at the wrapper's pixel width so the labels keep their size on a phone.
      const width = Math.max(320, Math.min(1000, this.chart.clientWidth || 720));
      this.chart.replaceChildren(tpsChart(brokers, width));
    },
  };

  function diskUse(disk) {
    if (!disk || !disk.total) return "—";
    // The store's own size first: the file system's fill level is context.
    const used = disk.total - disk.free;
    return `${fmtBytes(disk.storeBytes)} (disk ${Math.round((used / disk.total) * 100)} % full)`;
  }

  /** The put/get TPS chart of all brokers (summed per second) as inline SVG, with axes in
   *  msg/s and local time labels, and a legend. */
  function tpsChart(brokers, width) {
    const bySec = new Map();
    for (const b of brokers) {
      for (const p of b.tps || []) {
        const k = Math.round(p.t / 1000);
        const e = bySec.get(k) || {t: k * 1000, put: 0, get: 0};
        e.put += Number(p.put) || 0;
        e.get += Number(p.get) || 0;
        bySec.set(k, e);
      }
    }
    const pts = [...bySec.values()].sort((a, b) => a.t - b.t);
    const W = width, H = 240, L = 56, R = 12, T = 14, B = 40;
    const svg = s("svg", {id: "tps-chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
      "aria-labelledby": "tps-title tps-desc", class: "chart", preserveAspectRatio: "xMidYMid meet"});
    svg.appendChild(s("title", {id: "tps-title"}, "Put and get TPS over time"));
    const last = pts[pts.length - 1];
    svg.appendChild(s("desc", {id: "tps-desc"}, last
      ? `Latest: put ${last.put.toFixed(1)} msg/s, get ${last.get.toFixed(1)} msg/s; ${pts.length} samples.`
      : "No sample yet."));
    const maxV = Math.max(1, ...pts.map((p) => Math.max(p.put, p.get)));
    const yMax = niceCeil(maxV);
    const t0 = pts.length ? pts[0].t : 0, t1 = pts.length > 1 ? last.t : t0 + 1000;
    const x = (t) => L + ((t - t0) / (t1 - t0 || 1)) * (W - L - R);
    const y = (v) => T + (1 - v / yMax) * (H - T - B);
    // Axes and grid: 4 horizontal lines, y labels in msg/s.
    for (let i = 0; i <= 4; i++) {
      const v = (yMax * i) / 4;
      svg.appendChild(s("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), class: i ? "grid" : "axis"}));
      svg.appendChild(s("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "tick"}, fmtRate(v)));
    }
    svg.appendChild(s("line", {x1: L, x2: L, y1: T, y2: H - B, class: "axis"}));
    svg.appendChild(s("text", {x: 12, y: (H - B + T) / 2, class: "unit",
      transform: `rotate(-90 12 ${(H - B + T) / 2})`, "text-anchor": "middle"}, "msg/s"));
    // Time labels: up to 5, local HH:MM:SS.
    if (pts.length) {
      const n = pts.length > 1 ? 4 : 0;
      for (let i = 0; i <= n; i++) {
        const t = t0 + ((t1 - t0) * i) / (n || 1);
        const d = new Date(t);
        svg.appendChild(s("text", {x: x(t), y: H - B + 16, "text-anchor": i === 0 && n ? "start" : i === n && n ? "end" : "middle", class: "tick"},
          `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`));
      }
    } else {
      svg.appendChild(s("text", {x: (W + L) / 2, y: (H - B + T) / 2, "text-anchor": "middle", class: "tick"}, "waiting for samples…"));
    }
    svg.appendChild(s("text", {x: W - R, y: H - 6, "text-anchor": "end", class: "unit"}, "time (local)"));
    const line = (key, cls) => {
      if (!pts.length) return;
      const d = pts.map((p, i) => `${i ? "L" : "M"}${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
      svg.appendChild(s("path", {d, class: cls, fill: "none"}));
    };
    line("put", "series-put");
    line("get", "series-get");
    // Legend.
    const lg = s("g", {transform: `translate(${L + 8}, ${H - 8})`});
    lg.appendChild(s("rect", {x: 0, y: -9, width: 14, height: 4, class: "swatch-put"}));
    lg.appendChild(s("text", {x: 20, y: -3, class: "legend"}, "put"));
    lg.appendChild(s("rect", {x: 60, y: -9, width: 14, height: 4, class: "swatch-get"}));
    lg.appendChild(s("text", {x: 80, y: -3, class: "legend"}, "get"));
    svg.appendChild(lg);
    return svg;
  }

  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    // A top whose quarters (the grid lines) read as round numbers: 1, 2, 4, 8 (x 10^k).
    for (const m of [1, 2, 4, 8, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  const fmtRate = (v) => (v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1));

  // ----- Topics ---------------------------------------------------------------------------
  views.topics = {
    nav: "topics",
    poll: true,
    render() {
      this.data = [];
      this.table = tableSlot("topics");
      this.filter = h("input", {id: "topic-filter", type: "search", placeholder: "substring", oninput: () => this.draw()});
      this.kind = h("select", {id: "topic-kind", onchange: () => this.draw()},
        ["all", "user", "system", "retry", "dlq"].map((k) => h("option", {value: k}, k)));
      this.kind.value = "user";
      this.result = h("p", {id: "topic-form-result", role: "status", class: "result"});
      const form = h("form", {id: "topic-form", class: "form-grid", onsubmit: guard((ev) => this.create(ev))},
        h("label", {for: "new-topic"}, "Topic"), h("input", {id: "new-topic", required: true, autocomplete: "off"}),
        h("label", {for: "new-queues"}, "Queues"), h("input", {id: "new-queues", type: "number", min: 1, max: 1024, value: "4"}),
        h("label", {for: "new-type"}, "Type"),
        h("select", {id: "new-type"}, ["NORMAL", "FIFO", "DELAY", "TRANSACTION"].map((t) => h("option", {value: t}, t))),
        h("div", {class: "form-actions"}, h("button", {type: "submit", id: "create-topic"}, "Create / update")));
      return page("Topics",
        section("Topic list",
          h("div", {class: "toolbar"},
            h("label", {for: "topic-filter"}, "Filter"), this.filter,
            h("label", {for: "topic-kind"}, "Kind"), this.kind),
          this.table.el),
        section("Create or update a topic", form, this.result));
    },
    async refresh() {
      this.data = (await api(withBroker("/topics"))) || [];
      this.draw();
    },
    draw() {
      const f = this.filter.value.trim().toLowerCase();
      const k = this.kind.value;
      const rows = this.data.filter((t) => (k === "all" || t.kind === k) && (!f || t.topic.toLowerCase().includes(f)));
      this.table.set([
        {label: "topic", get: (t) => h("a", {class: "topic-link", href: route("topics", t.topic)}, t.topic)},
        {label: "type", get: (t) => dash(t.type)},
        {label: "queues", num: true, get: (t) => queueNums(t)},
        {label: "messages", num: true, get: (t) => fmtNum(t.messages)},
      ], rows, this.data.length ? "No topic matches the filter" : "No topic yet");
    },
    async create(ev) {
      ev.preventDefault();
      const topic = $("#new-topic").value.trim();
      const queues = parseInt($("#new-queues").value, 10) || 4;
      const type = $("#new-type").value;
      this.result.textContent = "…";
      try {
        await api("/topics", "POST", {topic, queues, type, ...(state.broker ? {broker: state.broker} : {})});
      } catch (e) {
        this.result.textContent = "";
        throw e;
      }
      this.result.textContent = `Topic ${topic} saved (${queues} queues, ${type}).`;
      await this.refresh();
    },
  };

  function queueNums(t) {
    const r = t.readQueueNums, w = t.writeQueueNums;
    if (r === undefined && w === undefined) return String((t.queues || []).length);
    return r === w ? String(r) : `${r} r / ${w} w`;
  }

  // ----- Topic detail ---------------------------------------------------------------------
  views.topic = {
    nav: "topics",
    poll: true,
    render(p) {
      this.name = p.id;
      this.summary = tableSlot("topic-summary");
      this.queues = tableSlot("queues");
      this.route = tableSlot("route");
      this.groups = h("ul", {id: "topic-groups", class: "plain-list"});
      return page(`Topic ${this.name}`,
        h("p", {class: "actions"},
          h("a", {href: routeWithQuery("#/messages", {topic: this.name}), id: "topic-messages"}, "messages of this topic"),
          " ",
          h("button", {type: "button", id: "delete-topic", class: "danger", onclick: guard(() => this.remove())}, "Delete topic")),
        section("Summary", this.summary.el),
        section("Queues", this.queues.el),
        section("Route", this.route.el),
        section("Consumer groups", this.groups));
    },
    async refresh() {
      const t = await api(withBroker("/topics/" + encodeURIComponent(this.name)));
      const attrs = Object.entries(t.attributes || {}).map(([k, v]) => `${k}=${v}`).join(", ");
      this.summary.set(kvColumns, [
        ["kind", dash(t.kind)], ["group", dash(t.group)], ["type", dash(t.type)], ["perm", dash(t.perm)],
        ["read / write queues", `${dash(t.readQueueNums)} / ${dash(t.writeQueueNums)}`], ["attributes", attrs || "—"],
      ]);
      this.queues.set([
        {label: "queueId", num: true, mono: true, get: (q) => String(q.queueId)},
        {label: "minOffset", num: true, mono: true, get: (q) => String(q.minOffset)},
        {label: "maxOffset", num: true, mono: true, get: (q) => String(q.maxOffset)},
        {label: "last store time", get: (q) => timeNode(q.lastUpdateTimestamp)},
      ], t.queues || [], "No queue");
      this.route.set([
        {label: "broker", get: (r) => r.broker},
        {label: "addr", mono: true, get: (r) => r.addr},
        {label: "read queues", num: true, get: (r) => String(r.readQueueNums)},
        {label: "write queues", num: true, get: (r) => String(r.writeQueueNums)},
        {label: "perm", num: true, get: (r) => String(r.perm)},
      ], t.route || [], "Not registered on the name server");
      const groups = t.groups || [];
      const sig = JSON.stringify(groups);
      if (sig !== this.groupsSig) {
        this.groupsSig = sig;
        this.groups.replaceChildren(...(groups.length
          ? groups.map((g) => h("li", {}, h("a", {class: "group-link", href: route("groups", g)}, g)))
          : [h("li", {class: "muted"}, "No consumer group consumes this topic yet")]));
      }
    },
    async remove() {
      if (!window.confirm(`Delete topic ${this.name} from every broker and the name server?`)) return;
      await api("/topics/" + encodeURIComponent(this.name), "DELETE");
      location.hash = "#/topics";
    },
  };

  // ----- Consumer groups ------------------------------------------------------------------
  views.groups = {
    nav: "groups",
    poll: true,
    render() {
      this.data = [];
      this.table = tableSlot("groups");
      this.filter = h("input", {id: "group-filter", type: "search", placeholder: "substring", oninput: () => this.draw()});
      // The broker knows many built-in groups (CID_ONSAPI_*, TOOLS_CONSUMER...): user ones first.
      this.kind = h("select", {id: "group-kind", onchange: () => this.draw()},
        ["all", "user", "system"].map((k) => h("option", {value: k}, k)));
      this.kind.value = "user";
      return page("Consumer groups",
        section("Groups",
          h("div", {class: "toolbar"}, h("label", {for: "group-filter"}, "Filter"), this.filter,
            h("label", {for: "group-kind"}, "Kind"), this.kind),
          this.table.el));
    },
    async refresh() {
      this.data = (await api(withBroker("/groups"))) || [];
      this.draw();
    },
    draw() {
      const f = this.filter.value.trim().toLowerCase();
      const k = this.kind.value;
      const rows = this.data.filter((g) => (k === "all" || (g.kind || "user") === k) && (!f || g.group.toLowerCase().includes(f)));
      this.table.set([
        {label: "group", get: (g) => h("a", {class: "group-link", href: route("groups", g.group)}, g.group)},
        {label: "online", get: (g) => h("span", {class: g.online ? "ok" : "muted"}, yesNo(g.online))},
        {label: "members", num: true, get: (g) => fmtNum(g.members)},
        {label: "consume type", get: (g) => dash(g.consumeType)},
        {label: "model", get: (g) => dash(g.messageModel)},
        {label: "lag", num: true, get: (g) => fmtNum(g.lag)},
        {label: "in flight", num: true, get: (g) => fmtNum(g.inflight)},
      ], rows, this.data.length ? "No group matches the filter" : "No consumer group yet");
    },
  };

  // ----- Consumer group detail ------------------------------------------------------------
  views.group = {
    nav: "groups",
    poll: true,
    render(p) {
      this.name = p.id;
      this.lag = h("span", {id: "group-lag", class: "big-number"}, "…");
      this.summary = tableSlot("group-summary");
      this.members = tableSlot("members");
      this.subs = tableSlot("subscriptions");
      this.queues = tableSlot("group-queues");
      this.inflight = tableSlot("inflight");
      this.resetTopic = h("select", {id: "reset-topic", required: true});
      this.topicsSig = null;
      this.resetResult = h("div", {id: "reset-result", role: "status", class: "result"});
      const form = h("form", {id: "reset-form", class: "form-grid", onsubmit: guard((ev) => this.reset(ev))},
        h("label", {for: "reset-topic"}, "Topic"), this.resetTopic,
        h("label", {for: "reset-time"}, "Time"),
        clockDefaultInput({id: "reset-time", required: true}, 0),
        h("div", {class: "form-actions"}, h("button", {type: "submit", id: "reset-offset"}, "Reset offset")));
      return page(`Consumer group ${this.name}`,
        h("p", {class: "lag-line"}, "Total lag: ", this.lag),
        section("Summary", this.summary.el),
        section("Members", this.members.el),
        section("Subscriptions", this.subs.el),
        section("Queues", this.queues.el),
        section("In flight (POP, invisible)", this.inflight.el),
        section("Reset offset", h("p", {class: "muted"}, "Moves the group's offsets to the first message stored at or after the time (business clock)."), form, this.resetResult));
    },
    async refresh() {
      const g = await api(withBroker("/groups/" + encodeURIComponent(this.name)));
      this.lag.textContent = String(g.lag === undefined || g.lag === null ? 0 : g.lag);
      this.summary.set(kvColumns, [
        ["online", yesNo(g.online)], ["consume type", dash(g.consumeType)],
        ["message model", dash(g.messageModel)], ["consume from where", dash(g.consumeFromWhere)],
      ]);
      this.members.set([
        {label: "clientId", mono: true, get: (m) => m.clientId},
        {label: "language", get: (m) => dash(m.language)},
        {label: "version", get: (m) => dash(m.version)},
        {label: "clientAddr", mono: true, get: (m) => dash(m.clientAddr)},
      ], g.members || [], "No member online");
      this.subs.set([
        {label: "topic", get: (x) => h("a", {class: "topic-link", href: route("topics", x.topic)}, x.topic)},
        {label: "expression", mono: true, get: (x) => dash(x.subString)},
        {label: "type", get: (x) => dash(x.expressionType)},
      ], g.subscriptions || [], "No subscription known (no member online)");
      this.queues.set([
        {label: "topic", get: (q) => h("a", {class: "topic-link", href: route("topics", q.topic)}, q.topic)},
        {label: "queueId", num: true, mono: true, get: (q) => String(q.queueId)},
        {label: "brokerOffset", num: true, mono: true, get: (q) => String(q.brokerOffset)},
        {label: "consumerOffset", num: true, mono: true, get: (q) => String(q.consumerOffset)},
        {label: "lag", num: true, get: (q) => fmtNum(q.lag)},
        {label: "last consume time", get: (q) => timeNode(q.lastTimestamp)},
      ], g.queues || [], "No committed offset yet");
      this.inflight.set([
        {label: "topic", get: (m) => m.topic},
        {label: "queueId", num: true, mono: true, get: (m) => String(m.queueId)},
        {label: "offset", num: true, mono: true, get: (m) => String(m.offset)},
        {label: "invisible until", get: (m) => timeNode(m.invisibleUntil)},
      ], g.inflight || [], "No message in flight");
      // The reset form's topic choices: updated only when the set changes, keeping the pick.
      const topics = [...new Set([...(g.subscriptions || []).map((x) => x.topic), ...(g.queues || []).map((q) => q.topic)])].sort();
      const sig = JSON.stringify(topics);
      if (sig !== this.topicsSig) {
        this.topicsSig = sig;
        const keep = this.resetTopic.value;
        this.resetTopic.replaceChildren(...(topics.length ? topics.map((t) => h("option", {value: t}, t))
          : [h("option", {value: ""}, "(no topic known)")]));
        if (topics.includes(keep)) this.resetTopic.value = keep;
        else { const firstUser = topics.find((t) => !t.startsWith("%")); if (firstUser) this.resetTopic.value = firstUser; }
      }
    },
    async reset(ev) {
      ev.preventDefault();
      const topic = this.resetTopic.value;
      const timestamp = fromLocalInput($("#reset-time").value);
      if (!topic) throw new Error("pick a topic");
      if (!isFinite(timestamp)) throw new Error("give a time");
      const r = await api("/groups/" + encodeURIComponent(this.name) + "/reset-offset", "POST", {topic, timestamp});
      const offs = (r && r.offsets) || [];
      this.resetResult.replaceChildren(
        h("p", {}, `Reset ${offs.length} queue(s) of ${topic} to ${fmtTime(timestamp)}.`),
        h("div", {class: "table-wrap"}, buildTable("reset-offsets", [
          {label: "queueId", num: true, mono: true, get: (o) => String(o.queueId)},
          {label: "offset", num: true, mono: true, get: (o) => String(o.offset)},
        ], offs, "No queue")));
      await this.refresh();
    },
  };

  // ----- Producers ------------------------------------------------------------------------
  views.producers = {
    nav: "producers",
    poll: true,
    render() {
      this.table = tableSlot("producers");
      return page("Producers", section("Producer connections", this.table.el));
    },
    async refresh() {
      const groups = (await api(withBroker("/producers"))) || [];
      const rows = [];
      for (const g of groups) {
        const conns = g.connections || [];
        if (!conns.length) rows.push({group: g.group});
        for (const c of conns) rows.push({group: g.group, ...c});
      }
      this.table.set([
        {label: "group", get: (r) => r.group},
        {label: "clientId", mono: true, get: (r) => dash(r.clientId)},
        {label: "language", get: (r) => dash(r.language)},
        {label: "version", get: (r) => dash(r.version)},
        {label: "clientAddr", mono: true, get: (r) => dash(r.clientAddr)},
      ], rows, "No producer connected");
    },
  };

  // ----- Messages (search) ----------------------------------------------------------------
  const summaryColumns = [
    {label: "msgId", mono: true, get: (m) => h("a", {class: "msg-link", href: route("messages", m.offsetMsgId)}, dash(m.msgId || m.offsetMsgId)),
      title: (m) => `offsetMsgId ${m.offsetMsgId}`},
    {label: "tags", get: (m) => dash(m.tags)},
    {label: "keys", get: (m) => fmtKeys(m.keys)},
    {label: "queue", num: true, mono: true, get: (m) => String(m.queueId)},
    {label: "offset", num: true, mono: true, get: (m) => String(m.queueOffset)},
    {label: "store time", get: (m) => timeNode(m.storeTimestamp)},
    {label: "size", num: true, get: (m) => fmtBytes(m.bodySize)},
  ];

  views.messages = {
    nav: "messages",
    poll: false, // results are fetched on submit / route change only
    render(p) {
      const q = p.query;
      const now = clusterNow();
      const begin = Number(q.get("begin")) || now - 3600 * 1000;
      const end = Number(q.get("end")) || now;
      const input = (id, label, attrs) => [h("label", {for: id}, label), h("input", {id, autocomplete: "off", ...attrs})];
      this.form = h("form", {id: "msg-search", class: "form-grid", onsubmit: guard((ev) => this.submit(ev))},
        input("msg-topic", "Topic", {value: q.get("topic") || "", list: "msg-topic-list"}),
        h("datalist", {id: "msg-topic-list"}),
        input("msg-key", "Key", {value: q.get("key") || ""}),
        input("msg-id", "Message id", {value: q.get("id") || "", class: "mono"}),
        h("label", {for: "msg-begin"}, "From"),
        q.get("begin") ? h("input", {id: "msg-begin", type: "datetime-local", step: "1", value: toLocalInput(begin)})
          : clockDefaultInput({id: "msg-begin"}, -3600 * 1000),
        h("label", {for: "msg-end"}, "To"),
        q.get("end") ? h("input", {id: "msg-end", type: "datetime-local", step: "1", value: toLocalInput(end)})
          : clockDefaultInput({id: "msg-end"}, 0),
        h("div", {class: "form-actions"}, h("button", {type: "submit", id: "msg-search-btn"}, "Search")));
      this.note = h("p", {id: "msg-truncated", class: "muted"});
      this.table = tableSlot("messages");
      this.hasQuery = ["topic", "key", "id"].some((k) => q.get(k));
      this.query = q;
      // Topic suggestions for the input (best effort; the list is not required).
      api(withBroker("/topics")).then((ts) => {
        const dl = $("#msg-topic-list");
        if (dl && Array.isArray(ts)) dl.replaceChildren(...ts.filter((t) => t.kind === "user").map((t) => h("option", {value: t.topic})));
      }).catch(() => { /* suggestions only */ });
      return page("Messages",
        section("Search", h("p", {class: "muted"}, "By message id if given, else by key (with a topic), else by topic and store time."), this.form),
        section("Results", this.note, this.table.el));
    },
    async refresh() {
      if (!this.hasQuery) {
        this.table.set(summaryColumns, [], "Search for messages with the form above.");
        return;
      }
      const q = this.query;
      const params = new URLSearchParams();
      if (q.get("id")) {
        params.set("id", q.get("id"));
        if (q.get("topic")) params.set("topic", q.get("topic"));
      } else if (q.get("key")) {
        params.set("topic", q.get("topic") || "");
        params.set("key", q.get("key"));
      } else {
        params.set("topic", q.get("topic"));
        params.set("begin", q.get("begin") || String(clusterNow() - 3600 * 1000));
        params.set("end", q.get("end") || String(clusterNow()));
        params.set("max", "64");
      }
      this.note.textContent = "Searching…";
      let r;
      try {
        r = await api("/messages/search?" + params.toString());
      } catch (e) {
        this.note.textContent = "";
        this.table.set(summaryColumns, [], "Search failed.");
        throw e;
      }
      const msgs = (r && r.messages) || [];
      this.note.textContent = r && r.truncated ? `Showing the first ${msgs.length} messages (truncated: narrow the search).` : `${msgs.length} message(s).`;
      this.table.set(summaryColumns, msgs, "No message found");
    },
    submit(ev) {
      ev.preventDefault();
      const topic = $("#msg-topic").value.trim(), key = $("#msg-key").value.trim(), id = $("#msg-id").value.trim();
      if (!id && !topic) throw new Error("give a topic (or a message id)");
      const params = {};
      if (id) { params.id = id; if (topic) params.topic = topic; }
      else if (key) { params.topic = topic; params.key = key; }
      else {
        const b = fromLocalInput($("#msg-begin").value), e = fromLocalInput($("#msg-end").value);
        params.topic = topic;
        params.begin = isFinite(b) ? b : clusterNow() - 3600 * 1000;
        // datetime-local has second precision: include the whole last second.
        params.end = isFinite(e) ? e + 999 : clusterNow();
      }
      const target = routeWithQuery("#/messages", params);
      if (location.hash === target) this.refresh().catch((e) => showError(e.message));
      else location.hash = target; // the hash keeps the query, so results survive a reload
    },
  };

  // ----- Message detail -------------------------------------------------------------------
  views.message = {
    nav: "messages",
    poll: true, // consumedBy changes as groups consume; the form parts are left alone
    render(p) {
      this.id = p.id;
      this.summary = tableSlot("msg-summary");
      this.props = tableSlot("msg-properties");
      this.bodyLabel = h("p", {id: "msg-body-label", class: "muted"}, "…");
      this.body = h("pre", {id: "msg-body", class: "body"});
      this.consumed = tableSlot("consumed-by");
      this.resendGroup = h("select", {id: "resend-group"});
      this.groupsSig = null;
      this.resendResult = h("pre", {id: "resend-result", class: "result body", hidden: true});
      this.traceLink = h("a", {id: "msg-trace-link", href: route("traces", this.id)}, "traces of this message");
      const form = h("form", {id: "resend-form", class: "form-grid", onsubmit: guard((ev) => this.resend(ev))},
        h("label", {for: "resend-group"}, "Group"), this.resendGroup,
        h("div", {class: "form-actions"}, h("button", {type: "submit", id: "resend"}, "Resend to the group")));
      return page(`Message ${this.id}`,
        h("p", {class: "actions"}, this.traceLink),
        section("Summary", this.summary.el),
        section("Properties", this.props.el),
        section("Body", this.bodyLabel, this.body),
        section("Consumed by", this.consumed.el),
        section("Resend", h("p", {class: "muted"}, "Hands the message to one online consumer of the group (CONSUME_MESSAGE_DIRECTLY)."), form, this.resendResult));
    },
    async refresh() {
      const m = await api(withBroker("/messages/" + encodeURIComponent(this.id)));
      const topicLink = m.topic ? h("a", {class: "topic-link", href: route("topics", m.topic)}, m.topic) : "—";
      this.summary.set(kvColumns, [
        ["msgId", dash(m.msgId)], ["offsetMsgId", dash(m.offsetMsgId)], ["topic", topicLink],
        ["queueId", dash(m.queueId)], ["queueOffset", dash(m.queueOffset)], ["tags", dash(m.tags)], ["keys", fmtKeys(m.keys)],
        ["born time", timeNode(m.bornTimestamp)], ["store time", timeNode(m.storeTimestamp)],
        ["bornHost", dash(m.bornHost)], ["storeHost", dash(m.storeHost)], ["body size", fmtBytes(m.bodySize)],
        ["reconsumeTimes", dash(m.reconsumeTimes)], ["broker", dash(m.broker)],
      ], "none", m);
      this.props.set([
        {label: "name", mono: true, get: (x) => x[0]},
        {label: "value", mono: true, get: (x) => x[1]},
      ], Object.entries(m.properties || {}).sort((a, b) => a[0].localeCompare(b[0])), "No property");
      const body = m.body === null || m.body === undefined ? "" : String(m.body);
      if (this.body.textContent !== body) this.body.textContent = body; // text only, never parsed
      const enc = m.bodyEncoding === "hex" ? "hex" : "text";
      const shown = m.bodyShown === undefined ? null : m.bodyShown;
      this.bodyLabel.textContent = `${enc === "hex" ? "Hex dump" : "Text"}: ` +
        (shown !== null && m.bodySize !== undefined && shown < m.bodySize
          ? `first ${fmtNum(shown)} of ${fmtNum(m.bodySize)} bytes shown.`
          : `${fmtNum(shown !== null ? shown : m.bodySize)} bytes shown.`);
      if (m.msgId) this.traceLink.setAttribute("href", route("traces", m.msgId));
      const consumed = m.consumedBy || [];
      this.consumed.set([
        {label: "group", get: (c) => h("a", {class: "group-link", href: route("groups", c.group)}, c.group)},
        {label: "status", get: (c) => h("span", {class: c.status === "CONSUMED" ? "ok" : "muted"}, dash(c.status))},
      ], consumed, "No consumer group subscribes to this topic");
      const groups = consumed.map((c) => c.group);
      const sig = JSON.stringify(groups);
      if (sig !== this.groupsSig) {
        this.groupsSig = sig;
        const keep = this.resendGroup.value;
        this.resendGroup.replaceChildren(...(groups.length ? groups.map((g) => h("option", {value: g}, g))
          : [h("option", {value: ""}, "(no group)")]));
        if (groups.includes(keep)) this.resendGroup.value = keep;
      }
    },
    async resend(ev) {
      ev.preventDefault();
      const group = this.resendGroup.value;
      if (!group) throw new Error("pick a group");
      this.resendResult.hidden = true;
      const r = await api("/messages/" + encodeURIComponent(this.id) + "/resend", "POST", {group});
      const res = r && r.result !== undefined ? r.result : r;
      this.resendResult.textContent = `Resent to ${group}: ` + (typeof res === "string" ? res : JSON.stringify(res, null, 2));
      this.resendResult.hidden = false;
    },
  };

  // ----- DLQ ------------------------------------------------------------------------------
  views.dlq = {
    nav: "dlq",
    poll: true,
    render(p) {
      this.group = p.query.get("group") || "";
      this.select = h("select", {id: "dlq-group", onchange: () => this.pick()},
        h("option", {value: ""}, "— pick a group —"),
        this.group ? h("option", {value: this.group}, this.group) : null);
      this.select.value = this.group;
      this.optionsSig = null;
      this.note = h("p", {id: "dlq-note", class: "muted"});
      this.table = tableSlot("dlq-messages");
      const form = h("form", {id: "dlq-form", class: "toolbar", onsubmit: (ev) => { ev.preventDefault(); this.pick(); }},
        h("label", {for: "dlq-group"}, "Consumer group"), this.select,
        h("button", {type: "submit", id: "dlq-show"}, "Show"));
      return page("DLQ",
        section("Dead-letter queue", h("p", {class: "muted"}, "Messages a group gave up on (%DLQ%group). Open one to resend it."), form),
        section(this.group ? `Messages of %DLQ%${this.group}` : "Messages", this.note, this.table.el));
    },
    pick() {
      const g = this.select.value;
      const target = g ? routeWithQuery("#/dlq", {group: g}) : "#/dlq";
      if (location.hash !== target) location.hash = target;
    },
    async refresh() {
      // Options: every group with a DLQ topic, plus the user groups (which may not have one yet).
      const [topics, groups] = await Promise.all([
        api(withBroker("/topics")).catch(() => []), api(withBroker("/groups")).catch(() => [])]);
      const names = new Set(), withDlq = new Set();
      for (const t of topics || []) {
        if (t.kind === "dlq") withDlq.add(t.group || t.topic.replace(/^%DLQ%/, ""));
      }
      for (const g of withDlq) names.add(g);
      for (const g of groups || []) if (g.kind !== "system") names.add(g.group);
      if (this.group) names.add(this.group);
      const list = [...names].sort();
      const sig = JSON.stringify(list);
      if (sig !== this.optionsSig) {
        this.optionsSig = sig;
        const keep = this.select.value;
        this.select.replaceChildren(h("option", {value: ""}, "— pick a group —"), ...list.map((g) => h("option", {value: g}, g)));
        this.select.value = list.includes(keep) ? keep : "";
      }
      if (!this.group) {
        this.table.set(summaryColumns, [], "Pick a consumer group to see its dead letters.");
        return;
      }
      // No %DLQ% topic yet: nothing to ask (and no 404 in the console on every poll).
      if (Array.isArray(topics) && topics.length && !withDlq.has(this.group)) {
        this.note.textContent = "";
        this.table.set(summaryColumns, [], `No dead letter for ${this.group} (no %DLQ%${this.group} topic yet)`);
        return;
      }
      let r;
      try {
        r = await api("/dlq/" + encodeURIComponent(this.group) + "?max=64");
      } catch (e) {
        if (e.status === 404) { // no DLQ topic yet: not an error worth a banner
          this.note.textContent = "";
          this.table.set(summaryColumns, [], `No dead letter for ${this.group}`);
          return;
        }
        throw e;
      }
      const msgs = (r && r.messages) || [];
      this.note.textContent = r && r.truncated ? `Showing the first ${msgs.length} (truncated).` : "";
      this.table.set(summaryColumns, msgs, `No dead letter for ${this.group}`);
    },
  };

  // ----- Traces ---------------------------------------------------------------------------
  views.traces = {
    nav: "traces",
    poll: false, // a lookup: fetched on submit / route change
    render(p) {
      this.id = p.id || "";
      const form = h("form", {id: "trace-form", class: "toolbar", onsubmit: (ev) => {
        ev.preventDefault();
        const id = $("#trace-id").value.trim();
        if (!id) return;
        const target = route("traces", id);
        if (location.hash === target) guard(() => this.refresh())();
        else location.hash = target;
      }},
      h("label", {for: "trace-id"}, "Message id"),
      h("input", {id: "trace-id", class: "mono", value: this.id, autocomplete: "off", size: 34}),
      h("button", {type: "submit", id: "trace-btn"}, "Look up"));
      this.table = tableSlot("traces");
      return page("Traces",
        section("Look up a message's trace", form),
        section(this.id ? `Trace of ${this.id}` : "Trace", this.table.el));
    },
    async refresh() {
      const cols = [
        {label: "type", get: (t) => t.traceType},
        {label: "time", get: (t) => timeNode(t.timestamp)},
        {label: "group", get: (t) => dash(t.groupName)},
        {label: "client host", mono: true, get: (t) => dash(t.clientHost)},
        {label: "cost (ms)", num: true, get: (t) => dash(t.costTime)},
        {label: "success", get: (t) => (t.success === undefined ? "—" : h("span", {class: t.success ? "ok" : "bad"}, yesNo(t.success)))},
        {label: "status", get: (t) => dash(t.status)},
        {label: "topic", get: (t) => dash(t.topic)},
        {label: "tags", get: (t) => dash(t.tags)},
        {label: "keys", get: (t) => fmtKeys(t.keys)},
        {label: "store host", mono: true, get: (t) => dash(t.storeHost)},
        {label: "retries", num: true, get: (t) => dash(t.retryTimes)},
        {label: "offsetMsgId", mono: true, get: (t) => (t.offsetMsgId ? h("a", {class: "msg-link", href: route("messages", t.offsetMsgId)}, t.offsetMsgId) : "—")},
      ];
      if (!this.id) { this.table.set(cols, [], "Give a message id to see its trace."); return; }
      const r = await api("/traces/" + encodeURIComponent(this.id));
      const rows = ((r && r.traces) || []).slice().sort((a, b) => (a.timestamp || 0) - (b.timestamp || 0));
      this.table.set(cols, rows, "No trace for this message (is message tracing enabled in the client?)");
    },
  };

  // ----- Scheduled ------------------------------------------------------------------------
  views.scheduled = {
    nav: "scheduled",
    poll: true,
    render() {
      this.note = h("p", {id: "scheduled-note", class: "muted"});
      this.table = tableSlot("scheduled");
      return page("Scheduled", section("Delayed and timer messages, by due time", this.note, this.table.el));
    },
    async refresh() {
      const r = await api("/scheduled?max=200");
      const msgs = (r && r.messages) || [];
      const now = r && typeof r.now_ms === "number" ? r.now_ms : clusterNow();
      this.note.textContent = `Business clock: ${fmtTime(now)}` + (r && r.truncated ? ` — showing the first ${msgs.length} (truncated).` : "");
      this.table.set([
        {label: "kind", get: (m) => m.kind},
        {label: "due time", get: (m) => timeNode(m.due)},
        {label: "due", get: (m) => fmtRelative(m.due - now)},
        {label: "level", num: true, get: (m) => dash(m.level)},
        {label: "topic", get: (m) => h("a", {class: "topic-link", href: route("topics", m.topic)}, m.topic)},
        {label: "msgId", mono: true, get: (m) => (m.offsetMsgId ? h("a", {class: "msg-link", href: route("messages", m.offsetMsgId)}, dash(m.msgId || m.offsetMsgId)) : dash(m.msgId))},
        {label: "keys", get: (m) => fmtKeys(m.keys)},
        {label: "tags", get: (m) => dash(m.tags)},
      ], msgs, "No delayed or timer message waiting");
      // The relative times move with the clock: update those cells in place rather than
      // rebuilding the table (keeps focus, and row elements stay the same).
      const trs = this.table.el.querySelectorAll("tbody tr");
      msgs.forEach((m, i) => {
        const cell = trs[i] && trs[i].cells[2];
        const text = fmtRelative(m.due - now);
        if (cell && cell.textContent !== text) cell.textContent = text;
      });
    },
  };

  // ----- Clock ----------------------------------------------------------------------------
  views.clock = {
    nav: "clock",
    poll: true,
    render() {
      this.now = h("span", {id: "clock-now", class: "big-number mono"}, "…");
      this.mode = h("span", {id: "clock-mode"}, "…");
      this.details = tableSlot("clock-details");
      this.result = h("p", {id: "advance-result", role: "status", class: "result"});
      const quick = [["1 s", 1], ["1 min", 60], ["1 h", 3600], ["1 day", 86400]].map(([label, sec]) =>
        h("button", {type: "button", class: "quick", id: "advance-" + label.replace(" ", ""),
          onclick: guard(() => this.advance(sec))}, "+" + label));
      const form = h("form", {id: "advance-form", class: "toolbar", onsubmit: guard((ev) => {
        ev.preventDefault();
        const sec = Number($("#advance-seconds").value);
        if (!isFinite(sec) || sec < 0) throw new Error("give a number of seconds (0 or more)");
        return this.advance(sec);
      })},
      h("label", {for: "advance-seconds"}, "Seconds"),
      h("input", {id: "advance-seconds", type: "number", min: "0", step: "any", value: "60"}),
      h("button", {type: "submit", id: "advance"}, "Advance"));
      return page("Clock",
        section("Business clock", h("p", {class: "clock-line"}, this.now, " ", h("span", {class: "muted"}, "mode: "), this.mode),
          h("div", {class: "toolbar"},
            h("button", {type: "button", id: "mode-manual", onclick: guard(() => this.setMode("manual"))}, "Manual (frozen)"),
            h("button", {type: "button", id: "mode-follow", onclick: guard(() => this.setMode("follow"))}, "Follow the wall clock")),
          this.details.el),
        section("Advance", h("p", {class: "muted"}, "Moves the clock forward and fires the timers that come due (delayed messages, POP invisibility, transaction checks)."),
          form, h("div", {class: "toolbar"}, h("span", {class: "muted"}, "Quick:"), quick), this.result));
    },
    show(c) {
      this.now.textContent = fmtTime(c.now_ms);
      this.now.title = String(c.now_ms) + " ms";
      this.mode.textContent = c.mode;
      $("#mode-manual").setAttribute("aria-pressed", String(c.mode === "manual"));
      $("#mode-follow").setAttribute("aria-pressed", String(c.mode === "follow"));
      state.nowMs = c.now_ms; state.nowAt = Date.now(); state.clockMode = c.mode;
      this.details.set(kvColumns, [
        ["offset from wall clock", `${Number(c.offset_s || 0).toFixed(3)} s`],
        ["advanced in total", `${Number(c.advanced_s || 0).toFixed(3)} s`],
        ["pending timers", fmtNum(c.pending_timers)],
      ], "none", [c.offset_s, c.advanced_s, c.pending_timers]);
    },
    async refresh() { this.show(await api("/clock")); },
    async setMode(mode) { this.show(await api("/clock/mode", "POST", {mode})); },
    async advance(seconds) {
      const r = await api("/clock/advance", "POST", {seconds});
      this.show(r);
      const fired = typeof r.fired === "number" ? r.fired : (Array.isArray(r.fired) ? r.fired.length : 0);
      this.result.textContent = `Advanced ${seconds} s: fired ${fired} timer${fired === 1 ? "" : "s"}.`;
      this.result.setAttribute("data-fired", String(fired));
    },
  };

  // ----- Faults ---------------------------------------------------------------------------
  views.faults = {
    nav: "faults",
    poll: true,
    render() {
      this.table = tableSlot("faults");
      const sel = (id, values) => h("select", {id}, values.map((v) => h("option", {value: v}, v)));
      const field = (id, label, el) => [h("label", {for: id}, label), el];
      const form = h("form", {id: "fault-form", class: "form-grid", onsubmit: guard((ev) => this.add(ev))},
        field("fault-action", "Action", sel("fault-action", ["drop", "delay", "error", "close"])),
        field("fault-codes", "Requests", h("input", {id: "fault-codes", placeholder: "SEND, PULL_MESSAGE or SendMessage (empty: all)", autocomplete: "off"})),
        field("fault-target", "Target", sel("fault-target", ["broker", "namesrv", "grpc", "any"])),
        field("fault-error-code", "Error code", h("input", {id: "fault-error-code", value: "SYSTEM_BUSY", autocomplete: "off"})),
        field("fault-delay", "Delay (s)", h("input", {id: "fault-delay", type: "number", min: "0", step: "any", placeholder: "0"})),
        field("fault-times", "Times", h("input", {id: "fault-times", type: "number", min: "1", step: "1", placeholder: "unlimited"})),
        field("fault-remark", "Remark", h("input", {id: "fault-remark", autocomplete: "off"})),
        h("div", {class: "form-actions"}, h("button", {type: "submit", id: "fault-add"}, "Add fault")));
      return page("Faults",
        section("Active fault rules",
          h("div", {class: "toolbar"}, h("button", {type: "button", id: "faults-clear", class: "danger", onclick: guard(() => this.clear())}, "Remove all")),
          this.table.el),
        section("Add a fault", form));
    },
    async refresh() {
      const rules = (await api("/faults")) || [];
      this.table.set([
        {label: "id", num: true, mono: true, get: (r) => String(r.id)},
        {label: "action", get: (r) => r.action},
        {label: "target", get: (r) => r.target},
        {label: "codes", get: (r) => {
          const names = [...(r.code_names || []), ...(r.rpcs || [])];
          return names.length ? names.join(", ") : "all requests";
        }},
        {label: "error_code", num: true, get: (r) => (r.action === "error" ? dash(r.error_code) : "—")},
        {label: "delay", num: true, get: (r) => (r.delay ? `${r.delay} s` : "—")},
        {label: "times", num: true, get: (r) => (r.times === null || r.times === undefined ? "∞" : String(r.times))},
        {label: "hits", num: true, get: (r) => String(r.hits)},
        {label: "remark", get: (r) => dash(r.remark)},
        {label: "", get: (r) => h("button", {type: "button", class: "remove-fault", "data-id": r.id,
          "aria-label": `Remove fault ${r.id}`, onclick: guard(() => this.remove(r.id))}, "Remove")},
      ], rules, "No fault rule: every request is served normally.");
    },
    async add(ev) {
      ev.preventDefault();
      const body = {action: $("#fault-action").value, target: $("#fault-target").value};
      const codes = $("#fault-codes").value.split(",").map((x) => x.trim()).filter(Boolean);
      if (codes.length) body.codes = codes;
      const err = $("#fault-error-code").value.trim();
      if (body.action === "error" && err) body.error_code = /^\d+$/.test(err) ? Number(err) : err;
      const delay = $("#fault-delay").value.trim();
      if (delay !== "") body.delay = Number(delay);
      const times = $("#fault-times").value.trim();
      if (times !== "") body.times = parseInt(times, 10);
      const remark = $("#fault-remark").value.trim();
      if (remark) body.remark = remark;
      await api("/faults", "POST", body);
      await this.refresh();
    },
    async remove(id) {
      await api("/faults/" + encodeURIComponent(id), "DELETE");
      await this.refresh();
    },
    async clear() {
      await api("/faults", "DELETE");
      await this.refresh();
    },
  };

  // ----- Requests -------------------------------------------------------------------------
  // Polled with ?since=<last seq> and appended; keeps the last 500 rows. A record polled before
  // its answer was sent is fetched again (by seq) until it has one, for a short while.
  const REQUESTS_KEEP = 500;
  const requestsLog = {rows: [], since: 0};

  views.requests = {
    nav: "requests",
    poll: true,
    render() {
      this.paused = false;
      this.table = tableSlot("requests");
      this.count = h("p", {id: "requests-count", class: "muted"});
      this.filter = h("input", {id: "requests-filter", type: "search", placeholder: "code name, client or text", oninput: () => this.draw()});
      this.pause = h("button", {type: "button", id: "requests-pause", "aria-pressed": "false", onclick: () => this.togglePause()}, "Pause");
      return page("Requests",
        section("Request log",
          h("div", {class: "toolbar"},
            h("label", {for: "requests-filter"}, "Filter"), this.filter, this.pause,
            h("button", {type: "button", id: "requests-clear", class: "danger", onclick: guard(() => this.clear())}, "Clear log")),
          this.count, this.table.el));
    },
    togglePause() {
      this.paused = !this.paused;
      this.pause.setAttribute("aria-pressed", String(this.paused));
      this.pause.textContent = this.paused ? "Resume" : "Pause";
      if (!this.paused) guard(() => this.refresh())();
    },
    async refresh() {
      if (this.paused) { this.draw(); return; }
      const nowS = Date.now() / 1000;
      const pending = requestsLog.rows.filter((r) => isPending(r) && nowS - r.wall < 10);
      const since = pending.length ? Math.min(requestsLog.since, pending[0].seq - 1) : requestsLog.since;
      // max: only the newest records; the log holds 100,000 and the page shows 500.
      const recs = (await api("/requests?since=" + since + "&max=" + REQUESTS_KEEP)) || [];
      if (recs.length) {
        const bySeq = new Map(requestsLog.rows.map((r) => [r.seq, r]));
        for (const r of recs) bySeq.set(r.seq, r);
        requestsLog.rows = [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(-REQUESTS_KEEP);
        requestsLog.since = Math.max(requestsLog.since, ...recs.map((r) => r.seq));
      }
      this.draw();
    },
    draw() {
      const f = this.filter.value.trim().toLowerCase();
      const rows = requestsLog.rows.filter((r) => !f || requestText(r).includes(f)).reverse(); // newest first
      this.count.textContent = `${rows.length} of ${requestsLog.rows.length} request(s) shown (the last ${REQUESTS_KEEP} are kept)` +
        (this.paused ? " — paused" : "");
      this.table.set([
        {label: "seq", num: true, mono: true, get: (r) => String(r.seq)},
        {label: "time", get: (r) => timeNode(Math.round(r.time * 1000))},
        {label: "server", get: (r) => r.server},
        {label: "name (code)", get: (r) => (r.rpc ? r.name : `${r.name} (${r.code})`)},
        {label: "client", mono: true, get: (r) => r.client_id || r.peer, title: (r) => `peer ${r.peer}`},
        {label: "header fields", mono: true, get: (r) => truncate(headerText(r), 48), title: (r) => headerText(r) || null},
        {label: "response_code", num: true, get: (r) => (r.rpc ? dash(r.grpc_status) : dash(r.response_code)),
          title: (r) => (r.oneway ? "oneway" : null)},
        {label: "latency_ms", num: true, get: (r) => (r.latency_ms === null || r.latency_ms === undefined ? "—" : Number(r.latency_ms).toFixed(1))},
        {label: "fault", get: (r) => (r.fault ? h("span", {class: "bad"}, r.fault) : "—")},
      ], rows, requestsLog.rows.length ? "No request matches the filter" : "No request recorded yet", [rows.map((r) => [r.seq, r.response_code, r.grpc_status, r.latency_ms]), f]);
    },
    async clear() {
      await api("/requests", "DELETE");
      requestsLog.rows = [];
      this.draw();
    },
  };

  const isPending = (r) => !r.oneway && !r.fault && (r.rpc ? r.grpc_status === null : r.response_code === null);
  // ACL signing fields (AclClientRPCHook: AccessKey, Signature, OnsChannel...) say nothing about
  // the request itself: they go last, so the truncated cell shows topic, group, queue first.
  const SIGNING = new Set(["AccessKey", "Signature", "SecurityToken", "OnsChannel"]);
  const headerText = (r) => Object.entries(r.ext_fields || {})
    .sort(([a], [b]) => (SIGNING.has(a) - SIGNING.has(b)))
    .map(([k, v]) => `${k}=${v}`).join(" ");
  const requestText = (r) => [r.name, r.code, r.client_id, r.peer, r.server, headerText(r), r.fault].join(" ").toLowerCase();
  const truncate = (t, n) => (t.length > n ? t.slice(0, n - 1) + "…" : t);

  // ----- Conformance ----------------------------------------------------------------------
  views.conformance = {
    nav: "conformance",
    poll: true,
    render() {
      this.summary = h("p", {id: "conformance-summary", class: "summary-counts"});
      this.clients = tableSlot("conformance-clients");
      this.findings = tableSlot("findings");
      return page("Conformance",
        h("p", {class: "muted"}, "How the connected clients' requests differ from what Apache RocketMQ's Java client sends."),
        section("Summary", this.summary),
        section("Clients", this.clients.el),
        section("Findings", this.findings.el));
    },
    async refresh() {
      const c = (await api("/conformance")) || {};
      const sm = c.summary || {};
      this.summary.replaceChildren(...["error", "warning", "info"].map((k) =>
        h("span", {class: `count sev-${k}`, id: `conformance-${k}`}, h("strong", {}, String(sm[k] || 0)), ` ${k}`)),
      ...(c.dropped ? [h("span", {class: "muted"}, ` (${c.dropped} not kept: the log was full)`)] : []));
      this.clients.set([
        {label: "clientId", mono: true, get: (x) => x.clientId},
        {label: "address", mono: true, get: (x) => dash(x.address)},
        {label: "language", get: (x) => dash(x.language)},
        {label: "version", get: (x) => dash(x.version)},
        {label: "error", num: true, get: (x) => String(x.error || 0)},
        {label: "warning", num: true, get: (x) => String(x.warning || 0)},
        {label: "info", num: true, get: (x) => String(x.info || 0)},
      ], c.clients || [], "No client has connected yet");
      this.findings.set([
        {label: "severity", get: (f) => h("span", {class: `sev sev-${f.severity}`}, f.severity)},
        {label: "client", mono: true, get: (f) => f.clientId},
        {label: "language", get: (f) => dash(f.language)},
        {label: "version", get: (f) => dash(f.version)},
        {label: "code", num: true, get: (f) => dash(f.code)},
        {label: "field", mono: true, get: (f) => dash(f.field)},
        {label: "sent", mono: true, get: (f) => dash(f.sent)},
        {label: "expected", mono: true, get: (f) => dash(f.expected)},
        {label: "message", get: (f) => dash(f.message)},
        {label: "javaClass", mono: true, get: (f) => dash(f.javaClass)},
        {label: "count", num: true, get: (f) => fmtNum(f.count), title: (f) => `first ${fmtTime(f.firstSeen)}, last ${fmtTime(f.lastSeen)}`},
      ], c.findings || [], "No finding: every request looked like the Java client's");
    },
  };

  // ----- Recording ------------------------------------------------------------------------
  views.recording = {
    nav: "recording",
    poll: true,
    render() {
      this.stateEl = h("span", {id: "recording-state", class: "big-number"}, "…");
      this.details = tableSlot("recording-details");
      return page("Recording",
        section("Traffic recording", h("p", {class: "recording-line"}, "Recording: ", this.stateEl),
          h("p", {class: "muted"}, "Recording is switched on when the emulator starts (see rmq-emu up --help)."),
          this.details.el));
    },
    async refresh() {
      const r = (await api("/recording")) || {};
      this.stateEl.textContent = r.enabled ? "on" : "off";
      this.stateEl.className = "big-number " + (r.enabled ? "ok" : "muted");
      this.details.set(kvColumns, [
        ["file", h("span", {id: "recording-file"}, dash(r.file))],
        ["size", h("span", {id: "recording-size", title: r.bytes === null || r.bytes === undefined ? null : `${r.bytes} bytes`}, fmtBytes(r.bytes))],
      ], "none", r);
    },
  };

  // ---------------------------------------------------------------------------------------
  // Routing
  // ---------------------------------------------------------------------------------------

  /** "#/topics/NAME?x=1" -> {name: "topic", id: "NAME", query}. */
  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, qs] = raw.split("?", 2);
    const parts = path.split("/").filter((x) => x !== "");
    const query = new URLSearchParams(qs || "");
    const head = parts[0] || "cluster";
    let id = null;
    if (parts.length > 1) {
      try { id = decodeURIComponent(parts.slice(1).join("/")); } catch (e) { id = parts.slice(1).join("/"); }
    }
    const detail = {topics: "topic", groups: "group", messages: "message"};
    let name = head;
    if (id !== null && detail[head]) name = detail[head];
    if (!views[name]) name = "cluster";
    return {name, id, query};
  }

  let firstRoute = true; // no focus move on page load: the browser starts at the top anyway
  function onRoute() {
    const p = parseHash();
    const gen = ++generation;
    // A fresh instance per route: a late answer for the previous route (same view kind, other
    // topic/group) then fills detached elements of the old instance, never the new page.
    const view = Object.create(views[p.name]);
    const sameView = current && current.name === p.name;
    current = {name: p.name, view, params: p, gen, busy: false};
    clearError();
    for (const a of document.querySelectorAll(".nav a")) {
      if (a.dataset.view === view.nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    const main = $("#view");
    main.replaceChildren(...view.render(p));
    const h1 = main.querySelector("h1");
    document.title = `${h1 ? h1.textContent : "Dashboard"} — rocketmq-emu`;
    // Move focus to the new heading for keyboard and screen-reader users, except when a form
    // of the same view changed the route (the user is still there).
    if (!sameView && !firstRoute && h1 && document.activeElement !== $("#token")) h1.focus({preventScroll: true});
    firstRoute = false;
    refreshView(true);
  }

  /** Re-fetch the current view's data; answers for a route left meanwhile are dropped. */
  function refreshView(initial) {
    const c = current;
    if (!c || c.busy) return;
    if (!initial && (!c.view.poll || c.gone)) return;
    c.busy = true;
    Promise.resolve()
      .then(() => c.view.refresh())
      .then(() => { if (c.gen === generation) clearStaleError(); })
      .catch((e) => {
        if (c.gen !== generation) return;
        // A topic / group / message that does not exist is not polled again (each try would
        // log a 404 in the console); a broker coming back re-enables it (see heartbeat).
        if (e && e.status === 404 && c.params.id !== null) c.gone = true;
        lastPollError = String(e && e.message ? e.message : e).split("\n")[0];
        showError(lastPollError);
      })
      .finally(() => { c.busy = false; });
  }

  // A polling error clears itself once the same view loads again; an error from a button
  // stays until dismissed or the route changes.
  let lastPollError = null;
  function clearStaleError() {
    if (lastPollError !== null && $("#error-text").textContent === lastPollError) clearError();
    lastPollError = null;
  }

  window.addEventListener("hashchange", onRoute);

  // ---------------------------------------------------------------------------------------
  // Heartbeat: GET /cluster every 2 s (status banner, broker picker, clock for relative times)
  // ---------------------------------------------------------------------------------------

  const statusEl = $("#status");
  function setStatus(text, kind) {
    if (statusEl.textContent !== text) statusEl.textContent = text;
    statusEl.className = "status status-" + kind;
  }

  async function heartbeat() {
    let c;
    try {
      if (!state.clusterMissing) {
        try {
          c = await api("/cluster");
        } catch (e) {
          if (e.status !== 404) throw e;
          state.clusterMissing = true; // an emulator without the dashboard endpoints
        }
      }
      if (state.clusterMissing) {
        const hl = await api("/health");
        c = {namesrv: hl.namesrv, grpc: hl.grpc, clock: hl.clock, now_ms: hl.clock && hl.clock.now_ms,
          brokers: (hl.brokers || []).map((b) => ({...b, tps: []}))};
      }
    } catch (e) {
      if (e.status === 0) {
        state.reachable = false;
        setStatus("emulator unreachable — retrying", "down");
      } else if (e.status === 401) {
        setStatus("token required", "warn");
      } else {
        setStatus(e.message, "warn");
      }
      return;
    }
    if (!state.reachable) {
      // Back after an outage (maybe a restarted emulator, whose request seq starts over).
      state.reachable = true;
      requestsLog.rows = []; requestsLog.since = 0;
      refreshView(true);
    }
    state.cluster = c;
    const clock = c.clock || {};
    state.nowMs = c.now_ms !== undefined && c.now_ms !== null ? c.now_ms : clock.now_ms;
    state.nowAt = Date.now();
    state.clockMode = clock.mode || "follow";
    pendingClockDefaults.splice(0).forEach((fn) => fn());
    const stopped = (c.brokers || []).filter((b) => !b.running).map((b) => b.name);
    if (stopped.length < state.stoppedCount && current) current.gone = false; // a broker is back
    state.stoppedCount = stopped.length;
    if (stopped.length) setStatus(stopped.map((n) => `${n} stopped`).join(", "), "warn");
    else setStatus("connected", "ok");
    updateBrokerPicker(c.brokers || []);
    if (current && current.name === "cluster") current.view.show(c);
  }

  function updateBrokerPicker(brokers) {
    const wrap = $("#broker-pick"), sel = $("#broker-select");
    const names = brokers.map((b) => b.name);
    if (names.length < 2) { wrap.hidden = true; return; }
    const sig = names.join("\n");
    if (sel.dataset.sig !== sig) {
      sel.dataset.sig = sig;
      sel.replaceChildren(...names.map((n) => h("option", {value: n}, n)));
    }
    if (!state.broker || !names.includes(state.broker)) state.broker = names[0];
    sel.value = state.broker;
    wrap.hidden = false;
  }

  $("#broker-select").addEventListener("change", (ev) => {
    state.broker = ev.target.value;
    try { sessionStorage.setItem(BROKER_KEY, state.broker); } catch (e) { /* not kept */ }
    onRoute(); // the view's data is per broker
  });

  // ---------------------------------------------------------------------------------------
  // The 2 s loop: only while the page is visible.
  // ---------------------------------------------------------------------------------------

  let heartbeatBusy = false;
  function tick(force) {
    if (document.visibilityState !== "visible" && !force) return;
    if (!heartbeatBusy) {
      heartbeatBusy = true;
      heartbeat().catch((e) => showError(e.message)).finally(() => { heartbeatBusy = false; });
    }
    if (force === true) refreshView(true);
    else if (state.reachable) refreshView(false); // while down, only the heartbeat retries
  }

  setInterval(() => tick(false), 2000);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") tick(false); });

  onRoute();
  tick(false);
})();
