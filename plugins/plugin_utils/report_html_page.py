# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTML report's page: markup, style and script, with the places report_html fills in
(__REPORT_META__ and what follows it). Data only, kept apart from the code that fills it in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PAGE = u'''<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__REPORT_TITLE__</title>
<script>document.documentElement.className = "js";</script>
<style>
:root { --ok:#2e7d32; --affected:#c62828; --at_risk:#ef6c00; --not_applicable:#9e9e9e; --unknown:#6d4c41;
        --error:#6a1b9a; --unreachable:#37474f; --failed:#37474f; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #212121; background: #fafafa; }
header { padding: 12px 20px; background: #263238; color: #fff; }
.remediation-problem { color: var(--affected); font-weight: 600; }
header h1 { font-size: 18px; margin: 0 0 4px 0; }
header .meta { font-size: 12px; opacity: .8; }
html:not(.js) .needs-js { display: none; }
main { display: flex; flex-wrap: wrap; gap: 16px; padding: 16px 20px; align-items: flex-start; }
#grid-wrap { overflow-x: auto; flex: 1 1 auto; max-width: 100%; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #e0e0e0; padding: 6px 10px; font-size: 13px; text-align: left; }
#grid th, #grid td { padding: 3px 4px; font-size: 12px; }
#grid th.check { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; font-weight: 600; padding: 6px 2px; }
#grid .host-name { display: inline-block; max-width: 16em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
                   vertical-align: bottom; }
td.cell { cursor: pointer; color: #fff; font-weight: 600; white-space: nowrap; text-align: center; min-width: 1.4em; }
td.cell.selected { outline: 3px solid #1565c0; outline-offset: -3px; }
td.cell.dimmed { opacity: .18; }
td.cell.drift-opened, td.cell.drift-reopened { box-shadow: inset 0 -4px 0 #000; }
td.cell.accepted { background-image: repeating-linear-gradient(45deg, transparent 0 6px, rgba(255,255,255,.25) 6px 9px); }
td.empty { background: #f5f5f5; color: #9e9e9e; }
.s-ok { background: var(--ok); } .s-affected { background: var(--affected); } .s-at_risk { background: var(--at_risk); }
.s-not_applicable { background: var(--not_applicable); } .s-unknown { background: var(--unknown); }
.s-error { background: var(--error); } .s-unreachable, .s-failed { background: var(--unreachable); }
#filters { padding: 8px 20px 0 20px; font-size: 13px; }
#filters label { margin-right: 12px; white-space: nowrap; }
#filters .chip { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 3px 0 4px; }
#details { flex: 0 1 380px; min-width: 300px; background: #fff; border: 1px solid #e0e0e0; padding: 12px 16px; font-size: 13px;
           max-height: 85vh; overflow: auto; }
#details h2 { font-size: 15px; margin: 0 0 6px 0; }
#details pre { background: #f5f5f5; padding: 8px; overflow-x: auto; font-size: 12px; }
#details .badge { color: #fff; padding: 2px 6px; border-radius: 3px; font-weight: 600; }
#details ul { padding-left: 18px; }
#totals span { margin-right: 10px; }
#overview { padding: 8px 20px 0 20px; }
#counts td.count { text-align: right; cursor: pointer; }
#counts td.count.zero { color: #bdbdbd; cursor: default; }
#pager { padding: 8px 0; font-size: 13px; }
#pager button { margin-right: 6px; }
#worst, #legend { padding: 8px 20px; font-size: 13px; }
#worst h2, #legend h2 { font-size: 15px; }
#worst td.s { color: #fff; font-weight: 600; white-space: nowrap; }
#worst td.fix { max-width: 46em; }
#worst code.cmd { display: block; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; background: #f5f5f5;
                  padding: 4px 6px; user-select: all; }
#worst button.copy { margin-top: 3px; font-size: 12px; }
html:not(.js) #worst button.copy { display: none; }
#outcomes span { margin-right: 10px; }
#legend dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 0; }
#legend dt { font-weight: 600; }
#legend dd { margin: 0; }
</style>
</head>
<body>
<header>
  <h1 id="title">__REPORT_HEADING__</h1>
  <div class="meta" id="meta"><span id="meta-text">__REPORT_META__</span></div>
  <div class="meta" id="totals">__REPORT_TOTALS__</div>
</header>
__REPORT_WORST__
<noscript><p>This page draws its grid with JavaScript; without it, the totals are above, the worst finding per
host with its fix above, and the checks below; every finding is in postmortem.json beside this page.</p></noscript>
<section id="overview" class="needs-js"><h2 style="font-size:15px">Hosts per check and status</h2>
  <table id="counts"><thead></thead><tbody></tbody></table></section>
<div id="filters" class="needs-js" role="group" aria-label="Filter by status"><strong>Show status:</strong></div>
<main class="needs-js">
  <div id="grid-wrap"><div id="pager"></div><table id="grid"><thead></thead><tbody></tbody></table></div>
  <aside id="details"><p>Click a cell to see the evidence and the fix.</p></aside>
</main>
__REPORT_STATIC__
<script type="application/json" id="report-index">__REPORT_INDEX__</script>
__REPORT_CHUNKS__
<script>
(function () {
  "use strict";
  var report = JSON.parse(document.getElementById("report-index").textContent);
  var STATES = report.statuses.concat(["unreachable", "failed"]);
  var CODES = report.codes;
  var PAGE = 100;
  // A cell holds one or two characters so that every column fits (the legend below the grid says which).
  var SHORT = report.short;
  var shown = {}, page = 0, chunks = {}, only = null;
  STATES.forEach(function (s) { shown[s] = true; });

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function statusOf(host, index) {
    if (host.s !== "audited") { return host.s; }
    var code = host.c.charAt(index);
    return code === "-" ? null : CODES[code];
  }
  // Each block of hosts' findings is gzip-compressed and base64-encoded in the page, and opened
  // (decompressed by the browser, then parsed) the first time one of its hosts is looked at.
  function findingsOf(hostIndex) {
    var n = Math.floor(hostIndex / report.chunk);
    if (!chunks[n]) {
      if (typeof DecompressionStream === "undefined") {
        return Promise.reject(new Error("this browser cannot decompress the findings (it has no DecompressionStream; " +
          "Chromium 80, Firefox 113 and Safari 16.4 have it): read postmortem.json beside this page"));
      }
      var text = atob(document.getElementById("chunk-" + n).textContent.trim());
      var bytes = new Uint8Array(text.length);
      for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      chunks[n] = new Response(stream).text().then(JSON.parse);
    }
    return chunks[n].then(function (block) { return block[report.hosts[hostIndex].n]; });
  }

  // The meta line, the totals and "nothing was audited" are in the page as the controller wrote it.
  if (report.drift) {
    var moved = ["opened", "reopened", "closed", "unmeasured"].filter(function (k) { return report.drift.counts[k]; })
      .map(function (k) { return report.drift.counts[k] + " " + k; });
    document.getElementById("meta").appendChild(el("div", {"id": "drift"}, "Since " + report.drift.since + ": " +
      (moved.length ? moved.join(", ") : "nothing changed") + " (\u25b2 opened or reopened, \u25bc closed)"));
  }
  if (report.accept) {
    document.getElementById("meta").appendChild(el("div", {"id": "accepted"}, report.accept.problem ?
      "Accepted findings: none, " + report.accept.problem :
      "Accepted (\u2713): " + report.accept.accepted + " finding(s)" +
      (report.accept.expired ? "; " + report.accept.expired + " expired, counting again" : "")));
  }

  // Hosts per check and status, first: a click shows those hosts.
  var counted = STATES.filter(function (s) { return report.totals[s]; });
  var countHead = el("tr");
  countHead.appendChild(el("th", {}, "check"));
  counted.forEach(function (s) { countHead.appendChild(el("th", {}, s)); });
  document.querySelector("#counts thead").appendChild(countHead);
  report.checks.forEach(function (c, ci) {
    var per = {};
    report.hosts.forEach(function (h) { var s = statusOf(h, ci); if (s) { per[s] = (per[s] || 0) + 1; } });
    var row = el("tr", {"data-check": c.id});
    row.appendChild(el("th", {scope: "row", title: c.title}, c.id));
    counted.forEach(function (s) {
      var td = el("td", {"class": "count" + (per[s] ? "" : " zero"), "data-check": c.id, "data-status": s}, per[s] || 0);
      if (per[s]) { td.addEventListener("click", function () { only = {check: ci, status: s}; page = 0; draw(); }); }
      row.appendChild(td);
    });
    document.querySelector("#counts tbody").appendChild(row);
  });

  var filters = document.getElementById("filters");
  if (report.drift) {
    var changedLabel = el("label");
    var changedBox = el("input", {type: "checkbox", id: "filter-changed"});
    changedBox.addEventListener("change", function () { changedOnly = changedBox.checked; page = 0; draw(); });
    changedLabel.appendChild(changedBox);
    changedLabel.appendChild(document.createTextNode(" only hosts that changed since " + report.drift.since));
    filters.appendChild(changedLabel);
  }
  STATES.forEach(function (s) {
    var label = el("label");
    var box = el("input", {type: "checkbox", "class": "status-filter", value: s, id: "filter-" + s});
    box.checked = true;
    box.addEventListener("change", function () { shown[s] = box.checked; only = null; page = 0; draw(); });
    label.appendChild(box);
    label.appendChild(el("span", {"class": "chip s-" + s}));
    label.appendChild(document.createTextNode(s + " (" + (report.totals[s] || 0) + ")"));
    filters.appendChild(label);
  });

  var thead = document.querySelector("#grid thead");
  var headRow = el("tr");
  headRow.appendChild(el("th", {}, "host"));
  report.checks.forEach(function (c) { headRow.appendChild(el("th", {"class": "check", title: c.id + ": " + c.title}, c.id)); });
  thead.appendChild(headRow);

  var DRIFT = {o: "opened", r: "reopened", c: "closed", u: "unmeasured"};
  function driftOf(host, index) {
    var code = host.d ? host.d.charAt(index) : "-";
    return code === "-" ? null : DRIFT[code];
  }
  function acceptedAt(host, index) { return !!host.a && host.a[String(index)] !== undefined; }
  function unmeasuredAt(host, index) { return host.w ? host.w[String(index)] : undefined; }
  var changedOnly = false;
  function wanted(host) {
    if (changedOnly && !(host.d && /[orc]/.test(host.d))) { return false; }
    if (only) { return statusOf(host, only.check) === only.status; }
    return report.checks.some(function (c, ci) { var s = statusOf(host, ci); return s && shown[s]; });
  }

  function draw() {
    var tbody = document.querySelector("#grid tbody");
    tbody.textContent = "";
    var selected = [];
    report.hosts.forEach(function (h, i) { if (wanted(h)) { selected.push(i); } });
    var pages = Math.max(1, Math.ceil(selected.length / PAGE));
    page = Math.min(page, pages - 1);
    selected.slice(page * PAGE, (page + 1) * PAGE).forEach(function (hostIndex) {
      var host = report.hosts[hostIndex];
      var row = el("tr", {"class": "host-row", "data-host": host.n});
      var name = el("th", {scope: "row"});
      name.appendChild(el("span", {"class": "host-name", title: host.n}, host.n));
      row.appendChild(name);
      report.checks.forEach(function (c, ci) {
        var status = statusOf(host, ci);
        var cell;
        if (status === null) {
          cell = el("td", {"class": "empty", "data-host": host.n, "data-check": c.id, title: c.id + ": not run"}, "");
        } else {
          var visible = only ? ci === only.check : shown[status];
          var change = driftOf(host, ci), ok = acceptedAt(host, ci);
          cell = el("td", {"class": "cell s-" + status + (visible ? "" : " dimmed") + (change ? " drift-" + change : "") +
                           (ok ? " accepted" : ""), "data-host": host.n, "data-check": c.id, "data-status": status,
                           tabindex: "0", title: status + " \u2014 " + c.id + ": " + c.title +
                           (change ? " \u2014 " + change + " since " + report.drift.since : "") +
                           (unmeasuredAt(host, ci) ? " \u2014 not measured since " + unmeasuredAt(host, ci) : "") +
                           (ok ? " \u2014 accepted" : "")},
                    SHORT[status] + (change === "opened" || change === "reopened" ? " \u25b2" : change === "closed" ? " \u25bc" : "") +
                    (ok ? " \u2713" : ""));
          if (change) { cell.setAttribute("data-drift", change); }
          if (ok) { cell.setAttribute("data-accepted", "1"); }
          cell.addEventListener("click", function () { showDetails(hostIndex, c, cell); });
          cell.addEventListener("keydown", function (e) { if (e.key === "Enter") { showDetails(hostIndex, c, cell); } });
        }
        row.appendChild(cell);
      });
      tbody.appendChild(row);
    });
    var pager = document.getElementById("pager");
    pager.textContent = "";
    var prev = el("button", {id: "page-prev"}, "previous");
    var next = el("button", {id: "page-next"}, "next");
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    prev.addEventListener("click", function () { page -= 1; draw(); });
    next.addEventListener("click", function () { page += 1; draw(); });
    pager.appendChild(prev);
    pager.appendChild(next);
    pager.appendChild(el("span", {id: "page-info"}, "hosts " + (selected.length ? page * PAGE + 1 : 0) + "\u2013" +
      Math.min(selected.length, (page + 1) * PAGE) + " of " + selected.length +
      (only ? " (" + report.checks[only.check].id + ": " + only.status + ")" : "") + ", page " + (page + 1) + " of " + pages));
  }
  draw();

  function addList(parent, title, items, makeItem) {
    if (!items || !items.length) { return; }
    parent.appendChild(el("h3", {}, title));
    var ul = el("ul");
    items.forEach(function (item) { ul.appendChild(makeItem(item)); });
    parent.appendChild(ul);
  }

  function showDetails(hostIndex, check, cell) {
    var host = report.hosts[hostIndex];
    Array.prototype.forEach.call(document.querySelectorAll("td.selected"), function (c) { c.classList.remove("selected"); });
    cell.classList.add("selected");
    var box = document.getElementById("details");
    box.textContent = "";
    box.setAttribute("data-host", host.n);
    box.setAttribute("data-check", check.id);
    box.removeAttribute("data-ready");
    box.appendChild(el("h2", {}, host.n + " \\u2014 " + check.id));
    box.appendChild(el("p", {}, check.title));
    if (host.m) {
      var what = host.m.s === "not_run" ? "not run" :
        (host.m.s === "failed" ? "FAILED" : "LOST THE HOST") + (host.m.t ? " in '" + host.m.t + "'" : "");
      box.appendChild(el("p", {"class": "remediation-problem"}, "Remediation " + what + ": " + host.m.r));
    }
    (host.o || []).forEach(function (note) {
      box.appendChild(el("p", {"class": "role-note"}, "Note from role " + note.r + ": " + note.t));
    });
    var checkIndex = report.checks.indexOf(check);
    if (acceptedAt(host, checkIndex)) {
      box.appendChild(el("p", {"class": "accepted-note"}, "Accepted (postmortem_accept): " + host.a[String(checkIndex)]));
    }
    var change = driftOf(host, checkIndex);
    if (change) {
      box.appendChild(el("p", {"class": "drift-note"}, change.charAt(0).toUpperCase() + change.slice(1) + " since the audit of " +
        report.drift.since + "."));
    }
    if (unmeasuredAt(host, checkIndex)) {
      box.appendChild(el("p", {"class": "unmeasured-note"}, "Not measured since " + unmeasuredAt(host, checkIndex) +
        ": the last measured status stands until a run measures it again."));
    }
    if (host.u) { box.appendChild(el("p", {"class": "unmeasured-note"}, host.u)); }
    if (host.s !== "audited") {
      var b = el("p");
      b.appendChild(el("span", {"class": "badge s-" + host.s}, host.s));
      box.appendChild(b);
      box.appendChild(el("p", {"class": "summary"}, host.r));
      box.setAttribute("data-ready", "1");
      return;
    }
    var loading = el("p", {"class": "loading"}, "Opening the findings\u2026");
    box.appendChild(loading);
    findingsOf(hostIndex).then(function (findings) {
      box.removeChild(loading);
      showFinding(box, findings[check.id], check);
      box.setAttribute("data-ready", "1");
    }, function (problem) {
      loading.textContent = "The findings could not be opened: " + problem.message;
      loading.setAttribute("class", "load-problem");
    });
  }

  function showFinding(box, f, check) {
    var p = el("p");
    p.appendChild(el("span", {"class": "badge s-" + f.status}, f.status));
    box.appendChild(p);
    box.appendChild(el("p", {"class": "summary"}, f.summary));
    var evidence = f.evidence || {};
    addList(box, "Instances", evidence.instances, function (i) {
      var li = el("li");
      li.appendChild(el("span", {"class": "badge s-" + i.status}, i.status));
      li.appendChild(document.createTextNode(" " + i.summary));
      return li;
    });
    // A fix only for what was found (affected, at_risk): not where nothing is wrong, and not for a
    // finding the audit could not decide (unknown, error), where a restart would be a guess.
    // What is offered is the controller's registry's (check.fix), never the host's finding's advice: only the
    // disruption a host reports is taken (an image has nothing to reboot), and only one of the model's.
    var measured = f.status === "affected" || f.status === "at_risk";
    var remediation = measured ? (check.fix || {}) : {};
    var reported = f.remediation && typeof f.remediation === "object" ? f.remediation.disruption : null;
    var disruption = report.disruptions.indexOf(reported) >= 0 ? reported : remediation.disruption;
    if (f.status === "unknown" || f.status === "error") {
      box.appendChild(el("p", {"class": "no-fix"}, "No fix offered: the audit could not tell (" + f.status +
        "); the summary above says why."));
    }
    var automated = remediation.role || remediation.module;
    if (automated) {
      box.appendChild(el("h3", {}, "Fix"));
      if (remediation.role) {
        var roleVars = remediation.vars && Object.keys(remediation.vars).length ? " with " + JSON.stringify(remediation.vars) : "";
        box.appendChild(el("p", {}, "Role " + remediation.role + roleVars));
        if (remediation.switches && remediation.switches.length) {
          box.appendChild(el("p", {}, "Switches, off unless you set them: " + remediation.switches.join(", ")));
        }
      }
      if (remediation.module) { box.appendChild(el("p", {}, "Module " + remediation.module)); }
    }
    if (measured && disruption) {
      box.appendChild(el("p", {"class": "disruption"}, "Disruption: " + disruption));
    }
    addList(box, automated ? "Manual steps" : "Fix", remediation.manual, function (m) { return el("li", {}, m); });
    // A declared check's docs are its own (a link or a line of text, from its check file).
    var declared = check.declared;
    // A built-in check's page is shipped beside the report, rendered (report_docs): it opens on any machine.
    var page = declared ? declared.docs : report.docs + "/" + box.getAttribute("data-check") + ".html";
    var docs = el("p", {"class": "docs"}, "Docs: ");
    if (!declared) {
      docs.appendChild(el("a", {href: encodeURI(page)}, box.getAttribute("data-check") + " (what breaks, how it is detected, the fix)"));
    } else if (/^https?:\\/\\//.test(page)) {
      docs.appendChild(el("a", {href: page, rel: "noreferrer"}, page));
    } else {
      docs.appendChild(document.createTextNode(page));
    }
    box.appendChild(docs);
    addList(box, "References", f.references, function (r) {
      var li = el("li");
      if (/^https?:\\/\\//.test(r)) { li.appendChild(el("a", {href: r, rel: "noreferrer"}, r)); } else { li.textContent = r; }
      return li;
    });
    box.appendChild(el("h3", {}, "Evidence"));
    box.appendChild(el("pre", {"class": "evidence"}, JSON.stringify(evidence, null, 2)));
  }
  // The fix commands of the worst-findings table: a copy button each (the command is selectable text without it).
  Array.prototype.forEach.call(document.querySelectorAll("#worst button.copy"), function (button) {
    button.addEventListener("click", function () {
      var code = document.getElementById(button.getAttribute("data-for"));
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(code.textContent).then(done, function () { window.getSelection().selectAllChildren(code); });
      } else {
        window.getSelection().selectAllChildren(code);
      }
    });
  });
}());
</script>
</body>
</html>
'''
