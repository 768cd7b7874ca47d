// Read policies: each one's target, subject, row filter and masks, deleted with a
// confirmation; a form makes one (the row filter as the REST spec's JSON, masks as
// `column=action` lines). Every refusal shows the server's own words.

import { api, toJson } from './api.js';
import { attempt, field, h, table } from './ui.js';
import { resourceText } from './manage.js';

const levelsOf = (text) => text.split('.').map((l) => l.trim()).filter(Boolean);

const subjectText = (s) => (s.principal ? `principal ${s.principal}` : s.role ? `role ${s.role}` : `tenant ${s.tenant}`);

const masksText = (masks) => (masks || []).map((m) => `${m.column}: ${m.action}${m.value !== undefined ? ` ${toJson(m.value)}` : ''}`).join(', ') || 'none';

/** `column=action` lines (`column=mask-to-fixed-value:<JSON>` with its value) as masks. */
function masksOf(text) {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
    const [column, rest = ''] = line.split('=', 2).map((p) => p.trim());
    const at = rest.indexOf(':');
    if (at < 0) return { column, action: rest };
    return { column, action: rest.slice(0, at), value: JSON.parse(rest.slice(at + 1)) };
  });
}

export async function policies() {
  const section = h('section', { 'aria-labelledby': 'policies-heading' }, h('h2', { id: 'policies-heading' }, 'Read policies'));
  const list = h('div', {});
  const refresh = () => attempt(list, async () => {
    const { policies: all } = await api('/management/v1/policies');
    list.replaceChildren(table('Read policies you manage or are restricted by', [
      ['Name', (p) => p.name], ['On', (p) => resourceText(p.resource)], ['Restricts', (p) => subjectText(p.subject)],
      ['Row filter', (p) => (p['row-filter'] ? h('code', {}, toJson(p['row-filter'])) : 'every row')],
      ['Masks', (p) => masksText(p.masks)],
      ['', (p) => h('button', { type: 'button', class: 'danger', onclick: () => attempt(list, async () => {
        if (!window.confirm(`Delete the read policy ${p.name}? Its restrictions are lifted at once.`)) return;
        await api(`/management/v1/policies/${encodeURIComponent(p.id)}`, { method: 'DELETE' });
        await refresh();
      }), 'aria-label': `Delete the read policy ${p.name}` }, 'Delete')],
    ], all));
  });
  const name = h('input', { name: 'policy-name', required: true });
  const namespace = h('input', { name: 'policy-namespace', required: true });
  const tableName = h('input', { name: 'policy-table' });
  const kind = h('select', { name: 'policy-subject-kind' }, ['principal', 'role', 'tenant'].map((k) => h('option', { value: k }, k)));
  const subject = h('input', { name: 'policy-subject', required: true });
  const rowFilter = h('textarea', { name: 'policy-row-filter', rows: 3, placeholder: '{"type": "eq", "term": "region", "value": "eu"}' });
  const masks = h('textarea', { name: 'policy-masks', rows: 3, placeholder: 'ssn=show-last-4' });
  const form = h('form', { 'aria-label': 'Read policy' },
    h('h3', {}, 'Read policy'),
    field('Name', name), field('Namespace', namespace), field('Table (empty: every table in the namespace)', tableName),
    field('Restricts a', kind), field('Principal, role or tenant', subject),
    field('Row filter (JSON)', rowFilter), field('Masks (column=action, one a line)', masks),
    h('button', { type: 'submit' }, 'Save policy'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    attempt(form, async () => {
      const body = { name: name.value.trim(), namespace: levelsOf(namespace.value), [kind.value]: subject.value.trim(), masks: masksOf(masks.value) };
      if (tableName.value.trim()) body.table = tableName.value.trim();
      if (rowFilter.value.trim()) body['row-filter'] = JSON.parse(rowFilter.value);
      await api('/management/v1/policies', { method: 'POST', body });
      form.reset();
      await refresh();
    });
  });
  section.append(list, form);
  await refresh();
  return section;
}
