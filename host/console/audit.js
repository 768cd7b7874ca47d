// The audit log, newest first, filtered by principal, resource and decision.

import { api, toJson } from './api.js';
import { attempt, field, h, show, table } from './ui.js';

const why = (r) => {
  if (r.vend) return toJson(r.vend);
  if (r.sign) return toJson(r.sign);
  return r.rule ? toJson(r.rule) : '';
};

export async function auditPage() {
  const principal = h('input', { name: 'principal' });
  const resource = h('input', { name: 'resource', placeholder: 'table db.t' });
  const decision = h('select', { name: 'decision' },
    h('option', { value: '' }, 'any'), h('option', { value: 'allowed' }, 'allowed'), h('option', { value: 'denied' }, 'denied'));
  const results = h('div', {});
  const form = h('form', { class: 'toolbar', 'aria-label': 'Filter the audit log' },
    field('Principal', principal), field('Resource contains', resource), field('Decision', decision),
    h('button', { type: 'submit' }, 'Filter'));
  const load = () => attempt(results, async () => {
    const query = new URLSearchParams({ limit: '200' });
    if (principal.value.trim()) query.set('principal', principal.value.trim());
    if (resource.value.trim()) query.set('resource', resource.value.trim());
    if (decision.value) query.set('decision', decision.value);
    const { records } = await api(`/management/v1/audit?${query}`);
    results.replaceChildren(table(`${records.length} records, newest first`, [
      ['Time', (r) => r.time], ['Principal', (r) => r.principal_name], ['Tenant', (r) => r.tenant],
      ['Action', (r) => r.action], ['Resource', (r) => r.resource], ['Mount', (r) => r.mount || ''],
      ['Decision', (r) => r.decision], ['Route', (r) => `${r.method || ''} ${r.route || ''}`], ['Detail', why],
    ], records));
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    load();
  });
  show('Audit log', form, results);
  await load();
}
