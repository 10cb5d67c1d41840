// records serve's one script of its own (the report's draws the
// timeline's hover details): a click on a bar of the timeline opens its
// record, and a session's page follows the session while it is written
// (server-sent events). Every text it shows comes from the server as
// JSON and is set as text (textContent), never parsed as HTML.
(function () {
  "use strict";
  var session = document.getElementById("session");
  if (!session) {
    return;
  }
  var records = session.dataset.records;
  var svg = document.getElementById("timeline");
  if (svg && records) {
    svg.addEventListener("click", function (e) {
      var bar = e.target.closest(".bar");
      if (bar && /^[0-9]+$/.test(bar.dataset.seq || "")) {
        window.location.href = records + bar.dataset.seq;
      }
    });
    svg.addEventListener("keydown", function (e) {
      var bar = e.target.closest(".bar");
      if (e.key === "Enter" && bar && /^[0-9]+$/.test(bar.dataset.seq || "")) {
        window.location.href = records + bar.dataset.seq;
      }
    });
  }
  var url = session.dataset.events;
  var live = document.getElementById("live");
  if (!url || !live || !window.EventSource) {
    return;
  }
  var count = document.getElementById("live-count");
  var rows = document.getElementById("live-rows");
  var drawn = -1;
  var source = new EventSource(url);
  source.addEventListener("count", function (e) {
    var n = JSON.parse(e.data).records;
    if (drawn < 0) {
      drawn = n;
      return;
    }
    if (n !== drawn) {
      live.hidden = false;
      count.textContent = n + " records now, " + (n - drawn) + " more than drawn below.";
    }
  });
  function duration(ns) {
    if (ns >= 1e9) { return (ns / 1e9).toPrecision(3) + "s"; }
    if (ns >= 1e6) { return (ns / 1e6).toPrecision(3) + "ms"; }
    if (ns >= 1e3) { return (ns / 1e3).toPrecision(3) + "µs"; }
    return ns + "ns";
  }
  source.addEventListener("record", function (e) {
    var r = JSON.parse(e.data);
    var tr = document.createElement("tr");
    var seq = document.createElement("td");
    seq.className = "n";
    var a = document.createElement("a");
    a.href = records + String(r.seq);
    a.textContent = String(r.seq);
    seq.appendChild(a);
    tr.appendChild(seq);
    [r.kind, r.name, duration(r.offset_ns), duration(r.wall_ns), r.effect || "-"].forEach(function (text, i) {
      var td = document.createElement("td");
      if (i === 2 || i === 3) { td.className = "n"; }
      td.textContent = text;
      tr.appendChild(td);
    });
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > 50) {
      rows.removeChild(rows.lastChild);
    }
    live.hidden = false;
  });
})();
