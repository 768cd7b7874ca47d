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

/** What to do about a refusal or failure, by its status. */
function advice(status) {
  if (status === 401) return 'Sign in again: the session has ended or the credential is not accepted.';
  if (status === 403) return 'You may not do this here. An admin of the tenant that owns it can grant it (Manage, Grants).';
  if (status === 404) return 'It does not exist, or you may not see it.';
  if (status === 409) return 'It conflicts with what is there now: reload, check, and try again.';
  if (status === 501) return 'This catalog does not serve that.';
  if (status >= 500) return 'The server or a backend failed. Try again; if it persists, tell an operator (the request id is in the server log).';
  return '';
}

/** A region that says what went wrong and what to do, with the server's own words, to
 * screen readers too. */
export function errorBox(error) {
  const type = error.type ? `${error.type}: ` : '';
  const todo = advice(error.status);
  return h('p', { class: 'error', role: 'alert' }, todo ? h('strong', {}, todo) : '', todo ? ' ' : '', `${type}${error.message}`);
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

/** A button that copies `value` (exactly, a BigInt's digits too); `what` names it. Its
 * text stays "Copy" (its name must hold what it shows); "Copied" is said beside it. */
export function copyButton(value, what) {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': `Copy ${what}`, title: `Copy ${what}` }, 'Copy');
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText(String(value));
    const said = h('span', { class: 'copied', role: 'status' }, 'Copied');
    button.after(said);
    setTimeout(() => said.remove(), 1500);
  });
  return button;
}

/** The way back up the tree: Browse, then each level of `levels`, then `last` (text). */
export function breadcrumbs(levels, last) {
  const link = (i) => `#/browse/${levels.slice(0, i + 1).map(encodeURIComponent).join('%1F')}`;
  const items = [h('li', {}, h('a', { href: '#/browse' }, 'Browse')),
    ...levels.map((level, i) => h('li', {}, h('a', { href: link(i) }, level)))];
  if (last) items.push(h('li', {}, h('span', { 'aria-current': 'page' }, last)));
  return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {}, items));
}
