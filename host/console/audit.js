// The audit log, newest first, filtered by principal, resource, mount, action,
// decision and time.

import { api, toJson } from './api.js';
import { attempt, field, h, show, table } from './ui.js';

/** What a decision may have demanded (the audit log's `action`). */
const ACTIONS = ['write', 'manage', 'create-namespace', 'server-admin', 'tenant-admin', 'vend', 'sign', 'restrict', 'read'];

/** The rule that decided, in words. */
const rule = (r) => {
  switch (r && r.kind) {
    case 'server-admin': return 'server admin';
    case 'owner': return `${r.role} in ${r.tenant}, the owner`;
    case 'tenant-role': return `${r.role} in ${r.tenant}`;
    case 'grant': return `grant ${r.grant}`;
    default: return r ? toJson(r) : '';
  }
};

/** What a decision rests on, in words: what was vended or signed, or the rule. */
const why = (r) => {
  const vend = r.vend;
  if (vend && vend.issued) return `issued ${vend.issued.access} credentials for ${vend.issued.prefix}`;
  if (vend && vend.refused) return `no credentials: ${vend.refused.reason}`;
  if (r.restricted_by) return `read policies ${r.restricted_by.join(', ')}`;
  const sign = r.sign;
  if (sign && sign.signed) return `signed ${sign.signed.method} ${sign.signed.uri}`;
  if (sign && sign.refused) return `not signed (${sign.refused.method} ${sign.refused.uri}): ${sign.refused.reason}`;
  if (r.decision === 'denied') return r.rule ? `held only: ${rule(r.rule)}` : 'held nothing here';
  return rule(r.rule);
};

/** `2026-12-06T21:00:01.123456Z` as `2026-12-06 21:00:01`. */
const time = (t) => (t || '').replace('T', ' ').replace(/(\.\d+)?Z$/, '');

export async function auditPage() {
  const principal = h('input', { name: 'principal' });
  const resource = h('input', { name: 'resource', placeholder: 'table db.t' });
  const decision = h('select', { name: 'decision' },
    h('option', { value: '' }, 'any'), h('option', { value: 'allowed' }, 'allowed'), h('option', { value: 'denied' }, 'denied'));
  const mount = h('input', { name: 'mount', placeholder: 'root' });
  const action = h('select', { name: 'action' }, h('option', { value: '' }, 'any'),
    ACTIONS.map((a) => h('option', { value: a }, a)));
  const since = h('input', { name: 'since', type: 'datetime-local' });
  const until = h('input', { name: 'until', type: 'datetime-local' });
  const results = h('div', {});
  const form = h('form', { class: 'toolbar', 'aria-label': 'Filter the audit log' },
    field('Principal', principal), field('Resource contains', resource), field('Mount', mount),
    field('Action', action), field('Decision', decision), field('From (local time)', since), field('Until (local time)', until),
    h('button', { type: 'submit' }, 'Filter'));
  const load = () => attempt(results, async () => {
    const query = new URLSearchParams({ limit: '200' });
    if (principal.value.trim()) query.set('principal', principal.value.trim());
    if (resource.value.trim()) query.set('resource', resource.value.trim());
    if (decision.value) query.set('decision', decision.value);
    if (mount.value.trim()) query.set('mount', mount.value.trim());
    if (action.value) query.set('action', action.value);
    // A datetime-local value is the browser's local time; the server takes instants.
    if (since.value) query.set('since', new Date(since.value).toISOString());
    if (until.value) query.set('until', new Date(until.value).toISOString());
    const { records } = await api(`/management/v1/audit?${query}`);
    results.replaceChildren(table(`${records.length} record${records.length === 1 ? '' : 's'}, newest first`, [
      ['Time (UTC)', (r) => time(r.time)], ['Principal', (r) => r.principal_name], ['Tenant', (r) => r.tenant],
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
