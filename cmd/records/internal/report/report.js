// The report's one script: details of a record on hover (or keyboard
// focus) over its bar. Every text it shows was escaped into the page by
// the server and is read back as text (textContent), never parsed as HTML.
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  var svg = document.getElementById("timeline");
  if (!tip || !svg) {
    return;
  }
  // The details live in each bar's <title>, which a browser would also
  // show as a plain tooltip of its own: keep the text and drop the element.
  var text = new WeakMap();
  svg.querySelectorAll(".bar").forEach(function (bar) {
    var title = bar.querySelector("title");
    if (title) {
      text.set(bar, title.textContent);
      bar.setAttribute("aria-label", title.textContent);
      title.remove();
    }
  });
  var current = null;
  function show(bar, x, y) {
    if (current && current !== bar) {
      current.classList.remove("on");
    }
    current = bar;
    bar.classList.add("on");
    tip.textContent = text.get(bar) || "";
    tip.hidden = false;
    // Keep the tip on screen: left of the pointer near the right edge,
    // above it near the bottom.
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = x + 14 + w > window.innerWidth ? Math.max(4, x - 14 - w) : x + 14;
    var top = y + 16 + h > window.innerHeight ? Math.max(4, y - 16 - h) : y + 16;
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }
  function hide() {
    if (current) {
      current.classList.remove("on");
      current = null;
    }
    tip.hidden = true;
  }
  svg.addEventListener("mousemove", function (e) {
    var bar = e.target.closest(".bar");
    if (bar) {
      show(bar, e.clientX, e.clientY);
    } else {
      hide();
    }
  });
  svg.addEventListener("mouseleave", hide);
  svg.addEventListener("focusin", function (e) {
    var bar = e.target.closest(".bar");
    if (bar) {
      var r = bar.getBoundingClientRect();
      show(bar, r.left, r.bottom);
    }
  });
  svg.addEventListener("focusout", hide);
})();
