// The Credentials page: show the fields of the chosen type only. The other
// types' fieldsets are disabled too, so that their inputs are not sent.
(function () {
  const select = document.getElementById("credential-type");
  if (!select) return;
  const show = () => {
    for (const fs of document.querySelectorAll(".credential-fields")) {
      const on = fs.dataset.type === select.value;
      fs.hidden = !on;
      fs.disabled = !on;
    }
  };
  select.addEventListener("change", show);
  show();
  const all = document.getElementById("credential-all-chains");
  const chains = document.getElementById("credential-chains");
  if (all && chains) {
    chains.addEventListener("change", () => { if (chains.selectedOptions.length) all.checked = false; });
    all.addEventListener("change", () => { if (all.checked) for (const o of chains.options) o.selected = false; });
  }
})();
