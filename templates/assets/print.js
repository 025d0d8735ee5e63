// Before printing (or saving as PDF), open every folded section so no row is lost on paper;
// fold them again afterwards.
(function () {
  "use strict";
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; opened.push(d); });
  });
  window.addEventListener("afterprint", function () {
    opened.splice(0).forEach(function (d) { d.open = false; });
  });
})();
