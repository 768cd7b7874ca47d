//! Iceberg table semantics on top of a backend: building metadata for new tables,
//! applying requirements and updates with the `iceberg` crate's spec types,
//! writing metadata files, and the compare-and-swap of the pointer.

mod staged;
pub mod views;

use std::collections::HashMap;
use std::str::FromStr;

use iceberg::spec::{FormatVersion, Schema, SortOrder, TableMetadata, TableMetadataBuilder, UnboundPartitionSpec};
use iceberg::{MetadataLocation, TableCreation, TableRequirement, TableUpdate};

use crate::error::Error;
use crate::mounts::Mount;
use crate::plugins::bindings::{Ident, Pointer, TableCommit};
use crate::plugins::BackendErrorKind;

/// How often a commit that lost the compare-and-swap is re-applied to the new
/// current metadata (its requirements are checked again each time).
const COMMIT_ATTEMPTS: usize = 4;

/// What the client sent to create a table.
pub struct NewTable {
    pub name: String,
    pub location: Option<String>,
    pub schema: Schema,
    pub partition_spec: Option<UnboundPartitionSpec>,
    pub write_order: Option<SortOrder>,
    pub properties: HashMap<String, String>,
}

/// A table's state after a create or a commit.
pub struct Committed {
    pub metadata_location: String,
    pub metadata_json: String,
}

/// A table's name as clients see it (the mount name restored).
fn dotted(mount: &Mount, ident: &Ident) -> String {
    let mut s = mount.restore(ident.namespace.clone()).join(".");
    s.push('.');
    s.push_str(&ident.name);
    s
}

fn no_such_table<'a>(mount: &'a Mount, ident: &'a Ident) -> impl FnOnce(String) -> Error + 'a {
    move |_| Error::NoSuchTable(format!("table {} does not exist", dotted(mount, ident)))
}

fn no_such_namespace<'a>(mount: &'a Mount, namespace: &'a [String]) -> impl FnOnce(String) -> Error + 'a {
    move |_| Error::NoSuchNamespace(format!("namespace {} does not exist", mount.restore(namespace.to_vec()).join(".")))
}

fn format_version(properties: &mut HashMap<String, String>) -> Result<FormatVersion, Error> {
    match properties.remove("format-version").as_deref() {
        None | Some("2") => Ok(FormatVersion::V2),
        Some("1") => Ok(FormatVersion::V1),
        Some("3") => Ok(FormatVersion::V3),
        Some(other) => Err(Error::BadRequest(format!("unsupported format-version {other:?}"))),
    }
}

/// Checks a client-supplied location against the mount's warehouse, or picks one.
pub(crate) fn table_location(mount: &Mount, ident: &Ident, requested: Option<String>) -> Result<String, Error> {
    match requested {
        Some(location) if !mount.warehouse()?.contains(&location) => Err(Error::BadRequest(format!(
            "location {location} is outside the warehouse {} of {}",
            mount.warehouse()?.root(),
            mount.label()
        ))),
        Some(location) => Ok(location.trim_end_matches('/').to_string()),
        None => Ok(mount.warehouse()?.default_location(&ident.namespace, &ident.name)),
    }
}

/// Builds the metadata of a new table (not yet written anywhere).
pub fn build_new(mount: &Mount, ident: &Ident, new: NewTable) -> Result<TableMetadata, Error> {
    let mut properties = new.properties;
    let creation = TableCreation {
        name: new.name,
        location: Some(table_location(mount, ident, new.location)?),
        format_version: format_version(&mut properties)?,
        schema: new.schema,
        partition_spec: new.partition_spec,
        sort_order: new.write_order,
        properties,
    };
    Ok(TableMetadataBuilder::from_table_creation(creation)?.build()?.metadata)
}

/// Writes a metadata file and returns its location and JSON.
async fn write_metadata(
    mount: &Mount,
    location: MetadataLocation,
    metadata: &TableMetadata,
) -> Result<Committed, Error> {
    metadata
        .write_to(mount.warehouse()?.io(), &location)
        .await
        .map_err(|e| Error::Internal(format!("writing table metadata to {location}: {e}")))?;
    let metadata_json = serde_json::to_string(metadata).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Committed { metadata_location: location.to_string(), metadata_json })
}

/// Writes the first metadata file of `metadata` and records the table. If the
/// backend refuses, the file is removed again: nothing is left half-written.
pub async fn create(mount: &Mount, ident: &Ident, metadata: &TableMetadata) -> Result<Committed, Error> {
    let location = MetadataLocation::new_with_metadata(metadata.location(), metadata);
    let committed = write_metadata(mount, location, metadata).await?;
    let pointer = Pointer {
        metadata_location: committed.metadata_location.clone(),
        metadata_json: committed.metadata_json.clone(),
        config: vec![],
        storage_credentials: String::new(),
    };
    if let Err(e) = mount.backend.create_table(ident.clone(), pointer).await {
        mount.warehouse()?.delete_quietly(&committed.metadata_location).await;
        return Err(Error::from_backend(e, no_such_namespace(mount, &ident.namespace)));
    }
    Ok(committed)
}

/// Loads a table's pointer.
/// Loads a table's pointer, passing on the client's access-delegation request.
pub async fn load(mount: &Mount, ident: &Ident, delegation: Option<String>) -> Result<Pointer, Error> {
    mount
        .backend
        .load_table(ident.clone(), delegation)
        .await
        .map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))
}

/// Parses the metadata a backend returned (reading the file if it kept only the location).
pub async fn current_metadata(mount: &Mount, pointer: &Pointer) -> Result<TableMetadata, Error> {
    if pointer.metadata_json.is_empty() {
        return TableMetadata::read_from(mount.warehouse()?.io(), &pointer.metadata_location)
            .await
            .map_err(|e| Error::Internal(format!("reading {}: {e}", pointer.metadata_location)));
    }
    serde_json::from_str(&pointer.metadata_json)
        .map_err(|e| Error::Internal(format!("the stored metadata of {} is invalid: {e}", pointer.metadata_location)))
}

/// Where a table's files live, without parsing the whole metadata when the backend
/// returned it.
pub async fn location(mount: &Mount, pointer: &Pointer) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct Located {
        location: String,
    }
    if pointer.metadata_json.is_empty() {
        return Ok(current_metadata(mount, pointer).await?.location().to_string());
    }
    serde_json::from_str::<Located>(&pointer.metadata_json)
        .map(|l| l.location)
        .map_err(|e| Error::Internal(format!("the stored metadata of {} is invalid: {e}", pointer.metadata_location)))
}

/// Applies a commit: checks every requirement against the current metadata,
/// applies the updates, writes a new metadata file and swaps the pointer. A lost
/// swap is retried against the new current metadata; a failed requirement is 409.
pub async fn commit(
    mount: &Mount,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Result<Committed, Error> {
    if requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
        return staged::create_from_updates(mount, ident, requirements, updates).await;
    }
    for _ in 0..COMMIT_ATTEMPTS {
        let (expected, new) = prepare(mount, ident, requirements, updates).await?;
        let committed =
            Committed { metadata_location: new.metadata_location.clone(), metadata_json: new.metadata_json.clone() };
        match mount.backend.commit_table(ident.clone(), expected, new).await {
            Ok(()) => return Ok(committed),
            Err(e) => {
                mount.warehouse()?.delete_quietly(&committed.metadata_location).await;
                if e.kind != BackendErrorKind::Conflict {
                    return Err(Error::from_backend(e, no_such_table(mount, ident)));
                }
            }
        }
    }
    Err(Error::CommitFailed(format!("table {} kept changing under concurrent commits; retry", dotted(mount, ident))))
}

/// Checks the requirements against a table's current metadata, applies the updates
/// and writes the new metadata file: the location the swap expects, and the new state.
async fn prepare(
    mount: &Mount,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Result<(String, Pointer), Error> {
    let pointer = load(mount, ident, None).await?;
    let current = current_metadata(mount, &pointer).await?;
    for requirement in requirements {
        requirement.check(Some(&current)).map_err(|e| {
            Error::CommitFailed(format!("requirement failed for {}: {}", dotted(mount, ident), e.message()))
        })?;
    }
    let previous = MetadataLocation::from_str(&pointer.metadata_location).ok();
    let mut builder = TableMetadataBuilder::new_from_metadata(current, Some(pointer.metadata_location.clone()));
    for update in updates {
        builder = update.clone().apply(builder)?;
    }
    let metadata = builder.build()?.metadata;
    let location = match previous {
        Some(previous) => previous.with_next_version().with_new_metadata(&metadata),
        None => MetadataLocation::new_with_metadata(metadata.location(), &metadata),
    };
    let committed = write_metadata(mount, location, &metadata).await?;
    let new = Pointer {
        metadata_location: committed.metadata_location,
        metadata_json: committed.metadata_json,
        config: pointer.config,
        storage_credentials: String::new(),
    };
    Ok((pointer.metadata_location, new))
}

/// One table's part of a multi-table commit.
pub struct TableChange {
    pub ident: Ident,
    pub requirements: Vec<TableRequirement>,
    pub updates: Vec<TableUpdate>,
}

/// Commits changes to several tables of one backend atomically: every requirement is
/// checked and every new metadata file written first, then one conditional commit
/// swaps every pointer, or none. Anything failing answers 409 and leaves no file behind.
pub async fn commit_transaction(mount: &Mount, changes: &[TableChange]) -> Result<(), Error> {
    let mut commits = Vec::with_capacity(changes.len());
    let mut written = Vec::with_capacity(changes.len());
    let mut outcome = Ok(());
    for change in changes {
        if change.requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
            outcome = Err(Error::BadRequest("assert-create is not supported inside a transaction".into()));
            break;
        }
        match prepare(mount, &change.ident, &change.requirements, &change.updates).await {
            Ok((expected, new)) => {
                written.push(new.metadata_location.clone());
                commits.push(TableCommit { ident: change.ident.clone(), expected_metadata_location: expected, new });
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if outcome.is_ok() {
        outcome = mount.backend.commit_transaction(commits).await.map_err(|e| match e.kind {
            BackendErrorKind::Conflict => Error::CommitFailed(format!(
                "a table in the transaction was changed by a concurrent commit; nothing was applied ({})",
                mount.label()
            )),
            _ => Error::from_backend(e, Error::NoSuchTable),
        });
    }
    if outcome.is_err() {
        for location in &written {
            mount.warehouse()?.delete_quietly(location).await;
        }
    }
    outcome
}

/// Records an existing metadata file as a table (registerTable).
pub async fn register(
    mount: &Mount,
    ident: &Ident,
    metadata_location: &str,
    overwrite: bool,
) -> Result<Committed, Error> {
    if !mount.warehouse()?.contains(metadata_location) {
        return Err(Error::BadRequest(format!(
            "metadata location {metadata_location} is outside the warehouse {} of {}",
            mount.warehouse()?.root(),
            mount.label()
        )));
    }
    let metadata = mount.warehouse()?.read_table_metadata(metadata_location).await?;
    let metadata_json = serde_json::to_string(&metadata).map_err(|e| Error::Internal(e.to_string()))?;
    let pointer = Pointer {
        metadata_location: metadata_location.to_string(),
        metadata_json,
        config: vec![],
        storage_credentials: String::new(),
    };
    let committed = Committed {
        metadata_location: pointer.metadata_location.clone(),
        metadata_json: pointer.metadata_json.clone(),
    };
    match mount.backend.create_table(ident.clone(), pointer.clone()).await {
        Ok(()) => Ok(committed),
        Err(e) if e.kind == BackendErrorKind::AlreadyExists && overwrite => {
            let current = load(mount, ident, None).await?;
            mount
                .backend
                .commit_table(ident.clone(), current.metadata_location, pointer)
                .await
                .map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))?;
            Ok(committed)
        }
        Err(e) => Err(Error::from_backend(e, no_such_namespace(mount, &ident.namespace))),
    }
}

/// Forgets a table; with `purge`, also deletes its files.
pub async fn drop_table(mount: &Mount, ident: &Ident, purge: bool) -> Result<(), Error> {
    let pointer = mount
        .backend
        .drop_table(ident.clone())
        .await
        .map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))?;
    if purge {
        match current_metadata(mount, &pointer).await {
            Ok(metadata) => mount.warehouse()?.purge(metadata.location()).await?,
            Err(e) => {
                tracing::warn!(table = %dotted(mount, ident), error = %e, "dropped, but could not purge")
            }
        }
    }
    Ok(())
}

/// Fails with NoSuchNamespace unless `namespace` exists: asked before a rename, so a
/// missing destination namespace is reported as such.
async fn require_namespace(mount: &Mount, namespace: &[String]) -> Result<(), Error> {
    mount
        .backend
        .load_namespace(namespace.to_vec())
        .await
        .map(|_| ())
        .map_err(|e| Error::from_backend(e, no_such_namespace(mount, namespace)))
}

/// Renames a table inside one backend.
pub async fn rename(mount: &Mount, source: &Ident, destination: &Ident) -> Result<(), Error> {
    require_namespace(mount, &destination.namespace).await?;
    mount
        .backend
        .rename_table(source.clone(), destination.clone())
        .await
        .map_err(|e| Error::from_backend(e, no_such_table(mount, source)))
}
