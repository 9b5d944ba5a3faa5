// Publish: the editor's edits are the draft; Publish makes the version the
// editor holds the one schedules, webhooks, API runs by name and skill calls
// run. The button says whether the draft differs from what is published; its
// dialog links to the differences.
import * as api from './api.js';
import * as common from './common.js';

export function install(ed) {
  const { root, $ } = ed;
  const dialog = $('publish-dialog');
  const btn = $('btn-publish');
  if (!dialog || !btn) return;
  const message = $('publish-message');
  const out = $('publish-result');
  let published = Number(root.dataset.published) || 0;
  let failing = 0; // chain tests failing on the version the editor holds (tests.js)

  // render sets Publish…'s state and title for the version the editor holds.
  function render() {
    const state = !published ? 'none' : published !== ed.version ? 'draft' : 'published';
    btn.dataset.state = state;
    if (state === 'published') btn.replaceChildren('Published');
    else btn.replaceChildren('Publish…', common.el('span', { class: 'dot', 'aria-hidden': 'true' }), common.el('span', { class: 'visually-hidden', text: ' (unpublished changes)' }));
    btn.title = !published ? 'Nothing is published: schedules, webhooks and runs by name cannot run this chain'
      : 'v' + published + ' is published' + (state === 'draft' ? '; the draft is v' + ed.version : '');
    // a failing chain test shows here too: publishing is where it matters
    const fails = failing ? failing + (failing === 1 ? ' test failing' : ' tests failing') : '';
    if (fails) {
      btn.append(common.el('span', { class: 'tests-mark', 'aria-hidden': 'true', text: '✗' + failing }));
      btn.title += '. ' + fails + ' (see Tests)';
      btn.setAttribute('aria-description', fails);
    } else btn.removeAttribute('aria-description');
    btn.dataset.testsFailing = String(failing);
    root.dataset.published = String(published);
    // The Export menu says which versions its files hold.
    const pubGroup = $('export-published');
    if (pubGroup) pubGroup.hidden = !published;
    for (const span of root.querySelectorAll('[data-export-version]')) {
      span.textContent = 'v' + (span.dataset.exportVersion === 'published' ? published : ed.version);
    }
  }
  root.addEventListener('studio:saved', render);
  root.addEventListener('studio:tests', (e) => {
    const n = (e.detail && e.detail.failed) || 0;
    if (n === failing) return;
    failing = n;
    render();
  });

  btn.addEventListener('click', async () => {
    await ed.flush();
    out.replaceChildren();
    message.value = '';
    const changes = $('publish-changes');
    if (published && published !== ed.version) {
      changes.replaceChildren('Publishes v' + ed.version + ' in place of v' + published + '. ',
        common.el('a', { href: '/chains/' + encodeURIComponent(ed.chainId) + '/versions?v=' + published, text: 'See what changed' }), '.');
    } else if (published) {
      changes.textContent = 'v' + ed.version + ' is already published; publishing again records your message.';
    } else {
      changes.textContent = 'Publishes v' + ed.version + '.';
    }
    if (failing) changes.append(' ', common.el('strong', { class: 'expr-err', text: failing + (failing === 1 ? ' chain test fails' : ' chain tests fail') + ' on this version (see Tests).' }));
    dialog.showModal();
    message.focus();
  });

  $('publish-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    await ed.flush();
    const submit = $('publish-submit');
    submit.disabled = true;
    try {
      const res = await api.request('POST', '/v1/chains/' + encodeURIComponent(ed.chainId) + '/publish', {
        body: { message: message.value.trim() }, headers: { 'If-Match': '"v' + ed.version + '"' },
      });
      const ch = await res.json();
      published = ch.published.version;
      render();
      dialog.close();
      ed.setSaveState('saved', 'Published v' + published);
    } catch (err) {
      out.replaceChildren(common.el('div', { class: 'form-error', text: publishError(err) }));
      // the issues that stop it, each naming its node or edge
      const issues = (err.details && err.details.issues) || [];
      if (issues.length) {
        out.append(common.el('ul', { class: 'form-error-list' },
          ...issues.filter((i) => i.severity === 'error').slice(0, 20).map((i) => common.el('li', { text: (i.node_id || i.edge_id || 'chain') + ': ' + i.message }))));
      }
    } finally {
      submit.disabled = false;
    }
  });

  function publishError(err) {
    if (err.code === 'chain_invalid') return 'Not published: the draft has errors. Fix them (the Validation panel lists them), then publish.';
    if (err.status === 412) return 'Not published: another tab changed the chain since. Reload the page to publish what is saved.';
    if (err.status === 403) return 'Not published: your role cannot publish chains.';
    return 'Not published: ' + err.message;
  }
}
