// Namespaces (create, drop, properties), tenants, principals (a new client secret is
// shown once), grants and read policies (`policies.js`). Every refusal shows the server's own words.

import { api, catalog, dotted, ns, session, toJson } from './api.js';
import { attempt, field, h, show, table } from './ui.js';
import { policies } from './policies.js';

const levelsOf = (text) => text.split('.').map((l) => l.trim()).filter(Boolean);

/** `key=value` lines as an object. */
function propertiesOf(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/** Asks before a destructive action, and again, saying so, when it takes away the
 * signed-in user's own access. */
function confirmed(what, own) {
  if (!window.confirm(`${what}? This cannot be undone.`)) return false;
  if (!own) return true;
  const who = session.who || {};
  return window.confirm(`This removes your own access: you, ${who.name}, may lose what you reach now, and may not be able to undo it. ${what} all the same?`);
}

function notice(where, text) {
  where.querySelectorAll(':scope > .notice').forEach((n) => n.remove());
  where.append(h('p', { class: 'notice', role: 'status' }, text));
}

function namespaces() {
  const section = h('section', { 'aria-labelledby': 'ns-heading' }, h('h2', { id: 'ns-heading' }, 'Namespaces'));
  const name = h('input', { name: 'namespace', placeholder: 'prod.analytics', required: true });
  const props = h('textarea', { name: 'properties', rows: 3, placeholder: 'owner=data-team' });
  const create = h('form', { 'aria-label': 'Create a namespace' },
    h('h3', {}, 'Create'), field('New namespace', name), field('Properties (key=value per line)', props),
    h('button', { type: 'submit' }, 'Create namespace'));
  create.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(create, async () => {
      await api(catalog('/namespaces'), { method: 'POST', body: { namespace: levelsOf(name.value), properties: propertiesOf(props.value) } });
      notice(create, `Created ${name.value}`);
      create.reset();
    });
  });

  const dropName = h('input', { name: 'drop-namespace', required: true });
  const drop = h('form', { 'aria-label': 'Drop a namespace' },
    h('h3', {}, 'Drop'), field('Namespace to drop (must be empty)', dropName), h('button', { type: 'submit' }, 'Drop namespace'));
  drop.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(drop, async () => {
      if (!confirmed(`Drop the namespace ${dropName.value}`)) return;
      await api(catalog(`/namespaces/${ns(levelsOf(dropName.value))}`), { method: 'DELETE' });
      notice(drop, `Dropped ${dropName.value}`);
      drop.reset();
    });
  });

  const editName = h('input', { name: 'edit-namespace', required: true });
  const editor = h('div', {});
  const edit = h('form', { 'aria-label': 'Edit namespace properties' },
    h('h3', {}, 'Properties'), field('Namespace whose properties to edit', editName), h('button', { type: 'submit' }, 'Load properties'), editor);
  edit.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(edit, async () => {
      const levels = levelsOf(editName.value);
      const loaded = await api(catalog(`/namespaces/${ns(levels)}`));
      const text = h('textarea', { name: 'edit-properties', rows: 6 },
        Object.entries(loaded.properties || {}).map(([k, v]) => `${k}=${v}`).join('\n'));
      const save = h('button', { type: 'button' }, 'Save properties');
      save.addEventListener('click', () => attempt(editor, async () => {
        const wanted = propertiesOf(text.value);
        const removals = Object.keys(loaded.properties || {}).filter((k) => !(k in wanted));
        const answer = await api(catalog(`/namespaces/${ns(levels)}/properties`), { method: 'POST', body: { updates: wanted, removals } });
        loaded.properties = wanted;
        notice(editor, `Saved: ${answer.updated.length} updated, ${answer.removed.length} removed`);
      }));
      editor.replaceChildren(field(`Properties of ${dotted(levels)} (key=value per line)`, text), save);
    });
  });
  section.append(create, drop, edit);
  return section;
}

async function tenants(admin) {
  const section = h('section', { 'aria-labelledby': 'tenants-heading' }, h('h2', { id: 'tenants-heading' }, 'Tenants'));
  const list = h('div', {});
  const refresh = () => attempt(list, async () => {
    const { tenants: names } = await api('/management/v1/tenants');
    list.replaceChildren(table('Tenants', [
      ['Tenant', (t) => t],
      ['', (t) => (admin ? h('button', { type: 'button', class: 'danger', onclick: () => attempt(list, async () => {
        if (!confirmed(`Delete the tenant ${t}`, t === (session.who || {}).tenant)) return;
        await api(`/management/v1/tenants/${encodeURIComponent(t)}`, { method: 'DELETE' });
        await refresh();
      }), 'aria-label': `Delete tenant ${t}` }, 'Delete') : '')],
    ], names));
  });
  section.append(list);
  if (admin) {
    const name = h('input', { name: 'tenant-name', required: true });
    const form = h('form', { 'aria-label': 'Create a tenant' }, field('New tenant', name), h('button', { type: 'submit' }, 'Create tenant'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      attempt(form, async () => {
        await api('/management/v1/tenants', { method: 'POST', body: { name: name.value.trim() } });
        form.reset();
        await refresh();
      });
    });
    section.append(form);
  }
  await refresh();
  return section;
}

async function principals(admin) {
  const section = h('section', { 'aria-labelledby': 'principals-heading' }, h('h2', { id: 'principals-heading' }, 'Principals'));
  const list = h('div', {});
  const refresh = () => attempt(list, async () => {
    const { principals: all } = await api('/management/v1/principals');
    list.replaceChildren(table('Principals', [
      ['Name', (p) => p.name], ['Tenant', (p) => p.tenant], ['Role', (p) => p.role],
      ['Server admin', (p) => (p['server-admin'] ? 'yes' : 'no')], ['Sign-in', (p) => (p['oidc-subject'] ? `OIDC ${p['oidc-subject']}` : 'client secret')],
      ['', (p) => (admin && !p.configured ? h('button', { type: 'button', class: 'danger', onclick: () => attempt(list, async () => {
        if (!confirmed(`Delete the principal ${p.name}`, p.name === (session.who || {}).name)) return;
        await api(`/management/v1/principals/${encodeURIComponent(p.name)}`, { method: 'DELETE' });
        await refresh();
      }), 'aria-label': `Delete principal ${p.name}` }, 'Delete') : '')],
    ], all));
  });
  section.append(list);
  if (admin) {
    const name = h('input', { name: 'principal-name', required: true });
    const tenant = h('input', { name: 'principal-tenant', required: true });
    const role = h('select', { name: 'principal-role' },
      ['reader', 'writer', 'admin'].map((r) => h('option', { value: r }, r)));
    const secret = h('div', { 'aria-live': 'polite' });
    const form = h('form', { 'aria-label': 'Create a principal' },
      h('h3', {}, 'New principal'), field('Name', name), field('Tenant', tenant), field('Role', role),
      h('button', { type: 'submit' }, 'Create principal'), secret);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      attempt(form, async () => {
        const made = await api('/management/v1/principals', { method: 'POST', body: { name: name.value.trim(), tenant: tenant.value.trim(), role: role.value } });
        const credential = `${made['client-id']}:${made['client-secret']}`;
        secret.replaceChildren(h('div', { class: 'notice', role: 'status' },
          h('p', {}, `The client secret of ${made.name}, shown this once (only its hash is kept):`),
          h('p', {}, h('code', { class: 'secret' }, made['client-secret'])),
          h('p', {}, 'As a credential: ', h('code', { class: 'credential' }, credential))));
        form.reset();
        await refresh();
      });
    });
    section.append(form);
  }
  await refresh();
  return section;
}

export const resourceText = (r) => {
  if (r.namespace) return `namespace ${dotted(r.namespace)}`;
  if (r.table) return `table ${dotted(r.table.namespace)}.${r.table.name}`;
  if (r.view) return `view ${dotted(r.view.namespace)}.${r.view.name}`;
  return toJson(r);
};
const granteeText = (g) => (g.principal ? `principal ${g.principal}` : `tenant ${g.tenant}`);

/** Whether a grant is to the signed-in user, or to its tenant. */
const ownGrant = (g) => {
  const who = session.who || {};
  return g.grantee.principal === who.id || g.grantee.tenant === who.tenant;
};

async function grants() {
  const section = h('section', { 'aria-labelledby': 'grants-heading' }, h('h2', { id: 'grants-heading' }, 'Grants'));
  const list = h('div', {});
  const refresh = () => attempt(list, async () => {
    const { grants: all } = await api('/management/v1/grants');
    list.replaceChildren(table('Grants you hold or manage', [
      ['Resource', (g) => resourceText(g.resource)], ['Privilege', (g) => g.privilege], ['Grantee', (g) => granteeText(g.grantee)],
      ['', (g) => h('button', { type: 'button', class: 'danger', onclick: () => attempt(list, async () => {
        if (!confirmed(`Revoke ${g.privilege} on ${resourceText(g.resource)} from ${granteeText(g.grantee)}`, ownGrant(g))) return;
        await api(`/management/v1/grants/${encodeURIComponent(g.id)}`, { method: 'DELETE' });
        await refresh();
      }), 'aria-label': `Revoke ${g.privilege} on ${resourceText(g.resource)}` }, 'Revoke')],
    ], all));
  });
  const kind = h('select', { name: 'grantee-kind' }, h('option', { value: 'principal' }, 'principal'), h('option', { value: 'tenant' }, 'tenant'));
  const grantee = h('input', { name: 'grantee', required: true });
  const namespace = h('input', { name: 'grant-namespace', required: true });
  const object = h('input', { name: 'grant-object' });
  const objectKind = h('select', { name: 'grant-object-kind' },
    h('option', { value: '' }, 'the whole namespace'), h('option', { value: 'table' }, 'a table'), h('option', { value: 'view' }, 'a view'));
  const privilege = h('select', { name: 'privilege' }, ['read', 'write', 'manage'].map((p) => h('option', { value: p }, p)));
  const form = h('form', { 'aria-label': 'Grant' },
    h('h3', {}, 'Grant'),
    field('Grantee kind', kind), field('Grantee name', grantee), field('Namespace granted on', namespace),
    field('On', objectKind), field('Table or view name', object), field('Privilege', privilege),
    h('button', { type: 'submit' }, 'Grant'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(form, async () => {
      const body = { namespace: levelsOf(namespace.value), privilege: privilege.value, [kind.value]: grantee.value.trim() };
      if (objectKind.value) body[objectKind.value] = object.value.trim();
      await api('/management/v1/grants', { method: 'POST', body });
      notice(form, `Granted ${privilege.value} on ${namespace.value} to ${kind.value} ${grantee.value}`);
      form.reset();
      await refresh();
    });
  });
  section.append(list, form);
  await refresh();
  return section;
}

export async function managePage() {
  const who = session.who || {};
  const admin = who['server-admin'] || who.role === 'admin';
  show('Manage', h('div', { class: 'sections' },
    namespaces(), await tenants(who['server-admin']), await principals(admin), await grants(), await policies()));
}
