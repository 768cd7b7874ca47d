// A complete Rustberg catalog backend in JavaScript, on the host's key space.
//
// Namespaces with properties, and table and view pointers, each one key in the `kv`
// space the mount grants. Every change is one conditional `kv.commit`, so commits are
// compare-and-swap and renames and transactions are atomic. Nothing is kept between
// calls: the host reuses and discards instances at will.
//
// Keys: a kind byte, the namespace depth, then the levels (and the member name)
// joined by a 0 byte; the direct children of a namespace are one sorted range.

import * as kv from "rustberg:catalog/kv@0.2.3";
import { log } from "rustberg:catalog/log@0.2.3";

const NAMESPACE = 0x6e, TABLE = 0x74, VIEW = 0x76; // 'n', 't', 'v'
const RETRIES = 8;
const utf8 = new TextEncoder();
const text = new TextDecoder();

// What this backend does: everything a catalog does, as a pointer store over its key
// space and nothing else. So the host plans scans and vends credentials from the
// mount's warehouse, holds each table's metadata itself (it sends none, and reads none
// back), keeps load answers while the keys are unchanged, and lets its own records ride
// a namespace's create.
const FEATURES = {
  writes: true,
  namespaceProperties: true,
  views: true,
  rename: true,
  multiTableCommit: true,
  hostReadableManifests: true,
  tableLocationOnly: true,
  answersFromKeys: true,
  checksWhatItRead: true,
  oneCommitNamespaceChanges: true,
};

// --- errors: thrown as the WIT variant ---------------------------------------

const fail = (tag, val) => ({ tag, val });
const notFound = (m) => fail("not-found", m);
const badRequest = (m) => fail("bad-request", m);
const conflict = (m) => fail("conflict", m);

// A `kv` error arrives as a ComponentError whose payload is the variant.
const variantOf = (e) => (e && e.payload && e.payload.tag ? e.payload : e);
const isConflict = (e) => variantOf(e) && variantOf(e).tag === "conflict";

// --- keys --------------------------------------------------------------------

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function part(name) {
  if (!name) throw badRequest("names must not be empty");
  if (name.includes("\0")) throw badRequest(`name ${JSON.stringify(name)} contains a NUL byte`);
  return utf8.encode(name);
}

function head(kind, depth, parts) {
  if (depth > 255) throw badRequest(`namespaces may be at most 255 levels deep, not ${depth}`);
  const joined = [];
  parts.forEach((p, i) => {
    if (i > 0) joined.push(Uint8Array.of(0));
    joined.push(part(p));
  });
  return concat(Uint8Array.of(kind, depth), ...joined);
}

function nsKey(ns) {
  if (ns.length === 0) throw badRequest("the namespace must have at least one level");
  return head(NAMESPACE, ns.length, ns);
}

function childrenPrefix(parent) {
  const key = head(NAMESPACE, parent.length + 1, parent);
  return parent.length ? concat(key, Uint8Array.of(0)) : key;
}

function membersPrefix(kind, ns) {
  if (ns.length === 0) throw badRequest("tables and views live inside a namespace");
  return concat(head(kind, ns.length, ns), Uint8Array.of(0));
}

const memberKey = (kind, ns, name) => concat(membersPrefix(kind, ns), part(name));

// The first key after every key that starts with `prefix`.
function prefixEnd(prefix) {
  const end = Array.from(prefix);
  while (end.length && end[end.length - 1] === 0xff) end.pop();
  if (!end.length) return undefined;
  end[end.length - 1] += 1;
  return Uint8Array.from(end);
}

// --- values ------------------------------------------------------------------

const encodePointer = (p) =>
  utf8.encode(JSON.stringify({
    location: p.metadataLocation,
    json: p.metadataJson,
    config: p.config,
    credentials: p.storageCredentials,
  }));

function decodePointer(raw) {
  const d = JSON.parse(text.decode(raw));
  return { metadataLocation: d.location, metadataJson: d.json, config: d.config, storageCredentials: d.credentials };
}

const dotted = (ns) => ns.join(".");
const what = (kind) => (kind === VIEW ? "view" : "table");
const other = (kind) => (kind === VIEW ? TABLE : VIEW);
const write = (key, value) => ({ key, value });

// --- reads -------------------------------------------------------------------

function requireNamespace(ns) {
  if (kv.get(nsKey(ns)) === undefined) throw notFound(`namespace ${dotted(ns)} does not exist`);
}

function scanNames(prefix, page) {
  const start = page.after !== undefined && page.after !== null
    ? concat(prefix, utf8.encode(page.after), Uint8Array.of(0))
    : prefix;
  const limit = Math.max(page.limit, 1);
  const rows = kv.scan(start, prefixEnd(prefix), limit + 1);
  const names = rows.slice(0, limit).map((row) => text.decode(row.key.subarray(prefix.length)));
  return { names, done: rows.length <= limit };
}

function loadPointer(kind, ident) {
  const entry = kv.get(memberKey(kind, ident.namespace, ident.name));
  if (entry === undefined) throw notFound(`${what(kind)} ${dotted(ident.namespace)}.${ident.name} does not exist`);
  return { entry, pointer: decodePointer(entry.value) };
}

// Why a create lost: look again.
function explainCreateConflict(kind, ident) {
  const name = `${dotted(ident.namespace)}.${ident.name}`;
  if (kv.get(nsKey(ident.namespace)) === undefined) return notFound(`namespace ${dotted(ident.namespace)} does not exist`);
  if (kv.get(memberKey(kind, ident.namespace, ident.name)) !== undefined) {
    return fail("already-exists", `${what(kind)} ${name} already exists`);
  }
  if (kv.get(memberKey(other(kind), ident.namespace, ident.name)) !== undefined) {
    return fail("already-exists", `a ${what(other(kind))} named ${name} already exists`);
  }
  return conflict(`${what(kind)} ${name} changed concurrently`);
}

// --- writes ------------------------------------------------------------------

function createMember(kind, ident, state) {
  const key = memberKey(kind, ident.namespace, ident.name);
  const checks = [
    { tag: "present", val: nsKey(ident.namespace) },
    { tag: "absent", val: key },
    { tag: "absent", val: memberKey(other(kind), ident.namespace, ident.name) },
  ];
  try {
    kv.commit(checks, [write(key, encodePointer(state))]);
  } catch (e) {
    if (isConflict(e)) throw explainCreateConflict(kind, ident);
    throw variantOf(e);
  }
}

function commitMember(kind, ident, expected, next) {
  const { entry, pointer } = loadPointer(kind, ident);
  const name = `${what(kind)} ${dotted(ident.namespace)}.${ident.name}`;
  if (pointer.metadataLocation !== expected) throw conflict(`${name} is at ${pointer.metadataLocation}, not ${expected}`);
  try {
    kv.commit([{ tag: "at-version", val: [entry.key, entry.version] }], [write(entry.key, encodePointer(next))]);
  } catch (e) {
    if (isConflict(e)) throw conflict(`${name} was changed by a concurrent commit`);
    throw variantOf(e);
  }
}

function dropMember(kind, ident) {
  for (let i = 0; i < RETRIES; i++) {
    const { entry, pointer } = loadPointer(kind, ident);
    try {
      kv.commit([{ tag: "at-version", val: [entry.key, entry.version] }], [write(entry.key, undefined)]);
      return pointer;
    } catch (e) {
      if (!isConflict(e)) throw variantOf(e);
    }
  }
  throw conflict(`${what(kind)} ${dotted(ident.namespace)}.${ident.name} keeps changing`);
}

function renameMember(kind, source, destination) {
  const { entry } = loadPointer(kind, source);
  const target = memberKey(kind, destination.namespace, destination.name);
  const checks = [
    { tag: "at-version", val: [entry.key, entry.version] },
    { tag: "present", val: nsKey(destination.namespace) },
    { tag: "absent", val: target },
    { tag: "absent", val: memberKey(other(kind), destination.namespace, destination.name) },
  ];
  try {
    kv.commit(checks, [write(entry.key, undefined), write(target, entry.value)]);
  } catch (e) {
    if (!isConflict(e)) throw variantOf(e);
    const explained = explainCreateConflict(kind, destination);
    if (explained.tag === "conflict") {
      throw conflict(`${what(kind)} ${dotted(source.namespace)}.${source.name} changed concurrently`);
    }
    throw explained;
  }
}

function listMembers(kind, ns, page) {
  requireNamespace(ns);
  const { names, done } = scanNames(membersPrefix(kind, ns), page);
  return { items: names.map((name) => ({ name, cursor: name })), done };
}

// --- the export --------------------------------------------------------------

export const backend = {
  describe() {
    return { features: FEATURES, remember: [] };
  },

  listNamespaces(parent, page) {
    parent = parent || [];
    if (parent.length) requireNamespace(parent);
    const { names, done } = scanNames(childrenPrefix(parent), page);
    return { items: names.map((n) => ({ namespace: [...parent, n], cursor: n })), done };
  },

  loadNamespace(ns) {
    const entry = kv.get(nsKey(ns));
    if (entry === undefined) throw notFound(`namespace ${dotted(ns)} does not exist`);
    return JSON.parse(text.decode(entry.value));
  },

  createNamespace(ns, props) {
    const key = nsKey(ns);
    const checks = [{ tag: "absent", val: key }];
    if (ns.length > 1) checks.push({ tag: "present", val: nsKey(ns.slice(0, -1)) });
    try {
      kv.commit(checks, [write(key, utf8.encode(JSON.stringify(props)))]);
    } catch (e) {
      if (!isConflict(e)) throw variantOf(e);
      if (kv.get(key) !== undefined) throw fail("already-exists", `namespace ${dotted(ns)} already exists`);
      throw notFound(`parent namespace ${dotted(ns.slice(0, -1))} does not exist`);
    }
    return props;
  },

  dropNamespace(ns) {
    const key = nsKey(ns);
    if (kv.get(key) === undefined) throw notFound(`namespace ${dotted(ns)} does not exist`);
    const inside = [childrenPrefix(ns), membersPrefix(TABLE, ns), membersPrefix(VIEW, ns)];
    try {
      kv.commit(
        [{ tag: "present", val: key }, ...inside.map((p) => ({ tag: "prefix-empty", val: p }))],
        [write(key, undefined)],
      );
    } catch (e) {
      if (!isConflict(e)) throw variantOf(e);
      if (kv.get(key) === undefined) throw notFound(`namespace ${dotted(ns)} does not exist`);
      throw conflict(`namespace ${dotted(ns)} is not empty`);
    }
  },

  updateNamespaceProperties(ns, removals, updates) {
    const key = nsKey(ns);
    for (let i = 0; i < RETRIES; i++) {
      const entry = kv.get(key);
      if (entry === undefined) throw notFound(`namespace ${dotted(ns)} does not exist`);
      const props = new Map(JSON.parse(text.decode(entry.value)));
      const removed = removals.filter((k) => props.has(k));
      const missing = removals.filter((k) => !props.has(k));
      removed.forEach((k) => props.delete(k));
      updates.forEach(([k, v]) => props.set(k, v));
      const value = utf8.encode(JSON.stringify([...props.entries()].sort()));
      try {
        kv.commit([{ tag: "at-version", val: [key, entry.version] }], [write(key, value)]);
        return { updated: updates.map(([k]) => k), removed, missing };
      } catch (e) {
        if (!isConflict(e)) throw variantOf(e);
      }
    }
    throw conflict(`namespace ${dotted(ns)} keeps changing`);
  },

  listTables: (ns, page) => listMembers(TABLE, ns, page),
  loadTable: (table, _accessDelegation) => loadPointer(TABLE, table).pointer,
  createTable: (table, state) => createMember(TABLE, table, state),
  commitTable: (table, expected, next) => commitMember(TABLE, table, expected, next),
  dropTable: (table) => dropMember(TABLE, table),
  renameTable: (source, destination) => renameMember(TABLE, source, destination),

  listViews: (ns, page) => listMembers(VIEW, ns, page),
  loadView: (view) => loadPointer(VIEW, view).pointer,
  createView: (view, state) => createMember(VIEW, view, state),
  commitView: (view, expected, next) => commitMember(VIEW, view, expected, next),
  dropView: (view) => dropMember(VIEW, view),
  renameView: (source, destination) => renameMember(VIEW, source, destination),

  commitTransaction(commits) {
    const checks = [];
    const writes = [];
    for (const c of commits) {
      const { entry, pointer } = loadPointer(TABLE, c.ident);
      if (pointer.metadataLocation !== c.expectedMetadataLocation) {
        const name = `${dotted(c.ident.namespace)}.${c.ident.name}`;
        throw conflict(`table ${name} is at ${pointer.metadataLocation}, not ${c.expectedMetadataLocation}`);
      }
      checks.push({ tag: "at-version", val: [entry.key, entry.version] });
      writes.push(write(entry.key, encodePointer(c.new)));
    }
    try {
      kv.commit(checks, writes);
    } catch (e) {
      if (isConflict(e)) throw conflict("a table of the transaction was changed by a concurrent commit");
      throw variantOf(e);
    }
    log("debug", `committed a transaction of ${commits.length} tables`);
  },
};
