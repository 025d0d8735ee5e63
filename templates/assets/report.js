// Draws the report's charts from the JSON specs embedded in the page (no network needed).
// The plotly bundle is loaded only when the first chart comes near the window (or before
// printing), so a page shows its text at once and parses the chart library only if needed.
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
    ["xaxis", "yaxis"].forEach(function (key) { layout[key] = Object.assign({}, axis, layout[key] || {}, { gridcolor: axis.gridcolor, linecolor: axis.linecolor }); });
    if (dark) {
      layout.font = Object.assign({}, layout.font, { color: "#ddd" });
      layout.legend = Object.assign({}, layout.legend, { font: { color: "#ddd" } });
    }
    window.Plotly.newPlot(target, spec.data || [], layout, { displaylogo: false, responsive: true });
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
