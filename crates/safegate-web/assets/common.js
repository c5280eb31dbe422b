// safegate serve: what the three pages share. `safegateUI.summary(el, rows)` fills a
// <dl> with [term, value] rows; `safegateUI.height(el)` is the chart height for the
// element's width; `safegateUI.whyRefused(url, show)` asks a stream's URL once more when
// its EventSource closed before any event (a 409 or 400 whose body EventSource does not
// expose) and shows the error it answers with.
"use strict";
window.safegateUI = {
  summary: function (el, rows) {
    el.innerHTML = "";
    rows.forEach(function (r) {
      var div = document.createElement("div");
      var dt = document.createElement("dt");
      var dd = document.createElement("dd");
      dt.textContent = r[0];
      dd.textContent = r[1];
      div.appendChild(dt);
      div.appendChild(dd);
      el.appendChild(div);
    });
  },
  height: function (el) { return el.clientWidth < 600 ? 300 : 360; },
  whyRefused: function (url, show) {
    fetch(url).then(function (r) {
      if (r.ok) {
        // The slot was free this time: close the stream so the run it started stops.
        if (r.body) r.body.cancel();
        show("the stream closed; try again");
        return null;
      }
      return r.json().then(function (b) { show(b.error); });
    }).catch(function () { show("the stream closed (is safegate serve still running?)"); });
  }
};
