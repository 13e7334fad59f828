"""The report's inline style and script.

Kept apart from the markup so the page module reads as the structure of the page. The
script never puts session text into the page as markup: everything from the session
reaches the DOM through ``textContent``, so a session holding ``<script>`` or a
``javascript:`` link shows it as text. It renders the large parts lazily (the ledger
table a page at a time, a turn's messages when the turn is opened), which keeps a
100,000-entry session's page quick to open.
"""

from __future__ import annotations

STYLE = """
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; background: #f6f7f9;
       color: #1f2328; }
main { max-width: 1100px; margin: 0 auto; padding: 20px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #57606a; font-size: 12px; margin: 2px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; margin: 12px 0; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 10px; min-width: 110px; }
.card b { display: block; font-size: 16px; } .card span { color: #57606a; font-size: 12px; }
svg.chart { width: 100%; height: auto; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
.curve { fill: none; stroke: #0969da; stroke-width: 1.5; }
.window-line { fill: none; stroke: #cf222e; stroke-width: 1; }
.threshold-line { fill: none; stroke: #bf8700; stroke-width: 1; stroke-dasharray: 6 4; }
.cache-curve { fill: none; stroke: #1a7f37; stroke-width: 1.2; }
.cost-curve { fill: none; stroke: #8250df; stroke-width: 1; }
.axis { stroke: #d0d7de; } .axis-label { fill: #57606a; font-size: 11px; }
.marker { stroke: #fff; stroke-width: 0.8; cursor: pointer; opacity: 0.9; }
.marker:hover { stroke: #1f2328; stroke-width: 2; }
.k-compaction { fill: #cf222e; } .k-prune { fill: #bf8700; } .k-spill { fill: #8250df; }
.k-truncate { fill: #6e7781; } .k-dedupe { fill: #1a7f37; } .k-flush { fill: #0550ae; }
.k-memory { fill: #0a3069; }
.k-overflow { fill: #a40e26; } .k-model_switch { fill: #000; } .k-summary_fallback { fill: #953800; }
.k-permission, .k-hook, .k-context_file, .k-invariant, .k-unknown { fill: #57606a; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; color: #57606a; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; }
#tip { position: fixed; display: none; max-width: 520px; background: #fff; border: 1px solid #57606a;
       border-radius: 6px; padding: 8px 10px; box-shadow: 0 4px 12px rgba(0,0,0,.15); font-size: 12px;
       white-space: pre-wrap; overflow-wrap: anywhere; z-index: 10; pointer-events: none; }
#tip .tip-title { font-weight: 600; } #tip .tip-summary { margin-top: 6px; max-height: 260px; overflow: hidden; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 12px; }
th, td { border: 1px solid #d0d7de; padding: 3px 6px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pager { margin: 6px 0; font-size: 12px; } .pager button { margin-right: 6px; }
.turn { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; margin: 6px 0; }
.turn > summary { padding: 6px 10px; cursor: pointer; overflow-wrap: anywhere; }
.msg { margin: 6px 10px; padding: 6px 8px; border-left: 3px solid #d0d7de; white-space: pre-wrap;
       overflow-wrap: anywhere; font-size: 12.5px; }
.msg.user { border-color: #0969da; } .msg.assistant { border-color: #1a7f37; } .msg.tool { border-color: #8250df; }
.msg.error { border-color: #cf222e; } .msg .role { font-weight: 600; font-size: 11px; color: #57606a; display: block; }
.msg .pruned { color: #953800; } .msg .full { display: none; border-top: 1px dashed #d0d7de; margin-top: 4px; }
.msg.show-full .full { display: block; } .note { color: #57606a; font-style: italic; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; border: 1px solid #d0d7de; padding: 8px; }
.current { font-weight: 600; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  function data(id) { return JSON.parse(document.getElementById(id).textContent); }
  var MARKERS = data("heron-markers"), TURNS = data("heron-turns"), POINTS = data("heron-points");
  var tip = document.getElementById("tip");
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function showTip(evt, parts) {
    tip.replaceChildren();
    parts.forEach(function (p) { tip.appendChild(el("div", p[0], p[1])); });
    tip.style.display = "block";
    var x = Math.min(evt.clientX + 14, window.innerWidth - 540);
    var y = Math.min(evt.clientY + 14, window.innerHeight - 200);
    tip.style.left = Math.max(0, x) + "px"; tip.style.top = Math.max(0, y) + "px";
  }
  function hideTip() { tip.style.display = "none"; }
  function markerParts(m) {
    var parts = [["tip-title", m.title], ["tip-where", "request " + (m.request + 1) + " · entry " + m.entry]];
    if (m.recover) parts.push(["tip-recover", "get it back: " + m.recover]);
    if (m.summary) parts.push(["tip-summary", m.summary]);
    return parts;
  }
  document.querySelectorAll(".marker").forEach(function (node) {
    node.addEventListener("mouseenter", function (evt) { showTip(evt, markerParts(MARKERS[+node.dataset.i])); });
    node.addEventListener("mouseleave", hideTip);
  });
  var chart = document.getElementById("context-chart");
  if (chart && POINTS.length) {
    chart.addEventListener("mousemove", function (evt) {
      if (evt.target.classList.contains("marker")) return;
      var box = chart.getBoundingClientRect(), view = chart.viewBox.baseVal;
      var x = (evt.clientX - box.left) / box.width * view.width;
      var left = +chart.dataset.left, width = +chart.dataset.plotWidth;
      var i = Math.round((x - left) / width * Math.max(1, POINTS.length - 1));
      if (i < 0 || i >= POINTS.length) { hideTip(); return; }
      var p = POINTS[i];
      showTip(evt, [["tip-title", "request " + (i + 1) + " · turn " + (p[1] + 1) + (p[2] ? " · estimated" : "")],
        ["", p[0].toLocaleString() + " tokens sent · input " + p[3].toLocaleString() + " · cached " +
          p[4].toLocaleString() + " · output " + p[5].toLocaleString() + " · $" + p[6].toFixed(4)]]);
    });
    chart.addEventListener("mouseleave", hideTip);
  }
  // the ledger table, a page at a time, filtered by kind
  var PAGE = 500, ledgerPage = 0, ledgerKind = "";
  var body = document.getElementById("ledger-body"), kindSelect = document.getElementById("ledger-kind");
  function ledgerRows() { return MARKERS.filter(function (m) { return !ledgerKind || m.kind === ledgerKind; }); }
  function drawLedger() {
    var rows = ledgerRows(), pages = Math.max(1, Math.ceil(rows.length / PAGE));
    ledgerPage = Math.min(ledgerPage, pages - 1);
    body.replaceChildren();
    rows.slice(ledgerPage * PAGE, (ledgerPage + 1) * PAGE).forEach(function (m) {
      var tr = el("tr");
      [m.request + 1, m.kind, m.title, m.recover, m.entry].forEach(function (v, n) {
        tr.appendChild(el("td", n === 0 ? "num" : "", v));
      });
      body.appendChild(tr);
    });
    document.getElementById("ledger-page").textContent = "page " + (ledgerPage + 1) + " of " + pages +
      " · " + rows.length + " record(s)";
  }
  if (body) {
    kindSelect.addEventListener("change", function () { ledgerKind = kindSelect.value; ledgerPage = 0; drawLedger(); });
    document.getElementById("ledger-prev").addEventListener("click", function () {
      ledgerPage = Math.max(0, ledgerPage - 1); drawLedger(); });
    document.getElementById("ledger-next").addEventListener("click", function () { ledgerPage += 1; drawLedger(); });
    drawLedger();
  }
  // the transcript: turns a page at a time, a turn's messages drawn when it is opened
  var TURN_PAGE = 100, turnPage = Math.max(0, Math.ceil(TURNS.length / TURN_PAGE) - 1);
  var list = document.getElementById("turns");
  function drawMessage(m) {
    var box = el("div", "msg " + m.r + (m.err ? " error" : ""));
    box.appendChild(el("span", "role", m.label));
    if (m.pruned) {
      box.appendChild(el("div", "pruned", m.pruned));
    } else {
      box.appendChild(el("div", "seen", m.t));
    }
    if (m.full !== undefined) {
      var toggle = el("button", "", "show the full stored content");
      toggle.addEventListener("click", function () {
        box.classList.toggle("show-full");
        toggle.textContent = box.classList.contains("show-full") ? "hide the full stored content" :
          "show the full stored content";
      });
      box.appendChild(toggle);
      box.appendChild(el("div", "full", m.full));
    }
    if (m.note) box.appendChild(el("div", "note", m.note));
    return box;
  }
  function drawTurns() {
    var pages = Math.max(1, Math.ceil(TURNS.length / TURN_PAGE));
    turnPage = Math.max(0, Math.min(turnPage, pages - 1));
    list.replaceChildren();
    TURNS.slice(turnPage * TURN_PAGE, (turnPage + 1) * TURN_PAGE).forEach(function (t) {
      var box = el("details", "turn"), head = el("summary", "", "turn " + (t.i + 1) + " · " + t.n + " request(s) · $" +
        t.cost.toFixed(4) + " · " + t.prompt);
      box.appendChild(head);
      box.addEventListener("toggle", function () {
        if (!box.open || box.dataset.drawn) return;
        box.dataset.drawn = "1";
        t.m.forEach(function (m) { box.appendChild(drawMessage(m)); });
        if (t.omitted) box.appendChild(el("div", "note", t.omitted));
      });
      list.appendChild(box);
    });
    document.getElementById("turn-page").textContent = "page " + (turnPage + 1) + " of " + pages + " · " +
      TURNS.length + " turn(s)";
  }
  if (list) {
    document.getElementById("turn-prev").addEventListener("click", function () { turnPage -= 1; drawTurns(); });
    document.getElementById("turn-next").addEventListener("click", function () { turnPage += 1; drawTurns(); });
    drawTurns();
  }
})();
"""
