// safegate serve: the controls post their values to /api/run and the chart is redrawn from
// the answer. At most one request is in flight; inputs that arrive meanwhile are coalesced
// into one request sent when it returns, so the chart follows a dragged slider without a
// queue of stale runs. `window.safegate` exposes the plot and the last redraw's timing
// (input event to drawn chart) for the browser test.
"use strict";
(function () {
  var form = document.getElementById("controls");
  var status = document.getElementById("status");
  var summaryEl = document.getElementById("summary");
  var chartEl = document.getElementById("chart");
  var state = { plot: null, seq: 0, last: null, inFlight: false, pendingSince: null, error: null };
  window.safegate = state;

  function value(id) { return document.getElementById(id); }

  function request() {
    var set = {
      "traffic.rate": Number(value("traffic").value),
      "health.kind": value("health").value,
      "health.low": Number(value("low").value),
      "gate.threshold": Number(value("threshold").value),
      "gate.sensitivity": Number(value("sensitivity").value)
    };
    if (value("boundary").checked) {
      set["boundary.barrier.threshold"] = set["gate.threshold"];
      set["boundary.probability.epsilon"] = Number(value("epsilon").value);
      set["boundary.magnitude.eta"] = Number(value("eta").value);
      set["boundary.magnitude.rho"] = Number(value("rho").value);
    }
    var points = Math.max(200, Math.min(2000, Math.round(chartEl.clientWidth * 1.5)));
    return { set: set, policy: value("policy").value, points: points };
  }

  function syncControls() {
    ["traffic", "low", "threshold", "sensitivity"].forEach(function (id) {
      value(id + "-out").textContent = value(id).value;
    });
    var gate = value("policy").value === "gate";
    value("sensitivity").disabled = !gate;
    var on = value("boundary").checked;
    ["epsilon", "eta", "rho"].forEach(function (id) { value(id).disabled = !on; });
    value("low").disabled = value("health").value === "constant";
  }

  function onInput() {
    syncControls();
    if (state.pendingSince === null) state.pendingSince = performance.now();
    if (!state.inFlight) send();
  }

  function send() {
    var inputAt = state.pendingSince;
    state.pendingSince = null;
    state.inFlight = true;
    var body = JSON.stringify(request());
    fetch("/api/run", { method: "POST", headers: { "content-type": "application/json" }, body: body })
      .then(function (r) { return r.json().then(function (doc) { return { ok: r.ok, doc: doc }; }); })
      .then(function (res) {
        if (!res.ok) throw new Error(res.doc.error || "the run failed");
        state.error = null;
        status.className = "";
        draw(res.doc, inputAt);
      })
      .catch(function (e) {
        state.error = String(e.message || e);
        status.textContent = state.error;
        status.className = "error";
      })
      .then(function () {
        state.inFlight = false;
        if (state.pendingSince !== null) send();
      });
  }

  function seriesData(doc) {
    var s = doc.series;
    var sc = doc.scenario;
    var line = sc.gate.threshold * sc.model.capacity;
    var lambda = sc.traffic.rate;
    var base = doc.baseline && doc.baseline.series ? doc.baseline.series.queue : null;
    return [
      s.t,
      s.queue,
      base || s.t.map(function () { return null; }),
      s.t.map(function () { return line; }),
      s.admit_fraction.map(function (a) { return a * lambda; }),
      s.health
    ];
  }

  function makePlot(data, cap) {
    var opts = {
      width: chartEl.clientWidth,
      height: window.safegateUI.height(chartEl),
      scales: { x: { time: false }, q: { range: [0, cap] }, r: { auto: true }, h: { range: [0, 1.05] } },
      axes: [
        { label: "time [s]" },
        { scale: "q", label: "backlog [requests]" },
        { scale: "r", side: 1, label: "admitted [req/s]", grid: { show: false } },
        { scale: "h", side: 1, label: "health", grid: { show: false }, size: 40 }
      ],
      series: [
        {},
        { label: "backlog", scale: "q", stroke: "#1f5fbf", width: 2 },
        { label: "baseline backlog", scale: "q", stroke: "#9aa5b4", width: 1, dash: [4, 3] },
        { label: "θ·cap", scale: "q", stroke: "#c0392b", width: 1.5, dash: [8, 4] },
        { label: "admitted rate", scale: "r", stroke: "#2e8b57", width: 1 },
        { label: "health", scale: "h", stroke: "#d68910", width: 1 }
      ],
      hooks: { draw: [function () { drawn(); }] }
    };
    return new uPlot(opts, data, chartEl);
  }

  var waiting = null;
  function drawn() {
    if (!waiting) return;
    var now = performance.now();
    state.last = { inputAt: waiting.inputAt, drawnAt: now, ms: waiting.inputAt === null ? null : now - waiting.inputAt };
    state.seq += 1;
    status.textContent = waiting.label + " · redrawn " + (state.last.ms === null ? "" : state.last.ms.toFixed(0) + " ms after the input");
    waiting = null;
  }

  function draw(doc, inputAt) {
    var data = seriesData(doc);
    var cap = doc.scenario.model.capacity;
    waiting = { inputAt: inputAt, label: doc.label };
    if (!state.plot || state.plot.scales.q.max !== cap) {
      if (state.plot) state.plot.destroy();
      state.plot = makePlot(data, cap);
    } else {
      state.plot.setData(data);
    }
    renderSummary(doc);
  }

  function fmt(x) {
    if (x === null || x === undefined) return "–";
    return Math.abs(x) >= 1000 ? x.toFixed(0) : x.toFixed(1);
  }

  function renderSummary(doc) {
    var s = doc.summary;
    var rows = [
      ["backlog max", fmt(s.queue_max)],
      ["backlog at end", fmt(s.queue_final)],
      ["settled band", s.settled_min === null ? "–" : fmt(s.settled_min) + "–" + fmt(s.settled_max)],
      ["offered", fmt(s.offered)],
      ["admitted", fmt(s.admitted)],
      ["rejected", fmt(s.rejected)],
      ["dropped (full)", fmt(s.dropped)],
      ["policy", doc.policy]
    ];
    window.safegateUI.summary(summaryEl, rows);
  }

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      if (state.plot) state.plot.setSize({ width: chartEl.clientWidth, height: window.safegateUI.height(chartEl) });
    }, 100);
  });

  form.addEventListener("input", onInput);
  form.addEventListener("change", onInput);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  syncControls();
  onInput();
})();
