//! Iceberg view semantics on top of a backend: building view metadata, applying
//! `assert-view-uuid` and view updates with the `iceberg` crate's view spec types,
//! writing metadata files, and the compare-and-swap of the view pointer.

use std::collections::HashMap;

use bytes::Bytes;

use iceberg::spec::{Schema, ViewMetadata, ViewMetadataBuilder, ViewVersion};
use iceberg::{ViewCreation, ViewUpdate};
use serde::Deserialize;

use super::locations::{self, Placement};
use super::{created_failed, dotted, pointer_of as pointer, rename_outcome, require_namespace, Committed};
use crate::error::{change_failed, Error, Member};
use crate::mounts::Mount;
use crate::sandbox::bindings::{Ident, Pointer};
use crate::sandbox::BackendErrorKind;
use crate::storage::location_index::{ClaimId, ClaimKind};

/// The one requirement the spec defines for views.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ViewRequirement {
    AssertViewUuid { uuid: uuid::Uuid },
}

fn no_such_view<'a>(mount: &'a Mount, ident: &'a Ident) -> impl FnOnce(String) -> Error + 'a {
    move |_| Error::no_such_view(dotted(mount, ident))
}

/// What a client sends to create a view.
pub struct NewView {
    pub location: Option<String>,
    pub schema: Schema,
    pub version: ViewVersion,
    pub properties: HashMap<String, String>,
}

/// Applies one view update to a builder.
fn apply(update: ViewUpdate, builder: ViewMetadataBuilder) -> Result<ViewMetadataBuilder, Error> {
    Ok(match update {
        ViewUpdate::AssignUuid { uuid } => builder.assign_uuid(uuid),
        ViewUpdate::UpgradeFormatVersion { format_version } => {
            builder.upgrade_format_version(format_version).map_err(invalid_view)?
        }
        ViewUpdate::AddSchema { schema, .. } => builder.add_schema(schema),
        ViewUpdate::SetLocation { location } => builder.set_location(location),
        ViewUpdate::SetProperties { updates } => builder.set_properties(updates).map_err(invalid_view)?,
        ViewUpdate::RemoveProperties { removals } => builder.remove_properties(&removals),
        ViewUpdate::AddViewVersion { view_version } => builder.add_version(view_version).map_err(invalid_view)?,
        ViewUpdate::SetCurrentViewVersion { view_version_id } => {
            builder.set_current_version_id(view_version_id).map_err(invalid_view)?
        }
    })
}

/// View metadata the client's request does not make valid ("Invalid view version:
/// Cannot add multiple queries for dialect trino"), in the builder's own words.
fn invalid_view(e: iceberg::Error) -> Error {
    Error::IllegalArgument(e.message().to_string())
}

/// View metadata as JSON, its versions and schemas in id order (the `iceberg` crate
/// keeps them in hash maps; clients list them in the order the file gives).
fn view_json(metadata: &ViewMetadata) -> Result<Bytes, Error> {
    let mut json = serde_json::to_value(metadata).map_err(|e| Error::Internal(e.to_string()))?;
    for (list, id) in [("versions", "version-id"), ("schemas", "schema-id")] {
        if let Some(items) = json.get_mut(list).and_then(serde_json::Value::as_array_mut) {
            items.sort_by_key(|item| item.get(id).and_then(serde_json::Value::as_i64));
        }
    }
    Ok(Bytes::from(serde_json::to_vec(&json).map_err(|e| Error::Internal(e.to_string()))?))
}

/// Writes a view metadata file under the view's location.
async fn write_metadata(mount: &Mount, metadata: &ViewMetadata, version: usize) -> Result<Committed, Error> {
    let metadata_json = view_json(metadata)?;
    let warehouse = mount.warehouse()?;
    let scope = warehouse
        .locate(metadata.location())
        .map_err(locations::bad_location("the view location", metadata.location()))?;
    let folder = match metadata.properties().get(WRITE_METADATA_PATH) {
        // A folder of the view's own: what it owns is what lies under its location.
        Some(raw) => {
            let folder = warehouse.locate(raw).map_err(locations::bad_location(WRITE_METADATA_PATH, raw))?;
            folder.require_strictly_within(&scope).map_err(locations::bad_location(WRITE_METADATA_PATH, raw))?;
            folder.recorded_as(Some(raw))
        }
        None => format!("{}/metadata", metadata.location().trim_end_matches('/')),
    };
    let location = format!("{folder}/{version:05}-{}.metadata.json", uuid::Uuid::now_v7());
    let output = warehouse.scoped_io(&scope).new_output(&location).map_err(|e| Error::Internal(e.to_string()))?;
    output
        .write(metadata_json.clone())
        .await
        .map_err(|e| Error::Internal(format!("writing view metadata to {location}: {e}")))?;
    Ok(Committed { metadata_location: location, metadata_json, uuid: metadata.uuid().to_string() })
}

/// The view property naming the folder its metadata files go to (Iceberg's
/// `ViewProperties.WRITE_METADATA_LOCATION`), which must lie under the view's location.
const WRITE_METADATA_PATH: &str = "write.metadata.path";

/// Creates a view: checks and claims its location, writes the first metadata file and
/// records it (file and claim removed again if the backend says it did not).
pub async fn create(mount: &Mount, ident: &Ident, new: NewView) -> Result<Committed, Error> {
    let warehouse = mount.warehouse()?;
    if mount.backend.places_tables() {
        return Err(Error::Unsupported(format!(
            "{} assigns locations to tables only: it holds no views",
            mount.label()
        )));
    }
    let placement = locations::place(mount, ident, new.location.as_deref()).await?;
    let version = new.version;
    let creation = ViewCreation {
        name: ident.name.clone(),
        location: placement.location.recorded_as(new.location.as_deref()),
        representations: version.representations().clone(),
        schema: new.schema,
        properties: new.properties,
        default_namespace: version.default_namespace().clone(),
        default_catalog: version.default_catalog().cloned(),
        summary: version.summary().clone(),
    };
    let metadata = ViewMetadataBuilder::from_view_creation(creation)
        .and_then(ViewMetadataBuilder::build)
        .map_err(invalid_view)?
        .metadata;
    let claim = placement.claim(warehouse, ClaimKind::View, ClaimId::new()).await?;
    let committed = match write_metadata(mount, &metadata, 0).await {
        Ok(committed) => committed,
        Err(e) => {
            locations::abandon(warehouse, None, &claim).await;
            return Err(e);
        }
    };
    if let Err(e) = mount.backend.create_view(ident.clone(), pointer(&committed)).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, Some(&committed.metadata_location), &claim).await;
        }
        return Err(created_failed(mount, ident, Member::View, e).await);
    }
    Ok(committed)
}

/// Loads a view's pointer.
pub async fn load(mount: &Mount, ident: &Ident) -> Result<Pointer, Error> {
    mount.backend.load_view(ident.clone()).await.map_err(|e| Error::from_backend(e, no_such_view(mount, ident)))
}

/// Replaces a view: checks the requirements, applies the updates, writes a new
/// metadata file and swaps the pointer (409 when a requirement fails or the swap loses).
pub async fn replace(
    mount: &Mount,
    ident: &Ident,
    requirements: &[ViewRequirement],
    updates: Vec<ViewUpdate>,
) -> Result<Committed, Error> {
    let current = load(mount, ident).await?;
    let metadata: ViewMetadata = serde_json::from_str(&current.metadata_json).map_err(|e| {
        Error::Internal(format!("the stored metadata of view {} is invalid: {e}", dotted(mount, ident)))
    })?;
    for ViewRequirement::AssertViewUuid { uuid } in requirements {
        if metadata.uuid() != *uuid {
            return Err(Error::CommitFailed(format!(
                "Requirement failed: view UUID does not match: expected {uuid} != {} (view {})",
                metadata.uuid(),
                dotted(mount, ident)
            )));
        }
    }
    let versions = metadata.versions().count();
    let current_location = metadata.location().to_string();
    let mut builder = ViewMetadataBuilder::new_from_metadata(metadata);
    for update in updates {
        let update = match update {
            // Stored normalized, like every location.
            ViewUpdate::SetLocation { location } => {
                let checked =
                    mount.warehouse()?.locate(&location).map_err(locations::bad_location("the location", &location))?;
                ViewUpdate::SetLocation { location: checked.recorded_as(Some(&location)) }
            }
            update => update,
        };
        builder = apply(update, builder)?;
    }
    let metadata = builder.build().map_err(invalid_view)?.metadata;
    let warehouse = mount.warehouse()?;
    let claim =
        locations::claim_move(mount, &ident.namespace, &current_location, metadata.location(), ClaimKind::View).await?;
    let committed = match write_metadata(mount, &metadata, versions).await {
        Ok(committed) => committed,
        Err(e) => {
            locations::abandon(warehouse, None, &claim).await;
            return Err(e);
        }
    };
    if let Err(e) = mount.backend.commit_view(ident.clone(), current.metadata_location, pointer(&committed)).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, Some(&committed.metadata_location), &claim).await;
        }
        return Err(match e.kind {
            BackendErrorKind::Conflict => {
                Error::CommitFailed(format!("view {} was changed by a concurrent commit", dotted(mount, ident)))
            }
            _ => change_failed(e, no_such_view(mount, ident)),
        });
    }
    Ok(committed)
}

/// Records an existing view metadata file as a view (registerView): the file and the
/// view location it names lie under the namespace's location, and the location is free.
pub async fn register(mount: &Mount, ident: &Ident, metadata_location: &str) -> Result<Committed, Error> {
    let warehouse = mount.warehouse()?;
    // A taken name is said as such, before the files (which may be that view's own).
    if load(mount, ident).await.is_ok() {
        return Err(Error::name_taken(dotted(mount, ident), Member::View, Member::View));
    }
    let chain = locations::chain(mount, &ident.namespace).await?;
    let file = locations::registered_file(warehouse, &chain, metadata_location)?;
    let metadata_location = file.to_string();
    let bytes = warehouse
        .scoped_io(chain.own())
        .new_input(&metadata_location)
        .map_err(|e| Error::BadRequest(e.to_string()))?
        .read()
        .await
        .map_err(|e| Error::BadRequest(format!("cannot read view metadata at {metadata_location}: {e}")))?;
    let metadata: ViewMetadata = serde_json::from_slice(&bytes)
        .map_err(|e| Error::BadRequest(format!("{metadata_location} is not view metadata: {e}")))?;
    let location = locations::registered_location(warehouse, &chain, &file, metadata.location())?;
    let metadata_json = view_json(&metadata)?;
    let committed = Committed { metadata_location, metadata_json, uuid: metadata.uuid().to_string() };
    let claim = Placement { location, chain, reserved: None }.claim(warehouse, ClaimKind::View, ClaimId::new()).await?;
    if let Err(e) = mount.backend.create_view(ident.clone(), pointer(&committed)).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, None, &claim).await;
        }
        return Err(created_failed(mount, ident, Member::View, e).await);
    }
    Ok(committed)
}

/// Forgets a view (its files stay: views hold no data) and releases its location.
pub async fn drop_view(mount: &Mount, ident: &Ident) -> Result<Pointer, Error> {
    let pointer =
        mount.backend.drop_view(ident.clone()).await.map_err(|e| change_failed(e, no_such_view(mount, ident)))?;
    let Some(warehouse) = &mount.warehouse else {
        return Ok(pointer);
    };
    match locations::recorded_location(pointer.metadata_json.as_bytes()).map(|raw| warehouse.locate(&raw)) {
        Ok(Ok(location)) => locations::release_all(warehouse, &location).await,
        _ => tracing::warn!(view = %dotted(mount, ident), "dropped; its location is unreadable: no claim released"),
    }
    Ok(pointer)
}

/// Renames a view inside one backend.
pub async fn rename(mount: &Mount, source: &Ident, destination: &Ident) -> Result<(), Error> {
    require_namespace(mount, &destination.namespace).await?;
    if source.namespace != destination.namespace && mount.warehouse.is_some() {
        let pointer = load(mount, source).await?;
        let raw = locations::recorded_location(pointer.metadata_json.as_bytes()).map_err(|e| {
            Error::Internal(format!("the metadata of view {} is unreadable: {e}", dotted(mount, source)))
        })?;
        locations::mark_moved(mount, &raw).await?;
    }
    let renamed = mount.backend.rename_view(source.clone(), destination.clone()).await;
    rename_outcome(mount, source, destination, renamed, no_such_view(mount, source)).await
}
