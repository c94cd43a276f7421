// dlsched report, part 1: the data, shared helpers and the schedule timeline (canvas). The
// runs are embedded in #report-data (dlsched/report/data.py); nothing is fetched.
// window.dlschedReport holds the data, the state and the functions main.js calls (and tests read).
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const MAX_DRAW = 150000; // allocations drawn per view; beyond that a sample, said on the page
  const MARGIN = { left: 64, right: 12, top: 8, bottom: 26 };
  const st = { run: 0, rows: "server", t0: 0, t1: 1, y0: 0, y1: 1, sort: "submit", desc: false, drawn: 0 };
  const $ = (id) => document.getElementById(id);
  const run = () => D.runs[st.run];

  const COLOURS = []; // job index -> its colour, made once (parsing colour text costs per bar)
  function colour(k) {
    return COLOURS[k] || (COLOURS[k] = "hsl(" + ((k * 137.508) % 360).toFixed(1) + ",62%," + (42 + (k % 3) * 9) + "%)");
  }
  const RUN_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const runColour = (k) => RUN_COLOURS[k % RUN_COLOURS.length];

  function fmtTime(s) {
    if (s === null || s === undefined) return "–";
    const a = Math.abs(s);
    const one = (x) => String(+x.toFixed(1));
    if (a < 120) return one(s) + " s";
    if (a < 7200) return one(s / 60) + " min";
    if (a < 172800) return one(s / 3600) + " h";
    return one(s / 86400) + " d";
  }
  function fmtNum(x) {
    if (x === null || x === undefined) return "–";
    return Math.abs(x) >= 1000 ? Math.round(x).toLocaleString("en") : (+x.toPrecision(3)).toString();
  }

  function fit(canvas, height) {
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 600;
    const h = height || canvas.clientHeight || 220;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
    canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    return { ctx, w, h };
  }

  function ticks(lo, hi, n) {
    const span = hi - lo || 1;
    const raw = span / n;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(v);
    return out;
  }

  // nice ticks of a time axis (s): in whole seconds, minutes, hours or days by the span
  function timeTicks(lo, hi, n) {
    const span = hi - lo;
    const unit = span < 600 ? 1 : span < 36000 ? 60 : span < 259200 ? 3600 : 86400;
    return ticks(lo / unit, hi / unit, n).map((v) => v * unit);
  }
  const LOG_TIME_TICKS = [1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000];

  // ---- schedule timeline -------------------------------------------------------------------
  function timelineRows() {
    const r = run();
    if (st.rows === "server") return r.servers.reduce((a, b) => a + b, 0);
    return r.jobs.id.length;
  }

  function resetView() {
    const r = run();
    const first = r.jobs.submit.length ? r.jobs.submit[0] : 0; // submission order
    st.t0 = first;
    st.t1 = Math.max(r.end_s, first + 1);
    st.y0 = 0;
    st.y1 = Math.max(timelineRows(), 1);
  }

  function drawTimeline() {
    const r = run();
    const canvas = $("timeline");
    const { ctx, w, h } = fit(canvas, 420);
    const pw = w - MARGIN.left - MARGIN.right;
    const ph = h - MARGIN.top - MARGIN.bottom;
    const sx = pw / (st.t1 - st.t0);
    const sy = ph / (st.y1 - st.y0);
    const X = (t) => MARGIN.left + (t - st.t0) * sx;
    const Y = (y) => MARGIN.top + (y - st.y0) * sy;
    const B = r.bars;
    const perServer = st.rows === "server";
    const items = perServer ? r.segs.bar.length : B.job.length;
    // the allocations in view, then a stride when there are more than MAX_DRAW
    const inView = [];
    for (let i = 0; i < items; i++) {
      const b = perServer ? r.segs.bar[i] : i;
      const y = perServer ? r.segs.y[i] : B.job[b];
      const n = perServer ? r.segs.n[i] : 1;
      if (B.t1[b] < st.t0 || B.t0[b] > st.t1 || y + n < st.y0 || y > st.y1) continue;
      inView.push(i);
    }
    const stride = Math.max(1, Math.ceil(inView.length / MAX_DRAW));
    ctx.save();
    ctx.beginPath();
    ctx.rect(MARGIN.left, MARGIN.top, pw, ph);
    ctx.clip();
    const marks = [];
    let drawn = 0;
    for (let k = 0; k < inView.length; k += stride) {
      const i = inView[k];
      const b = perServer ? r.segs.bar[i] : i;
      const y = perServer ? r.segs.y[i] : B.job[b];
      const n = perServer ? r.segs.n[i] : 1;
      const x0 = X(B.t0[b]);
      const x1 = X(B.t1[b]);
      const y0 = Y(y);
      const hh = Math.max(n * sy - (sy > 4 ? 1 : 0), 0.6);
      ctx.fillStyle = colour(B.job[b]);
      ctx.fillRect(x0, y0, Math.max(x1 - x0, 0.8), hh);
      drawn++;
      const open = r.kinds[B.open[b]];
      if (open === "rescale" || open === "migrate") marks.push([x0, y0, hh, open]);
      if (B.end[b] >= 0 && r.kinds[B.end[b]] === "preempt") marks.push([x1, y0, hh, "preempt"]);
    }
    if (marks.length < 20000) {
      const mc = { rescale: "#000", migrate: "#1f77ff", preempt: "#e00" };
      for (const [x, y, hh, kind] of marks) {
        ctx.fillStyle = mc[kind];
        ctx.fillRect(x - 1, y, 2, hh);
      }
    }
    ctx.restore();
    drawRowLabels(ctx, r, sy, Y, h);
    drawTimeAxis(ctx, w, h, X);
    st.drawn = drawn;
    canvas.dataset.bars = String(drawn);
    canvas.dataset.inView = String(inView.length);
    canvas.dataset.rows = st.rows;
    let note = drawn.toLocaleString("en") + " of " + items.toLocaleString("en") +
      (perServer ? " server segments" : " allocations") + " drawn";
    if (stride > 1) {
      note += " — a sample (1 in " + stride + ") of the " + inView.length.toLocaleString("en") +
        " in view: too many to draw at once; zoom in to see every one";
    }
    if (perServer && !r.servers.some((g) => g > 0)) note = "no GPUs in this cluster: see the per-job rows";
    $("timeline-note").textContent = note + ".";
  }

  function drawRowLabels(ctx, r, sy, Y, h) {
    ctx.fillStyle = "#333";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    if (st.rows === "server") {
      let y = 0;
      const every = Math.max(1, Math.ceil(14 / Math.max(sy * (r.servers[0] || 1), 1e-9)));
      r.servers.forEach((g, s) => {
        if (s % every === 0 && y + g > st.y0 && y < st.y1) {
          ctx.fillText("server " + s, MARGIN.left - 4, Math.max(Y(y) + Math.min(g * sy, 14) / 2, MARGIN.top + 5));
        }
        if (sy * g > 3 && y > st.y0 && y < st.y1) {
          ctx.fillStyle = "#ddd";
          ctx.fillRect(MARGIN.left, Y(y), ctx.canvas.clientWidth, 1);
          ctx.fillStyle = "#333";
        }
        y += g;
      });
    } else if (sy >= 12) {
      for (let j = Math.max(0, Math.floor(st.y0)); j < Math.min(st.y1, r.jobs.id.length); j++) {
        ctx.fillText(String(r.jobs.id[j]).slice(0, 10), MARGIN.left - 4, Y(j) + sy / 2);
      }
    } else {
      ctx.fillText("jobs " + Math.floor(st.y0) + "–" + Math.ceil(st.y1), MARGIN.left - 4, MARGIN.top + 8);
    }
    ctx.textBaseline = "alphabetic";
  }

  function drawTimeAxis(ctx, w, h, X) {
    ctx.fillStyle = "#333";
    ctx.textAlign = "center";
    for (const t of timeTicks(st.t0, st.t1, 8)) {
      ctx.fillRect(X(t), h - MARGIN.bottom, 1, 4);
      ctx.fillText(fmtTime(t), X(t), h - MARGIN.bottom + 15);
    }
  }

  function hitTest(px, py) {
    const r = run();
    const canvas = $("timeline");
    const pw = canvas.clientWidth - MARGIN.left - MARGIN.right;
    const ph = 420 - MARGIN.top - MARGIN.bottom;
    const t = st.t0 + ((px - MARGIN.left) / pw) * (st.t1 - st.t0);
    const y = st.y0 + ((py - MARGIN.top) / ph) * (st.y1 - st.y0);
    const B = r.bars;
    if (st.rows === "job") {
      const j = Math.floor(y);
      for (let b = 0; b < B.job.length; b++) if (B.job[b] === j && B.t0[b] <= t && t <= B.t1[b]) return b;
      return -1;
    }
    for (let i = 0; i < r.segs.bar.length; i++) {
      const b = r.segs.bar[i];
      if (r.segs.y[i] <= y && y < r.segs.y[i] + r.segs.n[i] && B.t0[b] <= t && t <= B.t1[b]) return b;
    }
    return -1;
  }

  function setupTimeline() {
    const canvas = $("timeline");
    const tip = $("tip");
    let drag = null;
    let pending = false;
    const later = () => {
      if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; drawTimeline(); }); }
    };
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const f = e.deltaY > 0 ? 1.25 : 0.8;
      if (e.shiftKey) {
        const fy = (e.clientY - rect.top - MARGIN.top) / (rect.height - MARGIN.top - MARGIN.bottom);
        const y = st.y0 + fy * (st.y1 - st.y0);
        st.y0 = Math.max(0, y - (y - st.y0) * f);
        st.y1 = Math.min(timelineRows(), y + (st.y1 - y) * f);
      } else {
        const fx = (e.clientX - rect.left - MARGIN.left) / (rect.width - MARGIN.left - MARGIN.right);
        const t = st.t0 + fx * (st.t1 - st.t0);
        st.t0 = t - (t - st.t0) * f;
        st.t1 = t + (st.t1 - t) * f;
      }
      later();
    }, { passive: false });
    canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, t0: st.t0, t1: st.t1, y0: st.y0, y1: st.y1 }; });
    window.addEventListener("mouseup", () => { drag = null; });
    canvas.addEventListener("mousemove", (e) => {
      const rect = canvas.getBoundingClientRect();
      if (drag) {
        const dt = ((e.clientX - drag.x) / (rect.width - MARGIN.left - MARGIN.right)) * (drag.t1 - drag.t0);
        const dy = ((e.clientY - drag.y) / (rect.height - MARGIN.top - MARGIN.bottom)) * (drag.y1 - drag.y0);
        st.t0 = drag.t0 - dt; st.t1 = drag.t1 - dt; st.y0 = drag.y0 - dy; st.y1 = drag.y1 - dy;
        later();
        return;
      }
      const b = hitTest(e.clientX - rect.left, e.clientY - rect.top);
      if (b < 0) { tip.style.display = "none"; return; }
      const r = run();
      const B = r.bars;
      const j = B.job[b];
      tip.textContent = "job " + r.jobs.id[j] + " · " + B.gpus[b] + " GPUs · " + fmtTime(B.t0[b]) + " → " +
        fmtTime(B.t1[b]) + " · from " + r.kinds[B.open[b]] + (B.end[b] >= 0 ? ", until " + r.kinds[B.end[b]] : "");
      tip.style.left = (e.clientX - rect.left + 12) + "px";
      tip.style.top = (e.clientY - rect.top + 12) + "px";
      tip.style.display = "block";
    });
    canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    canvas.addEventListener("dblclick", () => { resetView(); drawTimeline(); });
    $("reset").addEventListener("click", () => { resetView(); drawTimeline(); });
    $("rows").addEventListener("change", (e) => { st.rows = e.target.value; resetView(); drawTimeline(); });
  }

  window.dlschedReport = {
    data: D, state: st, run, fit, ticks, timeTicks, LOG_TIME_TICKS, fmtTime, fmtNum, runColour, MARGIN,
    resetView, drawTimeline, setupTimeline,
  };
})();
