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
      if (error) { error.textContent = ""; }
      var options = JSON.parse(form.getAttribute("data-options") || "{}");
      var asked;
      if (form.getAttribute("data-passkey") === "create") {
        asked = navigator.credentials.create({
          publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options)
        });
      } else {
        asked = navigator.credentials.get({
          publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options)
        });
      }
      asked.then(function (credential) {
        form.querySelector("input[name=credential]").value = JSON.stringify(credential.toJSON());
        form.setAttribute("data-passkey-done", "yes");
        form.submit();
      }).catch(function () {
        if (error) { error.textContent = form.getAttribute("data-cancelled") || ""; }
      });
    });
  });
});
