/* rocketmq-emu dashboard: the views of the cluster: Cluster, Topics, Consumer groups, Producers
 * (the page: index.html loads core.js, the views, then main.js, as classic scripts sharing
 * their top-level names; plain ES2020, no dependencies, no build step).
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() in core.js with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

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
// A grid line's value as it is: the quarters of a top of 1 x 10^k are 0.25 x 10^k, so two
// decimals at most (0.25, 2.5), none from 100 up.
const fmtRate = (v) => (v >= 100 ? String(Math.round(v)) : String(Number(v.toFixed(2))));

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
