/* rocketmq-emu dashboard: routing, the status banner and the 2 s heartbeat; starts the page
 * (the page: index.html loads core.js, the views, then main.js, as classic scripts sharing
 * their top-level names; plain ES2020, no dependencies, no build step).
 *
 * Security rule followed throughout: data never goes through innerHTML & co. Every node is
 * made by h() in core.js with createElement / textContent, so a message body holding <script>
 * is shown as text. Links built from data are only "#/..." routes with encodeURIComponent.
 */
"use strict";

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
