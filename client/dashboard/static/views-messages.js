/* rocketmq-emu dashboard: the views of messages: search, one message, DLQ, traces, scheduled
 * (the page: index.html loads core.js, the views, then main.js, as classic scripts sharing
 * their top-level names; plain ES2020, no dependencies, no build step).
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() in core.js with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

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
      r = await api(withBroker("/messages/search?" + params.toString()));
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
    // A body too large to show comes without its bytes and with the reason (bodyError).
    this.bodyLabel.textContent = m.bodyError
      ? `Not shown: ${m.bodyError}.`
      : `${enc === "hex" ? "Hex dump" : "Text"}: ${fmtNum(m.bodySize)} bytes.`;
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
      r = await api(withBroker("/dlq/" + encodeURIComponent(this.group) + "?max=64"));
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
    const r = await api(withBroker("/scheduled?max=200"));
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
