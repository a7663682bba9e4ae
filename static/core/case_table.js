/* The per-case debug table of a submission page: sort by any column, filter, count.
 *
 * The server renders everything; this script only hides and reorders rows.
 *   <section data-case-table-root>
 *     <form data-role="filters" hidden>   controls carrying
 *         data-filter-col="N"   the column they test (0-based)
 *         data-filter-op="eq|min|max"
 *         data-filter-key="..." a name, so links can set them (see below)
 *     <span data-role="count">            "Showing n of m rows"
 *     <table data-case-table>
 *       <th data-type="number|text">      how the column sorts
 *       <td data-v="sort key" data-f="filter value">
 *     <p data-role="none" hidden>         shown when no row matches
 * A link anywhere on the page with data-case-filter="key=value&key=value" and
 * href="#ID" of a root clears the filters, sets those controls, and scrolls to
 * the table (the confusion matrix's cells do this).
 * Numbers sort numerically, text in natural order (case 9 before case 10);
 * empty cells sort last either way. No framework, no CDN.
 */
(function () {
  "use strict";

  var collator = window.Intl && Intl.Collator
    ? new Intl.Collator(undefined, { numeric: true, sensitivity: "base" })
    : { compare: function (a, b) { return a < b ? -1 : a > b ? 1 : 0; } };

  function each(list, fn) {
    for (var i = 0; i < list.length; i++) fn(list[i], i);
  }

  function CaseTable(root) {
    this.root = root;
    this.table = root.querySelector("table[data-case-table]");
    this.tbody = this.table.tBodies[0];
    this.headers = this.table.tHead.rows[0].cells;
    this.rows = Array.prototype.slice.call(this.tbody.rows);
    this.form = root.querySelector("form[data-role=filters]");
    this.count = root.querySelector("[data-role=count]");
    this.none = root.querySelector("[data-role=none]");
    // A table longer than a page is filtered and paged by the server (the form is a GET): here only sorting.
    this.server = !!(this.form && this.form.hasAttribute("data-server"));
    this.sortCol = -1;
    this.sortDir = 1;
    each(this.rows, function (tr, i) { tr.setAttribute("data-index", String(i)); });
    this.bind();
    this.apply();
  }

  CaseTable.prototype.controls = function () {
    return this.form ? this.form.querySelectorAll("[data-filter-col]") : [];
  };

  CaseTable.prototype.tests = function () {
    var tests = [];
    each(this.controls(), function (c) {
      var col = parseInt(c.getAttribute("data-filter-col"), 10);
      var op = c.getAttribute("data-filter-op") || "eq";
      if (c.type === "checkbox") {
        if (c.checked) tests.push({ col: col, op: "eq", value: c.value });
        return;
      }
      var v = (c.value || "").trim();
      if (v === "") return;
      if (op === "min" || op === "max") {
        var n = parseFloat(v);
        if (!isNaN(n)) tests.push({ col: col, op: op, value: n });
      } else {
        tests.push({ col: col, op: "eq", value: v });
      }
    });
    return tests;
  };

  CaseTable.prototype.apply = function () {
    if (this.server) return;
    var tests = this.tests();
    var shown = 0;
    each(this.rows, function (tr) {
      var ok = true;
      for (var i = 0; i < tests.length && ok; i++) {
        var t = tests[i];
        var cell = tr.cells[t.col];
        var raw = cell ? cell.getAttribute("data-f") : null;
        if (t.op === "eq") {
          ok = raw === t.value;
        } else {
          // A row without a value is outside any range.
          var n = raw === null || raw === "" ? NaN : parseFloat(raw);
          ok = !isNaN(n) && (t.op === "min" ? n >= t.value : n <= t.value);
        }
      }
      tr.hidden = !ok;
      if (ok) shown += 1;
    });
    var total = this.rows.length;
    this.root.setAttribute("data-shown", String(shown));
    if (this.count) {
      this.count.textContent = shown === total
        ? total + " row" + (total === 1 ? "" : "s")
        : "Showing " + shown + " of " + total + " rows";
    }
    if (this.none) this.none.hidden = shown !== 0;
  };

  CaseTable.prototype.sortBy = function (col) {
    var dir = this.sortCol === col ? -this.sortDir : 1;
    this.sortCol = col;
    this.sortDir = dir;
    var numeric = this.headers[col].getAttribute("data-type") === "number";
    var keyed = this.rows.map(function (tr) {
      var cell = tr.cells[col];
      return { tr: tr, v: cell ? cell.getAttribute("data-v") || "" : "", i: +tr.getAttribute("data-index") };
    });
    keyed.sort(function (a, b) {
      if (a.v === "" || b.v === "") {
        if (a.v === b.v) return a.i - b.i;
        return a.v === "" ? 1 : -1;
      }
      var c = numeric ? parseFloat(a.v) - parseFloat(b.v) : collator.compare(a.v, b.v);
      return c * dir || a.i - b.i;
    });
    var frag = document.createDocumentFragment();
    each(keyed, function (k) { frag.appendChild(k.tr); });
    this.tbody.appendChild(frag);
    this.rows = keyed.map(function (k) { return k.tr; });
    each(this.headers, function (th, i) {
      th.setAttribute("aria-sort", i === col ? (dir === 1 ? "ascending" : "descending") : "none");
    });
  };

  CaseTable.prototype.setFilters = function (params) {
    var self = this;
    if (!this.form) return;
    if (this.server) {  // the server filters: ask it for these rows
      window.location.href = "?" + params.toString() + "#" + (this.root.id || "cases");
      return;
    }
    this.form.reset();
    each(this.controls(), function (c) {
      var key = c.getAttribute("data-filter-key");
      if (!params.has(key)) return;
      if (c.type === "checkbox") c.checked = params.get(key) === c.value;
      else c.value = params.get(key);
    });
    self.apply();
  };

  CaseTable.prototype.bind = function () {
    var self = this;
    each(this.headers, function (th, i) {
      var button = th.querySelector("button") || th;
      button.addEventListener("click", function () { self.sortBy(i); });
    });
    if (this.form && !this.server) {
      this.form.hidden = false;
      this.form.addEventListener("input", function () { self.apply(); });
      this.form.addEventListener("change", function () { self.apply(); });
      // "reset" fires before the controls are cleared.
      this.form.addEventListener("reset", function () { window.setTimeout(function () { self.apply(); }, 0); });
      this.form.addEventListener("submit", function (event) { event.preventDefault(); });
    }
  };

  function init() {
    var tables = {};
    each(document.querySelectorAll("[data-case-table-root]"), function (root) {
      var table = new CaseTable(root);
      if (root.id) tables[root.id] = table;
    });

    document.addEventListener("click", function (event) {
      var link = event.target.closest ? event.target.closest("[data-case-filter]") : null;
      if (!link) return;
      var target = (link.getAttribute("href") || "").replace(/^#/, "");
      var table = tables[target];
      if (!table || !window.URLSearchParams) return;
      event.preventDefault();
      table.setFilters(new URLSearchParams(link.getAttribute("data-case-filter")));
      table.root.scrollIntoView({ block: "start" });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
