// The cluster dashboard. It polls /dashboard.json, which the node serving
// this page gathers from every member, and redraws three sections: the
// nodes, the queues and each queue's recovery timeline. Everything is
// built with DOM calls and textContent, never from HTML strings, so a
// queue's name can never become markup.
"use strict";

const pollEveryMs = 2000;
const svgNS = "http://www.w3.org/2000/svg";

// Stage colours, in the order a recovery runs its stages. Stages this
// list does not know are drawn grey, so a new stage still shows.
const stageColours = {
  observation: "#94a3b8", plan: "#a78bfa", dispatch: "#818cf8", seal: "#3b82f6",
  inspect: "#06b6d4", select: "#14b8a6", transfer: "#22c55e", fetch: "#22c55e",
  install: "#eab308", activate: "#f97316", admit: "#ef4444",
};
const markColours = {
  suspect: "#b7791f", confirm: "#c0362c", recovered: "#12805c",
  leader: "#2563eb", campaign: "#60a5fa", plan: "#7c3aed", replace: "#7c3aed",
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  return fill(e, attrs, kids);
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(svgNS, tag);
  return fill(e, attrs, kids);
}

function fill(e, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) {
    if (k === null || k === undefined) continue;
    e.append(typeof k === "object" ? k : document.createTextNode(String(k)));
  }
  return e;
}

function num(v) { return el("td", { class: "num" }, v); }

function fmtBytes(n) {
  if (n === undefined || n === null) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function fmtSeconds(s) {
  if (s < 0.001) return (s * 1e6).toFixed(0) + "µs";
  if (s < 1) return +(s * 1e3).toFixed(1) + "ms";
  if (s < 120) return +s.toFixed(2) + "s";
  if (s < 7200) return (s / 60).toFixed(0) + "m";
  return (s / 3600).toFixed(1) + "h";
}

function fmtRate(r, key) { return r ? r[key].toFixed(1) : "–"; }

function badge(text, kind) { return el("span", { class: "badge " + kind }, text); }

function nodeLink(c, id) {
  const n = c.nodes.find((x) => x.id === id);
  const name = "n" + id;
  if (!n || !n.http_addr) return el("span", {}, name);
  // Keep this page's scheme: a TLS cluster serves no plain HTTP.
  return el("a", { href: "//" + n.http_addr + "/dashboard" }, name);
}

// nodeBadge says in one word whether a node answered: "up", "starting"
// or "draining", or how reading it failed ("down", "unreachable", ...).
function nodeBadge(n) {
  if (n.state === "serving") return badge("up", "up");
  if (n.state === "starting" || n.state === "draining") return badge(n.state, "warn");
  return badge(n.state, "down");
}

function renderNodes(c) {
  const body = document.querySelector("#nodes tbody");
  body.replaceChildren(...c.nodes.map((n) => {
    const state = nodeBadge(n);
    const meta = n.meta_role ? n.meta_role + " (term " + n.meta_term + ")" : (n.error ? "–" : "no leader known");
    const host = n.host || {};
    const load = host.load1 !== undefined ? host.load1.toFixed(2) : "–";
    const disk = host.disk_free_bytes !== undefined ? fmtBytes(host.disk_free_bytes) + " of " + fmtBytes(host.disk_total_bytes) : "–";
    const self = n.id === c.self ? el("span", { class: "muted" }, " (this node)") : null;
    return el("tr", { "data-node": n.id, "data-state": n.state, title: n.error || "" },
      el("td", {}, nodeLink(c, n.id), self), el("td", {}, state), el("td", {}, meta),
      num(n.error ? "–" : n.clients), num(n.error ? "–" : n.peers_up + "/" + n.peers), num(n.error ? "–" : n.owns),
      num(load), num(disk), num(fmtSeconds(n.wait_seconds)));
  }));
}

function replicaCell(c, q) {
  return el("td", {}, ...q.replicas.map((r) => {
    const down = c.nodes.some((n) => n.id === r.node && n.error);
    let text = "n" + r.node + " " + (down ? "unreachable" : r.role);
    let cls = "replica";
    if (r.fenced) { text += " fenced"; cls += " gone"; }
    else if (down) cls += " gone";
    if (r.lag !== undefined) {
      text += " (" + r.lag + ")";
      if (r.lag > 0) cls += " behind";
    }
    return el("span", { class: cls, "data-replica": r.node, title: r.fenced || "" }, text);
  }));
}

function queueState(q) {
  if (q.fenced) return badge("fenced", "down");
  if (q.serving) return badge("active", "up");
  if (q.queue_state === "recovering" || q.queue_state === "preparing") return badge(q.queue_state, "warn");
  return badge(q.queue_state + ", owner not serving", "down");
}

function renderQueues(c) {
  const body = document.querySelector("#queues tbody");
  if (c.queues.length === 0) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 14, class: "muted" }, "no queues")));
    return;
  }
  body.replaceChildren(...c.queues.map((q) => {
    const d = q.depth;
    const ckpt = q.checkpoint_index ? "@" + q.checkpoint_index + (q.checkpoint_age_seconds ? ", " + fmtSeconds(q.checkpoint_age_seconds) + " ago" : "") : "none";
    return el("tr", { "data-queue": q.name, "data-owner": q.owner, "data-epoch": q.epoch },
      el("td", {}, q.name), el("td", {}, queueState(q)), el("td", {}, nodeLink(c, q.owner)), num(q.epoch),
      replicaCell(c, q),
      num(d ? d.ready : "–"), num(d ? d.leased : "–"), num(d ? d.delayed : "–"), num(d ? d.consumers : "–"),
      num(fmtRate(q.rates, "publish_per_second")), num(fmtRate(q.rates, "deliver_per_second")), num(fmtRate(q.rates, "ack_per_second")),
      num(fmtBytes(q.retained_bytes)), el("td", {}, ckpt));
  }));
}

// swatch is a legend's colour sample. Its colour is set through the
// style object: the page's content security policy refuses inline style
// attributes.
function swatch(colour, mark) {
  const i = el("i", { class: mark ? "tick" : "" });
  i.style.background = colour;
  return i;
}

function renderLegend() {
  document.getElementById("legend").replaceChildren(
    ...Object.entries(stageColours).filter(([name]) => name !== "transfer").map(([name, colour]) => el("span", {}, swatch(colour, false), name === "fetch" ? "fetch (transfer)" : name)),
    ...Object.entries(markColours).map(([name, colour]) => el("span", {}, swatch(colour, true), name)));
}

// Layout of one timeline, in SVG user units.
const layout = { width: 1100, label: 250, right: 40, row: 22, markRow: 14, markRows: 3, axis: 22 };

function renderTimelines(c) {
  const out = document.getElementById("timelines");
  const withRecoveries = c.queues.filter((q) => q.recoveries.length > 0);
  if (withRecoveries.length === 0) {
    out.replaceChildren(el("p", { class: "muted" }, "No recovery since the nodes started."));
    return;
  }
  out.replaceChildren(...withRecoveries.map((q) => timeline(c, q)));
}

// timeline draws one queue's attempts on a shared time axis, with the
// marks that fall in its window.
function timeline(c, q) {
  const t = (s) => Date.parse(s);
  const at = t(c.at);
  const ends = q.recoveries.map((a) => (a.end ? t(a.end) : at));
  let from = Math.min(...q.recoveries.map((a) => Math.min(t(a.start), ...(a.lead || []).map((s) => t(s.start)))));
  let to = Math.max(...ends);
  const lead = Math.max(500, (to - from) * 0.5);
  const marks = c.marks.filter((m) => {
    const mt = t(m.time);
    const mine = m.queue === undefined || m.queue === q.name;
    return mine && mt >= from - lead && mt <= to + 50;
  });
  for (const m of marks) { from = Math.min(from, t(m.time)); to = Math.max(to, t(m.time)); }
  const span = Math.max(to - from, 1);
  from -= span * 0.02; to += span * 0.02;
  const plot = layout.width - layout.label - layout.right;
  const x = (ms) => layout.label + ((ms - from) / (to - from)) * plot;
  const top = layout.markRow * layout.markRows + 4;
  const height = top + q.recoveries.length * layout.row + layout.axis;
  const root = svg("svg", { viewBox: "0 0 " + layout.width + " " + height, role: "img", "aria-label": "recovery timeline of " + q.name });
  root.append(axis(x, from, to, top, height));
  q.recoveries.forEach((a, i) => root.append(attemptRow(a, i, x, t, top, at)));
  const rowEnds = new Array(layout.markRows).fill(-Infinity);
  for (const m of marks) root.append(markTick(m, x(t(m.time)), rowEnds, height));
  const title = "queue " + q.name + " · epoch " + q.epoch + " · window from " + new Date(from).toLocaleTimeString() + ", " + fmtSeconds((to - from) / 1000);
  return el("div", { class: "timeline", "data-queue": q.name }, el("h3", {}, title), root);
}

function axis(x, from, to, top, height) {
  const g = svg("g", { class: "axis" });
  const steps = 5;
  for (let i = 0; i <= steps; i++) {
    const ms = from + ((to - from) * i) / steps;
    g.append(svg("line", { x1: x(ms), x2: x(ms), y1: top - 4, y2: height - layout.axis + 4 }),
      svg("text", { x: x(ms), y: height - 6, "text-anchor": "middle" }, "+" + fmtSeconds((ms - from) / 1000)));
  }
  return g;
}

function attemptRow(a, i, x, t, top, at) {
  const y = top + i * layout.row;
  const end = a.end ? t(a.end) : at;
  const outcome = a.outcome || "running";
  const took = (end - t(a.start)) / 1000;
  const g = svg("g", { class: "attempt", "data-outcome": outcome, "data-epoch": a.epoch, "data-node": a.node });
  let label = "e" + a.epoch + " #" + a.attempt + " on n" + a.node + " · " + outcome + " · " + fmtSeconds(took);
  // From the first suspicion (or the plan) to the end: what clients saw.
  if (a.lead && a.lead.length > 0 && a.end) label += " (" + fmtSeconds((end - t(a.lead[0].start)) / 1000) + " in all)";
  g.append(svg("text", { x: 0, y: y + 15, class: outcome === "ok" || outcome === "running" ? "" : outcome }, label));
  const span = svg("rect", { class: "span", x: x(t(a.start)), y: y + 3, width: Math.max(1, x(end) - x(t(a.start))), height: layout.row - 6 });
  span.append(svg("title", {}, attemptTitle(a, took)));
  g.append(span);
  for (const s of a.lead || []) g.append(stageBar(s, x, t, y, true));
  for (const s of a.stages) g.append(stageBar(s, x, t, y, false));
  return g;
}

// stageBar draws one stage, labelled inside when the label fits. Stages
// before the attempt (lead), measured from marks across nodes' clocks,
// are drawn lighter.
function stageBar(s, x, t, y, lead) {
  const g = svg("g", {});
  const sx = x(t(s.start));
  const w = Math.max(2, x(t(s.start) + s.took_seconds * 1000) - sx);
  const rect = svg("rect", { class: lead ? "stage lead" : "stage", "data-stage": s.name, x: sx, y: y + 3, width: w, height: layout.row - 6,
    fill: stageColours[s.name] || "#9ca3af", stroke: s.outcome === "ok" ? "none" : "#c0362c", "fill-opacity": lead ? 0.55 : null });
  const ended = s.outcome === "ok" ? "" : " (" + s.outcome + ")";
  rect.append(svg("title", {}, s.name + ": " + fmtSeconds(s.took_seconds) + ended + (lead ? ", from the marks" : "")));
  g.append(rect);
  const text = s.name + " " + fmtSeconds(s.took_seconds);
  if (w > text.length * 6 + 4) g.append(svg("text", { x: sx + 3, y: y + 15 }, text));
  return g;
}

function attemptTitle(a, took) {
  const parts = ["attempt " + a.attempt + " into epoch " + a.epoch + " on n" + a.node, (a.outcome || "running") + " after " + fmtSeconds(took)];
  if (a.why) parts.push("why: " + a.why);
  if (a.rpcs) parts.push(a.rpcs + " RPCs, " + fmtBytes(a.bytes || 0) + " copied, " + (a.syncs || 0) + " syncs");
  return parts.join("\n");
}

// markTick draws a mark as a dashed line across the rows, labelled in
// the first label row where the label does not run into the previous
// one; a mark with no room keeps its line and its tooltip.
function markTick(m, mx, rowEnds, height) {
  const colour = markColours[m.kind] || "#666";
  let text = m.kind + " n" + m.node;
  if (m.kind === "leader" || m.kind === "campaign") text += " t" + m.term;
  if (m.kind === "suspect" || m.kind === "confirm" || m.kind === "recovered") text += " (by n" + m.by + ")";
  if (m.kind === "plan" || m.kind === "replace") text += " e" + m.epoch;
  const g = svg("g", { class: "mark", "data-kind": m.kind });
  g.append(svg("line", { x1: mx, x2: mx, y1: 4, y2: height - layout.axis, stroke: colour }));
  const row = rowEnds.findIndex((end) => mx > end + 4);
  if (row >= 0) {
    rowEnds[row] = mx + 2 + text.length * 5.5;
    g.append(svg("text", { x: mx + 2, y: row * layout.markRow + 12, fill: colour }, text));
  }
  g.append(svg("title", {}, text + " at " + new Date(Date.parse(m.time)).toISOString()));
  return g;
}

function renderSummary(c) {
  const up = c.nodes.filter((n) => n.state === "serving").length;
  const serving = c.queues.filter((q) => q.serving).length;
  const leader = c.meta_leader ? "metadata leader n" + c.meta_leader + " (term " + c.meta_term + ")" : "no metadata leader known";
  document.getElementById("summary").textContent =
    up + "/" + c.nodes.length + " nodes up · " + serving + "/" + c.queues.length + " queues served · " + leader;
  document.getElementById("updated").textContent = "gathered by n" + c.self + " at " + new Date(Date.parse(c.at)).toLocaleTimeString();
}

function renderProblems(c, err) {
  const box = document.getElementById("problems");
  const lines = [];
  if (err) lines.push("Cannot read the cluster from this node: " + err + " (showing the last view).");
  for (const n of c ? c.nodes : []) {
    if (n.error) lines.push("n" + n.id + " could not be read (" + n.state + "): " + n.error);
  }
  box.hidden = lines.length === 0;
  box.replaceChildren(...lines.map((l) => el("p", {}, l)));
}

let last = null;

async function poll() {
  try {
    // location.origin carries no user:password, which fetch refuses.
    const resp = await fetch(location.origin + "/dashboard.json", { cache: "no-store", credentials: "same-origin" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    last = await resp.json();
    renderSummary(last);
    renderNodes(last);
    renderQueues(last);
    renderTimelines(last);
    renderProblems(last, null);
  } catch (e) {
    renderProblems(last, e.message);
  } finally {
    setTimeout(poll, pollEveryMs);
  }
}

renderLegend();
poll();
