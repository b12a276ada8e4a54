// Passkeys in the browser: a form marked data-passkey="get" (approve) or "create" (add a
// passkey) carries the WebAuthn options the server rendered into it (data-options, JSON). On
// submit, the browser's own authenticator is asked (navigator.credentials), and the answer
// goes back in the form's hidden field as JSON; the server verifies it. Nothing here builds
// markup or talks to the network: the form posts as usual. Its words come from the page.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var forms = document.querySelectorAll("form[data-passkey]");
  Array.prototype.forEach.call(forms, function (form) {
    form.addEventListener("submit", function (event) {
      if (form.getAttribute("data-passkey-done") === "yes") {
        return;
      }
      event.preventDefault();
      var error = form.querySelector("[data-passkey-error]");
      var say = function (words) {
        if (error) { error.textContent = form.getAttribute(words) || ""; }
      };
      if (error) { error.textContent = ""; }
      var options = JSON.parse(form.getAttribute("data-options") || "{}");
      var asked;
      try {
        if (form.getAttribute("data-passkey") === "create") {
          asked = navigator.credentials.create({
            publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options)
          });
        } else {
          asked = navigator.credentials.get({
            publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options)
          });
        }
      } catch (unusable) {
        // No passkeys at this address at all (not a secure context: no PublicKeyCredential).
        say("data-wrong-address");
        return;
      }
      asked.then(function (credential) {
        form.querySelector("input[name=credential]").value = JSON.stringify(credential.toJSON());
        form.setAttribute("data-passkey-done", "yes");
        form.submit();
      }).catch(function (refused) {
        // SecurityError: the passkeys belong to another address (localhost, not 127.0.0.1);
        // trying again here never works. Anything else: the person cancelled, or it failed.
        var elsewhere = refused && refused.name === "SecurityError";
        say(elsewhere ? "data-wrong-address" : "data-cancelled");
      });
    });
  });
});
