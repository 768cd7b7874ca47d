//! Iceberg table semantics on top of a backend: building metadata for new tables,
//! applying requirements and updates with the `iceberg` crate's spec types,
//! writing metadata files, and the compare-and-swap of the pointer.

pub mod backfill;
pub mod held;
pub mod locations;
mod purge;
mod requirements;
pub mod serial;
mod staged;
pub mod views;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use iceberg::compression::CompressionCodec;
use iceberg::spec::{FormatVersion, Schema, SortOrder, TableMetadata, TableMetadataBuilder, UnboundPartitionSpec};
use iceberg::{MetadataLocation, TableCreation, TableRequirement, TableUpdate};

use self::locations::{NewClaim, Placement};
use crate::error::{change_failed, Error, Member};
use crate::mounts::Mount;
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::{Ident, Pointer, TableCommit};
use crate::sandbox::BackendErrorKind;
use crate::storage::location::Location;
use crate::storage::location_index::{ClaimId, ClaimKind};

/// How often a commit that lost the compare-and-swap is re-applied to the new
/// current metadata (its requirements are checked again each time): only a failed
/// requirement, or a table that never stops changing, reaches the client as 409.
const COMMIT_ATTEMPTS: usize = 16;

/// What the client sent to create a table.
pub struct NewTable {
    pub name: String,
    pub location: Option<String>,
    pub schema: Schema,
    pub partition_spec: Option<UnboundPartitionSpec>,
    pub write_order: Option<SortOrder>,
    pub properties: HashMap<String, String>,
}

/// A table's (or view's) state after a create or a commit.
pub struct Committed {
    pub metadata_location: String,
    pub metadata_json: Bytes,
}

/// A table's name as clients see it (the mount name restored).
fn dotted(mount: &Mount, ident: &Ident) -> String {
    let mut s = mount.restore(ident.namespace.clone()).join(".");
    s.push('.');
    s.push_str(&ident.name);
    s
}

/// A table's absence, in the client's names. The backend's words are added when they
/// say more than that it does not exist (a Glue table that is not an Iceberg table).
fn no_such_table<'a>(mount: &'a Mount, ident: &'a Ident) -> impl FnOnce(String) -> Error + 'a {
    move |reason| {
        let absent = Error::no_such_table(dotted(mount, ident));
        match reason.trim_end_matches('.').ends_with("does not exist") || reason.is_empty() {
            true => absent,
            false => Error::NoSuchTable(format!("{absent}: {reason}")),
        }
    }
}

fn no_such_namespace<'a>(mount: &'a Mount, namespace: &'a [String]) -> impl FnOnce(String) -> Error + 'a {
    move |_| Error::no_such_namespace(mount.restore(namespace.to_vec()).join("."))
}

fn format_version(properties: &mut HashMap<String, String>) -> Result<FormatVersion, Error> {
    match properties.remove("format-version").as_deref() {
        None | Some("2") => Ok(FormatVersion::V2),
        Some("1") => Ok(FormatVersion::V1),
        Some("3") => Ok(FormatVersion::V3),
        Some(other) => Err(Error::BadRequest(format!("unsupported format-version {other:?}"))),
    }
}

/// Builds the metadata of a new table (not yet written anywhere) at its checked
/// location, which the create then claims.
pub async fn build_new(mount: &Mount, ident: &Ident, new: NewTable) -> Result<(TableMetadata, Placement), Error> {
    let mut properties = new.properties;
    let format_version = format_version(&mut properties)?;
    let placement = locations::place(mount, ident, new.location.as_deref()).await?;
    let creation = TableCreation {
        name: new.name,
        location: Some(placement.location.recorded_as(new.location.as_deref())),
        format_version,
        schema: new.schema,
        partition_spec: new.partition_spec,
        sort_order: new.write_order,
        properties,
    };
    match TableMetadataBuilder::from_table_creation(creation).and_then(|b| b.build()) {
        Ok(built) => Ok((built.metadata, placement)),
        Err(e) => {
            placement.release(mount).await;
            Err(e.into())
        }
    }
}

/// The checked location of a table's metadata (every file of the table lies under it).
pub fn table_location(mount: &Mount, metadata: &TableMetadata) -> Result<Location, Error> {
    mount
        .warehouse()?
        .locate(metadata.location())
        .map_err(locations::bad_location("the table location", metadata.location()))
}

/// Writes a metadata file under the table's location, serializing it once into a
/// buffer of about `expected_len` bytes (the previous file's size, or 0), and holds it
/// (see [`held`]); returns its location and JSON.
async fn write_metadata(
    mount: &Mount,
    location: MetadataLocation,
    metadata: TableMetadata,
    expected_len: usize,
) -> Result<Committed, Error> {
    let io = mount.warehouse()?.scoped_io(&table_location(mount, &metadata)?);
    // Room for a few more entries than before, so the buffer is not regrown and copied.
    let mut json = metadata_json(&metadata, expected_len + expected_len / 8 + 1024)?;
    // Held by its length (`held` weighs it so): give back the room left over.
    json.shrink_to_fit();
    let json = Bytes::from(json);
    let failed = |e: iceberg::Error| Error::Internal(format!("writing table metadata to {location}: {e}"));
    match location.compression_codec() {
        CompressionCodec::None => io.new_output(location.to_string()).map_err(failed)?.write(json.clone()).await,
        // A compressed file is written by the spec crate, which compresses what it serializes.
        _ => metadata.write_to(&io, &location).await,
    }
    .map_err(failed)?;
    let metadata_location = location.to_string();
    held::keep_built(mount, &metadata_location, json.clone(), metadata);
    Ok(Committed { metadata_location, metadata_json: json })
}

/// A table's metadata as JSON, written into a buffer of `capacity` bytes to start with:
/// how the host writes table metadata, to a file or to a client. sonic-rs writes what
/// serde_json writes, escaping strings many bytes at a time: a metadata file is
/// mostly its log of earlier files' paths.
pub fn metadata_json(metadata: &TableMetadata, capacity: usize) -> Result<Vec<u8>, Error> {
    let mut json = Vec::with_capacity(capacity);
    sonic_rs::to_writer(&mut json, metadata).map_err(|e| Error::Internal(format!("table metadata as JSON: {e}")))?;
    Ok(snapshots_in_commit_order(json))
}

/// The JSON with its `snapshots` list in commit order (sequence number, then time,
/// then id). The spec crate keeps snapshots in a hash map and writes them in its
/// order, which differs between two writes of the same table; Iceberg's Java client
/// keeps the list as written and compares it (`Table::snapshots`). Left as it is when
/// already in order, or when the list or a snapshot's numbers are not where the spec
/// crate writes them.
fn snapshots_in_commit_order(json: Vec<u8>) -> Vec<u8> {
    let Ok(list) = sonic_rs::get_from_slice(&json, ["snapshots"]) else { return json };
    let raw = list.as_raw_str();
    let Some(start) =
        (raw.as_ptr() as usize).checked_sub(json.as_ptr() as usize).filter(|s| s + raw.len() <= json.len())
    else {
        return json;
    };
    // The numbers come before the summary in what the spec crate writes: read there,
    // they cost a short search; parsing each snapshot whole cost a fifth of a commit.
    // A missing sequence number (format version 1) is 0.
    let order_of = |raw: &str| {
        let head = raw.split_once("\"summary\"").map_or(raw, |(head, _)| head);
        let number = |key: &str| -> Option<i64> {
            let after = &head[head.find(key)? + key.len()..];
            let end = after.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(after.len());
            after[..end].parse().ok()
        };
        let time = number("\"timestamp-ms\":")?;
        let id = number("\"snapshot-id\":")?;
        Some((number("\"sequence-number\":").unwrap_or(0), time, id))
    };
    let mut items = Vec::new();
    for item in sonic_rs::to_array_iter(raw) {
        let Some(entry) = item.ok().and_then(|item| Some((order_of(item.as_raw_str())?, item))) else { return json };
        items.push(entry);
    }
    if items.is_sorted_by_key(|(key, _)| *key) {
        return json;
    }
    items.sort_by_key(|(key, _)| *key);
    let mut ordered = Vec::with_capacity(json.len());
    ordered.extend_from_slice(&json[..start]);
    ordered.push(b'[');
    for (n, (_, item)) in items.iter().enumerate() {
        if n > 0 {
            ordered.push(b',');
        }
        ordered.extend_from_slice(item.as_raw_str().as_bytes());
    }
    ordered.push(b']');
    ordered.extend_from_slice(&json[start + raw.len()..]);
    ordered
}

/// The pointer a backend records for a table or view. It carries the metadata JSON
/// (a backend may need to read it: Glue describes the table's columns).
fn pointer_of(committed: &Committed) -> Pointer {
    Pointer {
        // Checked as UTF-8 the fast way (it is: serde_json wrote it), not char by char.
        metadata_json: String::from_utf8(committed.metadata_json.to_vec())
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ..location_only(committed)
    }
}

fn location_only(committed: &Committed) -> Pointer {
    Pointer {
        metadata_location: committed.metadata_location.clone(),
        metadata_json: String::new(),
        config: vec![],
        storage_credentials: String::new(),
    }
}

/// A table's pointer for its backend: with the metadata JSON only for a backend that
/// reads it (the native one records the location alone: the JSON would be copied into
/// the guest for nothing).
fn table_pointer(mount: &Mount, committed: &Committed) -> Pointer {
    match mount.backend.wants_table_json() {
        true => pointer_of(committed),
        false => location_only(committed),
    }
}

/// Claims the table's location, writes the first metadata file of `metadata` and
/// records the table. If the backend says it did not record it, the file and the
/// claim are removed again; if the outcome is unknown, both stay.
pub async fn create(
    mount: &Mount,
    ident: &Ident,
    metadata: &TableMetadata,
    placement: &Placement,
) -> Result<Committed, Error> {
    let warehouse = mount.warehouse()?;
    let claim = match placement.claim(warehouse, ClaimKind::Table, ClaimId::new()).await {
        Ok(claim) => claim,
        Err(e) => {
            placement.release(mount).await;
            return Err(e);
        }
    };
    let location = MetadataLocation::new_with_metadata(metadata.location(), metadata);
    let committed = match write_metadata(mount, location, metadata.clone(), 0).await {
        Ok(committed) => committed,
        Err(e) => {
            locations::abandon(warehouse, None, &claim).await;
            placement.release(mount).await;
            return Err(e);
        }
    };
    if let Err(e) = mount.backend.create_table(ident.clone(), table_pointer(mount, &committed)).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, Some(&committed.metadata_location), &claim).await;
            placement.release(mount).await;
        }
        return Err(created_failed(mount, ident, Member::Table, e).await);
    }
    Ok(committed)
}

/// The answer to a create or register (of a table or view) the backend refused or
/// may have applied.
async fn created_failed(mount: &Mount, ident: &Ident, creating: Member, e: crate::sandbox::BackendError) -> Error {
    match e.kind {
        BackendErrorKind::AlreadyExists => {
            Error::name_taken(dotted(mount, ident), creating, holder_of(mount, ident).await)
        }
        _ => change_failed(e, no_such_namespace(mount, &ident.namespace)),
    }
}

/// Which kind holds a name that a create or rename found taken (asked only then).
async fn holder_of(mount: &Mount, ident: &Ident) -> Member {
    match mount.backend.load_table(ident, None).await {
        Ok(_) => Member::Table,
        Err(_) => Member::View,
    }
}

/// Loads a table's pointer, passing on the client's access-delegation request.
pub async fn load(mount: &Mount, ident: &Ident, delegation: Option<String>) -> Result<Arc<Pointer>, Error> {
    mount.backend.load_table(ident, delegation).await.map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))
}

/// A loaded table ready to hand to a client.
pub struct Loaded {
    /// The pointer (shared with the backend's kept answers: serve its JSON from `held`).
    pub pointer: Arc<Pointer>,
    pub held: Arc<held::Held>,
}

/// A loaded pointer with its metadata (see [`held::served`]).
pub async fn servable(mount: &Mount, pointer: impl Into<Arc<Pointer>>) -> Result<Loaded, Error> {
    let pointer = pointer.into();
    let held = held::served(mount, &pointer).await?;
    Ok(Loaded { pointer, held })
}

/// The current metadata of a loaded table, to read it (plan a scan, purge its files).
pub async fn current_metadata(mount: &Mount, pointer: &Pointer) -> Result<TableMetadata, Error> {
    let held = held::current(mount, pointer).await?;
    held.metadata().map_err(invalid_metadata(pointer))
}

fn invalid_metadata(pointer: &Pointer) -> impl FnOnce(serde_json::Error) -> Error + '_ {
    move |e| Error::Internal(format!("the metadata of {} is invalid: {e}", pointer.metadata_location))
}

/// Where a table's files live, checked.
pub fn location(mount: &Mount, held: &held::Held) -> Result<Location, Error> {
    mount.warehouse()?.locate(&held.location).map_err(locations::bad_location("the table location", &held.location))
}

/// Applies a commit: checks every requirement against the current metadata,
/// applies the updates, writes a new metadata file and swaps the pointer. A lost
/// swap is retried against the new current metadata; a failed requirement is 409.
/// The new file is deleted only when the backend said the swap did not apply.
pub async fn commit(
    mount: &Mount,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Result<Committed, Error> {
    if requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
        return staged::create_from_updates(mount, ident, requirements, updates).await;
    }
    let warehouse = mount.warehouse()?;
    let _turn = serial::one_at_a_time(&mount.space, ident).await;
    for round in 0..COMMIT_ATTEMPTS {
        if round > 0 {
            tokio::time::sleep(crate::storage::kv::swap_backoff(round)).await;
        }
        let mut attempt = mount.backend.attempt();
        let prepared = prepare(mount, &mut attempt, ident, requirements, updates).await?;
        let (expected, new) = (prepared.expected.clone(), prepared.new.clone());
        let swapped = mount.backend.commit_table_in(&mut attempt, ident.clone(), expected, new).await;
        match swapped {
            Ok(()) => {
                prepared.landed(mount);
                return Ok(prepared.committed);
            }
            Err(e) if e.kind.did_not_apply() => {
                prepared.undo(mount, warehouse).await;
                if e.kind != BackendErrorKind::Conflict {
                    return Err(Error::from_backend(e, no_such_table(mount, ident)));
                }
            }
            Err(e) => return Err(change_failed(e, no_such_table(mount, ident))),
        }
    }
    Err(Error::CommitFailed(format!("table {} kept changing under concurrent commits; retry", dotted(mount, ident))))
}

/// A change written and ready to swap in: what the swap expects, the new state (as
/// the backend records it, and as the client is answered), and a location newly
/// claimed for it (a `set-location`).
struct Prepared {
    expected: String,
    new: Pointer,
    committed: Committed,
    claim: Option<NewClaim>,
}

impl Prepared {
    /// Forgets the version a change that applied replaced: no pointer names it now.
    fn landed(&self, mount: &Mount) {
        held::forget(mount, &self.expected);
    }

    /// Removes what was written for a change that did not apply.
    async fn undo(&self, mount: &Mount, warehouse: &crate::storage::warehouse::Warehouse) {
        held::forget(mount, &self.new.metadata_location);
        locations::abandon(warehouse, Some(&self.new.metadata_location), &self.claim).await;
    }
}

/// Checks the requirements against a table's current metadata, applies the updates
/// and writes the new metadata file. A new location (`set-location`) is checked and
/// claimed first.
async fn prepare(
    mount: &Mount,
    attempt: &mut Attempt,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Result<Prepared, Error> {
    // Owned: its location and config go into the commit (copied if a kept answer).
    let loaded = mount.backend.load_table_in(Some(attempt), ident, None).await;
    let pointer = Arc::unwrap_or_clone(loaded.map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))?);
    let held = held::current(mount, &pointer).await?;
    let current = held.take_metadata().map_err(invalid_metadata(&pointer))?;
    requirements::check(requirements, &current)?;
    let current_location = current.location().to_string();
    let previous = MetadataLocation::from_str(&pointer.metadata_location).ok();
    let mut builder = TableMetadataBuilder::new_from_metadata(current, Some(pointer.metadata_location.clone()));
    for update in updates {
        builder = match update {
            // Stored normalized, like every location.
            TableUpdate::SetLocation { location } => {
                let checked =
                    mount.warehouse()?.locate(location).map_err(locations::bad_location("the location", location))?;
                TableUpdate::SetLocation { location: checked.recorded_as(Some(location)) }.apply(builder)?
            }
            update => update.clone().apply(builder)?,
        };
    }
    let metadata = builder.build()?.metadata;
    let claim =
        locations::claim_move(mount, &ident.namespace, &current_location, metadata.location(), ClaimKind::Table)
            .await?;
    let location = match previous {
        // A moved table writes its next metadata file under its new location.
        Some(previous) if metadata.location() == current_location => {
            previous.with_next_version().with_new_metadata(&metadata)
        }
        _ => MetadataLocation::new_with_metadata(metadata.location(), &metadata),
    };
    let committed = match write_metadata(mount, location, metadata, held.json.len()).await {
        Ok(committed) => committed,
        Err(e) => {
            locations::abandon(mount.warehouse()?, None, &claim).await;
            return Err(e);
        }
    };
    let new = Pointer { config: pointer.config, ..table_pointer(mount, &committed) };
    Ok(Prepared { expected: pointer.metadata_location, new, committed, claim })
}

/// One table's part of a multi-table commit.
pub struct TableChange {
    pub ident: Ident,
    pub requirements: Vec<TableRequirement>,
    pub updates: Vec<TableUpdate>,
}

/// Commits changes to several tables of one backend atomically: every requirement is
/// checked and every new metadata file written first, then one conditional commit
/// swaps every pointer, or none. A refusal answers 409 and leaves no file behind; an
/// unknown outcome keeps the files. It is one attempt: a lost swap is 409, not retried.
pub async fn commit_transaction(mount: &Mount, changes: &[TableChange]) -> Result<(), Error> {
    let mut attempt = mount.backend.attempt();
    let warehouse = mount.warehouse()?;
    let mut prepared = Vec::with_capacity(changes.len());
    let mut outcome = Ok(());
    for change in changes {
        if change.requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
            outcome = Err(Error::BadRequest("assert-create is not supported inside a transaction".into()));
            break;
        }
        match prepare(mount, &mut attempt, &change.ident, &change.requirements, &change.updates).await {
            Ok(p) => prepared.push((change.ident.clone(), p)),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if outcome.is_ok() {
        let commits = prepared
            .iter()
            .map(|(ident, p)| TableCommit {
                ident: ident.clone(),
                expected_metadata_location: p.expected.clone(),
                new: p.new.clone(),
            })
            .collect();
        match mount.backend.commit_transaction_in(&mut attempt, commits).await {
            Ok(()) => {
                for (_, p) in &prepared {
                    p.landed(mount);
                }
                return Ok(());
            }
            Err(e) if e.kind == BackendErrorKind::Conflict => {
                outcome = Err(Error::CommitFailed(format!(
                    "a table in the transaction was changed by a concurrent commit; nothing was applied ({})",
                    mount.label()
                )))
            }
            Err(e) if e.kind.did_not_apply() => outcome = Err(Error::from_backend(e, Error::NoSuchTable)),
            Err(e) => return Err(change_failed(e, Error::NoSuchTable)),
        }
    }
    for (_, p) in &prepared {
        p.undo(mount, warehouse).await;
    }
    outcome
}

/// Records an existing metadata file as a table (registerTable). The file and the
/// table location it names must lie under the namespace's location, and the
/// location must be free: registering the same files twice is 409.
pub async fn register(
    mount: &Mount,
    ident: &Ident,
    metadata_location: &str,
    overwrite: bool,
) -> Result<Committed, Error> {
    let warehouse = mount.warehouse()?;
    // A taken name is said as such, before the files (which may be that table's own).
    if !overwrite && load(mount, ident, None).await.is_ok() {
        return Err(Error::name_taken(dotted(mount, ident), Member::Table, Member::Table));
    }
    let chain = locations::chain(mount, &ident.namespace).await?;
    let file = locations::registered_file(warehouse, &chain, metadata_location)?;
    let metadata_location = file.to_string();
    // A file the client names that is missing or invalid is its mistake: a bad request.
    let metadata = TableMetadata::read_from(&warehouse.scoped_io(chain.own()), &metadata_location)
        .await
        .map_err(|e| Error::BadRequest(format!("cannot read table metadata at {metadata_location}: {e}")))?;
    let location = locations::registered_location(warehouse, &chain, &file, metadata.location())?;
    let metadata_json = Bytes::from(metadata_json(&metadata, 0)?);
    held::keep_built(mount, &metadata_location, metadata_json.clone(), metadata);
    let committed = Committed { metadata_location, metadata_json };
    let existing = match overwrite {
        false => None,
        true => match load(mount, ident, None).await {
            Ok(pointer) => Some(pointer),
            Err(Error::NoSuchTable(_)) => None,
            Err(e) => return Err(e),
        },
    };
    let Some(existing) = existing else {
        let claim =
            Placement { location, chain, reserved: None }.claim(warehouse, ClaimKind::Table, ClaimId::new()).await?;
        if let Err(e) = mount.backend.create_table(ident.clone(), table_pointer(mount, &committed)).await {
            if e.kind.did_not_apply() {
                locations::abandon(warehouse, None, &claim).await;
            }
            return Err(created_failed(mount, ident, Member::Table, e).await);
        }
        return Ok(committed);
    };
    let current = held::current(mount, &existing).await?;
    let claim =
        locations::claim_move(mount, &ident.namespace, &current.location, &location.to_string(), ClaimKind::Table)
            .await?;
    if let Err(e) = mount
        .backend
        .commit_table(ident.clone(), existing.metadata_location.clone(), table_pointer(mount, &committed))
        .await
    {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, None, &claim).await;
        }
        return Err(change_failed(e, no_such_table(mount, ident)));
    }
    Ok(committed)
}

/// Unregisters a table: the catalog forgets it and keeps every file, and the claim on
/// its location is released (as any drop's is), so the files can be registered again
/// (here or elsewhere). Its metadata as of the drop: a commit that landed first is in it.
pub async fn unregister(mount: &Mount, ident: &Ident) -> Result<Committed, Error> {
    // Held before the drop, so the answer seldom needs a read after it.
    let before = servable(mount, load(mount, ident, None).await?).await?;
    let pointer = drop_table(mount, ident, false).await?;
    let last = if pointer.metadata_location == before.pointer.metadata_location {
        before
    } else {
        // A commit landed between the load and the drop: its metadata is the last.
        servable(mount, pointer).await.map_err(|e| {
            Error::Internal(format!(
                "{} was unregistered, but its last metadata cannot be read: {e}",
                dotted(mount, ident)
            ))
        })?
    };
    Ok(Committed { metadata_location: last.pointer.metadata_location.clone(), metadata_json: last.held.json.clone() })
}

/// Forgets a table. What follows the pointer's removal — the purge, if asked for,
/// then releasing the table's locations — runs as its own task, so a client that
/// disconnects cannot stop it half-way. Without a purge the answer waits for the
/// release (a dropped table's files can be registered again at once); with one, it
/// comes as soon as the pointer is gone. The pointer the table had when dropped.
pub async fn drop_table(mount: &Mount, ident: &Ident, purge: bool) -> Result<Pointer, Error> {
    let pointer = mount
        .backend
        .drop_table(ident.clone())
        .await
        .map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))?;
    let Some(warehouse) = mount.warehouse.clone() else {
        return Ok(pointer);
    };
    let metadata = current_metadata(mount, &pointer).await;
    let table = dotted(mount, ident);
    let metadata_location = pointer.metadata_location.clone();
    let after = tokio::spawn(async move {
        let metadata = match metadata {
            Ok(metadata) => metadata,
            // A store that assigns locations (S3 Tables) deletes the table's bucket with
            // the table; the bucket its metadata lay in is what it held.
            Err(_) if warehouse.assigned() => {
                let bucket = Location::parse(&metadata_location).ok().and_then(|l| l.ancestors().next());
                if let Some(bucket) = bucket {
                    locations::release_all(&warehouse, &bucket).await;
                }
                return;
            }
            Err(e) => {
                return tracing::warn!(%table, error = %e, "dropped, but its metadata cannot be read: nothing purged")
            }
        };
        let location = match warehouse.locate(metadata.location()) {
            Ok(location) => location,
            Err(e) => {
                let raw = metadata.location();
                return tracing::warn!(%table, location = raw, error = %e, "dropped; its location is invalid: nothing purged");
            }
        };
        if purge {
            let report = purge::purge(&warehouse, &location, &metadata_location, &metadata).await;
            if !report.refused.is_empty() {
                tracing::warn!(%table, refused = ?report.refused, "purge: left alone files outside the table's location");
            }
            tracing::info!(%table, %location, deleted = report.deleted, refused = report.refused.len(), failed = report.failed, "purged");
        }
        locations::release_all(&warehouse, &location).await;
    });
    if !purge {
        let _ = after.await;
    }
    Ok(pointer)
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
    let renamed = mount.backend.rename_table(source.clone(), destination.clone()).await;
    rename_outcome(mount, source, destination, renamed, no_such_table(mount, source)).await
}

/// The answer to a rename of a table or view: a taken destination in the words Iceberg's
/// clients expect (which kind holds it), a missing source as `absent` says.
async fn rename_outcome(
    mount: &Mount,
    source: &Ident,
    destination: &Ident,
    renamed: Result<(), crate::sandbox::BackendError>,
    absent: impl FnOnce(String) -> Error,
) -> Result<(), Error> {
    match renamed {
        Ok(()) => Ok(()),
        Err(e) if e.kind == BackendErrorKind::AlreadyExists => Err(Error::rename_target_taken(
            dotted(mount, source),
            dotted(mount, destination),
            holder_of(mount, destination).await,
        )),
        Err(e) => Err(Error::from_backend(e, absent)),
    }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{NestedField, PrimitiveType, Type};

    use super::*;

    /// A metadata file holds byte for byte what serde_json would write: every escape,
    /// at every offset within a long string, and characters left as they are.
    #[test]
    fn metadata_json_is_what_serde_json_writes() {
        let name = "id \"quoted\" \\ \u{1}";
        let field = NestedField::required(1, name, Type::Primitive(PrimitiveType::Long));
        let schema = Schema::builder().with_fields(vec![field.into()]).build().unwrap();
        let mut properties = HashMap::from([
            ("plain".to_string(), "value".to_string()),
            ("slash / and unicode: é 日本 🦀 \u{7f} \u{2028}".to_string(), "\u{0}\u{1f}\n\t\r\u{8}\u{c}".to_string()),
        ]);
        for at in 0..70 {
            let escape = ["\"", "\\", "\n", "\u{1}", "é"][at % 5];
            properties.insert(format!("long-{at}"), format!("{}{escape}{}", "x".repeat(at), "y".repeat(70 - at)));
        }
        let metadata = TableMetadataBuilder::new(
            schema,
            UnboundPartitionSpec::builder().build(),
            SortOrder::unsorted_order(),
            "file:///warehouse/a table/ü".into(),
            FormatVersion::V2,
            properties,
        )
        .unwrap()
        .build()
        .unwrap()
        .metadata;
        let written = metadata_json(&metadata, 0).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), serde_json::to_string(&metadata).unwrap());
    }

    /// Snapshots are written in commit order whatever order they come in; the rest
    /// of the JSON is left byte for byte.
    #[test]
    fn snapshots_are_written_in_commit_order() {
        let json = br#"{"location":"s3://b/t","snapshots":[{"snapshot-id":9,"sequence-number":3,"timestamp-ms":5},{"snapshot-id":7,"sequence-number":1,"timestamp-ms":9,"summary":{"a":"[]"}},{"snapshot-id":8,"sequence-number":2,"timestamp-ms":1}],"snapshot-log":[]}"#;
        let ordered = String::from_utf8(snapshots_in_commit_order(json.to_vec())).unwrap();
        assert_eq!(
            ordered,
            r#"{"location":"s3://b/t","snapshots":[{"snapshot-id":7,"sequence-number":1,"timestamp-ms":9,"summary":{"a":"[]"}},{"snapshot-id":8,"sequence-number":2,"timestamp-ms":1},{"snapshot-id":9,"sequence-number":3,"timestamp-ms":5}],"snapshot-log":[]}"#
        );
        // Format version 1 has no sequence numbers: time orders them.
        let v1 = br#"{"snapshots":[{"snapshot-id":2,"timestamp-ms":20},{"snapshot-id":1,"timestamp-ms":10}]}"#;
        let ordered = String::from_utf8(snapshots_in_commit_order(v1.to_vec())).unwrap();
        assert_eq!(
            ordered,
            r#"{"snapshots":[{"snapshot-id":1,"timestamp-ms":10},{"snapshot-id":2,"timestamp-ms":20}]}"#
        );
        let none = br#"{"location":"s3://b/t"}"#;
        assert_eq!(snapshots_in_commit_order(none.to_vec()), none.to_vec());
    }

    /// Numbers too (a column's default value in the metadata may be a double): the
    /// shortest form that reads back the same, as serde_json writes it.
    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        let numbers =
            serde_json::json!([1e20, 0.1, 1.5, -0.0, 1e-7, 123456789.0, 1.0, 3.0e300, f64::MIN_POSITIVE, 100.0]);
        assert_eq!(sonic_rs::to_string(&numbers).unwrap(), serde_json::to_string(&numbers).unwrap());
    }
}
