//! The S3 Tables Rustberg backend: one Amazon S3 Tables table bucket as a writable
//! mount, reached only through the host's `http` capability (the host signs every
//! request with the mount's SigV4 credential; this component never sees a key).
//!
//! - The table bucket's namespaces are the mount's namespaces: one level, holding no
//!   properties.
//! - S3 Tables gives every table a bucket of its own. This component exports
//!   `placement`: the host asks it to reserve a table (CreateTable) and gets the
//!   location S3 Tables assigned (`warehouseLocation`), writes the first metadata file
//!   there, then `create-table` installs it (UpdateTableMetadataLocation). A reserved
//!   table has no metadata yet: it loads as not-found until then.
//! - A commit reads the table's metadata location and `versionToken`, refuses unless
//!   the location is the expected one, then updates it at that token, which S3 Tables
//!   checks: a stale token is a conflict.
//! - Rename is S3 Tables' own (atomic, at the token read). No views, no multi-table
//!   transactions: those endpoints are not listed, so the host answers 501.
//!
//! Paging: `rustberg-remote` page cursors over `continuationToken`.

mod api;

wit_bindgen::generate!({
    world: "placing-http-backend",
    path: "../../wit",
});

use api::bucket_arn;
use exports::rustberg::catalog::backend::Guest;
use exports::rustberg::catalog::placement::Guest as Placement;
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    Properties, PropertiesUpdate, TableCommit,
};
use rustberg_remote::one_level::{dotted, OneLevel};
use rustberg_remote::pages::walk;
use rustberg_remote::path::segment;
use serde_json::{json, Value};

/// The page size asked of S3 Tables: fixed, so a (token, offset) cursor finds its row.
const PAGE: &str = "100";

/// The table bucket's namespaces: one level.
const NAMESPACES: OneLevel = OneLevel { service: "S3 Tables" };

/// The name a namespace has in S3 Tables.
fn namespace(ns: &[String]) -> Result<&str, Error> {
    NAMESPACES.existing(ns).map_err(Error::NotFound)
}

fn unsupported(what: &str) -> Error {
    Error::Unsupported(NAMESPACES.has_no(what))
}

fn namespace_path(ns: &str) -> Result<String, Error> {
    Ok(format!("/namespaces/{}/{}", segment(&bucket_arn()?), segment(ns)))
}

fn table_path(table: &Ident, tail: &str) -> Result<String, Error> {
    let ns = namespace(&table.namespace)?;
    Ok(format!("/tables/{}/{}/{}{tail}", segment(&bucket_arn()?), segment(ns), segment(&table.name)))
}

/// A table's current state: its metadata location (none while only reserved), its
/// bucket, and the token a change must name.
struct State {
    metadata_location: Option<String>,
    warehouse_location: String,
    version_token: String,
}

fn state(table: &Ident) -> Result<State, Error> {
    let answer = api::send("GET", &table_path(table, "/metadata-location")?, &[], None)?;
    let text = |key: &str| answer[key].as_str().map(str::to_string);
    Ok(State {
        metadata_location: text("metadataLocation").filter(|l| !l.is_empty()),
        warehouse_location: text("warehouseLocation").unwrap_or_default(),
        version_token: text("versionToken").unwrap_or_default(),
    })
}

/// Installs `location` as the table's metadata at `token`; a stale token is a conflict.
fn install(table: &Ident, location: &str, token: &str) -> Result<(), Error> {
    let body = json!({ "metadataLocation": location, "versionToken": token });
    api::send("PUT", &table_path(table, "/metadata-location")?, &[], Some(body)).map(drop)
}

fn pointer(metadata_location: String) -> Pointer {
    // No metadata JSON: the host reads the file from the table's bucket.
    Pointer { metadata_location, metadata_json: String::new(), config: vec![], storage_credentials: String::new() }
}

/// One page of a listing at `path` asked with `query` (its filter and page size), the rows
/// under `rows` named by `name`.
fn list(
    path: &str,
    query: &[(&str, &str)],
    rows: &str,
    page: PageRequest,
    name: fn(&Value) -> Option<String>,
) -> Result<(Vec<(String, String)>, bool), Error> {
    let fetch = |token: Option<&str>| {
        let mut query: Vec<(&str, &str)> = query.to_vec();
        if let Some(token) = token {
            query.push(("continuationToken", token));
        }
        let answer = api::send("GET", path, &query, None)?;
        let found = answer[rows].as_array().cloned().unwrap_or_default();
        Ok((found, answer["continuationToken"].as_str().map(str::to_string)))
    };
    walk(page.after.as_deref(), page.limit, fetch, name)
}

struct S3Tables;

impl Guest for S3Tables {
    fn describe() -> Result<Description, Error> {
        bucket_arn()?;
        // No namespace properties and no views; the host plans scans and vends
        // credentials for the table's own bucket.
        let features = Features::WRITES | Features::RENAME | Features::HOST_READABLE_MANIFESTS;
        Ok(Description { features, remember: vec![] })
    }

    fn list_namespaces(parent: Option<Vec<String>>, page: PageRequest) -> Result<NamespacePage, Error> {
        if let Some(parent) = parent.filter(|p| !p.is_empty()) {
            // A namespace holds no namespaces: its children are none, if it exists.
            Self::load_namespace(parent)?;
            return Ok(NamespacePage { items: vec![], done: true });
        }
        let path = format!("/namespaces/{}", segment(&bucket_arn()?));
        let name = |row: &Value| row["namespace"][0].as_str().map(str::to_string);
        let (rows, done) = list(&path, &[("maxNamespaces", PAGE)], "namespaces", page, name)?;
        let items = rows.into_iter().map(|(name, cursor)| NamespaceEntry { namespace: vec![name], cursor }).collect();
        Ok(NamespacePage { items, done })
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        api::send("GET", &namespace_path(namespace(&ns)?)?, &[], None)?;
        Ok(vec![])
    }

    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        let name = NAMESPACES.creatable(&ns).map_err(Error::BadRequest)?;
        if !props.is_empty() {
            return Err(Error::BadRequest("S3 Tables namespaces hold no properties".into()));
        }
        let path = format!("/namespaces/{}", segment(&bucket_arn()?));
        match api::call("PUT", &path, &[], Some(json!({ "namespace": [name] })))? {
            Ok(_) => Ok(vec![]),
            Err(refusal) if refusal.status == 409 => Err(Error::AlreadyExists(refusal.said)),
            Err(refusal) => Err(refusal.into_error()),
        }
    }

    fn drop_namespace(ns: Vec<String>) -> Result<(), Error> {
        let name = namespace(&ns)?;
        // Refused while it holds any table, reserved ones included.
        let path = format!("/tables/{}", segment(&bucket_arn()?));
        let tables = api::send("GET", &path, &[("namespace", name), ("maxTables", "1")], None)?;
        if tables["tables"].as_array().is_some_and(|t| !t.is_empty()) {
            return Err(Error::Conflict(format!("namespace {name} is not empty")));
        }
        api::send("DELETE", &namespace_path(name)?, &[], None).map(drop)
    }

    fn update_namespace_properties(_: Vec<String>, _: Vec<String>, _: Properties) -> Result<PropertiesUpdate, Error> {
        Err(unsupported("namespace properties"))
    }

    fn list_tables(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        let name = namespace(&ns)?;
        let path = format!("/tables/{}", segment(&bucket_arn()?));
        let row_name = |row: &Value| row["name"].as_str().map(str::to_string);
        let (rows, done) = list(&path, &[("namespace", name), ("maxTables", PAGE)], "tables", page, row_name)?;
        Ok(NamePage { items: rows.into_iter().map(|(name, cursor)| NameEntry { name, cursor }).collect(), done })
    }

    fn load_table(table: Ident, _: Option<String>) -> Result<Pointer, Error> {
        match state(&table)?.metadata_location {
            Some(location) => Ok(pointer(location)),
            None => Err(Error::NotFound(format!(
                "{}.{} has no metadata yet: it is being created",
                dotted(&table.namespace),
                table.name
            ))),
        }
    }

    fn create_table(table: Ident, first: Pointer) -> Result<(), Error> {
        let current = state(&table)?;
        if current.metadata_location.is_some() {
            return Err(Error::AlreadyExists(format!("{}.{} already exists", dotted(&table.namespace), table.name)));
        }
        install(&table, &first.metadata_location, &current.version_token)
    }

    fn commit_table(table: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        let current = state(&table)?;
        let at = current.metadata_location.unwrap_or_default();
        if at != expected {
            return Err(Error::Conflict(format!(
                "{}.{} is at {at}, not {expected}",
                dotted(&table.namespace),
                table.name
            )));
        }
        install(&table, &new.metadata_location, &current.version_token)
    }

    fn drop_table(table: Ident) -> Result<Pointer, Error> {
        let last = state(&table)?;
        let location = last.metadata_location.ok_or_else(|| {
            Error::NotFound(format!(
                "{}.{} has no metadata yet: it is being created",
                dotted(&table.namespace),
                table.name
            ))
        })?;
        api::send("DELETE", &table_path(&table, "")?, &[("versionToken", &last.version_token)], None)?;
        Ok(pointer(location))
    }

    fn rename_table(source: Ident, destination: Ident) -> Result<(), Error> {
        let to = namespace(&destination.namespace)?;
        let current = state(&source)?;
        let body =
            json!({ "newNamespaceName": to, "newName": destination.name, "versionToken": current.version_token });
        match api::call("PUT", &table_path(&source, "/rename")?, &[], Some(body))? {
            Ok(_) => Ok(()),
            // The destination name is taken; a stale token would say so too, but the
            // token was read just now.
            Err(refusal) if refusal.status == 409 => Err(Error::AlreadyExists(refusal.said)),
            Err(refusal) => Err(refusal.into_error()),
        }
    }

    fn list_views(ns: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        Self::load_namespace(ns)?;
        Ok(NamePage { items: vec![], done: true })
    }

    fn load_view(view: Ident) -> Result<Pointer, Error> {
        Err(Error::NotFound(format!("{}.{}: S3 Tables mounts hold no views", dotted(&view.namespace), view.name)))
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

impl Placement for S3Tables {
    fn reserve_table(table: Ident) -> Result<String, Error> {
        let ns = namespace(&table.namespace)?;
        let path = format!("/tables/{}/{}", segment(&bucket_arn()?), segment(ns));
        let body = json!({ "name": table.name, "format": "ICEBERG" });
        match api::call("PUT", &path, &[], Some(body))? {
            Ok(_) => {}
            Err(refusal) if refusal.status == 409 => return Err(Error::AlreadyExists(refusal.said)),
            Err(refusal) => return Err(refusal.into_error()),
        }
        let assigned = state(&table)?.warehouse_location;
        if assigned.is_empty() {
            return Err(Error::Internal("S3 Tables assigned the table no warehouse location".into()));
        }
        Ok(assigned)
    }

    fn release_table(table: Ident) -> Result<(), Error> {
        let current = state(&table)?;
        if current.metadata_location.is_some() {
            // Created after all (by this request's retry, or another): not ours to drop.
            return Ok(());
        }
        api::send("DELETE", &table_path(&table, "")?, &[("versionToken", &current.version_token)], None).map(drop)
    }
}

export!(S3Tables);
