// dlsched report, part 2: time series, CDFs, the means chart, the job table, and start-up.
"use strict";
(function () {
  const R = window.dlschedReport;
  const D = R.data;
  const st = R.state;
  const M = R.MARGIN;
  const TABLE_ROWS = 500; // job rows put in the DOM; the count says how many match
  const $ = (id) => document.getElementById(id);

  // lines: [{x: [], y: [], colour, label, step, dash}]; opts: {xTime, yMax, yLabel, logX, vlines}
  function lineChart(canvas, lines, opts) {
    const { ctx, w, h } = R.fit(canvas, 220);
    const pw = w - M.left - M.right;
    const ph = h - M.top - M.bottom;
    lines = lines.filter((l) => l.y.length > 0);
    let xs = [];
    lines.forEach((l) => { xs = xs.concat(l.x.filter((v) => v !== null && (!opts.logX || v > 0))); });
    (opts.vlines || []).forEach((v) => { if (v.x !== null) xs.push(v.x); });
    if (!xs.length) {
      ctx.fillStyle = "#777";
      ctx.fillText(opts.empty || "no data", M.left + 10, M.top + 20);
      canvas.dataset.points = "0";
      return;
    }
    const tx = (v) => (opts.logX ? Math.log10(Math.max(v, 1e-9)) : v);
    let x0 = Math.min(...xs.map(tx));
    let x1 = Math.max(...xs.map(tx));
    if (x1 <= x0) x1 = x0 + 1;
    let yMax = opts.yMax;
    if (yMax === undefined) {
      yMax = 0;
      lines.forEach((l) => l.y.forEach((v) => { if (v > yMax) yMax = v; }));
      yMax = yMax * 1.05 || 1;
    }
    const X = (v) => M.left + ((tx(v) - x0) / (x1 - x0)) * pw;
    const Y = (v) => M.top + ph - (v / yMax) * ph;
    ctx.strokeStyle = "#ccc";
    ctx.strokeRect(M.left, M.top, pw, ph);
    ctx.fillStyle = "#333";
    ctx.textAlign = "right";
    for (const v of R.ticks(0, yMax, 4)) {
      ctx.fillText(opts.yPercent ? Math.round(v * 100) + " %" : R.fmtNum(v), M.left - 4, Y(v) + 4);
    }
    ctx.textAlign = "center";
    let xt;
    if (opts.logX) {
      const lo = Math.pow(10, x0), hi = Math.pow(10, x1);
      xt = opts.xTime ? R.LOG_TIME_TICKS.filter((v) => v >= lo && v <= hi)
        : R.ticks(x0, x1, 6).map((v) => Math.pow(10, Math.round(v))).filter((v, k, a) => a.indexOf(v) === k);
    } else xt = opts.xTime ? R.timeTicks(x0, x1, 6) : R.ticks(x0, x1, 6);
    for (const v of xt) {
      ctx.fillText(opts.xTime ? R.fmtTime(v) : R.fmtNum(v), X(v), h - M.bottom + 15);
    }
    let points = 0;
    lines.forEach((l) => {
      ctx.strokeStyle = l.colour;
      ctx.lineWidth = 1.5;
      ctx.setLineDash(l.dash ? [5, 4] : []);
      ctx.beginPath();
      let started = false;
      let lastY = 0;
      for (let k = 0; k < l.x.length; k++) {
        if (l.x[k] === null || l.y[k] === null || (opts.logX && l.x[k] <= 0)) continue;
        const px = X(l.x[k]);
        const py = Y(l.y[k]);
        if (!started) ctx.moveTo(px, py);
        else if (l.step) { ctx.lineTo(px, lastY); ctx.lineTo(px, py); } else ctx.lineTo(px, py);
        started = true;
        lastY = py;
        points++;
      }
      ctx.stroke();
    });
    ctx.setLineDash([4, 3]);
    (opts.vlines || []).forEach((v) => {
      if (v.x === null || (opts.logX && v.x <= 0)) return;
      ctx.strokeStyle = v.colour || "#555";
      ctx.beginPath();
      ctx.moveTo(X(v.x), M.top);
      ctx.lineTo(X(v.x), M.top + ph);
      ctx.stroke();
    });
    ctx.setLineDash([]);
    const legend = lines.filter((l) => l.label).concat((opts.vlines || []).filter((v) => v.label && v.x !== null));
    ctx.textAlign = "left";
    legend.forEach((l, k) => {
      ctx.fillStyle = l.colour || "#555";
      ctx.fillRect(M.left + 8, M.top + 8 + k * 14, 10, 3);
      ctx.fillText(l.label, M.left + 22, M.top + 12 + k * 14);
    });
    canvas.dataset.points = String(points);
  }

  function drawSeries() {
    const r = R.run();
    const s = r.series;
    lineChart($("util"), [{ x: s.t, y: s.util, colour: "#1f77b4", step: true }],
      { xTime: true, yMax: 1, yPercent: true, empty: "no GPUs in this cluster, or its servers are not known" });
    lineChart($("queue"), [
      { x: s.t, y: s.queue, colour: "#d62728", step: true, label: "waiting" },
      { x: s.t, y: s.running, colour: "#2ca02c", step: true, label: "running" },
    ], { xTime: true });
    lineChart($("frag"), [{ x: r.frag.t, y: r.frag.v, colour: "#9467bd", step: true }],
      { xTime: true, yMax: 1, empty: "not in the event log: written by --report when the run is at hand" });
  }

  function drawCdfs() {
    for (const key of ["jct", "slowdown"]) {
      const lines = D.runs.map((r, k) => ({
        x: r.cdf[key].x, y: r.cdf[key].p, colour: R.runColour(k),
        label: D.runs.length > 1 ? r.scheduler + " (seed " + r.seed + ")" : "",
      }));
      const all = [].concat(...D.runs.map((r) => r.cdf[key].x)).filter((v) => v > 0);
      const logX = all.length > 0 && Math.max(...all) / Math.min(...all) > 100;
      const vlines = key === "jct" ? D.runs.map((r, k) => ({
        x: r.bound_s, colour: R.runColour(k), label: k === 0 ? "mean no-wait bound (dashed)" : "",
      })) : [{ x: 1, colour: "#555", label: "slowdown 1" }];
      lineChart($("cdf-" + key), lines, { xTime: key === "jct", yMax: 1, yPercent: true, logX, vlines,
        empty: key === "slowdown" ? "slowdown needs the run's records (not in the event log)" : "no finished jobs" });
    }
  }

  function drawMeans() {
    const metric = $("metric").value;
    const canvas = $("means");
    const { ctx, w, h } = R.fit(canvas, 220);
    const rows = D.means.filter((row) => row[metric][0] !== null);
    canvas.dataset.bars = String(rows.length);
    if (!rows.length) { ctx.fillText("no value", M.left + 10, M.top + 20); return; }
    const pw = w - M.left - M.right;
    const ph = h - M.top - M.bottom - 14;
    const bounds = Object.values(D.bounds).filter((b) => b !== null);
    const bound = metric === "avg_jct_s" && bounds.length ? bounds.reduce((a, b) => a + b, 0) / bounds.length : null;
    let top = Math.max(...rows.map((row) => row[metric][0] + (row[metric][1] || 0)), bound || 0) * 1.1 || 1;
    const Y = (v) => M.top + ph - (v / top) * ph;
    const slot = pw / rows.length;
    const isTime = metric.endsWith("_s");
    ctx.textAlign = "right";
    ctx.fillStyle = "#333";
    for (const v of (isTime ? R.timeTicks(0, top, 4) : R.ticks(0, top, 4))) ctx.fillText(isTime ? R.fmtTime(v) : R.fmtNum(v), M.left - 4, Y(v) + 4);
    rows.forEach((row, k) => {
      const [mean, ci] = row[metric];
      const x = M.left + k * slot + slot * 0.2;
      ctx.fillStyle = R.runColour(k);
      ctx.fillRect(x, Y(mean), slot * 0.6, Y(0) - Y(mean));
      if (ci !== null) {
        ctx.fillStyle = "#000";
        ctx.fillRect(x + slot * 0.3 - 0.5, Y(mean + ci), 1.5, Y(mean - ci) - Y(mean + ci));
        ctx.fillRect(x + slot * 0.2, Y(mean + ci), slot * 0.2, 1.5);
        ctx.fillRect(x + slot * 0.2, Y(mean - ci), slot * 0.2, 1.5);
      }
      ctx.fillStyle = "#333";
      ctx.textAlign = "center";
      ctx.fillText(row.scheduler + " (" + row.runs + ")", x + slot * 0.3, h - M.bottom + 2);
      ctx.fillText(isTime ? R.fmtTime(mean) : R.fmtNum(mean), x + slot * 0.3, Y(mean) - 4);
    });
    if (bound !== null) {
      ctx.strokeStyle = "#555";
      ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(M.left, Y(bound)); ctx.lineTo(M.left + pw, Y(bound)); ctx.stroke();
      ctx.setLineDash([]);
      ctx.textAlign = "left";
      ctx.fillText("no-wait bound " + R.fmtTime(bound), M.left + 4, Y(bound) - 4);
    }
  }

  // ---- job table ---------------------------------------------------------------------------
  const COLUMNS = [
    ["id", "job", "text"], ["model", "model", "text"], ["submit", "submit", "time"], ["start", "start", "time"],
    ["finish", "finish", "time"], ["jct", "JCT", "time"], ["wait", "wait", "time"],
    ["slowdown", "slowdown", "num"], ["changes", "rescales+migrations", "num"],
  ];

  // "resnet jct>3600 changes>=1": text terms match the ID or model, column terms compare
  function parseFilter(text) {
    const tests = [];
    for (const term of text.trim().split(/\s+/).filter(Boolean)) {
      const m = term.match(/^(\w+)(<=|>=|=|<|>)(.+)$/);
      const col = m && COLUMNS.find((c) => c[0] === m[1]);
      if (col) {
        const [, name, op, raw] = m;
        const v = col[2] === "text" ? raw : Number(raw);
        tests.push((j, J) => {
          const x = J[name][j];
          if (x === null) return false;
          if (op === "=") return col[2] === "text" ? String(x) === v : x === v;
          return op === "<" ? x < v : op === ">" ? x > v : op === "<=" ? x <= v : x >= v;
        });
      } else {
        const low = term.toLowerCase();
        tests.push((j, J) => String(J.id[j]).toLowerCase().includes(low) || String(J.model[j]).toLowerCase().includes(low));
      }
    }
    return tests;
  }

  function drawTable() {
    const J = R.run().jobs;
    const tests = parseFilter($("filter").value);
    let rows = [];
    for (let j = 0; j < J.id.length; j++) if (tests.every((f) => f(j, J))) rows.push(j);
    const col = J[st.sort];
    const sign = st.desc ? -1 : 1;
    rows.sort((a, b) => {
      const x = col[a], y = col[b];
      if (x === y) return a - b;
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    $("count").textContent = rows.length.toLocaleString("en") + " of " + J.id.length.toLocaleString("en") +
      " jobs" + (rows.length > TABLE_ROWS ? " (first " + TABLE_ROWS + " shown)" : "");
    $("jobs").dataset.matching = String(rows.length);
    const body = document.createElement("tbody");
    for (const j of rows.slice(0, TABLE_ROWS)) {
      const tr = document.createElement("tr");
      for (const [name, , kind] of COLUMNS) {
        const td = document.createElement("td");
        const x = J[name][j];
        td.textContent = kind === "time" ? R.fmtTime(x) : kind === "num" ? R.fmtNum(x) : (x || "");
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    $("jobs").replaceChild(body, $("jobs").tBodies[0]);
  }

  function setupTable() {
    const tr = document.createElement("tr");
    for (const [name, label] of COLUMNS) {
      const th = document.createElement("th");
      th.textContent = label;
      th.dataset.column = name;
      th.addEventListener("click", () => {
        st.desc = st.sort === name ? !st.desc : false;
        st.sort = name;
        document.querySelectorAll("#jobs th").forEach((e) => { e.textContent = e.textContent.replace(/ [▲▼]$/, ""); });
        th.textContent = label + (st.desc ? " ▼" : " ▲");
        drawTable();
      });
      tr.appendChild(th);
    }
    $("jobs").tHead.appendChild(tr);
    let timer = null;
    $("filter").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(drawTable, 150); });
  }

  // ---- start-up ----------------------------------------------------------------------------
  function drawRun(keepView) {
    if (!keepView) R.resetView();
    R.drawTimeline();
    drawSeries();
    drawTable();
    R.drawDecisions(true);
    const r = R.run();
    $("meta").textContent = r.workload + " · " + r.scheduler + " · seed " + r.seed + " · " +
      r.jobs.id.length.toLocaleString("en") + " jobs on " + r.servers.length + " servers (" +
      r.servers.reduce((a, b) => a + b, 0) + " GPUs) · ran to " + R.fmtTime(r.end_s) + " · made " + D.generated;
  }

  function init() {
    const t0 = performance.now();
    document.title = D.title;
    $("title").textContent = D.title;
    for (const n of D.notes) { const li = document.createElement("li"); li.textContent = n; $("notes").appendChild(li); }
    D.runs.forEach((r, k) => { $("run").add(new Option(r.scheduler + " · seed " + r.seed, String(k))); });
    $("run").addEventListener("change", (e) => { st.run = Number(e.target.value); drawRun(); });
    [["avg_jct_s", "average JCT"], ["avg_wait_s", "average wait"], ["avg_slowdown", "average slowdown"],
      ["makespan_s", "makespan"], ["gpu_util", "GPU utilisation"]].forEach(([v, l]) => $("metric").add(new Option(l, v)));
    $("metric").addEventListener("change", drawMeans);
    if (!D.runs[0].servers.some((g) => g > 0)) { st.rows = "job"; $("rows").value = "job"; }
    R.setupTimeline();
    setupTable();
    drawRun();
    drawCdfs();
    drawMeans();
    let resize = null;
    window.addEventListener("resize", () => {
      clearTimeout(resize);
      resize = setTimeout(() => { R.drawTimeline(); drawSeries(); drawCdfs(); drawMeans(); R.drawDecisions(false); }, 200);
    });
    R.firstRenderMs = performance.now() - t0;
    document.body.dataset.ready = "1";
    if (D.live) follow();
  }

  // a live dashboard's page: each message of the event stream is the run's data so far; the
  // view keeps its zoom unless it showed the whole run, which it then goes on showing
  function follow() {
    let updates = 0;
    const stream = new EventSource("events");
    stream.onmessage = (e) => {
      const before = R.run();
      const whole = st.t0 <= (before.jobs.submit[0] || 0) && st.t1 >= before.end_s - 1e-6;
      D.runs[st.run] = JSON.parse(e.data);
      drawRun(!whole);
      drawCdfs();
      document.body.dataset.updates = String(++updates);
    };
  }

  Object.assign(R, { drawTable, drawMeans, drawCdfs, drawSeries, parseFilter });
  init();
})();
