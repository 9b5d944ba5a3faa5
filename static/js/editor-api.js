// What the designer lends its add-ons (navigate.js, notes.js, tests.js, …):
// the document, the canvas, the version, edit and flush, and once the
// chain is drawn (studio:ready) the canvas's commands. editor.js fills it
// in. A module of its own, so a page that loads an add-on without the
// editor (the run page loads tests.js) does not load the editor with it.
export const studio = {};
