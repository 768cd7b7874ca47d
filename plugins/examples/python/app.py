"""A complete Rustberg catalog backend in Python, on the host's key space.

Namespaces with properties, and table and view pointers, each one key in the `kv`
space the mount grants. Every change is one conditional `kv.commit`, so commits are
compare-and-swap and renames and transactions are atomic. Nothing is kept between
calls: the host reuses and discards instances at will.

Keys: a kind byte, the namespace depth, then the levels (and the member name)
joined by a 0 byte; the direct children of a namespace are one sorted range.
"""

import functools
import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import kv, log
from wit_world.imports.types import (
    Description,
    Error_AlreadyExists,
    Error_BadRequest,
    Error_Conflict,
    Error_Internal,
    Error_NotFound,
    Features,
    NameEntry,
    NamePage,
    NamespaceEntry,
    NamespacePage,
    Pointer,
    PropertiesUpdate,
)

NAMESPACE, TABLE, VIEW = b"n", b"t", b"v"
RETRIES = 8

# What this backend does: everything a catalog does, as a pointer store over its key
# space and nothing else. So the host plans scans and vends credentials from the
# mount's warehouse, holds each table's metadata itself (it sends none, and reads none
# back), keeps load answers while the keys are unchanged, and lets its own records ride
# a namespace's create.
FEATURES = (
    Features.WRITES
    | Features.NAMESPACE_PROPERTIES
    | Features.VIEWS
    | Features.RENAME
    | Features.MULTI_TABLE_COMMIT
    | Features.HOST_READABLE_MANIFESTS
    | Features.TABLE_LOCATION_ONLY
    | Features.ANSWERS_FROM_KEYS
    | Features.CHECKS_WHAT_IT_READ
    | Features.ONE_COMMIT_NAMESPACE_CHANGES
)


# --- keys -------------------------------------------------------------------

def _part(name):
    if not name:
        raise Err(Error_BadRequest("names must not be empty"))
    if "\0" in name:
        raise Err(Error_BadRequest(f"name {name!r} contains a NUL byte"))
    return name.encode()


def _head(kind, depth, parts):
    if depth > 255:
        raise Err(Error_BadRequest(f"namespaces may be at most 255 levels deep, not {depth}"))
    return kind + bytes([depth]) + b"\0".join(_part(p) for p in parts)


def ns_key(ns):
    if not ns:
        raise Err(Error_BadRequest("the namespace must have at least one level"))
    return _head(NAMESPACE, len(ns), ns)


def children_prefix(parent):
    key = _head(NAMESPACE, len(parent) + 1, parent)
    return key + b"\0" if parent else key


def members_prefix(kind, ns):
    if not ns:
        raise Err(Error_BadRequest("tables and views live inside a namespace"))
    return _head(kind, len(ns), ns) + b"\0"


def member_key(kind, ns, name):
    return members_prefix(kind, ns) + _part(name)


def prefix_end(prefix):
    """The first key after every key that starts with `prefix`."""
    end = bytearray(prefix)
    while end and end[-1] == 0xFF:
        end.pop()
    if not end:
        return None
    end[-1] += 1
    return bytes(end)


# --- values -----------------------------------------------------------------

def encode_pointer(p):
    return json.dumps({
        "location": p.metadata_location,
        "json": p.metadata_json,
        "config": [list(kv_) for kv_ in p.config],
        "credentials": p.storage_credentials,
    }).encode()


def decode_pointer(raw):
    try:
        d = json.loads(raw)
        return Pointer(d["location"], d["json"], [tuple(x) for x in d["config"]], d["credentials"])
    except (ValueError, KeyError, TypeError) as e:
        raise Err(Error_Internal(f"a stored pointer is unreadable: {e}"))


def dotted(ns):
    return ".".join(ns)


def what(kind):
    return "view" if kind == VIEW else "table"


def other(kind):
    return TABLE if kind == VIEW else VIEW


def conflict(e):
    return isinstance(e, Err) and isinstance(e.value, Error_Conflict)


# --- reads ------------------------------------------------------------------

def require_namespace(ns):
    if kv.get(ns_key(ns)) is None:
        raise Err(Error_NotFound(f"namespace {dotted(ns)} does not exist"))


def has_any(prefix):
    return bool(kv.scan(prefix, prefix_end(prefix), 1))


def scan_names(prefix, page):
    start = prefix + page.after.encode() + b"\0" if page.after is not None else prefix
    limit = max(page.limit, 1)
    rows = kv.scan(start, prefix_end(prefix), limit + 1)
    names = [row.key[len(prefix):].decode() for row in rows[:limit]]
    return names, len(rows) <= limit


def load_pointer(kind, ident):
    entry = kv.get(member_key(kind, ident.namespace, ident.name))
    if entry is None:
        raise Err(Error_NotFound(f"{what(kind)} {dotted(ident.namespace)}.{ident.name} does not exist"))
    return entry, decode_pointer(entry.value)


def explain_create_conflict(kind, ident):
    """Why a create lost: look again."""
    name = f"{dotted(ident.namespace)}.{ident.name}"
    if kv.get(ns_key(ident.namespace)) is None:
        return Err(Error_NotFound(f"namespace {dotted(ident.namespace)} does not exist"))
    if kv.get(member_key(kind, ident.namespace, ident.name)) is not None:
        return Err(Error_AlreadyExists(f"{what(kind)} {name} already exists"))
    if kv.get(member_key(other(kind), ident.namespace, ident.name)) is not None:
        return Err(Error_AlreadyExists(f"a {what(other(kind))} named {name} already exists"))
    return Err(Error_Conflict(f"{what(kind)} {name} changed concurrently"))


# --- writes -----------------------------------------------------------------

def create_member(kind, ident, state):
    key = member_key(kind, ident.namespace, ident.name)
    checks = [
        kv.Check_Present(ns_key(ident.namespace)),
        kv.Check_Absent(key),
        kv.Check_Absent(member_key(other(kind), ident.namespace, ident.name)),
    ]
    try:
        kv.commit(checks, [kv.Write(key, encode_pointer(state))])
    except Err as e:
        if conflict(e):
            raise explain_create_conflict(kind, ident)
        raise


def commit_member(kind, ident, expected, new):
    entry, current = load_pointer(kind, ident)
    name = f"{what(kind)} {dotted(ident.namespace)}.{ident.name}"
    if current.metadata_location != expected:
        raise Err(Error_Conflict(f"{name} is at {current.metadata_location}, not {expected}"))
    try:
        kv.commit([kv.Check_AtVersion((entry.key, entry.version))], [kv.Write(entry.key, encode_pointer(new))])
    except Err as e:
        if conflict(e):
            raise Err(Error_Conflict(f"{name} was changed by a concurrent commit"))
        raise


def drop_member(kind, ident):
    for _ in range(RETRIES):
        entry, pointer = load_pointer(kind, ident)
        try:
            kv.commit([kv.Check_AtVersion((entry.key, entry.version))], [kv.Write(entry.key, None)])
            return pointer
        except Err as e:
            if not conflict(e):
                raise
    raise Err(Error_Conflict(f"{what(kind)} {dotted(ident.namespace)}.{ident.name} keeps changing"))


def rename_member(kind, source, destination):
    entry, _ = load_pointer(kind, source)
    target = member_key(kind, destination.namespace, destination.name)
    checks = [
        kv.Check_AtVersion((entry.key, entry.version)),
        kv.Check_Present(ns_key(destination.namespace)),
        kv.Check_Absent(target),
        kv.Check_Absent(member_key(other(kind), destination.namespace, destination.name)),
    ]
    try:
        kv.commit(checks, [kv.Write(entry.key, None), kv.Write(target, entry.value)])
    except Err as e:
        if not conflict(e):
            raise
        explained = explain_create_conflict(kind, destination)
        if isinstance(explained.value, Error_Conflict):
            raise Err(Error_Conflict(f"{what(kind)} {dotted(source.namespace)}.{source.name} changed concurrently"))
        raise explained


def list_members(kind, ns, page):
    require_namespace(ns)
    names, done = scan_names(members_prefix(kind, ns), page)
    return NamePage([NameEntry(n, n) for n in names], done)


# --- the export -------------------------------------------------------------

class Backend(exports.Backend):
    def describe(self):
        return Description(FEATURES, [])

    def list_namespaces(self, parent, page):
        parent = parent or []
        if parent:
            require_namespace(parent)
        prefix = children_prefix(parent)
        names, done = scan_names(prefix, page)
        return NamespacePage([NamespaceEntry(parent + [n], n) for n in names], done)

    def load_namespace(self, ns):
        entry = kv.get(ns_key(ns))
        if entry is None:
            raise Err(Error_NotFound(f"namespace {dotted(ns)} does not exist"))
        return [tuple(p) for p in json.loads(entry.value)]

    def create_namespace(self, ns, props):
        key = ns_key(ns)
        checks = [kv.Check_Absent(key)]
        if len(ns) > 1:
            checks.append(kv.Check_Present(ns_key(ns[:-1])))
        try:
            kv.commit(checks, [kv.Write(key, json.dumps([list(p) for p in props]).encode())])
        except Err as e:
            if not conflict(e):
                raise
            if kv.get(key) is not None:
                raise Err(Error_AlreadyExists(f"namespace {dotted(ns)} already exists"))
            raise Err(Error_NotFound(f"parent namespace {dotted(ns[:-1])} does not exist"))
        return props

    def drop_namespace(self, ns):
        key = ns_key(ns)
        if kv.get(key) is None:
            raise Err(Error_NotFound(f"namespace {dotted(ns)} does not exist"))
        inside = [children_prefix(ns), members_prefix(TABLE, ns), members_prefix(VIEW, ns)]
        try:
            kv.commit([kv.Check_Present(key)] + [kv.Check_PrefixEmpty(p) for p in inside], [kv.Write(key, None)])
        except Err as e:
            if not conflict(e):
                raise
            if kv.get(key) is None:
                raise Err(Error_NotFound(f"namespace {dotted(ns)} does not exist"))
            raise Err(Error_Conflict(f"namespace {dotted(ns)} is not empty"))

    def update_namespace_properties(self, ns, removals, updates):
        key = ns_key(ns)
        for _ in range(RETRIES):
            entry = kv.get(key)
            if entry is None:
                raise Err(Error_NotFound(f"namespace {dotted(ns)} does not exist"))
            props = dict(json.loads(entry.value))
            removed = [k for k in removals if k in props]
            missing = [k for k in removals if k not in props]
            for k in removed:
                del props[k]
            props.update(dict(updates))
            value = json.dumps(sorted(props.items())).encode()
            try:
                kv.commit([kv.Check_AtVersion((key, entry.version))], [kv.Write(key, value)])
                return PropertiesUpdate([k for k, _ in updates], removed, missing)
            except Err as e:
                if not conflict(e):
                    raise
        raise Err(Error_Conflict(f"namespace {dotted(ns)} keeps changing"))

    def list_tables(self, ns, page):
        return list_members(TABLE, ns, page)

    def load_table(self, table, access_delegation):
        return load_pointer(TABLE, table)[1]

    def create_table(self, table, state):
        create_member(TABLE, table, state)

    def commit_table(self, table, expected_metadata_location, new):
        commit_member(TABLE, table, expected_metadata_location, new)

    def drop_table(self, table):
        return drop_member(TABLE, table)

    def rename_table(self, source, destination):
        rename_member(TABLE, source, destination)

    def list_views(self, ns, page):
        return list_members(VIEW, ns, page)

    def load_view(self, view):
        return load_pointer(VIEW, view)[1]

    def create_view(self, view, state):
        create_member(VIEW, view, state)

    def commit_view(self, view, expected_metadata_location, new):
        commit_member(VIEW, view, expected_metadata_location, new)

    def drop_view(self, view):
        return drop_member(VIEW, view)

    def rename_view(self, source, destination):
        rename_member(VIEW, source, destination)

    def commit_transaction(self, commits):
        checks, writes = [], []
        for c in commits:
            entry, current = load_pointer(TABLE, c.ident)
            if current.metadata_location != c.expected_metadata_location:
                name = f"{dotted(c.ident.namespace)}.{c.ident.name}"
                raise Err(Error_Conflict(f"table {name} is at {current.metadata_location}, not {c.expected_metadata_location}"))
            checks.append(kv.Check_AtVersion((entry.key, entry.version)))
            writes.append(kv.Write(entry.key, encode_pointer(c.new)))
        try:
            kv.commit(checks, writes)
        except Err as e:
            if conflict(e):
                raise Err(Error_Conflict("a table of the transaction was changed by a concurrent commit"))
            raise
        log.log(log.Level.DEBUG, f"committed a transaction of {len(commits)} tables")


def _reported(method):
    """Any exception that is not a WIT error becomes `internal` carrying its own text
    (the client sees the error's text; the traceback is not printed)."""

    @functools.wraps(method)
    def call(*args):
        try:
            return method(*args)
        except Err:
            raise
        except Exception as e:  # noqa: BLE001 - every other failure is reported, not trapped
            raise Err(Error_Internal(f"{type(e).__name__}: {e}"))

    return call


for _name, _method in list(vars(Backend).items()):
    if callable(_method) and not _name.startswith("_"):
        setattr(Backend, _name, _reported(_method))
