// Index page: sort by column and filter rows; the filter state lives in the URL (?q=&sort=).
(function () {
  "use strict";
  var table = document.querySelector("table.runs");
  if (!table) { return; }
  var body = table.tBodies[0];
  var input = document.getElementById("filter");
  var params = new URLSearchParams(window.location.search);
  var sortKey = params.get("sort") || "";
  var sortDir = params.get("dir") === "desc" ? -1 : 1;

  function saveState() {
    var next = new URLSearchParams();
    if (input.value) { next.set("q", input.value); }
    if (sortKey) { next.set("sort", sortKey); next.set("dir", sortDir < 0 ? "desc" : "asc"); }
    var query = next.toString();
    history.replaceState(null, "", query ? "?" + query : window.location.pathname);
  }

  function applyFilter() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      var match = terms.every(function (t) { return text.indexOf(t) !== -1; });
      row.hidden = !match;
      if (match) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }

  // Versions sort as numbers part by part ("2.9" before "2.13"); dates by their timestamp.
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function cellValue(cell) {
    var value = cell.getAttribute("data-value");
    return value === null ? cell.textContent.trim() : value;
  }

  function compare(kind, x, y) {
    if (kind === "number" || kind === "date") {
      var nx = kind === "date" ? Date.parse(x) : parseFloat(x);
      var ny = kind === "date" ? Date.parse(y) : parseFloat(y);
      if (isNaN(nx) !== isNaN(ny)) { return isNaN(nx) ? 1 : -1; }
      if (!isNaN(nx) && nx !== ny) { return nx - ny; }
    }
    return collator.compare(x, y);
  }

  function applySort() {
    if (!sortKey) { return; }
    var headers = table.tHead.rows[0].cells;
    var index = -1;
    Array.prototype.forEach.call(headers, function (th, i) {
      var on = th.getAttribute("data-key") === sortKey;
      if (on) { index = i; }
      th.setAttribute("aria-sort", on ? (sortDir > 0 ? "ascending" : "descending") : "none");
    });
    if (index < 0) { return; }
    var kind = headers[index].getAttribute("data-type") || "text";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      return compare(kind, cellValue(a.cells[index]), cellValue(b.cells[index])) * sortDir;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      applySort();
      saveState();
    });
  });
  input.value = params.get("q") || "";
  input.addEventListener("input", function () { applyFilter(); saveState(); });
  applySort();
  applyFilter();
})();
