// The chat page's loading state, a progressive enhancement: the form posts without it.
// On submit: the send button is disabled (no second turn by a double click) and the status
// line, announced politely to screen readers, says the assistant is reading. Its words come
// from the page (data-busy), in the page's language; nothing here builds markup.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var form = document.querySelector("form.composer");
  var status = document.getElementById("chat-status");
  if (!form || !status) {
    return;
  }
  form.addEventListener("submit", function () {
    var send = form.querySelector("button[type=submit]");
    if (send) {
      send.disabled = true;
    }
    form.setAttribute("aria-busy", "true");
    status.textContent = form.getAttribute("data-busy") || "";
    status.hidden = false;
  });
});
