// A page that updates by itself (a refund being checked with the provider), as a progressive
// enhancement the person controls: the page reloads every data-refresh-seconds seconds until
// they pause it (WCAG 2.2.1: a time limit the user can turn off). Without script, the page
// offers its "check now" link instead. Its words come from the page; nothing here builds markup.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var updates = document.getElementById("updates");
  var toggle = document.getElementById("updates-toggle");
  if (!updates || !toggle) {
    return;
  }
  var seconds = parseInt(updates.getAttribute("data-refresh-seconds") || "0", 10);
  if (!(seconds > 0)) {
    return;
  }
  var timer = null;
  var status = document.getElementById("updates-status");
  function start() {
    timer = window.setTimeout(function () { window.location.reload(); }, seconds * 1000);
    toggle.textContent = toggle.getAttribute("data-pause") || "";
    toggle.setAttribute("aria-pressed", "false");
    if (status) { status.textContent = updates.getAttribute("data-running") || ""; }
  }
  function stop() {
    window.clearTimeout(timer);
    timer = null;
    toggle.textContent = toggle.getAttribute("data-resume") || "";
    toggle.setAttribute("aria-pressed", "true");
    if (status) { status.textContent = updates.getAttribute("data-paused") || ""; }
  }
  toggle.addEventListener("click", function () { if (timer === null) { start(); } else { stop(); } });
  toggle.hidden = false;
  start();
});
