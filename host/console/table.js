// A table: schema (nested types too), partition spec, sort order, properties, metadata
// location, and its snapshot history as a chart with its branches and tags. A view: its
// SQL and schema.

import { api, catalog, dotted, ns } from './api.js';
import { breadcrumbs, copyButton, h, show, table, when } from './ui.js';

/** A type as Iceberg writes it, nested types spelled out. */
function typeName(type) {
  if (typeof type === 'string') return type;
  if (type.type === 'list') return `list<${typeName(type.element)}>`;
  if (type.type === 'map') return `map<${typeName(type.key)}, ${typeName(type.value)}>`;
  return 'struct';
}

/** The schema's fields as rows, a nested field under its parent (`a.b`, `a.element.c`). */
function fieldRows(fields, prefix = '', rows = []) {
  for (const f of fields) {
    const name = `${prefix}${f.name}`;
    rows.push({ id: f.id, name, type: typeName(f.type), required: f.required, doc: f.doc || '' });
    nested(f.type, `${name}.`, rows);
  }
  return rows;
}

function nested(type, prefix, rows) {
  if (typeof type === 'string') return;
  if (type.type === 'struct') fieldRows(type.fields, prefix, rows);
  if (type.type === 'list') nested(type.element, `${prefix}element.`, rows);
  if (type.type === 'map') {
    nested(type.key, `${prefix}key.`, rows);
    nested(type.value, `${prefix}value.`, rows);
  }
}

function schemaTable(schema) {
  return table(`Schema ${schema['schema-id']}`, [
    ['Id', (r) => r.id],
    ['Field', (r) => h('code', {}, r.name)],
    ['Type', (r) => h('code', {}, r.type)],
    ['Required', (r) => (r.required ? 'yes' : 'no')],
    ['Doc', (r) => r.doc],
  ], fieldRows(schema.fields));
}

const number = (summary, key) => Number((summary || {})[key] || 0);

/** Records and data files added per snapshot, in commit order, as two rows of bars over
 * time: each row's label above it, each bar's value on it (or above it, when short) and
 * in its tooltip with the snapshot's id. */
function snapshotChart(snapshots) {
  const width = 720;
  const band = 90; // the height of a row of bars
  const label = 18; // the room above each row for its label
  const n = snapshots.length;
  const step = n ? width / n : width;
  const maxRecords = Math.max(1, ...snapshots.map((s) => number(s.summary, 'added-records')));
  const maxFiles = Math.max(1, ...snapshots.map((s) => number(s.summary, 'added-data-files')));
  const height = 2 * (label + band) + 24;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('class', 'chart');
  svg.setAttribute('role', 'img');
  const first = n ? when(snapshots[0]['timestamp-ms']) : '';
  const last = n ? when(snapshots[n - 1]['timestamp-ms']) : '';
  svg.setAttribute('aria-label', `Records and data files added by each of ${n} snapshots, ${first} to ${last}`);
  const add = (tag, attrs, text, parent = svg) => {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    parent.append(el);
    return el;
  };
  // Values are written on the bars only when a bar is wide enough to hold them.
  const room = step >= 34;
  const row = (top, key, cls, max, unit) => {
    add('text', { x: 4, y: top + 13, class: 'label' }, `${unit} added per snapshot (most: ${max.toLocaleString()})`);
    snapshots.forEach((s, i) => {
      const value = number(s.summary, key);
      const h = (value / max) * (band - 16);
      const x = i * step + step * 0.1;
      const w = Math.max(1, step * 0.8);
      const y = top + label + band - h;
      const bar = add('rect', { class: cls, x, y, width: w, height: h });
      add('title', {}, `snapshot ${s['snapshot-id']}: ${value.toLocaleString()} ${unit}`, bar);
      if (room) add('text', { x: x + w / 2, y: h > 16 ? y + 12 : y - 3, class: h > 16 ? 'value inside' : 'value', 'text-anchor': 'middle' }, value.toLocaleString());
    });
  };
  row(0, 'added-records', 'records', maxRecords, 'records');
  row(label + band, 'added-data-files', 'files', maxFiles, 'data files');
  add('text', { x: 4, y: height - 6 }, first);
  add('text', { x: width - 4, y: height - 6, 'text-anchor': 'end' }, last);
  return svg;
}

/** A snapshot id, exact, with a button that copies it. */
const snapshotId = (id) => (id === undefined || id === null ? '' : [h('code', {}, String(id)), copyButton(id, `snapshot id ${id}`)]);

/** A name part as Spark SQL writes it: plain, or in backticks. */
const sparkPart = (part) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part) ? part : `\`${part.replaceAll('`', '``')}\``);

/** How to query this table from Spark SQL, PyIceberg and DuckDB, naming this server. */
function querySnippets(levels, name) {
  const uri = location.origin;
  const spark = [
    'spark.sql.catalog.rustberg=org.apache.iceberg.spark.SparkCatalog',
    'spark.sql.catalog.rustberg.type=rest',
    `spark.sql.catalog.rustberg.uri=${uri}`,
    'spark.sql.catalog.rustberg.credential=<client-id>:<client-secret>',
    '',
    `SELECT * FROM rustberg.${[...levels, name].map(sparkPart).join('.')} LIMIT 10;`,
  ].join('\n');
  const python = [
    'from pyiceberg.catalog import load_catalog',
    '',
    `catalog = load_catalog("rustberg", type="rest", uri="${uri}", credential="<client-id>:<client-secret>")`,
    `table = catalog.load_table((${[...levels, name].map((p) => JSON.stringify(p)).join(', ')}))`,
    'print(table.scan(limit=10).to_arrow())',
  ].join('\n');
  const duckdb = [
    'INSTALL iceberg; LOAD iceberg;',
    `CREATE SECRET rustberg (TYPE iceberg, CLIENT_ID '<client-id>', CLIENT_SECRET '<client-secret>', OAUTH2_SERVER_URI '${uri}/v1/oauth/tokens');`,
    `ATTACH 'catalog' AS rustberg (TYPE iceberg, ENDPOINT '${uri}', SECRET rustberg, SUPPORT_NESTED_NAMESPACES true);`,
    `SELECT * FROM rustberg."${dotted(levels).replaceAll('"', '""')}"."${name.replaceAll('"', '""')}" LIMIT 10;`,
  ].join('\n');
  return [['Spark SQL', spark], ['PyIceberg', python], ['DuckDB', duckdb]].map(([engine, text]) =>
    h('figure', { class: 'query' }, h('figcaption', {}, engine, copyButton(text, `the ${engine} snippet`)), h('pre', { tabindex: 0 }, h('code', {}, text))));
}

export async function tablePage(levels, name) {
  const loaded = await api(catalog(`/namespaces/${ns(levels)}/tables/${encodeURIComponent(name)}`));
  const m = loaded.metadata;
  const schema = m.schemas.find((s) => s['schema-id'] === m['current-schema-id']) || m.schemas[0];
  const columns = new Map(fieldRows(schema.fields).map((f) => [f.id, f.name]));
  const spec = (m['partition-specs'] || []).find((s) => s['spec-id'] === m['default-spec-id']) || { fields: [] };
  const order = (m['sort-orders'] || []).find((o) => o['order-id'] === m['default-sort-order-id']) || { fields: [] };
  const snapshots = [...(m.snapshots || [])].sort((a, b) => a['sequence-number'] - b['sequence-number'] || a['timestamp-ms'] - b['timestamp-ms']);
  const refs = Object.entries(m.refs || {}).map(([ref, r]) => ({ ref, ...r }));
  const recent = snapshots.slice(-50).reverse();
  show(`Table ${dotted(levels)}.${name}`,
    breadcrumbs(levels, name),
    h('dl', {},
      h('dt', {}, 'Metadata location'), h('dd', {}, h('code', {}, loaded['metadata-location'] || '')),
      h('dt', {}, 'Location'), h('dd', {}, h('code', {}, m.location)),
      h('dt', {}, 'Format version'), h('dd', {}, m['format-version']),
      h('dt', {}, 'Table UUID'), h('dd', {}, h('code', {}, m['table-uuid']))),
    h('h2', {}, 'Schema'),
    schemaTable(schema),
    h('h2', {}, 'Partition spec'),
    spec.fields.length
      ? table(`Spec ${spec['spec-id']}`, [
        ['Name', (f) => f.name], ['Transform', (f) => f.transform], ['Source', (f) => columns.get(f['source-id']) || f['source-id']],
      ], spec.fields)
      : h('p', {}, 'Unpartitioned'),
    h('h2', {}, 'Sort order'),
    order.fields.length
      ? table(`Order ${order['order-id']}`, [
        ['Source', (f) => columns.get(f['source-id']) || f['source-id']], ['Transform', (f) => f.transform],
        ['Direction', (f) => f.direction], ['Nulls', (f) => f['null-order']],
      ], order.fields)
      : h('p', {}, 'Unsorted'),
    h('h2', {}, 'Snapshots'),
    snapshots.length ? snapshotChart(snapshots) : h('p', {}, 'No snapshots yet'),
    table('Branches and tags', [
      ['Name', (r) => r.ref], ['Type', (r) => r.type], ['Snapshot', (r) => snapshotId(r['snapshot-id'])],
    ], refs),
    table(`Snapshot history (${recent.length} most recent of ${snapshots.length})`, [
      ['Snapshot', (s) => snapshotId(s['snapshot-id'])], ['Committed', (s) => when(s['timestamp-ms'])],
      ['Operation', (s) => (s.summary || {}).operation || ''],
      ['Records added', (s) => number(s.summary, 'added-records')], ['Files added', (s) => number(s.summary, 'added-data-files')],
    ], recent),
    h('h2', {}, 'Properties'),
    table('Table properties', [['Key', ([k]) => k], ['Value', ([, v]) => v]], Object.entries(m.properties || {})),
    h('h2', {}, 'Query it'),
    querySnippets(levels, name));
}

export async function viewPage(levels, name) {
  const loaded = await api(catalog(`/namespaces/${ns(levels)}/views/${encodeURIComponent(name)}`));
  const m = loaded.metadata;
  const version = m.versions.find((v) => v['version-id'] === m['current-version-id']);
  const schema = m.schemas.find((s) => s['schema-id'] === version['schema-id']) || m.schemas[0];
  const sql = version.representations.filter((r) => r.type === 'sql');
  show(`View ${dotted(levels)}.${name}`,
    breadcrumbs(levels, name),
    h('dl', {},
      h('dt', {}, 'Metadata location'), h('dd', {}, h('code', {}, loaded['metadata-location'] || '')),
      h('dt', {}, 'Version'), h('dd', {}, version['version-id'])),
    h('h2', {}, 'SQL'),
    sql.map((r) => h('figure', {}, h('figcaption', {}, r.dialect), h('pre', { tabindex: 0 }, h('code', {}, r.sql)))),
    h('h2', {}, 'Schema'),
    schemaTable(schema),
    h('h2', {}, 'Properties'),
    table('View properties', [['Key', ([k]) => k], ['Value', ([, v]) => v]], Object.entries(m.properties || {})));
}
