// Each mount the user may see: backend and component, grants, owner, health, and from
// the server's own metrics its calls, mean latency and error rate.

import { api } from './api.js';
import { bytes, h, show, table } from './ui.js';

/** Outcomes that are the backend failing, not answering (a 404 is an answer). */
const FAILURES = new Set(['unavailable', 'internal', 'trapped', 'timed_out', 'out_of_memory']);

/** Backend calls per mount from the Prometheus text: count, seconds, failures. */
function callsByMount(text) {
  const calls = new Map();
  const line = /^rustberg_backend_call_duration_seconds_(count|sum)\{([^}]*)\} (\S+)$/;
  for (const row of text.split('\n')) {
    const m = row.match(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    const entry = calls.get(labels.mount) || { count: 0, seconds: 0, failures: 0 };
    const value = Number(m[3]);
    if (m[1] === 'sum') entry.seconds += value;
    else {
      entry.count += value;
      if (FAILURES.has(labels.outcome)) entry.failures += value;
    }
    calls.set(labels.mount, entry);
  }
  return calls;
}

export async function mountsPage() {
  const [{ mounts }, metrics] = await Promise.all([
    api('/management/v1/mounts'),
    fetch('/metrics').then((r) => r.text()),
  ]);
  const calls = callsByMount(metrics);
  const stat = (m) => calls.get(m.name) || { count: 0, seconds: 0, failures: 0 };
  show('Mounts', table('Mounts and the root catalog', [
    ['Mount', (m) => h('strong', {}, m.name)],
    ['Backend', (m) => h('code', {}, m.backend)],
    ['Component', (m) => `contract ${m.component.contract}, ${bytes(m.component.bytes)}, sha256 ${m.component.sha256.slice(0, 12)}…`],
    ['Grants', (m) => m.grants.join(', ') || 'none'],
    ['Owner', (m) => m.owner || 'per namespace'],
    ['Warehouse', (m) => (m.warehouse ? h('code', {}, m.warehouse) : 'none')],
    ['Health', (m) => (m.health.state === 'ok'
      ? h('span', { class: 'ok' }, 'reachable')
      : h('span', { class: 'bad' }, `unreachable: ${m.health.error}`))],
    ['Calls', (m) => stat(m).count],
    ['Mean latency', (m) => (stat(m).count ? `${((stat(m).seconds / stat(m).count) * 1000).toFixed(2)} ms` : '–')],
    ['Error rate', (m) => (stat(m).count ? `${((stat(m).failures / stat(m).count) * 100).toFixed(1)} %` : '–')],
  ], mounts));
}
