// The namespace tree across every mount: one page at a time (100 names), opened level by
// level, so that it stays quick at any size and never loads everything. The filter
// narrows what is loaded; "Open" (and a breadcrumb, `#/browse/<namespace>`) goes
// straight to a namespace by its name. A mount is marked with its backend and health;
// an opened namespace can take a new namespace inside it, and be dropped.

import { api, catalog, dotted, ns, page } from './api.js';
import { attempt, breadcrumbs, field, h, show } from './ui.js';

const PAGE_SIZE = 100;
const LIST_VIEWS = 'GET /v1/{prefix}/namespaces/{namespace}/views';

/** The endpoints each top-level name's catalog serves (a mount's, else the root's). */
const endpoints = new Map();

function served(top) {
  if (!endpoints.has(top)) {
    endpoints.set(top, (async () => {
      let config = await api(`/v1/config?warehouse=${encodeURIComponent(top)}`);
      if (config.overrides.prefix !== top) config = await api('/v1/config?warehouse=root');
      return new Set(config.endpoints);
    })());
  }
  return endpoints.get(top);
}

/** A list that fills one page at a time from `load(pageToken)`, with a button for more. */
function pagedList(list, load, render, what) {
  let next = null;
  const more = h('button', { type: 'button', class: 'more', hidden: true }, `More ${what}`);
  const fill = async () => {
    more.disabled = true;
    const got = await attempt(list.parentElement || list, () => load(next));
    more.disabled = false;
    if (!got) return;
    for (const item of got.items) list.append(render(item));
    next = got.next;
    more.hidden = !next;
  };
  more.addEventListener('click', fill);
  return { more, fill };
}

const tableLink = (levels, name, kind) =>
  h('li', {}, h('a', { href: `#/${kind}/${ns(levels)}/${encodeURIComponent(name)}` }, name), ' ', h('span', { class: 'kind' }, kind));

/** The mounts the user may see, by name (empty when it may see none). */
async function mountsByName() {
  try {
    const { mounts } = await api('/management/v1/mounts');
    return new Map(mounts.filter((m) => m.name !== 'root').map((m) => [m.name, m]));
  } catch {
    return new Map();
  }
}

/** A mount's mark: its backend and whether it answers. */
function mountMark(mount) {
  const healthy = mount.health && mount.health.state === 'ok';
  return h('span', { class: 'kind mount' }, `mount · ${mount.backend} · `,
    h('span', { class: healthy ? 'ok' : 'bad' }, healthy ? 'reachable' : 'unreachable'));
}

/** Create a namespace inside `levels`, and drop `levels` (after a confirmation) unless
 * it is a mount. */
function namespaceActions(levels, item, isMount) {
  const name = h('input', { name: 'child', required: true, 'aria-label': `New namespace in ${dotted(levels)}` });
  const form = h('form', { class: 'toolbar inline', 'aria-label': `Change ${dotted(levels)}` },
    name, h('button', { type: 'submit' }, 'Create here'),
    isMount ? '' : h('button', { type: 'button', class: 'danger', onclick: () => drop() }, `Drop ${dotted(levels)}`));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(form, async () => {
      const child = [...levels, name.value.trim()];
      await api(catalog('/namespaces'), { method: 'POST', body: { namespace: child } });
      form.after(h('ul', { 'aria-label': `Created in ${dotted(levels)}` }, namespaceItem(child)));
      form.reset();
    });
  });
  const drop = () => attempt(form, async () => {
    if (!window.confirm(`Drop the namespace ${dotted(levels)}? It must be empty.`)) return;
    await api(catalog(`/namespaces/${ns(levels)}`), { method: 'DELETE' });
    item.remove();
  });
  return form;
}

/** One namespace, closed: its button opens its namespaces, tables and views. A root
 * namespace is drawn at once and marked when `mounts` (the mounts by name) says it is
 * one: the tree does not wait for them. */
function namespaceItem(levels, mounts) {
  const item = h('li', { 'data-name': levels[levels.length - 1] });
  const inside = h('div', { class: 'inside', hidden: true });
  const kind = h('span', { class: 'visually-hidden' }, ' namespace');
  const mount = levels.length === 1 && mounts ? mounts.then((known) => known.get(levels[0])) : Promise.resolve(undefined);
  let loaded = false;
  const toggle = h('button', { type: 'button', class: 'ns', 'aria-expanded': 'false' }, levels[levels.length - 1], kind);
  toggle.addEventListener('click', async () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    inside.hidden = !open;
    if (open && !loaded) {
      loaded = true;
      inside.append(namespaceActions(levels, item, Boolean(await mount)));
      await fillNamespace(levels, inside);
    }
  });
  item.append(toggle, inside);
  mount.then((found) => {
    if (!found) return;
    kind.textContent = ' mount';
    toggle.after(mountMark(found));
  });
  return item;
}

async function fillNamespace(levels, inside) {
  const path = ns(levels);
  const children = h('ul', { 'aria-label': `Namespaces in ${dotted(levels)}` });
  const tables = h('ul', { 'aria-label': `Tables in ${dotted(levels)}` });
  const views = h('ul', { 'aria-label': `Views in ${dotted(levels)}` });
  inside.append(children, tables, views);
  const lists = [
    [children, (t) => page(catalog(`/namespaces?parent=${path}`), 'namespaces', t, PAGE_SIZE), (n) => namespaceItem(n), 'namespaces'],
    [tables, (t) => page(catalog(`/namespaces/${path}/tables`), 'identifiers', t, PAGE_SIZE), (id) => tableLink(levels, id.name, 'table'), 'tables'],
  ];
  if ((await served(levels[0])).has(LIST_VIEWS)) {
    lists.push([views, (t) => page(catalog(`/namespaces/${path}/views`), 'identifiers', t, PAGE_SIZE), (id) => tableLink(levels, id.name, 'view'), 'views']);
  }
  for (const [list, load, render, what] of lists) {
    const { more, fill } = pagedList(list, load, render, what);
    list.after(more);
    await fill();
  }
  if (!children.children.length && !tables.children.length && !views.children.length) {
    inside.append(h('p', { class: 'kind' }, 'Empty'));
  }
}

/** The tree; with `openLevels` (a breadcrumb's target), that namespace opened above it. */
export async function browsePage(openLevels) {
  const filter = h('input', { type: 'search', name: 'filter' });
  const target = h('input', { name: 'open', placeholder: 'prod.analytics' });
  const tree = h('ul', { class: 'tree', 'aria-label': 'Namespaces' });
  const opened = h('div', {});
  const jump = h('form', { class: 'toolbar' }, field('Open a namespace', target), h('button', { type: 'submit' }, 'Open'));
  // The mounts are asked for once the tree's first page is shown (or a namespace is
  // opened): marking them must not delay it.
  let askMounts;
  const mounts = new Promise((resolve) => { askMounts = () => { askMounts = () => {}; mountsByName().then(resolve); }; });
  const open = (levels) => attempt(jump, async () => {
    await api(catalog(`/namespaces/${ns(levels)}`));
    const item = namespaceItem(levels, mounts);
    item.querySelector('button').firstChild.textContent = dotted(levels);
    opened.replaceChildren(breadcrumbs(levels.slice(0, -1), levels[levels.length - 1]), h('ul', { 'aria-label': 'Opened namespace' }, item));
    item.querySelector('button').click();
  });
  jump.addEventListener('submit', async (event) => {
    event.preventDefault();
    askMounts();
    const levels = target.value.split('.').map((l) => l.trim()).filter(Boolean);
    if (levels.length) await open(levels);
  });
  filter.addEventListener('input', () => {
    const needle = filter.value.toLowerCase();
    for (const item of tree.children) item.hidden = !item.dataset.name.toLowerCase().includes(needle);
  });
  const main = show('Browse',
    h('div', { class: 'toolbar' }, field('Filter loaded namespaces', filter), jump),
    opened,
    tree);
  if (openLevels) {
    askMounts();
    target.value = dotted(openLevels);
    await open(openLevels);
  }
  const { more, fill } = pagedList(tree, (t) => page(catalog('/namespaces'), 'namespaces', t, PAGE_SIZE), (n) => namespaceItem(n, mounts), 'namespaces');
  tree.after(more);
  await fill();
  askMounts();
  main.dataset.ready = 'true';
}
