// Accessibility fixes of the book's own (referenced from _config.yml, html_js_files; loaded
// after sphinx-togglebutton's script, so its DOMContentLoaded work is done when ours runs).
(function () {
  "use strict";

  // The theme's colour-mode button cycles light -> dark -> auto but its accessible name is
  // only "Color mode": a screen-reader user cannot tell which mode is on. Its icons are
  // decorative (_templates/theme-switcher.html), so the current mode goes into the name.
  var modes = { light: "light", dark: "dark", auto: "same as the system" };

  function nameColourModeButtons() {
    var mode = document.documentElement.dataset.mode || "auto";
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      button.setAttribute("aria-label", "Color mode: " + (modes[mode] || mode));
    });
  }

  // sphinx-togglebutton names the button of every folded block (quiz answers, hints,
  // solutions) "Toggle hidden content", so moving from one to the next by keyboard or by a
  // screen reader's list of buttons never says which fold it opens. Each is named after its
  // fold's title instead ("Answer", "Solution to Exercise 2 ..."); aria-expanded, which
  // togglebutton keeps up to date, says whether it is open.
  function nameFoldButtons() {
    document.querySelectorAll(".admonition-title > .toggle-button").forEach(function (button) {
      var title = button.parentElement.textContent.replace(/\s+/g, " ").trim();
      if (title) {
        button.setAttribute("aria-label", title);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    nameColourModeButtons();
    new MutationObserver(nameColourModeButtons).observe(document.documentElement,
      { attributes: true, attributeFilter: ["data-mode"] });
    nameFoldButtons();
  });
})();
