//! The Glue Rustberg backend: an AWS Glue Data Catalog as a writable mount, reached
//! only through the host's `http` capability (the host signs every request with the
//! mount's SigV4 credential; this component never sees a key).
//!
//! - Glue databases are namespaces: one level; their `Parameters` are the properties,
//!   with `location` and `comment` kept as `LocationUri` and `Description`.
//! - Iceberg tables follow the conventions of Iceberg's own Glue catalogs, so a table
//!   works from both sides: `Parameters.table_type = "ICEBERG"`, `metadata_location`,
//!   `previous_metadata_location`, and a storage descriptor whose columns mirror the
//!   current schema and whose `Location` is the table location. Other Glue tables are
//!   not listed, and load as not-found saying they are not Iceberg tables.
//! - The pointer carries no metadata JSON: the host reads the metadata file from the
//!   mount's warehouse (it wrote it there).
//! - A commit reads the table, refuses unless its `metadata_location` is the expected
//!   one, then updates it at the `VersionId` it read, which Glue checks.
//! - Glue has no rename, no views and no multi-table transactions: those endpoints are
//!   not listed, so the host answers 501 for them. (A rename as create-then-delete could
//!   leave two live entries of one table after a crash.)
//!
//! Paging: a cursor is `<offset>:<Glue NextToken>`, as in the rest backend; each Glue
//! page is sorted by name.

mod api;
mod columns;

wit_bindgen::generate!({
    world: "http-backend",
    path: "../../wit",
});

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    Properties, PropertiesUpdate, TableCommit,
};
use rustberg_remote::one_level::{dotted, OneLevel};
use rustberg_remote::pages::walk;
use serde_json::{json, Map, Value};

/// Glue's page size: fixed, so a (token, offset) cursor finds the same rows again.
const GLUE_PAGE: u32 = 100;
/// Database properties Glue keeps outside `Parameters`.
const LOCATION: &str = "location";
const COMMENT: &str = "comment";

/// Glue's databases are its namespaces: one level.
const DATABASES: OneLevel = OneLevel { service: "Glue" };

/// The name a namespace has in Glue.
fn database(ns: &[String]) -> Result<&str, Error> {
    DATABASES.existing(ns).map_err(Error::NotFound)
}

fn unsupported(what: &str) -> Error {
    Error::Unsupported(DATABASES.has_no(what))
}

// --- paging ---------------------------------------------------------------

fn page_input(token: Option<&str>) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("MaxResults".into(), json!(GLUE_PAGE));
    if let Some(token) = token {
        input.insert("NextToken".into(), json!(token));
    }
    input
}

// --- databases ---------------------------------------------------------------

fn get_database(name: &str) -> Result<Value, Error> {
    api::call("GetDatabase", json!({ "Name": name })).map(|r| r["Database"].clone())
}

/// A database's properties: its `Parameters`, with `location` and `comment`.
fn properties_of(database: &Value) -> Properties {
    let mut props: Properties = database["Parameters"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    if let Some(location) = database["LocationUri"].as_str() {
        props.push((LOCATION.into(), location.into()));
    }
    if let Some(comment) = database["Description"].as_str() {
        props.push((COMMENT.into(), comment.into()));
    }
    props.sort();
    props
}

/// The `DatabaseInput` that stores `props` for database `name`.
fn database_input(name: &str, props: &Properties) -> Value {
    let mut input = json!({ "Name": name, "Parameters": {} });
    for (k, v) in props {
        match k.as_str() {
            LOCATION => input["LocationUri"] = json!(v),
            COMMENT => input["Description"] = json!(v),
            _ => input["Parameters"][k] = json!(v),
        }
    }
    input
}

// --- tables ------------------------------------------------------------------

fn is_iceberg(table: &Value) -> bool {
    table["Parameters"]["table_type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("ICEBERG"))
}

/// The Glue entry of an Iceberg table; not-found for a table of another kind.
fn get_iceberg_table(id: &Ident) -> Result<Value, Error> {
    let db = database(&id.namespace)?;
    let table = api::call("GetTable", json!({ "DatabaseName": db, "Name": id.name }))?["Table"].clone();
    if !is_iceberg(&table) {
        return Err(Error::NotFound(format!("{db}.{} is a Glue table but not an Iceberg table", id.name)));
    }
    Ok(table)
}

fn metadata_location(table: &Value) -> String {
    table["Parameters"]["metadata_location"].as_str().unwrap_or_default().to_string()
}

/// The pointer of a Glue table: its metadata location; the host reads the file.
fn pointer_of(table: &Value) -> Pointer {
    Pointer {
        metadata_location: metadata_location(table),
        metadata_json: String::new(),
        config: vec![],
        storage_credentials: String::new(),
    }
}

/// The `TableInput` for an Iceberg table at `state`, keeping the other `Parameters`
/// of `existing` (what Glue crawlers or other tools added).
fn table_input(name: &str, state: &Pointer, previous: Option<&str>, existing: Option<&Value>) -> Result<Value, Error> {
    let mut parameters = existing.and_then(|t| t["Parameters"].as_object().cloned()).unwrap_or_default();
    parameters.insert("table_type".into(), json!("ICEBERG"));
    parameters.insert("metadata_location".into(), json!(state.metadata_location));
    match previous {
        Some(previous) => parameters.insert("previous_metadata_location".into(), json!(previous)),
        None => parameters.remove("previous_metadata_location"),
    };
    let mut input = json!({ "Name": name, "TableType": "EXTERNAL_TABLE", "Parameters": parameters });
    if !state.metadata_json.is_empty() {
        let (location, columns) = columns::describe(&state.metadata_json).map_err(Error::BadRequest)?;
        input["StorageDescriptor"] = json!({ "Columns": columns, "Location": location });
    }
    Ok(input)
}

struct Glue;

impl Guest for Glue {
    fn describe() -> Result<Description, Error> {
        // Glue has no views and no rename; the host plans scans and vends credentials
        // from the mount's warehouse.
        let features = Features::WRITES | Features::NAMESPACE_PROPERTIES | Features::HOST_READABLE_MANIFESTS;
        Ok(Description { features, remember: vec![] })
    }

    fn list_namespaces(parent: Option<Vec<String>>, page: PageRequest) -> Result<NamespacePage, Error> {
        if let Some(parent) = parent.filter(|p| !p.is_empty()) {
            // A database holds no databases: its children are none, if it exists.
            get_database(database(&parent)?)?;
            return Ok(NamespacePage { items: vec![], done: true });
        }
        let fetch = |token: Option<&str>| {
            let answer = api::call("GetDatabases", Value::Object(page_input(token)))?;
            let rows = answer["DatabaseList"].as_array().cloned().unwrap_or_default();
            Ok((rows, answer["NextToken"].as_str().map(str::to_string)))
        };
        let keep = |db: &Value| db["Name"].as_str().map(str::to_string);
        let (rows, done) = walk(page.after.as_deref(), page.limit, fetch, keep)?;
        let items = rows.into_iter().map(|(name, cursor)| NamespaceEntry { namespace: vec![name], cursor }).collect();
        Ok(NamespacePage { items, done })
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        Ok(properties_of(&get_database(database(&ns)?)?))
    }

    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        let name = DATABASES.creatable(&ns).map_err(Error::BadRequest)?;
        api::call("CreateDatabase", json!({ "DatabaseInput": database_input(name, &props) }))?;
        Ok(props)
    }

    fn drop_namespace(ns: Vec<String>) -> Result<(), Error> {
        let db = database(&ns)?;
        // Glue would delete the tables with the database: refuse while it holds any.
        let tables = api::call("GetTables", json!({ "DatabaseName": db, "MaxResults": 1 }))?;
        if tables["TableList"].as_array().is_some_and(|t| !t.is_empty()) {
            return Err(Error::Conflict(format!("namespace {db} is not empty")));
        }
        api::call("DeleteDatabase", json!({ "Name": db })).map(drop)
    }

    fn update_namespace_properties(
        ns: Vec<String>,
        removals: Vec<String>,
        updates: Properties,
    ) -> Result<PropertiesUpdate, Error> {
        let db = database(&ns)?;
        let mut props = properties_of(&get_database(db)?);
        let (removed, missing) = rustberg_remote::properties::apply(&mut props, removals, &updates);
        api::call("UpdateDatabase", json!({ "Name": db, "DatabaseInput": database_input(db, &props) }))?;
        Ok(PropertiesUpdate { updated: updates.into_iter().map(|(k, _)| k).collect(), removed, missing })
    }

    fn list_tables(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        let db = database(&ns)?.to_string();
        let fetch = |token: Option<&str>| {
            let mut input = page_input(token);
            input.insert("DatabaseName".into(), json!(db));
            let answer = api::call("GetTables", Value::Object(input))?;
            let rows = answer["TableList"].as_array().cloned().unwrap_or_default();
            Ok((rows, answer["NextToken"].as_str().map(str::to_string)))
        };
        let keep = |t: &Value| is_iceberg(t).then(|| t["Name"].as_str().map(str::to_string)).flatten();
        let (rows, done) = walk(page.after.as_deref(), page.limit, fetch, keep)?;
        Ok(NamePage { items: rows.into_iter().map(|(name, cursor)| NameEntry { name, cursor }).collect(), done })
    }

    fn load_table(table: Ident, _: Option<String>) -> Result<Pointer, Error> {
        Ok(pointer_of(&get_iceberg_table(&table)?))
    }

    fn create_table(table: Ident, state: Pointer) -> Result<(), Error> {
        let db = database(&table.namespace)?;
        let input = table_input(&table.name, &state, None, None)?;
        api::call("CreateTable", json!({ "DatabaseName": db, "TableInput": input })).map(drop)
    }

    fn commit_table(table: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        let db = database(&table.namespace)?;
        let current = get_iceberg_table(&table)?;
        let at = metadata_location(&current);
        if at != expected {
            return Err(Error::Conflict(format!("{db}.{} is at {at}, not {expected}", table.name)));
        }
        let input = table_input(&table.name, &new, Some(&expected), Some(&current))?;
        let mut request = json!({ "DatabaseName": db, "TableInput": input });
        if let Some(version) = current["VersionId"].as_str() {
            request["VersionId"] = json!(version);
        }
        api::call("UpdateTable", request).map(drop)
    }

    fn drop_table(table: Ident) -> Result<Pointer, Error> {
        let db = database(&table.namespace)?;
        let last = get_iceberg_table(&table)?;
        api::call("DeleteTable", json!({ "DatabaseName": db, "Name": table.name }))?;
        Ok(pointer_of(&last))
    }

    fn rename_table(_: Ident, _: Ident) -> Result<(), Error> {
        Err(unsupported("atomic rename"))
    }

    fn list_views(ns: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        get_database(database(&ns)?)?;
        Ok(NamePage { items: vec![], done: true })
    }

    fn load_view(view: Ident) -> Result<Pointer, Error> {
        Err(Error::NotFound(format!("{}.{}: Glue mounts hold no views", dotted(&view.namespace), view.name)))
    }

    fn create_view(_: Ident, _: Pointer) -> Result<(), Error> {
        Err(unsupported("Iceberg views"))
    }

    fn commit_view(_: Ident, _: String, _: Pointer) -> Result<(), Error> {
        Err(unsupported("Iceberg views"))
    }

    fn drop_view(view: Ident) -> Result<Pointer, Error> {
        Self::load_view(view)
    }

    fn rename_view(_: Ident, _: Ident) -> Result<(), Error> {
        Err(unsupported("Iceberg views"))
    }

    fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> {
        Err(unsupported("multi-table transactions"))
    }
}

export!(Glue);
