//! createTable: the metadata of a new table, built at its checked location, and the
//! table recorded in its backend.

use std::collections::HashMap;

use iceberg::spec::{FormatVersion, Schema, SortOrder, TableMetadata, TableMetadataBuilder, UnboundPartitionSpec};
use iceberg::{MetadataLocation, TableCreation};

use super::locations::{self, Placement};
use super::telling::{table_change, Telling};
use crate::error::{change_failed, Error, Member};
use crate::events::{Operation, Teller};
use crate::mounts::Mount;
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::Ident;
use crate::sandbox::BackendErrorKind;
use crate::storage::location_index::{ClaimId, ClaimKind};

use super::metadata_file::{table_pointer, write_metadata};
use super::{dotted, holder_of, no_such_namespace, Committed};

/// What the client sent to create a table.
pub struct NewTable {
    pub name: String,
    pub location: Option<String>,
    pub schema: Schema,
    pub partition_spec: Option<UnboundPartitionSpec>,
    pub write_order: Option<SortOrder>,
    pub properties: HashMap<String, String>,
}

pub(super) fn format_version(properties: &mut HashMap<String, String>) -> Result<FormatVersion, Error> {
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

/// Claims the table's location, writes the first metadata file of `metadata` and
/// records the table. If the backend says it did not record it, the file and the
/// claim are removed again; if the outcome is unknown, both stay.
pub async fn create(
    mount: &Mount,
    ident: &Ident,
    metadata: &TableMetadata,
    placement: &Placement,
    teller: &Teller,
    told_updates: Vec<serde_json::Value>,
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
    // Its event rides the backend's commit where that goes to the outbox's store.
    let mut attempt = Attempt::default();
    let after = Some(committed.metadata_location.as_str());
    let created = table_change(mount, ident, committed.uuid.clone(), None, after, told_updates);
    let telling = Telling::ride(teller, &mut attempt, vec![Operation::CreateTable(created)]);
    let pointer = table_pointer(mount, &committed);
    if let Err(e) = mount.backend.create_table_in(&mut attempt, ident.clone(), pointer).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, Some(&committed.metadata_location), &claim).await;
            placement.release(mount).await;
        }
        return Err(created_failed(mount, ident, Member::Table, e).await);
    }
    telling.landed(teller, &attempt).await;
    Ok(committed)
}

/// The answer to a create or register (of a table or view) the backend refused or
/// may have applied.
pub(super) async fn created_failed(
    mount: &Mount,
    ident: &Ident,
    creating: Member,
    e: crate::sandbox::BackendError,
) -> Error {
    match e.kind {
        BackendErrorKind::AlreadyExists => {
            Error::name_taken(dotted(mount, ident), creating, holder_of(mount, ident).await)
        }
        _ => change_failed(e, no_such_namespace(mount, &ident.namespace)),
    }
}
