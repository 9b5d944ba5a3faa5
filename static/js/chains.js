// Chain list: the import dialog.
'use strict';
(function () {
  const open = document.getElementById('open-import');
  const dialog = document.getElementById('import-dialog');
  if (!open || !dialog) return;
  open.addEventListener('click', () => {
    document.getElementById('import-result').replaceChildren();
    dialog.showModal();
  });
})();
