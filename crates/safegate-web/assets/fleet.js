// safegate serve, fleet view: starts one `safegate fleet` run over server-sent events
// (GET /api/fleet/stream) and draws, each second, the fleet's admitted rate against its
// bound (the coordinator's outage shaded), Jain's index, and every gate's mode.
// `window.safegateFleet` holds what has arrived, for the browser test.
"use strict";
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var chartEl = $("chart");
  var status = $("status");
  // The keeper's modes (docs/fleet.md §When the price goes silent), then the state
  // before a gate's first decision.
  var MODES = [
    ["granted", "a fresh grant"],
    ["learning", "fresh, no higher than held"],
    ["frozen", "the last grant, lease valid"],
    ["held-expired", "the last grant, lease over"],
    ["share", "min(grant, bound / N)"],
    ["fallback", "the gate's own limit"],
    ["bootstrap", "bound / N, no grant yet"],
    ["starting", "no decision yet"]
  ];
  var state = { start: null, seconds: [], modes: [], done: null, error: null };
  window.safegateFleet = state;
  var source = null;
  var plot = null;
  var data = [[], [], [], [], []];

  function sync() {
    $("demand-out").textContent = $("demand").value;
    var on = $("outage").checked;
    $("outage-start").disabled = !on;
    $("outage-len").disabled = !on;
  }

  function legend() {
    var el = $("legend");
    el.innerHTML = "";
    MODES.forEach(function (m) {
      var s = document.createElement("span");
      s.className = "key m-" + m[0];
      s.title = m[1];
      s.textContent = m[0];
      el.appendChild(s);
    });
  }

  // The coordinator's outage as a shaded band behind the series.
  function shadeOutage(u) {
    var secs = state.seconds;
    var ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = "rgba(192, 57, 43, 0.12)";
    for (var i = 0; i < secs.length; i++) {
      if (secs[i].coordinator_up) continue;
      var a = i > 0 ? secs[i - 1].t : 0;
      var x0 = u.valToPos(a, "x", true);
      var x1 = u.valToPos(secs[i].t, "x", true);
      ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
    }
    ctx.restore();
  }

  function makePlot(s) {
    if (plot) plot.destroy();
    data = [[], [], [], [], []];
    var top = Math.max(s.capacity * 1.3, Math.min(s.demand, s.capacity * 3) * 1.05);
    plot = new uPlot({
      width: chartEl.clientWidth,
      height: window.safegateUI.height(chartEl),
      scales: { x: { time: false, range: [0, s.secs] }, r: { range: [0, top] }, j: { range: [0, 1.05] } },
      axes: [
        { label: "wall time [s]" },
        { scale: "r", label: "admitted [req/s]" },
        { scale: "j", side: 1, label: "Jain's index", grid: { show: false } }
      ],
      series: [
        {},
        { label: "admitted, all gates", scale: "r", stroke: "#1f5fbf", width: 2 },
        { label: "served (2xx)", scale: "r", stroke: "#e67e22", width: 1.5 },
        { label: "the bound", scale: "r", stroke: "#c0392b", width: 1.5, dash: [8, 4] },
        { label: "Jain's index", scale: "j", stroke: "#2e8b57", width: 1 }
      ],
      hooks: { drawClear: [shadeOutage] }
    }, data, chartEl);
  }

  function makeTracks(nodes) {
    var el = $("modes");
    el.innerHTML = "";
    state.modes = [];
    var rows = [["coordinator", "coord"]];
    for (var i = 0; i < nodes; i++) rows.push(["g" + i, "g" + i]);
    rows.forEach(function (r) {
      var row = document.createElement("div");
      row.className = "track-row";
      var name = document.createElement("span");
      name.className = "track-name";
      name.textContent = r[0];
      var track = document.createElement("div");
      track.className = "track";
      track.id = "track-" + r[1];
      row.appendChild(name);
      row.appendChild(track);
      el.appendChild(row);
    });
  }

  function cell(trackId, cls, title) {
    var c = document.createElement("span");
    c.className = cls;
    c.title = title;
    // One cell a second, on the chart's time axis.
    c.style.width = (100 / Math.ceil(state.start.secs)) + "%";
    $(trackId).appendChild(c);
  }

  function onSecond(p) {
    state.seconds.push(p);
    state.modes.push(p.gates.map(function (g) { return g.mode; }));
    data[0].push(p.t);
    data[1].push(p.admitted);
    data[2].push(p.succeeded);
    data[3].push(state.start.capacity);
    data[4].push(p.jain);
    plot.setData(data);
    var t = p.t.toFixed(0) + " s";
    cell("track-coord", p.coordinator_up ? "up" : "down", t + ": coordinator " + (p.coordinator_up ? "up" : "down"));
    var body = $("gates").tBodies[0];
    body.innerHTML = "";
    p.gates.forEach(function (g) {
      cell("track-" + g.id, "m-" + g.mode, g.id + " at " + t + ": " + g.mode + ", limit " + g.limit.toFixed(1));
      var tr = document.createElement("tr");
      [g.id, g.mode, g.limit.toFixed(1), g.admitted.toFixed(0), g.grants, g.silences, g.unpriced].forEach(function (v, i) {
        var td = document.createElement("td");
        td.textContent = v;
        if (i === 1) td.className = "m-" + g.mode;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    status.textContent = t + " of " + state.start.secs + ": " + p.admitted.toFixed(0) + " req/s admitted (bound " +
      state.start.capacity + "), " + p.succeeded.toFixed(0) + " served, coordinator " + (p.coordinator_up ? "up" : "DOWN");
  }

  function pct(x, bound) { return x.toFixed(1) + " (" + (100 * x / bound).toFixed(0) + " %)"; }

  function onDone(r) {
    state.done = r;
    var up = state.seconds.filter(function (s) { return s.coordinator_up && s.t > 2; });
    var mean = up.reduce(function (a, s) { return a + s.admitted; }, 0) / Math.max(1, up.length);
    var served = up.reduce(function (a, s) { return a + s.succeeded; }, 0) / Math.max(1, up.length);
    var rows = [["mode", r.mode], ["gates", r.nodes], ["bound", r.capacity + " req/s"], ["demand", r.demand + " req/s"],
      ["admitted, coordinator up", pct(mean, r.capacity)], ["served, coordinator up", served.toFixed(1) + " req/s"]];
    var verdict = "";
    if (r.outage && r.outage.measured_seconds === 0) {
      verdict = "The outage was not measured: no whole second was sampled inside it (the gates or the machine fell behind).";
    } else if (r.outage) {
      var o = r.outage;
      rows.push(["outage worst second", pct(o.worst_second, r.capacity)], ["outage mean", pct(o.mean_admitted, r.capacity)],
        ["served in the outage", o.mean_succeeded.toFixed(1) + " req/s"], ["served at the end", o.succeeded_at_end.toFixed(1) + " req/s"],
        ["fair again after", o.fair_again_after === null ? "never" : o.fair_again_after.toFixed(2) + " s"],
        ["decisions without a price", o.unpriced_decisions]);
      // The token buckets' burst lets a second exceed the bound by a little (docs/fleet.md).
      verdict = o.worst_second <= 1.1 * r.capacity ?
        "Within the bound through the outage: worst second " + pct(o.worst_second, r.capacity) + ", mean " +
          (100 * o.admitted_share_of_bound).toFixed(0) + " % of the bound; " + o.mean_succeeded.toFixed(1) + " req/s served." :
        "Over the bound during the outage: worst second " + pct(o.worst_second, r.capacity) + ", " +
          (o.worst_second / r.capacity).toFixed(2) + "× the bound; " + o.mean_succeeded.toFixed(1) + " req/s served.";
    }
    window.safegateUI.summary($("summary"), rows);
    $("verdict").textContent = verdict;
    status.textContent = "done: " + r.nodes + " gates, " + r.mode + ", " + state.seconds.length + " seconds";
  }

  function start(e) {
    e.preventDefault();
    if (source) source.close();
    var cap = Number($("capacity").value);
    var q = {
      nodes: $("nodes").value, mode: $("mode").value, capacity: cap, demand: cap * Number($("demand").value),
      secs: $("secs").value, lease_ms: $("lease").value,
      outage: $("outage").checked ? $("outage-start").value + ":" + $("outage-len").value : "none"
    };
    var qs = Object.keys(q).map(function (k) { return k + "=" + encodeURIComponent(q[k]); }).join("&");
    state.start = null; state.seconds = []; state.modes = []; state.done = null; state.error = null;
    status.className = "";
    status.textContent = "starting redis-server, the downstream and the gate processes…";
    $("verdict").textContent = "";
    $("summary").innerHTML = "";
    $("start").disabled = true;
    source = new EventSource("/api/fleet/stream?" + qs);
    source.addEventListener("start", function (ev) {
      state.start = JSON.parse(ev.data);
      makePlot(state.start);
      makeTracks(state.start.nodes);
    });
    source.addEventListener("second", function (ev) { onSecond(JSON.parse(ev.data)); });
    source.addEventListener("done", function (ev) { onDone(JSON.parse(ev.data)); finish(); });
    source.addEventListener("error", function (ev) {
      if (ev.data) {
        state.error = JSON.parse(ev.data).error;
        status.textContent = state.error;
        status.className = "error";
      } else if (!state.done && !state.start) {
        window.safegateUI.whyRefused("/api/fleet/stream?" + qs, function (msg) {
          state.error = msg;
          status.textContent = msg;
          status.className = "error";
        });
      } else if (!state.done) {
        state.error = "the stream closed";
        status.textContent = state.error;
        status.className = "error";
      }
      finish();
    });
  }

  function finish() {
    if (source) source.close();
    source = null;
    $("start").disabled = false;
  }

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      if (plot) plot.setSize({ width: chartEl.clientWidth, height: window.safegateUI.height(chartEl) });
    }, 100);
  });
  $("controls").addEventListener("input", sync);
  $("controls").addEventListener("submit", start);
  legend();
  sync();
})();
