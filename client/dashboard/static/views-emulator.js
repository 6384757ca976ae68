/* rocketmq-emu dashboard: the emulator's own views: Clock, Faults, Requests, Conformance, Recording
 * (the page: index.html loads core.js, the views, then main.js, as classic scripts sharing
 * their top-level names; plain ES2020, no dependencies, no build step).
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() in core.js with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

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
// Polled with ?since=<last seq> and appended; keeps the last 200 rows. A record polled before
// its answer was sent is fetched again (by seq) until it has one, for a short while.
const REQUESTS_KEEP = 200;
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
    // max: only the newest records; the log holds 100,000 and the page shows 200 (a person reads no more as they arrive).
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
