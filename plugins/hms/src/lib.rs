//! The hms Rustberg backend: an Apache Hive Metastore as a writable mount, spoken to in
//! Thrift over the mount's `tcp` grant (the host lets this component connect to
//! `catalog_url`'s host and port, and nowhere else).
//!
//! - Databases are namespaces: one level. Their parameters are the properties, with
//!   `location`, `comment` and `owner` kept as the database's location, description and
//!   owner, as Iceberg's HiveCatalog maps them. A database created without a location
//!   goes under the mount's warehouse, `<warehouse>/<name>.db`, as Java's does.
//! - Tables and views follow Iceberg's HiveCatalog conventions (`tables`); other Hive
//!   tables are not listed, and load as not-found saying they are not Iceberg tables.
//! - The pointer carries no metadata JSON: the host reads the file it wrote.
//! - A commit compares the table's `metadata_location` with the expected one, takes the
//!   metastore's exclusive table lock (`metastore::lock`), compares again, and alters the
//!   table; a rename alters under the lock too. It always unlocks. (Hive 4's own compare,
//!   `expected_parameter_key`, is not sent: see `alter_context`.)
//! - Drop never deletes data (`deleteData=false`): the host purges what a table owns.
//! - No multi-table transactions: the metastore has no atomic commit of several tables,
//!   so the host answers 501 for them.
//!
//! Paging: the names come from the metastore's listing call (`get_all_tables`, names
//! only); a page fetches the objects of only as many names as it needs to fill itself.
//! A cursor is the last name returned.

mod metastore;
mod tables;

wit_bindgen::generate!({
    world: "tcp-backend",
    path: "../../wit",
});

use std::collections::BTreeMap;

use exports::rustberg::catalog::backend::Guest;
use metastore::{
    call, lock, Database, EnvironmentContext, GetTableRequest, GetTablesRequest, Retry, TThriftHiveMetastoreSyncClient,
    Table,
};
use rustberg::catalog::config;
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    Properties, PropertiesUpdate, TableCommit,
};
use rustberg_remote::one_level::OneLevel;
use tables::Kind;

/// Namespace properties the metastore keeps outside a database's parameters.
const LOCATION: &str = "location";
const COMMENT: &str = "comment";
const OWNER: &str = "owner";
const OWNER_TYPE: &str = "ownerType";
/// Hive's principal types, by number.
const PRINCIPAL_TYPES: [(&str, i32); 3] = [("USER", 1), ("ROLE", 2), ("GROUP", 3)];
/// The table property naming a table's owner in the metastore (Iceberg's HiveCatalog).
const TABLE_OWNER: &str = "hive.metastore.table.owner";

/// The metastore's databases are its namespaces: one level.
const DATABASES: OneLevel = OneLevel { service: "the Hive Metastore" };

/// The name a namespace has in the Hive Metastore.
fn database(ns: &[String]) -> Result<&str, Error> {
    DATABASES.existing(ns).map_err(Error::NotFound)
}

/// The metastore writes local paths as `file:/x`; Iceberg and the host write `file:///x`.
fn uri(location: &str) -> String {
    match location.strip_prefix("file:/") {
        Some(path) if !path.starts_with('/') => format!("file:///{path}"),
        _ => location.to_string(),
    }
}

// --- databases ---------------------------------------------------------------

fn get_database(name: &str) -> Result<Database, Error> {
    let name = name.to_string();
    call("get_database", Retry::Read, |c| c.get_database(name.clone()))
}

/// A database's properties: its parameters, with `location`, `comment` and `owner`.
fn properties_of(db: &Database) -> Properties {
    let mut props: Properties = db.parameters.clone().unwrap_or_default().into_iter().collect();
    if let Some(location) = &db.location_uri {
        props.push((LOCATION.into(), uri(location)));
    }
    // Hive 2.3 stores an unset description and owner as empty strings.
    if let Some(comment) = db.description.as_ref().filter(|c| !c.is_empty()) {
        props.push((COMMENT.into(), comment.clone()));
    }
    if let Some(owner) = db.owner_name.as_ref().filter(|o| !o.is_empty()) {
        props.push((OWNER.into(), owner.clone()));
        let kind = PRINCIPAL_TYPES.iter().find(|(_, n)| Some(*n) == db.owner_type);
        props.extend(kind.map(|(name, _)| (OWNER_TYPE.to_string(), name.to_string())));
    }
    props.sort();
    props
}

/// The database that stores `props` as namespace `name`'s properties.
fn database_of(name: &str, props: &Properties) -> Result<Database, Error> {
    // Not `Default`: Thrift's sets every field that is not optional to an empty value.
    let mut db = Database {
        name: Some(name.to_string()),
        description: None,
        location_uri: None,
        parameters: Some(BTreeMap::new()),
        owner_name: None,
        owner_type: None,
    };
    for (k, v) in props {
        match k.as_str() {
            LOCATION => db.location_uri = Some(v.clone()),
            COMMENT => db.description = Some(v.clone()),
            OWNER => db.owner_name = Some(v.clone()),
            OWNER_TYPE => {
                let kind = PRINCIPAL_TYPES.iter().find(|(n, _)| n.eq_ignore_ascii_case(v));
                let (_, number) = kind
                    .ok_or_else(|| Error::BadRequest(format!("ownerType {v:?} is not one of USER, ROLE or GROUP")))?;
                db.owner_type = Some(*number);
            }
            _ => {
                db.parameters.get_or_insert_default().insert(k.clone(), v.clone());
            }
        }
    }
    if db.owner_name.is_some() && db.owner_type.is_none() {
        db.owner_type = Some(1);
    }
    Ok(db)
}

/// The names of `names` after the cursor `after`, sorted.
fn after_cursor(mut names: Vec<String>, after: Option<&str>) -> Vec<String> {
    names.sort();
    names.dedup();
    match after {
        Some(after) => names.into_iter().filter(|n| n.as_str() > after).collect(),
        None => names,
    }
}

// --- tables and views --------------------------------------------------------

/// The metastore's entry for `id`, which must be an Iceberg `kind`.
fn get_entry(id: &Ident, kind: Kind) -> Result<Table, Error> {
    let db = database(&id.namespace)?.to_string();
    let name = id.name.clone();
    let table = get_table(&db, &name)?;
    match tables::kind_of(&table) {
        Some(found) if found == kind => Ok(table),
        Some(found) => {
            Err(Error::NotFound(format!("{db}.{name} is an Iceberg {}, not a {}", found.noun(), kind.noun())))
        }
        None => Err(Error::NotFound(format!("{db}.{name} is a Hive table but not an Iceberg {}", kind.noun()))),
    }
}

/// The metastore's entry named `db`.`name`, whatever it is. (`get_table_req`: Hive 4
/// removed `get_table`.)
fn get_table(db: &str, name: &str) -> Result<Table, Error> {
    let request = GetTableRequest::new(db.to_string(), name.to_string());
    Ok(call("get_table_req", Retry::Read, |c| c.get_table_req(request.clone()))?.table)
}

/// Whether a table or view of any kind is named `id`.
fn taken(db: &str, name: &str) -> Result<bool, Error> {
    match get_table(db, name) {
        Ok(_) => Ok(true),
        Err(Error::NotFound(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// One page of the Iceberg `kind`s in `ns`: names from `get_all_tables`, objects
/// fetched for only as many names as the page needs.
fn list(ns: &[String], page: PageRequest, kind: Kind) -> Result<NamePage, Error> {
    let db = database(ns)?.to_string();
    get_database(&db)?;
    let names = call("get_all_tables", Retry::Read, |c| c.get_all_tables(db.clone()))?;
    let mut names = after_cursor(names, page.after.as_deref()).into_iter().peekable();
    let limit = page.limit.max(1) as usize;
    let mut items = Vec::new();
    while items.len() < limit && names.peek().is_some() {
        let batch: Vec<String> = names.by_ref().take(limit - items.len()).collect();
        let request = GetTablesRequest::new(db.clone(), batch);
        let objects =
            call("get_table_objects_by_name_req", Retry::Read, |c| c.get_table_objects_by_name_req(request.clone()))?
                .tables;
        let mut found: Vec<String> =
            objects.iter().filter(|t| tables::kind_of(t) == Some(kind)).filter_map(|t| t.table_name.clone()).collect();
        found.sort();
        items.extend(found.into_iter().map(|name| NameEntry { cursor: name.clone(), name }));
    }
    Ok(NamePage { items, done: names.peek().is_none() })
}

fn create(id: &Ident, kind: Kind, state: &Pointer) -> Result<(), Error> {
    let db = database(&id.namespace)?;
    get_database(db)?;
    if taken(db, &id.name)? {
        return Err(Error::AlreadyExists(format!("{db}.{} already exists", id.name)));
    }
    let metadata: serde_json::Value = serde_json::from_str(&state.metadata_json).unwrap_or_default();
    let owner = metadata["properties"][TABLE_OWNER].as_str().map(str::to_string);
    let owner = owner.or_else(|| config::get("table_owner")).unwrap_or_else(|| "rustberg".into());
    let entry = tables::new_entry(kind, db, &id.name, &owner, state)?;
    call("create_table", Retry::Write, |c| c.create_table(entry.clone()))
}

/// The environment of an `alter_table`: no statistics gathering. It carries no
/// `expected_parameter_key`/`value` (Hive 4's compare of `metadata_location`): the
/// commit holds the metastore's lock and checked the location under it, as Iceberg's
/// HiveCatalogs do in their lock mode, and Hive 4.0.1 runs that compare as SQL that
/// compares two CLOBs, which its embedded Derby refuses; its retrying handler then kept
/// the call past every deadline.
fn alter_context() -> EnvironmentContext {
    EnvironmentContext::new(BTreeMap::from([("DO_NOT_UPDATE_STATS".to_string(), "true".to_string())]))
}

fn alter(db: &str, name: &str, entry: Table) -> Result<(), Error> {
    let (db, name, context) = (db.to_string(), name.to_string(), alter_context());
    call("alter_table", Retry::Write, |c| {
        c.alter_table_with_environment_context(db.clone(), name.clone(), entry.clone(), context.clone())
    })
}

fn refuse_stale(db: &str, id: &Ident, entry: &Table, expected: &str) -> Result<(), Error> {
    let at = tables::metadata_location(entry);
    if at != expected {
        return Err(Error::Conflict(format!("{db}.{} is at {at}, not {expected}", id.name)));
    }
    Ok(())
}

fn commit(id: &Ident, kind: Kind, expected: &str, new: &Pointer) -> Result<(), Error> {
    let db = database(&id.namespace)?;
    // A stale commit is refused before it takes the lock.
    refuse_stale(db, id, &get_entry(id, kind)?, expected)?;
    let held = lock::acquire(db, &id.name)?;
    let outcome = (|| {
        let mut entry = get_entry(id, kind)?;
        refuse_stale(db, id, &entry, expected)?;
        tables::install(kind, &mut entry, new, Some(expected))?;
        alter(db, &id.name, entry)
    })();
    held.release();
    outcome
}

fn drop_entry(id: &Ident, kind: Kind) -> Result<Pointer, Error> {
    let db = database(&id.namespace)?.to_string();
    let last = get_entry(id, kind)?;
    let name = id.name.clone();
    // The host purges what the table owns; the metastore deletes nothing.
    call("drop_table", Retry::Write, |c| c.drop_table(db.clone(), name.clone(), false))?;
    Ok(tables::pointer_of(&last))
}

fn rename(source: &Ident, destination: &Ident, kind: Kind) -> Result<(), Error> {
    let from_db = database(&source.namespace)?;
    let to_db = database(&destination.namespace)?;
    get_entry(source, kind)?;
    get_database(to_db)?;
    if taken(to_db, &destination.name)? {
        return Err(Error::AlreadyExists(format!("{to_db}.{} already exists", destination.name)));
    }
    // Under the table's lock, as a commit: one landing between the read and the alter
    // would otherwise be undone by the entry written back under the new name.
    let held = lock::acquire(from_db, &source.name)?;
    let outcome = (|| {
        let mut entry = get_entry(source, kind)?;
        entry.db_name = Some(to_db.to_string());
        entry.table_name = Some(destination.name.clone());
        alter(from_db, &source.name, entry)
    })();
    held.release();
    outcome
}

struct Hms;

impl Guest for Hms {
    fn describe() -> Result<Description, Error> {
        // The host plans scans and vends credentials from the mount's warehouse.
        let features = Features::WRITES
            | Features::NAMESPACE_PROPERTIES
            | Features::VIEWS
            | Features::RENAME
            | Features::HOST_READABLE_MANIFESTS;
        Ok(Description { features, remember: vec![] })
    }

    fn list_namespaces(parent: Option<Vec<String>>, page: PageRequest) -> Result<NamespacePage, Error> {
        if let Some(parent) = parent.filter(|p| !p.is_empty()) {
            // A database holds no databases: its children are none, if it exists.
            get_database(database(&parent)?)?;
            return Ok(NamespacePage { items: vec![], done: true });
        }
        let names = call("get_all_databases", Retry::Read, |c| c.get_all_databases())?;
        let names = after_cursor(names, page.after.as_deref());
        let limit = page.limit.max(1) as usize;
        let done = names.len() <= limit;
        let items = names
            .into_iter()
            .take(limit)
            .map(|name| NamespaceEntry { cursor: name.clone(), namespace: vec![name] })
            .collect();
        Ok(NamespacePage { items, done })
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        Ok(properties_of(&get_database(database(&ns)?)?))
    }

    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        let name = DATABASES.creatable(&ns).map_err(Error::BadRequest)?;
        match get_database(name) {
            Ok(_) => return Err(Error::AlreadyExists(format!("namespace {name} already exists"))),
            Err(Error::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        let mut db = database_of(name, &props)?;
        // Not the metastore's own warehouse: the namespace must lie in the mount's.
        if db.location_uri.is_none() {
            db.location_uri =
                config::get("warehouse_location").map(|w| format!("{}/{name}.db", w.trim_end_matches('/')));
        }
        call("create_database", Retry::Write, |c| c.create_database(db.clone()))?;
        Ok(props)
    }

    fn drop_namespace(ns: Vec<String>) -> Result<(), Error> {
        let db = database(&ns)?.to_string();
        get_database(&db)?;
        // The metastore would refuse a database with any table; say so as the contract does.
        let held = call("get_all_tables", Retry::Read, |c| c.get_all_tables(db.clone()))?;
        if !held.is_empty() {
            return Err(Error::Conflict(format!("namespace {db} is not empty")));
        }
        call("drop_database", Retry::Write, |c| c.drop_database(db.clone(), false, false))
    }

    fn update_namespace_properties(
        ns: Vec<String>,
        removals: Vec<String>,
        updates: Properties,
    ) -> Result<PropertiesUpdate, Error> {
        let db = database(&ns)?;
        let mut props = properties_of(&get_database(db)?);
        let (removed, missing) = rustberg_remote::properties::apply(&mut props, removals, &updates);
        let altered = database_of(db, &props)?;
        let name = db.to_string();
        call("alter_database", Retry::Write, |c| c.alter_database(name.clone(), altered.clone()))?;
        Ok(PropertiesUpdate { updated: updates.into_iter().map(|(k, _)| k).collect(), removed, missing })
    }

    fn list_tables(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list(&ns, page, Kind::Table)
    }

    fn load_table(table: Ident, _: Option<String>) -> Result<Pointer, Error> {
        Ok(tables::pointer_of(&get_entry(&table, Kind::Table)?))
    }

    fn create_table(table: Ident, state: Pointer) -> Result<(), Error> {
        create(&table, Kind::Table, &state)
    }

    fn commit_table(table: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        commit(&table, Kind::Table, &expected, &new)
    }

    fn drop_table(table: Ident) -> Result<Pointer, Error> {
        drop_entry(&table, Kind::Table)
    }

    fn rename_table(source: Ident, destination: Ident) -> Result<(), Error> {
        rename(&source, &destination, Kind::Table)
    }

    fn list_views(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list(&ns, page, Kind::View)
    }

    fn load_view(view: Ident) -> Result<Pointer, Error> {
        Ok(tables::pointer_of(&get_entry(&view, Kind::View)?))
    }

    fn create_view(view: Ident, state: Pointer) -> Result<(), Error> {
        create(&view, Kind::View, &state)
    }

    fn commit_view(view: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        commit(&view, Kind::View, &expected, &new)
    }

    fn drop_view(view: Ident) -> Result<Pointer, Error> {
        drop_entry(&view, Kind::View)
    }

    fn rename_view(source: Ident, destination: Ident) -> Result<(), Error> {
        rename(&source, &destination, Kind::View)
    }

    fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> {
        Err(Error::Unsupported("the Hive Metastore has no atomic commit of several tables".into()))
    }
}

export!(Hms);
