// Draws the report's charts from the JSON specs embedded in the page (no network needed).
// The plotly bundle is loaded only when the first chart comes near the window, its folded
// section is opened, or before printing, so a page shows its text at once and parses the chart library only if needed.
(function () {
  "use strict";
  var self = document.currentScript;
  var bundle = self && self.getAttribute("data-plotly");
  var specs = Array.prototype.slice.call(document.querySelectorAll('script[type="application/json"][data-figure]'));
  if (!bundle || specs.length === 0) { return; }
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var pending = [];
  var loading = false;

  function draw(node) {
    if (node.getAttribute("data-drawn")) { return; }
    var target = document.getElementById(node.getAttribute("data-figure"));
    if (!target) { return; }
    node.setAttribute("data-drawn", "1");
    var spec = JSON.parse(node.textContent);
    var layout = spec.layout || {};
    var axis = dark
      ? { gridcolor: "#3a3d44", linecolor: "#8a8d94", zerolinecolor: "#5a5d64", showgrid: true }
      : { gridcolor: "#e3e3e3", linecolor: "#6b6b6b", zerolinecolor: "#c8c8c8", showgrid: true };
    ["xaxis", "yaxis"].forEach(function (key) { layout[key] = Object.assign({}, axis, layout[key] || {}, { gridcolor: axis.gridcolor, linecolor: axis.linecolor, automargin: true }); });  // long tick labels widen the margin, never clip
    if (dark) {
      layout.font = Object.assign({}, layout.font, { color: "#ddd" });
      layout.legend = Object.assign({}, layout.legend, { font: { color: "#ddd" } });
    }
    narrow(target, spec.data || [], layout);
    window.Plotly.newPlot(target, spec.data || [], layout, { displaylogo: false, responsive: true });
  }

  // On a narrow screen (a phone) the legend goes below the plot, where it cannot cover it, the
  // margins follow the tick labels (automargin) and the chart grows by the legend's lines.
  function narrow(target, data, layout) {
    if (target.clientWidth >= 600) { return; }
    var entries = data.filter(function (t) { return t.showlegend !== false && t.name; }).length;
    var legendHeight = layout.showlegend === false ? 0 : 22 * entries;
    // At the foot of the figure, under the x axis's tick labels and title (the bottom margin holds both).
    layout.legend = Object.assign({}, layout.legend, { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom" });
    var lines = 1;
    if (layout.title && layout.title.text) {
      var wrapped = wrap(String(layout.title.text), Math.max(20, Math.floor(target.clientWidth / 7.5)));
      lines = wrapped.split("<br>").length;
      layout.title = Object.assign({}, layout.title, { text: wrapped, font: Object.assign({}, layout.title.font, { size: 13 }), x: 0.02, xanchor: "left", y: 0.98, yanchor: "top", yref: "container" });
    }
    layout.margin = { l: 10, r: 10, t: 24 + 18 * lines, b: legendHeight + 130, autoexpand: true };
    var height = 420 + legendHeight;
    layout.height = height;
    target.style.minHeight = height + "px";
  }

  // A title broken at spaces into lines of at most ``width`` characters (plotly does not wrap;
  // a long title would run past the chart). Text already broken with <br> keeps its breaks.
  function wrap(text, width) {
    return text.split("<br>").map(function (part) {
      var out = [], line = "";
      part.split(" ").forEach(function (word) {
        if (line && (line + " " + word).length > width) { out.push(line); line = word; } else { line = line ? line + " " + word : word; }
      });
      if (line) { out.push(line); }
      return out.join("<br>");
    }).join("<br>");
  }

  function request(node) {
    if (typeof window.Plotly !== "undefined") { draw(node); return; }
    pending.push(node);
    if (loading) { return; }
    loading = true;
    var script = document.createElement("script");
    script.src = bundle;
    script.onload = function () { pending.splice(0).forEach(draw); };
    document.body.appendChild(script);
  }

  function drawAll() { specs.forEach(request); }

  window.addEventListener("beforeprint", drawAll);
  // A chart inside a folded section has no box until the section is opened: opening it draws
  // the charts it holds (toggle does not bubble, so it is caught on the way down).
  document.addEventListener("toggle", function (event) {
    var folded = event.target;
    if (!folded.open) { return; }
    specs.forEach(function (node) {
      var target = document.getElementById(node.getAttribute("data-figure"));
      if (target && folded.contains(target) && !target.closest("details:not([open])")) { request(node); }
    });
  }, true);
  if (!("IntersectionObserver" in window)) { drawAll(); return; }
  var byChart = new Map();
  specs.forEach(function (node) {
    var target = document.getElementById(node.getAttribute("data-figure"));
    if (target) { byChart.set(target, node); }
  });
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) { return; }
      observer.unobserve(entry.target);
      request(byChart.get(entry.target));
    });
  }, { rootMargin: "100px 0px" });
  byChart.forEach(function (_node, target) { observer.observe(target); });
})();
