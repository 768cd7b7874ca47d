// Building the page: elements from data (text is always text, never markup), forms
// whose every control has a label, and errors that show the server's own words.

/** An element: `attrs` are properties or attributes, `children` nodes or strings. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key in el && !key.includes('-')) el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

let fieldIds = 0;

/** A labelled control. */
export function field(label, control) {
  control.id = control.id || `field-${++fieldIds}`;
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control);
}

/** A region that says what went wrong, in the server's words, to screen readers too. */
export function errorBox(error) {
  const type = error.type ? `${error.type}: ` : '';
  return h('p', { class: 'error', role: 'alert' }, `${type}${error.message}`);
}

/** Runs `work`, showing its error (if any) in `where` instead of throwing. */
export async function attempt(where, work) {
  where.querySelectorAll(':scope > .error').forEach((e) => e.remove());
  try {
    return await work();
  } catch (error) {
    where.prepend(errorBox(error));
    return undefined;
  }
}

/** A table from rows: `columns` are [heading, (row) => cell]. */
export function table(caption, columns, rows) {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, columns.map(([name]) => h('th', { scope: 'col' }, name)))),
    h('tbody', {}, rows.map((row) => h('tr', {}, columns.map(([name, cell]) => h('td', { 'data-label': name }, cell(row)))))));
}

/** Replaces the main region's content and moves focus to its heading. */
export function show(title, ...content) {
  const main = document.getElementById('main');
  const heading = h('h1', { tabindex: '-1' }, title);
  main.replaceChildren(heading, ...content.flat());
  document.title = `${title} · Rustberg`;
  heading.focus();
  return main;
}

export const bytes = (n) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);
export const when = (ms) => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
