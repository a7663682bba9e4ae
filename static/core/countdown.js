// The round page's countdown to close: updates "(in 2 d 4 h)" every 30 s from data-closes-at.
(function () {
  "use strict";
  function text(ms) {
    if (ms <= 0) return "(closing now: reload the page)";
    var m = Math.floor(ms / 60000), d = Math.floor(m / 1440), h = Math.floor((m % 1440) / 60), min = m % 60;
    if (d) return "(in " + d + " d " + h + " h)";
    if (h) return "(in " + h + " h " + min + " min)";
    return "(in " + Math.max(min, 1) + " min)";
  }
  function tick() {
    document.querySelectorAll("[data-role=countdown]").forEach(function (el) {
      el.textContent = text(new Date(el.getAttribute("data-closes-at")).getTime() - Date.now());
    });
  }
  tick();
  setInterval(tick, 30000);
})();
