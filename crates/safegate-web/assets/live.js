// safegate serve, live view: starts one live run over server-sent events
// (GET /api/live/stream) and plots each `progress` event as it arrives.
"use strict";
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var chartEl = $("chart");
  var status = $("status");
  var source = null;
  var plot = null;
  var data = [[], [], [], [], []];

  function sync() {
    ["traffic", "threshold", "sensitivity"].forEach(function (id) { $(id + "-out").textContent = $(id).value; });
    $("sensitivity").disabled = $("policy").value !== "gate";
  }

  function makePlot(cap, duration) {
    if (plot) plot.destroy();
    data = [[], [], [], [], []];
    plot = new uPlot({
      width: chartEl.clientWidth,
      height: window.safegateUI.height(chartEl),
      scales: { x: { time: false, range: [0, duration] }, q: { range: [-cap, cap] }, l: { auto: true } },
      axes: [
        { label: "model time [s]" },
        { scale: "q", label: "requests" },
        { scale: "l", side: 1, label: "executor limit", grid: { show: false } }
      ],
      series: [
        {},
        { label: "backlog", scale: "q", stroke: "#1f5fbf", width: 2 },
        { label: "θ·cap", scale: "q", stroke: "#c0392b", width: 1.5, dash: [8, 4] },
        { label: "barrier margin θ·cap − q", scale: "q", stroke: "#7d3c98", width: 1 },
        { label: "limit", scale: "l", stroke: "#2e8b57", width: 1 }
      ]
    }, data, chartEl);
  }

  function show(rows) { window.safegateUI.summary($("summary"), rows); }

  function start(e) {
    e.preventDefault();
    if (source) source.close();
    var run = {
      set: {
        "traffic.rate": Number($("traffic").value),
        "health.kind": $("health").value,
        "gate.threshold": Number($("threshold").value),
        "gate.sensitivity": Number($("sensitivity").value)
      },
      policy: $("policy").value
    };
    var q = "run=" + encodeURIComponent(JSON.stringify(run)) +
      "&duration=" + encodeURIComponent($("duration").value) + "&speed=" + encodeURIComponent($("speed").value);
    status.className = "";
    status.textContent = "starting redis-server and the pool…";
    $("start").disabled = true;
    var started = false;
    source = new EventSource("/api/live/stream?" + q);
    source.addEventListener("start", function (ev) {
      started = true;
      var s = JSON.parse(ev.data);
      makePlot(s.capacity, s.duration);
      status.textContent = "playing " + s.policy + " at " + s.speed + "×";
    });
    source.addEventListener("progress", function (ev) {
      var p = JSON.parse(ev.data);
      data[0].push(p.t);
      data[1].push(p.queue);
      data[2].push(p.line);
      data[3].push(p.margin);
      data[4].push(p.limit === null ? null : p.limit);
      plot.setData(data);
      var a = p.accounting;
      show([["model time", p.t.toFixed(1) + " s"], ["backlog", p.queue], ["margin", p.margin.toFixed(0)],
        ["admit share", p.admit.toFixed(2)], ["limit", p.limit === null ? "all" : p.limit],
        ["offered", a.offered], ["admitted", a.admitted], ["rejected", a.rejected + a.rejected_full],
        ["completed", a.completed]]);
    });
    source.addEventListener("done", function (ev) {
      var d = JSON.parse(ev.data);
      status.textContent = "done: backlog max " + d.summary.queue_max.toFixed(0) + ", " +
        d.accounting.completed + " jobs completed";
      finish();
    });
    source.addEventListener("error", function (ev) {
      if (ev.data) {
        status.textContent = JSON.parse(ev.data).error;
      } else if (!started) {
        window.safegateUI.whyRefused("/api/live/stream?" + q, function (msg) {
          status.textContent = msg;
          status.className = "error";
        });
      } else if (status.textContent.indexOf("done") !== 0) {
        status.textContent = "the stream closed";
      }
      status.className = status.textContent.indexOf("done") === 0 ? "" : "error";
      finish();
    });
  }

  function finish() {
    if (source) source.close();
    source = null;
    $("start").disabled = false;
  }

  $("controls").addEventListener("input", sync);
  $("controls").addEventListener("submit", start);
  sync();
})();
