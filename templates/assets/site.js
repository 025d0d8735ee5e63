// Index page: every run from the row data (index-rows-*.js), filtered and sorted, drawn a page
// at a time; the filter and sort live in the URL (?q=&sort=&dir=). Without the row data the
// rows written in the page are filtered and sorted instead. Text goes into the page as text
// (textContent), never as markup.
(function () {
  "use strict";
  var table = document.querySelector("table.runs");
  if (!table) { return; }
  var body = table.tBodies[0];
  var input = document.getElementById("filter");
  var headers = table.tHead.rows[0].cells;
  var params = new URLSearchParams(window.location.search);
  var sortKey = params.get("sort") || "";
  var sortDir = params.get("dir") === "desc" ? -1 : 1;
  var PAGE = 200;
  var limit = PAGE;
  var more = document.getElementById("more");
  var moreBox = more ? more.parentNode : null;
  var UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;  // the same test as site_rows.py makes

  // Versions sort as numbers part by part ("2.9" before "2.13"); dates by their timestamp.
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function compare(kind, x, y) {
    if (kind === "number" || kind === "date") {
      var nx = kind === "date" ? Date.parse(x) : parseFloat(x);
      var ny = kind === "date" ? Date.parse(y) : parseFloat(y);
      if (isNaN(nx) !== isNaN(ny)) { return isNaN(nx) ? 1 : -1; }
      if (!isNaN(nx) && nx !== ny) { return nx - ny; }
    }
    return collator.compare(String(x), String(y));
  }

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (attrs) { Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); }); }
    return node;
  }

  // --- the model: one entry per run, with each column's sort value and the text to filter ---
  var runs = [];
  var data = window.reportgenRuns;
  if (data && data.format === 3) {
    var previous = null;
    runs = data.rows.map(function (r) {
      var run = fromData(data, r, previous);
      if (typeof r[10] === "number") { previous = run.seconds; }
      return run;
    });
  } else {
    runs = Array.prototype.map.call(body.rows, fromRow);
  }

  function fromRow(row) {
    var values = Array.prototype.map.call(row.cells, function (cell) {
      var value = cell.getAttribute("data-value");
      return value === null ? cell.textContent.trim() : value;
    });
    return { values: values, text: row.textContent.toLowerCase(), node: function () { return row; } };
  }

  function fromData(d, r, previous) {
    var s = d.strings;
    var workload = s[r[0]], workloadSlug = s[r[1]], runId = r[2], tail = r[3], flags = r[4];
    var intended = r[5] < 0 ? null : s[r[5]];
    var target = s[r[6]], family = s[r[7]], torch = s[r[8]], neuronx = s[r[9]];
    var outcome = s[r[11]], headline = s[r[12]], scope = JSON.parse(s[r[13]]);
    if (flags & 8) { runId = workload + "-" + target + "-" + runId; } else if (flags & 4) { runId = workload + "-" + runId; }
    var seconds = typeof r[10] === "number" ? (previous === null ? r[10] : previous - r[10]) : null;
    var stamp = seconds === null ? r[10] : new Date(seconds * 1000).toISOString().slice(0, 19) + "Z";
    var passed = r[14], notPassed = r[15], device = s[r[16]], counts = r.slice(18);
    var adapter = r[17] < 0 ? null : s[r[17]];  // the run's adapter has met no hardware
    var shortId = flags & 8 ? r[2] : runId;  // the row's workload and target columns say the rest
    var slug = tail.length === 8 ? runId + "-" + tail : tail;
    var started = UTC.test(stamp) ? stamp.slice(0, 19).replace("T", " ") : stamp;
    var symbol = (d.outcomes[outcome] || ["", ""])[0];
    var word = (d.outcomes[outcome] || ["", outcome])[1];
    var label = word.charAt(0).toUpperCase() + word.slice(1) + ", " + passed + "/" + (passed + notPassed) + ", " + family;  // as site.short_label
    var where = target + (family !== target ? " (ran on " + family + ")" : "");
    var tags = (flags & 1 ? " synthetic" : "") + (flags & 2 ? " incomplete" : "") +
      (flags & 32 ? " performance not judged" : flags & 16 ? " timing undecided" : "");
    var scopeLines = scope[0].map(function (p) { return "passed " + p[0] + ": " + p[1]; })
      .concat(scope[1].map(function (p) { return "not passed " + p[0] + ": " + p[1]; }));
    var differs = intended !== null && intended !== target;
    var values = [workload, runId + tags, target, device || "not recorded", torch, neuronx,
      stamp, outcome].concat(counts.map(String));
    var text = [workload, runId + tags, where, differs ? "≠ intended " + intended : "", adapter ? "adapter untried on hardware" : "", device || "not recorded", torch, neuronx,
      started, symbol + " " + label, headline, scopeLines.join(" ")].concat(counts.map(String)).join(" ").toLowerCase();

    function node() {
      var tr = el("tr");
      var td = el("td");
      td.appendChild(el("a", workload, { href: "workloads/" + workloadSlug + "/index.html" }));
      tr.appendChild(td);
      td = el("td");
      var link = el("a", null, { href: "runs/" + slug + "/index.html", title: runId });
      link.appendChild(el("code", shortId));
      td.appendChild(link);
      if (flags & 1) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", "synthetic", { "class": "tag" })); }
      if (flags & 2) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", "incomplete", { "class": "tag" })); }
      if (flags & 32) {
        td.appendChild(document.createTextNode(" "));
        td.appendChild(el("span", "performance not judged", { "class": "tag", title: "mismatching or errored cells have no verdict: no timing of this run is a performance result" }));
      } else if (flags & 16) {
        td.appendChild(document.createTextNode(" "));
        td.appendChild(el("span", "timing undecided", { "class": "tag", title: "a timing of this run is unstable or too short to classify: it decides nothing" }));
      }
      tr.appendChild(td);
      td = el("td", where, { "data-value": target });
      if (differs) {
        td.appendChild(document.createTextNode(" "));
        td.appendChild(el("span", "≠ intended " + intended, { "class": "tag target-differs", title: "the plan is meant for " + intended + ": this run is not evidence for it" }));
      }
      if (adapter) {
        td.appendChild(document.createTextNode(" "));
        td.appendChild(el("span", "adapter untried on hardware", { "class": "tag adapter-untried", title: adapter }));
      }
      tr.appendChild(td);
      td = el("td");
      if (device) { td.textContent = device; } else { td.appendChild(el("span", "not recorded", { "class": "na" })); }
      tr.appendChild(td);
      [torch, neuronx].forEach(function (v) { tr.appendChild(el("td", v)); });
      td = el("td", null, { "data-value": stamp });
      td.appendChild(el("time", started, { datetime: stamp }));
      tr.appendChild(td);
      td = el("td", null, { "data-value": outcome });
      var status = el("span", null, { "class": "status disposition-text-" + outcome });
      status.appendChild(el("span", symbol, { "aria-hidden": "true" }));
      status.appendChild(document.createTextNode(" " + label));
      var details = el("details");
      var head = el("summary");
      head.appendChild(status);
      details.appendChild(head);
      details.appendChild(el("p", headline));
      var list = el("ul", null, { "class": "scope" });
      scopeLines.forEach(function (line) { list.appendChild(el("li", line)); });
      details.appendChild(list);
      td.appendChild(details);
      tr.appendChild(td);
      counts.forEach(function (n, i) { tr.appendChild(el("td", String(n), { "data-value": String(n) })); });
      return tr;
    }
    return { values: values, text: text, node: node, seconds: seconds };
  }

  // --- filter, sort, draw --------------------------------------------------------------------
  function saveState() {
    var next = new URLSearchParams();
    if (input.value) { next.set("q", input.value); }
    if (sortKey) { next.set("sort", sortKey); next.set("dir", sortDir < 0 ? "desc" : "asc"); }
    var query = next.toString();
    history.replaceState(null, "", query ? "?" + query : window.location.pathname);
  }

  function sortIndex() {
    var index = -1;
    Array.prototype.forEach.call(headers, function (th, i) {
      var on = sortKey !== "" && th.getAttribute("data-key") === sortKey;
      if (on) { index = i; }
      th.setAttribute("aria-sort", on ? (sortDir > 0 ? "ascending" : "descending") : "none");
    });
    return index;
  }

  function draw() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var matches = runs.filter(function (run) {
      return terms.every(function (t) { return run.text.indexOf(t) !== -1; });
    });
    var index = sortIndex();
    if (index >= 0) {
      var kind = headers[index].getAttribute("data-type") || "text";
      matches = matches.slice().sort(function (a, b) { return compare(kind, a.values[index], b.values[index]) * sortDir; });
    }
    var fragment = document.createDocumentFragment();
    matches.slice(0, limit).forEach(function (run) { fragment.appendChild(run.node()); });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    body.appendChild(fragment);
    document.getElementById("shown").textContent = String(matches.length);
    if (moreBox) {
      moreBox.hidden = matches.length <= limit;
      document.getElementById("listed").textContent = "listed: " + Math.min(limit, matches.length) + " of " + matches.length;
    }
  }

  Array.prototype.forEach.call(headers, function (th) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      draw();
      saveState();
    });
  });
  if (more) { more.addEventListener("click", function () { limit += PAGE; draw(); }); }
  var note = document.getElementById("first-rows");
  if (note && data) { note.hidden = true; }
  input.value = params.get("q") || "";
  input.addEventListener("input", function () { limit = PAGE; draw(); saveState(); });
  draw();
})();
