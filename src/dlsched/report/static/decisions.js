// dlsched report, the decision view: at a chosen decision point of a learned policy (DL2,
// DeepRM, SCED²'s Q-network), what it saw and the scores of its legal actions (dlsched/rl/decision_trace.py).
"use strict";
(function () {
  const R = window.dlschedReport;
  const M = R.MARGIN;
  const $ = (id) => document.getElementById(id);

  function trace() { return R.run().decisions; }

  // fill the selects when the run changed (refill), then draw the chosen step's actions
  function drawDecisions(refill) {
    const d = trace();
    $("decisions-box").hidden = !d || !d.points.length;
    if (!d || !d.points.length) return;
    if (refill) {
      const point = $("point");
      point.innerHTML = "";
      d.points.forEach((p, k) => {
        point.add(new Option("at " + R.fmtTime(p.t) + " · " + p.waiting + " waiting · " + p.steps.length + " actions", String(k)));
      });
      fillSteps();
      $("decisions-note").textContent = "The first " + d.points.length + " decision points are kept" +
        (d.skipped ? " (" + d.skipped.toLocaleString("en") + " later ones are not)" : "") +
        "; each action shows the " + d.top + " legal actions with the highest scores. Scores are the " +
        "network's outputs: DL2's and DeepRM's policy logits, whose softmax is the policy's action " +
        "distribution, or SCED²'s Q-values, whose softmax only ranks them.";
    }
    drawStep();
  }

  function fillSteps() {
    const p = trace().points[Number($("point").value) || 0];
    const step = $("step");
    step.innerHTML = "";
    p.steps.forEach((s, k) => step.add(new Option((k + 1) + ": " + s.chosen, String(k))));
  }

  function drawStep() {
    const p = trace().points[Number($("point").value) || 0];
    const s = p.steps[Number($("step").value) || 0];
    const canvas = $("probs");
    $("seen").textContent = "The policy saw, at " + R.fmtTime(p.t) + ": " + p.waiting + " jobs waiting, " +
      p.running + " running, " + p.free_gpus + " GPUs free" +
      (s ? "; " + s.legal + " legal actions; it took “" + s.chosen + "”." : "; it took no action.");
    const rows = s && s.actions ? s.actions.length : 0;
    const { ctx, w } = R.fit(canvas, Math.max(60, 22 * rows + 16));
    canvas.dataset.actions = String(rows);
    if (!rows) { ctx.fillText("scores not known for this policy", M.left, 20); return; }
    const left = 260;
    const width = w - left - 140;
    s.actions.forEach((label, k) => {
      const y = 8 + k * 22;
      const chosen = label === s.chosen;
      ctx.fillStyle = "#333";
      ctx.textAlign = "right";
      ctx.fillText((chosen ? "▶ " : "") + label, left - 8, y + 13);
      ctx.fillStyle = chosen ? "#d62728" : "#1f77b4";
      ctx.fillRect(left, y + 2, Math.max(1, s.p[k] * width), 16);
      ctx.fillStyle = "#333";
      ctx.textAlign = "left";
      ctx.fillText((s.p[k] * 100).toFixed(1) + " % (score " + s.scores[k] + ")", left + Math.max(1, s.p[k] * width) + 6, y + 13);
    });
  }

  $("point").addEventListener("change", () => { fillSteps(); drawStep(); });
  $("step").addEventListener("change", drawStep);
  R.drawDecisions = drawDecisions;
})();
