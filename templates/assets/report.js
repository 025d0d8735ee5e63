// Draws the report's charts from the JSON specs embedded in the page (no network needed).
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  document.querySelectorAll('script[type="application/json"][data-figure]').forEach(function (node) {
    var target = document.getElementById(node.getAttribute("data-figure"));
    if (!target) { return; }
    var spec = JSON.parse(node.textContent);
    var layout = spec.layout || {};
    if (dark) { layout.font = Object.assign({}, layout.font, { color: "#ddd" }); }
    Plotly.newPlot(target, spec.data || [], layout, { displaylogo: false, responsive: true });
  });
})();
