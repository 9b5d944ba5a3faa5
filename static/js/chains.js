// Chain list: the new-chain (blank or from a template) and import dialogs.
(function () {
  const open = document.getElementById('open-import');
  const dialog = document.getElementById('import-dialog');
  if (open && dialog) {
    open.addEventListener('click', () => {
      document.getElementById('import-result').replaceChildren();
      dialog.showModal();
    });
  }
  const newBtn = document.getElementById('new-chain');
  const newDialog = document.getElementById('new-dialog');
  if (newBtn && newDialog) {
    const name = document.getElementById('new-name');
    // opening: New chain… starts blank with the name field focused; New
    // from template… picks the first template and focuses the choice
    const openNew = (fromTemplate) => {
      document.getElementById('new-result').replaceChildren();
      name.removeAttribute('aria-invalid');
      const radios = [...newDialog.querySelectorAll('input[name="template"]')];
      const pick = fromTemplate ? radios.find((r) => r.value) : radios.find((r) => !r.value);
      if (pick) pick.checked = true;
      newDialog.showModal();
      if (fromTemplate && pick) { pick.focus(); return; }
      name.focus();
      name.select();
    };
    newBtn.addEventListener('click', () => openNew(false));
    const fromBtn = document.getElementById('new-from-template');
    if (fromBtn) fromBtn.addEventListener('click', () => openNew(true));
    // the server's verdict marks the field; typing clears it
    const result = document.getElementById('new-result');
    new MutationObserver(() => {
      if (result.querySelector('[data-invalid]')) { name.setAttribute('aria-invalid', 'true'); name.focus(); } else name.removeAttribute('aria-invalid');
    }).observe(result, { childList: true, subtree: true });
    name.addEventListener('input', () => name.removeAttribute('aria-invalid'));
  }
})();
