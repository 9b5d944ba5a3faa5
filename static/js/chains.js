// Chain list: the new-chain and import dialogs.
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
    newBtn.addEventListener('click', () => {
      document.getElementById('new-result').replaceChildren();
      name.removeAttribute('aria-invalid');
      newDialog.showModal();
      name.focus();
      name.select();
    });
    // the server's verdict marks the field; typing clears it
    const result = document.getElementById('new-result');
    new MutationObserver(() => {
      if (result.querySelector('[data-invalid]')) { name.setAttribute('aria-invalid', 'true'); name.focus(); } else name.removeAttribute('aria-invalid');
    }).observe(result, { childList: true, subtree: true });
    name.addEventListener('input', () => name.removeAttribute('aria-invalid'));
  }
})();
