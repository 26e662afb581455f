'use strict';
// The timeline page's script. It reads the run's data from the page,
// lays out one lane per process, and draws the chosen time window on a
// canvas: bands for periods, arrows for messages, glyphs for events.
(function () {
  const D = JSON.parse(document.getElementById('data').textContent);
  ['violations', 'density', 'bands', 'marks', 'header', 'queues', 'messages', 'lanes'].forEach((k) => { D[k] = D[k] || []; });
  ['t', 'd', 'f', 'o', 'c', 'm', 'l', 'r'].forEach((k) => { D.arrows[k] = D.arrows[k] || []; });
  const $ = (id) => document.getElementById(id);
  const canvas = $('timeline'), ctx = canvas.getContext('2d');
  const over = $('overview'), octx = over.getContext('2d');
  const GUTTER = 64, AXIS = 24, RIGHT = 10, BULK_LIMIT = 2500, ROW = 17;
  const CLASS_COLORS = { request: '#1f6fd1', reply: '#23975a', delivery: '#8a3fd1', recovery: '#e07000',
    replication: '#9aa4b0', metadata: '#b3915e', heartbeat: '#c3cad2', other: '#444' };
  const BULK = new Set(['replication', 'metadata', 'heartbeat']);
  const QUEUE_HUES = [212, 145, 35, 285, 350, 185, 60, 320];
  const STAGE_COLORS = { seal: '#f0a040', fetch: '#d9731a', install: '#b5500c' };

  const A = decodeArrows(D.arrows);
  const shown = {};
  D.classes.forEach((c) => { shown[c] = true; });
  const lanes = layoutLanes();
  const strips = prefixStrips();
  const height = lanes.length ? lanes[lanes.length - 1].y + lanes[lanes.length - 1].h + 4 : 100;
  let view = { a: 0, b: Math.max(D.end, 1) };
  let notes = [], cursor = -1, selected = null, hits = null, drag = null, searchTimes = [], traceLines = null, pending = false;

  // decodeArrows turns the page's difference-coded columns back into
  // absolute times and line numbers.
  function decodeArrows(c) {
    const n = c.t.length;
    const a = { n, t0: new Float64Array(n), t1: new Float64Array(n), l: new Int32Array(n), r: new Int32Array(n), maxLen: 0 };
    let t = 0, l = 0;
    for (let i = 0; i < n; i++) {
      t += c.t[i]; l += c.l[i];
      a.t0[i] = t; a.l[i] = l;
      a.t1[i] = c.d[i] < 0 ? -1 : t + c.d[i];
      a.r[i] = c.r[i] < 0 ? -1 : l + c.r[i];
      if (c.d[i] > a.maxLen) a.maxLen = c.d[i];
    }
    a.f = c.f; a.o = c.o; a.c = c.c; a.m = c.m;
    return a;
  }

  // layoutLanes gives each lane its rows: a leader strip, one row per
  // queue, the message axis, a fault strip and the traffic strips.
  function layoutLanes() {
    const rows = Math.max(D.queues.length, 1);
    let y = AXIS;
    return D.lanes.map((name) => {
      const kind = name === 'sim' ? 'sim' : /^n\d+$/.test(name) ? 'node' : /^c\d+$/.test(name) ? 'client' : 'other';
      const L = { name, kind, y };
      if (kind === 'node') {
        L.leader = y + 3; L.queue = y + 9; L.axis = L.queue + rows * ROW + 9;
        L.fault = L.axis + 9; L.strips = { net: L.fault + 7, disk: L.fault + 12 }; L.h = L.fault + 20 - y;
      } else if (kind === 'sim') {
        L.fault = y + 4; L.axis = y + 27; L.strips = {}; L.h = 36;
      } else {
        L.axis = y + 11; L.fault = y + 19; L.strips = { ops: y + 24 }; L.h = 31;
      }
      y += L.h;
      return L;
    });
  }

  // prefixStrips turns each density strip into running sums, so any
  // pixel's share of the counts is one subtraction.
  function prefixStrips() {
    const top = {};
    D.density.forEach((s) => { s.c.forEach((v) => { top[s.k] = Math.max(top[s.k] || 1, v); }); });
    return (D.density || []).map((s) => {
      const p = new Float64Array(s.c.length + 1);
      for (let i = 0; i < s.c.length; i++) p[i + 1] = p[i] + s.c[i];
      return { lane: s.l, kind: s.k, p, top: top[s.k] };
    });
  }

  const X = (t) => GUTTER + (t - view.a) / (view.b - view.a) * (canvas.clientWidth - GUTTER - RIGHT);
  const T = (x) => view.a + (x - GUTTER) / (canvas.clientWidth - GUTTER - RIGHT) * (view.b - view.a);
  const fmt = (t) => (t / 1e6).toFixed(6);
  const queueColor = (q, e, light) => `hsl(${QUEUE_HUES[q % QUEUE_HUES.length]},58%,${(e % 2 ? 52 : 66) + (light || 0)}%)`;

  function schedule() {
    if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); }
  }

  function draw() {
    const w = canvas.clientWidth, dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(height * dpr)) {
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(height * dpr); canvas.style.height = height + 'px';
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, height);
    hits = { marks: [], arrows: [], bands: [] };
    notes = [];
    drawLanes(w);
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, 0, w - GUTTER - RIGHT, height); ctx.clip();
    drawBands();
    if ($('show-density').checked) drawStrips(w);
    drawTicks(w);
    drawArrows();
    if ($('show-marks').checked) drawMarks();
    if (cursor >= 0) { ctx.strokeStyle = '#d33'; ctx.setLineDash([4, 3]); line(X(cursor), AXIS, X(cursor), height); ctx.setLineDash([]); }
    ctx.restore();
    drawOverview();
    $('window').textContent = `${fmt(view.a)}s – ${fmt(view.b)}s (${((view.b - view.a) / 1e6).toPrecision(3)}s shown) ${notes.join(' ')}`;
    try { history.replaceState(null, '', `#${(view.a / 1e6).toFixed(6)}-${(view.b / 1e6).toFixed(6)}`); } catch (err) { /* a page opened from disk may refuse */ }
  }

  function line(x1, y1, x2, y2) { ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); ctx.stroke(); }

  function drawLanes(w) {
    ctx.font = '12px ui-monospace, monospace'; ctx.textBaseline = 'middle';
    lanes.forEach((L, i) => {
      ctx.fillStyle = i % 2 ? '#f7f8fa' : '#ffffff'; ctx.fillRect(0, L.y, w, L.h);
      ctx.strokeStyle = '#e1e5eb'; line(0, L.y + L.h - 0.5, w, L.y + L.h - 0.5);
      ctx.strokeStyle = '#d0d6de'; line(GUTTER, L.axis + 0.5, w - RIGHT, L.axis + 0.5);
      ctx.fillStyle = '#1d2330'; ctx.fillText(L.name, 8, L.axis);
    });
  }

  function visible(a, b) { return b >= view.a && a <= view.b; }

  function bandRect(b) {
    const L = lanes[b.l], x1 = Math.max(X(b.a), GUTTER - 2), x2 = Math.max(X(b.b), x1 + 1.5);
    switch (b.k) {
      case 'down': case 'pause': return [x1, L.y, x2, L.y + L.h];
      case 'leader': return [x1, L.leader, x2, L.leader + 4];
      case 'owner': case 'recovery': return [x1, L.queue + Math.max(b.q, 0) * ROW, x2, L.queue + Math.max(b.q, 0) * ROW + ROW - 2];
      case 'stage': return [x1, L.queue + Math.max(b.q, 0) * ROW + 9, x2, L.queue + Math.max(b.q, 0) * ROW + ROW - 2];
      case 'fault': return L.kind === 'sim' ? [x1, L.fault, x2, L.fault + 14] : [x1, L.fault - 3, x2, L.fault + 2];
    }
    return null;
  }

  const BAND_ORDER = { phase: 0, down: 1, pause: 2, leader: 3, owner: 4, recovery: 5, stage: 6, fault: 7 };

  function drawBands() {
    const bands = D.bands.filter((b) => visible(b.a, b.b)).sort((p, q) => BAND_ORDER[p.k] - BAND_ORDER[q.k]);
    ctx.font = '10px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    for (const b of bands) {
      if (b.k === 'phase') {
        ctx.fillStyle = 'rgba(60,170,90,0.07)'; ctx.fillRect(X(b.a), AXIS, X(b.b) - X(b.a), height - AXIS);
        continue;
      }
      const r = bandRect(b);
      if (!r) continue;
      ctx.fillStyle = bandFill(b);
      ctx.fillRect(r[0], r[1], r[2] - r[0], r[3] - r[1]);
      if (b.k === 'recovery') { ctx.strokeStyle = '#e07000'; ctx.strokeRect(r[0] + 0.5, r[1] + 0.5, r[2] - r[0] - 1, r[3] - r[1] - 1); }
      hits.bands.push({ r, b });
      const text = bandText(b);
      if (text && r[2] - r[0] > ctx.measureText(text).width + 6 && b.k !== 'stage' && b.k !== 'leader') {
        ctx.fillStyle = b.k === 'down' ? '#fff' : '#1d2330';
        const y = b.k === 'down' || b.k === 'pause' ? lanes[b.l].y + 8 : (r[1] + r[3]) / 2;
        ctx.fillText(text, Math.max(r[0], GUTTER) + 3, b.k === 'recovery' ? r[1] + 5 : y);
      }
    }
  }

  function bandFill(b) {
    switch (b.k) {
      case 'down': return 'rgba(55,60,70,0.55)';
      case 'pause': return 'rgba(240,200,40,0.35)';
      case 'leader': return '#7d3fc8';
      case 'owner': return queueColor(b.q, b.e);
      case 'recovery': return 'rgba(255,190,120,0.45)';
      case 'stage': return STAGE_COLORS[b.s.split(' ')[0]] || '#999';
      case 'fault': return 'rgba(215,45,45,0.7)';
    }
    return '#ccc';
  }

  function bandText(b) {
    switch (b.k) {
      case 'owner': return `${D.queues[b.q]} e${b.e}`;
      case 'recovery': return `recovering ${D.queues[b.q]} to e${b.e}`;
      case 'down': return 'down';
      case 'pause': return 'paused';
      case 'fault': return lanes[b.l].kind === 'sim' ? b.s : '';
    }
    return b.s;
  }

  function drawStrips(w) {
    const bin = D.densityBin;
    for (const s of strips) {
      const L = lanes[s.lane], y = L.strips[s.kind];
      if (y === undefined) continue;
      const n = s.p.length - 1;
      for (let x = GUTTER; x < w - RIGHT; x++) {
        const b0 = Math.max(0, Math.floor(T(x) / bin)), b1 = Math.min(n, Math.max(b0 + 1, Math.ceil(T(x + 1) / bin)));
        if (b0 >= n) break;
        const v = (s.p[b1] - s.p[b0]) / (b1 - b0);
        if (v > 0) {
          ctx.fillStyle = `rgba(40,70,120,${Math.min(1, 0.15 + v / s.top)})`;
          ctx.fillRect(x, y, 1, 4);
        }
      }
    }
  }

  function drawTicks(w) {
    const span = view.b - view.a, want = span * 90 / Math.max(w - GUTTER, 1);
    let step = 1;
    while (step < want) step *= step.toString()[0] === '2' ? 2.5 : 2;
    const digits = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / 1e6))));
    ctx.font = '11px ui-monospace, monospace'; ctx.textBaseline = 'top';
    for (let t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      const x = Math.round(X(t)) + 0.5;
      ctx.strokeStyle = 'rgba(0,0,0,0.07)'; line(x, AXIS, x, height);
      ctx.fillStyle = '#555'; ctx.fillText((t / 1e6).toFixed(digits) + 's', x + 2, 5);
    }
  }

  // firstArrow finds the first arrow sent at or after t.
  function firstArrow(t) {
    let lo = 0, hi = A.n;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (A.t0[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function drawArrows() {
    const from = firstArrow(view.a - A.maxLen), to = firstArrow(view.b + 1);
    let bulk = 0;
    for (let i = from; i < to; i++) if (BULK.has(D.classes[A.c[i]])) bulk++;
    const drawBulk = bulk <= BULK_LIMIT, list = [];
    for (let i = from; i < to; i++) {
      const cls = D.classes[A.c[i]];
      if (!shown[cls] || (!drawBulk && BULK.has(cls))) continue;
      if (visible(A.t0[i], A.t1[i] < 0 ? A.t0[i] : A.t1[i])) list.push(i);
    }
    // Many arrows in view fade, so the bands under them stay readable.
    const fade = Math.min(1, Math.max(0.08, 500 / Math.max(list.length, 1)));
    for (const i of list) drawArrow(i, D.classes[A.c[i]], fade);
    notes.push(drawBulk ? '' : `${bulk} peer messages in view (replication, raft, heartbeats): zoom in to draw them`);
  }

  function drawArrow(i, cls, fade) {
    const y1 = lanes[A.f[i]].axis, y2 = lanes[A.o[i]].axis, x1 = X(A.t0[i]);
    ctx.strokeStyle = ctx.fillStyle = CLASS_COLORS[cls] || '#444';
    ctx.globalAlpha = selected && selected.arrow === i ? 1 : (BULK.has(cls) ? 0.55 : 0.85) * fade;
    if (selected && selected.arrow === i) ctx.lineWidth = 2.5;
    if (A.t1[i] < 0) {
      // A message that never arrived: a stub towards its target and a cross.
      const dy = Math.sign(y2 - y1) * 10, x2 = x1 + 6, y = y1 + dy;
      line(x1, y1, x2, y); line(x2 - 3, y - 3, x2 + 3, y + 3); line(x2 - 3, y + 3, x2 + 3, y - 3);
      hits.arrows.push([x1, y1, x2, y, i]);
    } else {
      const x2 = X(A.t1[i]);
      line(x1, y1, x2, y2);
      const len = Math.hypot(x2 - x1, y2 - y1);
      if (len > 8) {
        const ux = (x2 - x1) / len, uy = (y2 - y1) / len;
        ctx.beginPath(); ctx.moveTo(x2, y2);
        ctx.lineTo(x2 - 6 * ux + 3 * uy, y2 - 6 * uy - 3 * ux); ctx.lineTo(x2 - 6 * ux - 3 * uy, y2 - 6 * uy + 3 * ux);
        ctx.fill();
      }
      hits.arrows.push([x1, y1, x2, y2, i]);
    }
    ctx.globalAlpha = 1; ctx.lineWidth = 1;
  }

  // markStyle picks a glyph colour and shape from what an event is.
  function markStyle(s) {
    if (/^(crash|PANIC)/.test(s)) return ['#d01c1c', 'x'];
    if (/^start/.test(s)) return ['#1e9e4a', 'up'];
    if (/^(pause|resume)/.test(s)) return ['#c99a00', 'sq'];
    if (/^disk error/.test(s)) return ['#d01c1c', 'sq'];
    if (/^fault|^liveness/.test(s)) return ['#d01c1c', 'dia'];
    if (/^meta\.leader/.test(s)) return ['#7d3fc8', 'dia'];
    if (/^meta\./.test(s)) return ['#7d3fc8', 'dot'];
    if (/^detect\./.test(s)) return ['#9a6a2a', 'dot'];
    if (/^recovery\./.test(s)) return ['#e07000', 'dia'];
    if (/^queue\.(stale|fenced|owner-stopped|second-writer|bad-append)/.test(s)) return ['#d01c1c', 'dot'];
    if (/^queue\./.test(s)) return ['#1f6fd1', 'dot'];
    if (/^done/.test(s)) return ['#d88a00', 'dot'];
    return ['#6b7480', 'dot'];
  }

  function drawMarks() {
    for (const m of D.marks) {
      if (m.t < view.a || m.t > view.b) continue;
      const x = X(m.t), y = lanes[m.l].axis, [color, shape] = markStyle(m.s);
      ctx.fillStyle = ctx.strokeStyle = color;
      ctx.lineWidth = selected && selected.mark === m ? 3 : 1.5;
      ctx.beginPath();
      if (shape === 'x') { line(x - 4, y - 4, x + 4, y + 4); line(x - 4, y + 4, x + 4, y - 4); }
      else if (shape === 'up') { ctx.moveTo(x, y - 5); ctx.lineTo(x + 4, y + 3); ctx.lineTo(x - 4, y + 3); ctx.fill(); }
      else if (shape === 'sq') ctx.fillRect(x - 3, y - 3, 6, 6);
      else if (shape === 'dia') { ctx.moveTo(x, y - 5); ctx.lineTo(x + 4, y); ctx.lineTo(x, y + 5); ctx.lineTo(x - 4, y); ctx.fill(); }
      else { ctx.arc(x, y, 2.5, 0, 7); ctx.fill(); }
      ctx.lineWidth = 1;
      hits.marks.push([x, y, m]);
    }
  }

  function drawOverview() {
    const w = over.clientWidth, h = over.clientHeight, dpr = window.devicePixelRatio || 1;
    if (over.width !== Math.round(w * dpr)) { over.width = Math.round(w * dpr); over.height = Math.round(h * dpr); }
    octx.setTransform(dpr, 0, 0, dpr, 0, 0);
    octx.clearRect(0, 0, w, h);
    const OX = (t) => GUTTER + t / Math.max(D.end, 1) * (w - GUTTER - RIGHT);
    const rowH = (h - 4) / Math.max(lanes.length, 1);
    for (const b of D.bands) {
      if (b.k === 'phase') { octx.fillStyle = 'rgba(60,170,90,0.12)'; octx.fillRect(OX(b.a), 0, OX(b.b) - OX(b.a), h); continue; }
      if (!['down', 'pause', 'owner', 'recovery', 'fault'].includes(b.k)) continue;
      octx.fillStyle = b.k === 'owner' ? queueColor(b.q, b.e) : bandFill(b);
      octx.fillRect(OX(b.a), 2 + b.l * rowH, Math.max(OX(b.b) - OX(b.a), 1), Math.max(rowH - 1, 1));
    }
    octx.fillStyle = '#d01c1c';
    for (const t of searchTimes) octx.fillRect(OX(t), 0, 1, 5);
    D.violations.forEach((v) => v.jumps.forEach((j) => octx.fillRect(OX(j.t) - 1, h - 6, 2, 6)));
    octx.fillStyle = 'rgba(31,111,209,0.18)'; octx.strokeStyle = '#1f6fd1';
    octx.fillRect(OX(view.a), 0, OX(view.b) - OX(view.a), h);
    octx.strokeRect(OX(view.a) + 0.5, 0.5, Math.max(OX(view.b) - OX(view.a) - 1, 1), h - 1);
    octx.fillStyle = '#333'; octx.font = '11px ui-monospace, monospace'; octx.textBaseline = 'middle';
    octx.fillText('whole run', 4, h / 2);
  }

  // hitTest finds what is under the pointer: an event, then an arrow,
  // then the narrowest band.
  function hitTest(x, y) {
    if (!hits) return null;
    let best = null, bd = 7;
    for (const [mx, my, m] of hits.marks) {
      const d = Math.hypot(mx - x, my - y);
      if (d < bd) { bd = d; best = { mark: m }; }
    }
    if (best) return best;
    bd = 4;
    for (const [x1, y1, x2, y2, i] of hits.arrows) {
      const d = segDist(x, y, x1, y1, x2, y2);
      if (d < bd) { bd = d; best = { arrow: i }; }
    }
    if (best) return best;
    let width = Infinity;
    for (const { r, b } of hits.bands) {
      if (x >= r[0] && x <= r[2] && y >= r[1] && y <= r[3] && r[2] - r[0] < width) { width = r[2] - r[0]; best = { band: b }; }
    }
    return best;
  }

  function segDist(px, py, x1, y1, x2, y2) {
    const dx = x2 - x1, dy = y2 - y1, l2 = dx * dx + dy * dy;
    const u = l2 ? Math.max(0, Math.min(1, ((px - x1) * dx + (py - y1) * dy) / l2)) : 0;
    return Math.hypot(px - x1 - u * dx, py - y1 - u * dy);
  }

  // rawLine is the trace line n when the page carries it, or else what
  // the timeline knows of it.
  function rawLine(n, t, lane, text) {
    if (traceLines && n >= 0 && n < traceLines.length) return traceLines[n];
    return `${fmt(t).padStart(12)} ${(D.lanes[lane] || 'sim').padEnd(4)} ${text}`;
  }

  function describe(h) {
    if (h.mark) return rawLine(h.mark.n, h.mark.t, h.mark.l, h.mark.s);
    if (h.band) {
      const b = h.band, head = `${b.s}\n${fmt(b.a)}s – ${fmt(b.b)}s (${((b.b - b.a) / 1e3).toFixed(1)} ms)`;
      return b.k === 'phase' ? head : head + '\n' + rawLine(b.n, b.a, b.l, '');
    }
    const i = h.arrow, msg = D.messages[A.m[i]];
    const sent = rawLine(A.l[i], A.t0[i], A.f[i], `send to=${D.lanes[A.o[i]]} ${msg}`);
    if (A.t1[i] < 0) return sent + '\n(never arrived)';
    const got = rawLine(A.r[i], A.t1[i], A.o[i], `recv from=${D.lanes[A.f[i]]} ${msg}`);
    return `${sent}\n${got}\n${((A.t1[i] - A.t0[i]) / 1e3).toFixed(3)} ms in flight`;
  }

  // showContext prints the trace around the chosen lines.
  function showContext(lines) {
    const out = $('lines');
    if (!traceLines) {
      out.textContent = D.trace ? 'The trace is still being unpacked, or this browser cannot unpack it.' : 'This page does not carry the trace.';
      return;
    }
    out.textContent = '';
    for (const n of lines) {
      if (n < 0 || n >= traceLines.length) continue;
      for (let k = Math.max(0, n - 12); k <= Math.min(traceLines.length - 1, n + 12); k++) {
        const el = document.createElement('span');
        el.textContent = traceLines[k] + '\n';
        if (k === n) el.className = 'hit';
        out.appendChild(el);
      }
      out.appendChild(document.createTextNode('⋯\n'));
    }
    if (!out.childNodes.length) out.textContent = 'The page carries only the first ' + D.traceLines + ' trace lines.';
  }

  function contextOf(h) {
    if (h.mark) return [h.mark.n];
    if (h.band) return [h.band.n];
    return A.r[h.arrow] >= 0 ? [A.l[h.arrow], A.r[h.arrow]] : [A.l[h.arrow]];
  }

  function setView(a, b) {
    const end = Math.max(D.end, 1), span = Math.min(Math.max(b - a, 20), end);
    a = Math.max(0, Math.min(a, end - span));
    view = { a, b: a + span };
    schedule();
  }

  function jumpTo(t, span) {
    cursor = t;
    span = span || Math.min(view.b - view.a, 1e6);
    setView(t - span / 2, t + span / 2);
    canvas.scrollIntoView({ block: 'nearest' });
  }

  // The rest wires the page up: inputs, mouse, search and the trace.
  function buildHeader() {
    // The outcome's first line and its replay command; the violations
    // and the scenario it goes on with have their own places below.
    $('outcome').textContent = D.outcome.split('\n').filter((l, i) => i === 0 || l.startsWith('  replay:')).join('\n');
    $('scenario').textContent = D.header.join('\n') + '\n\n' + D.scenario;
    const list = $('violations');
    if (!D.violations.length) {
      const li = document.createElement('li'); li.className = 'ok';
      li.textContent = 'No violations.'; list.appendChild(li);
    }
    for (const v of D.violations) {
      const li = document.createElement('li');
      if (!v.safety) li.className = 'liveness';
      li.textContent = v.text;
      for (const j of v.jumps || []) {
        const a = document.createElement('a'); a.textContent = `${j.label} (${fmt(j.t)}s)`;
        a.onclick = () => jumpTo(j.t, 5e5); li.appendChild(a);
      }
      list.appendChild(li);
    }
  }

  function buildControls() {
    const counts = {};
    for (let i = 0; i < A.n; i++) counts[D.classes[A.c[i]]] = (counts[D.classes[A.c[i]]] || 0) + 1;
    for (const c of D.classes) {
      if (!counts[c]) continue;
      const label = document.createElement('label'), box = document.createElement('input'), sw = document.createElement('span');
      box.type = 'checkbox'; box.checked = true; box.onchange = () => { shown[c] = box.checked; schedule(); };
      sw.className = 'swatch'; sw.style.background = CLASS_COLORS[c];
      label.append(box, sw, `${c} (${counts[c]})`);
      $('classes').appendChild(label);
    }
    $('show-marks').onchange = schedule;
    $('show-density').onchange = schedule;
    $('reset').onclick = () => { cursor = -1; setView(0, D.end); };
    // The legend names only what this run shows.
    const kinds = new Set(D.bands.map((b) => b.k));
    const legend = [['rgba(55,60,70,0.55)', 'node down', 'down'], ['rgba(240,200,40,0.35)', 'paused', 'pause'], ['#7d3fc8', 'metadata leader', 'leader'],
      ['rgba(255,190,120,0.6)', 'recovery', 'recovery'], [STAGE_COLORS.seal, 'seal', 'stage'], [STAGE_COLORS.fetch, 'fetch', 'stage'],
      [STAGE_COLORS.install, 'install', 'stage'], ['rgba(215,45,45,0.7)', 'fault', 'fault'], ['rgba(60,170,90,0.2)', 'liveness phase', 'phase'],
      ['rgba(40,70,120,0.7)', 'traffic: net, disk, client ops']];
    D.queues.forEach((q, i) => legend.splice(3 + i, 0, [queueColor(i, 1), `owner of ${q} (shade alternates per epoch)`, 'owner']));
    for (const [color, text, kind] of legend) {
      if (kind && !kinds.has(kind)) continue;
      const s = document.createElement('span'), sw = document.createElement('span');
      sw.className = 'swatch'; sw.style.background = color; s.append(sw, text); $('legend').appendChild(s);
    }
    if (D.dropped) $('help').textContent += ` ${D.dropped} messages past the page's cap are counted in the strips only.`;
  }

  function wireMouse() {
    const tip = $('tip');
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const t = T(e.offsetX), f = Math.exp(e.deltaY * 0.0015);
      setView(t - (t - view.a) * f, t + (view.b - t) * f);
    }, { passive: false });
    canvas.addEventListener('mousedown', (e) => { drag = { x: e.clientX, view, moved: false }; canvas.classList.add('dragging'); });
    window.addEventListener('mouseup', (e) => {
      if (drag && !drag.moved && e.target === canvas) {
        const h = hitTest(e.offsetX, e.offsetY);
        selected = h; if (h) showContext(contextOf(h));
        schedule();
      }
      drag = null; canvas.classList.remove('dragging');
    });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      const per = (drag.view.b - drag.view.a) / (canvas.clientWidth - GUTTER - RIGHT);
      if (drag.moved) setView(drag.view.a - dx * per, drag.view.b - dx * per);
    });
    canvas.addEventListener('mousemove', (e) => {
      const h = drag ? null : hitTest(e.offsetX, e.offsetY);
      tip.hidden = !h;
      if (!h) return;
      tip.textContent = describe(h);
      tip.style.left = Math.min(e.offsetX + 14, canvas.clientWidth - 420) + 'px';
      tip.style.top = e.offsetY + 16 + 'px';
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    canvas.addEventListener('dblclick', () => setView(0, D.end));
    wireOverview();
  }

  function wireOverview() {
    const OT = (x) => (x - GUTTER) / (over.clientWidth - GUTTER - RIGHT) * D.end;
    let start = null;
    over.addEventListener('mousedown', (e) => { start = e.offsetX; });
    over.addEventListener('mouseup', (e) => {
      if (start === null) return;
      const a = OT(Math.min(start, e.offsetX)), b = OT(Math.max(start, e.offsetX));
      if (Math.abs(e.offsetX - start) < 3) { const span = view.b - view.a, t = OT(e.offsetX); setView(t - span / 2, t + span / 2); } else setView(a, b);
      start = null;
    });
  }

  function wireSearch() {
    let timer = 0;
    $('search').addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(search, 250); });
  }

  // search lists the trace lines holding the text, or the timeline's
  // events and bands when the page has no trace to search.
  function search() {
    const q = $('search').value.trim(), out = $('results');
    out.textContent = ''; searchTimes = [];
    if (q.length < 2) { schedule(); return; }
    const found = [];
    if (traceLines) {
      for (let n = 0; n < traceLines.length && found.length < 2000; n++) {
        if (traceLines[n].includes(q)) found.push({ n, t: Math.round(parseFloat(traceLines[n]) * 1e6), text: traceLines[n] });
      }
    } else {
      for (const m of D.marks) if (m.s.includes(q)) found.push({ n: m.n, t: m.t, text: rawLine(m.n, m.t, m.l, m.s) });
    }
    searchTimes = found.map((f) => f.t);
    const head = document.createElement('div');
    head.textContent = `${found.length}${found.length >= 2000 ? '+' : ''} lines hold "${q}"${found.length > 300 ? '; the first 300:' : ''}`;
    out.appendChild(head);
    for (const f of found.slice(0, 300)) {
      const a = document.createElement('a'); a.textContent = f.text;
      a.onclick = () => { jumpTo(f.t); showContext([f.n]); };
      out.appendChild(a);
    }
    schedule();
  }

  // loadTrace unpacks the gzip-compressed trace the page carries, with
  // the browser's own decompressor.
  async function loadTrace() {
    if (!D.trace || typeof DecompressionStream === 'undefined') return;
    try {
      const bin = atob(D.trace), bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      traceLines = (await new Response(stream).text()).split('\n');
      if (traceLines[traceLines.length - 1] === '') traceLines.pop();
    } catch (err) {
      traceLines = null;
      $('lines').textContent = 'The trace could not be unpacked: ' + err;
    }
  }

  // A window in the address ("#3.9-4.4", seconds) opens the page there.
  const asked = /^#([\d.]+)-([\d.]+)$/.exec(location.hash);
  if (asked) setView(parseFloat(asked[1]) * 1e6, parseFloat(asked[2]) * 1e6);
  buildHeader();
  buildControls();
  wireMouse();
  wireSearch();
  window.addEventListener('resize', schedule);
  schedule();
  loadTrace();
})();
