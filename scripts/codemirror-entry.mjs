// Entry point of static/vendor/codemirror.js: CodeMirror 6 with JavaScript
// highlighting, line numbers, completion and diagnostics, exposed as
// window.StudioCode.create(parent, options) for the code node's editor.
import { EditorView, basicSetup } from 'codemirror';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { tags } from '@lezer/highlight';
import { EditorState, Compartment } from '@codemirror/state';
import { javascript } from '@codemirror/lang-javascript';
import { setDiagnostics } from '@codemirror/lint';
import { autocompletion } from '@codemirror/autocomplete';
import { keymap } from '@codemirror/view';
import { indentWithTab } from '@codemirror/commands';

// create mounts an editor in parent. options: doc (text), label (the
// editor's accessible name), onChange(text), complete(word) → Promise of
// [{label, type, detail}] (the names the script reads).
//
// The editor lives in a shadow root: CodeMirror injects its styles, which
// the studio's Content-Security-Policy (style-src 'self') refuses as <style>
// elements in the page; in a shadow root they are constructed style sheets,
// which it allows. CSS variables (the theme's colours) still reach inside.
function create(parent, options) {
  const opts = options || {};
  const completions = (ctx) => {
    const word = ctx.matchBefore(/[\w$.]*/);
    if (!word || (word.from === word.to && !ctx.explicit)) return null;
    return Promise.resolve(opts.complete ? opts.complete(word.text) : []).then((list) => {
      const dot = word.text.lastIndexOf('.');
      return { from: dot >= 0 ? word.from + dot + 1 : word.from, options: list, validFor: /^[\w$]*$/ };
    });
  };
  const theme = new Compartment();
  const host = document.createElement('div');
  host.className = 'sf-code-host';
  parent.append(host);
  const shadow = host.attachShadow({ mode: 'open' });
  const view = new EditorView({
    parent: shadow,
    root: shadow,
    state: EditorState.create({
      doc: opts.doc || '',
      extensions: [
        basicSetup,
        // Tab indents; Escape then Tab moves focus on (CodeMirror's rule,
        // so the keyboard never stays trapped in the editor).
        keymap.of([indentWithTab]),
        javascript(),
        autocompletion({ override: [completions] }),
        theme.of(look),
        syntaxHighlighting(colours),
        EditorView.contentAttributes.of(opts.label ? { 'aria-label': opts.label } : {}),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && opts.onChange) opts.onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  // CodeMirror's announcer (completions, search) is a polite live region:
  // the studio's pages make live regions status regions, so it says so.
  const announced = view.dom.querySelector('.cm-announced');
  if (announced) announced.setAttribute('role', 'status');
  return {
    view,
    text: () => view.state.doc.toString(),
    // errors: [{line, column, message}] (1-based, column in characters).
    setErrors(errors) {
      const doc = view.state.doc;
      const diags = (errors || []).map((e) => {
        const line = doc.line(Math.min(Math.max(1, e.line || 1), doc.lines));
        const from = Math.min(line.from + Math.max(0, (e.column || 1) - 1), line.to);
        return { from, to: Math.min(from + 1, line.to) > from ? from + 1 : from, severity: 'error', message: e.message };
      });
      view.dispatch(setDiagnostics(view.state, diags));
    },
    destroy: () => { view.destroy(); host.remove(); },
  };
}

// The studio's look, from its CSS variables (they cross the shadow root).
const look = EditorView.theme({
  '&': { border: '1px solid var(--node-border, #8a94a8)', borderRadius: '4px', minHeight: '8em', maxHeight: '24em', fontSize: '13px', background: 'var(--bg, #fff)', color: 'var(--fg, #111)' },
  '&.cm-focused': { outline: '2px solid var(--accent, #2560d8)', outlineOffset: '1px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', minHeight: '8em' },
  '.cm-gutters': { background: 'var(--bg-2, #f5f7fa)', color: 'var(--muted, #555)', borderRight: '1px solid var(--node-border, #8a94a8)' },
  '.cm-activeLine, .cm-activeLineGutter': { background: 'color-mix(in srgb, var(--accent, #2560d8) 8%, transparent)' },
});

// Token colours from the studio's palette variables, which are checked for
// contrast in both themes (CodeMirror's default colours fail on dark).
const colours = HighlightStyle.define([
  { tag: [tags.keyword, tags.operatorKeyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword], color: 'var(--accent, #2560d8)' },
  { tag: [tags.string, tags.special(tags.string), tags.regexp], color: 'var(--ok, #0c6b32)' },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: 'var(--warning, #8f5600)' },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: 'var(--muted, #56627a)', fontStyle: 'italic' },
  { tag: tags.invalid, color: 'var(--error, #c8281c)' },
]);

window.StudioCode = { create };
