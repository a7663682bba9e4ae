/* Live submission status, plus two small conveniences (copy buttons, confirm forms).
 *
 * A submission page carries
 *   <section data-status-url="/api/submissions/ID/" data-status="queued"> ...
 *     <span data-role="badge">, <span data-role="reason">, <span data-role="spinner">
 * While the status is queued or scoring, the API is polled every second with the
 * session cookie; the badge and reason change in place. When the status becomes
 * scored or failed, the page reloads once to show the score tables and case rows.
 * No framework, no CDN.
 */
(function () {
  "use strict";

  var FINAL = { scored: true, failed: true };
  var INTERVAL_MS = 1000;
  var LABELS = { queued: "queued", scoring: "scoring", scored: "scored", failed: "failed" };

  function setText(el, text) {
    if (el && el.textContent !== text) el.textContent = text;
  }

  function formatTime(iso) {
    if (!iso) return "–";
    var d = new Date(iso);
    if (isNaN(d.getTime())) return iso;
    return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function watchStatus(panel) {
    var url = panel.getAttribute("data-status-url");
    var badge = panel.querySelector("[data-role=badge]");
    var reason = panel.querySelector("[data-role=reason]");
    var spinner = panel.querySelector("[data-role=spinner]");
    var started = panel.querySelector("[data-role=started]");
    var scored = panel.querySelector("[data-role=scored]");
    var failures = 0;
    var stopped = false;

    function show(data) {
      var status = data.status;
      panel.setAttribute("data-status", status);
      if (badge) {
        badge.className = badge.className.replace(/\bstatus-[a-z]+\b/g, "").trim() + " status-" + status;
        setText(badge, LABELS[status] || status);
      }
      setText(reason, data.status_reason || "");
      if (started && data.started_at) setText(started, formatTime(data.started_at));
      if (scored && data.scored_at) setText(scored, formatTime(data.scored_at));
    }

    function finish() {
      stopped = true;
      if (spinner) spinner.hidden = true;
      // Once only: the reloaded page renders a final status and does not poll.
      window.setTimeout(function () { window.location.reload(); }, 400);
    }

    function poll() {
      if (stopped) return;
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (data) {
          failures = 0;
          show(data);
          if (FINAL[data.status]) finish();
          else window.setTimeout(poll, INTERVAL_MS);
        })
        .catch(function () {
          // A network blip or a restart: keep trying, more slowly, and say so.
          failures += 1;
          if (failures === 3) setText(reason, "(lost contact with the server; still trying)");
          window.setTimeout(poll, Math.min(INTERVAL_MS * (1 + failures), 10000));
        });
    }

    window.setTimeout(poll, INTERVAL_MS);
  }

  function copyFrom(id) {
    var el = document.getElementById(id);
    if (!el) return;
    var text = el.value !== undefined && el.tagName === "INPUT" ? el.value : el.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text);
    } else {
      var range = document.createRange();
      range.selectNodeContents(el);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      if (el.tagName === "INPUT") el.select();
      try { document.execCommand("copy"); } catch (e) { /* the text stays selected */ }
    }
  }

  function init() {
    var panels = document.querySelectorAll("[data-status-url]");
    for (var i = 0; i < panels.length; i++) {
      if (!FINAL[panels[i].getAttribute("data-status")]) watchStatus(panels[i]);
    }

    document.addEventListener("click", function (event) {
      var button = event.target.closest ? event.target.closest("[data-copy-target]") : null;
      if (!button) return;
      copyFrom(button.getAttribute("data-copy-target"));
      var label = button.textContent;
      button.textContent = "Copied";
      window.setTimeout(function () { button.textContent = label; }, 1500);
    });

    document.addEventListener("focusin", function (event) {
      if (event.target.hasAttribute && event.target.hasAttribute("data-select-on-focus")) event.target.select();
    });

    document.addEventListener("submit", function (event) {
      var form = event.target;
      var message = form.getAttribute && form.getAttribute("data-confirm");
      if (message && !window.confirm(message)) event.preventDefault();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
