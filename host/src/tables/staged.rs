//! Completing a staged create: a commit carrying `assert-create`, whose updates
//! describe the whole new table (the client staged it with `stage-create`).

use iceberg::spec::TableMetadataBuilder;
use iceberg::{TableCreation, TableRequirement, TableUpdate};

use super::{create, dotted, format_version, holder_of, locations, Committed};
use crate::error::Error;
use crate::error::Member;
use crate::events::Teller;
use crate::mounts::Mount;
use crate::sandbox::bindings::Ident;

/// Creates a table from the updates of an `assert-create` commit.
pub async fn create_from_updates(
    mount: &Mount,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
    teller: &Teller,
) -> Result<Committed, Error> {
    if requirements.len() != 1 {
        return Err(Error::BadRequest("assert-create must be the only requirement".into()));
    }
    let mut schema = None;
    let mut spec = None;
    let mut order = None;
    let mut location = None;
    let mut properties = std::collections::HashMap::new();
    let mut version = None;
    let mut uuid = None;
    let mut rest = Vec::new();
    // The first schema, spec and sort order (and the updates making them current)
    // go into the creation; the rest (later schemas, specs and orders, snapshots,
    // refs, statistics) are applied on top, in order: a transaction may evolve the
    // schema and then partition by the new column.
    let (mut schemas, mut specs, mut orders) = (0, 0, 0);
    for update in updates {
        match update {
            TableUpdate::AddSchema { schema: s } if schema.is_none() => schema = Some(s.clone()),
            TableUpdate::AddSpec { spec: s } if spec.is_none() => spec = Some(s.clone()),
            TableUpdate::AddSortOrder { sort_order } if order.is_none() => order = Some(sort_order.clone()),
            TableUpdate::SetLocation { location: l } => location = Some(l.clone()),
            TableUpdate::SetProperties { updates } => properties.extend(updates.clone()),
            TableUpdate::UpgradeFormatVersion { format_version } => version = Some(*format_version),
            TableUpdate::AssignUuid { uuid: u } => uuid = Some(*u),
            TableUpdate::SetCurrentSchema { .. } if schemas <= 1 => {}
            TableUpdate::SetDefaultSpec { .. } if specs <= 1 => {}
            TableUpdate::SetDefaultSortOrder { .. } if orders <= 1 => {}
            other => rest.push(other.clone()),
        }
        match update {
            TableUpdate::AddSchema { .. } => schemas += 1,
            TableUpdate::AddSpec { .. } => specs += 1,
            TableUpdate::AddSortOrder { .. } => orders += 1,
            _ => {}
        }
    }
    let schema = schema.ok_or_else(|| Error::BadRequest("a staged create needs an add-schema update".into()))?;
    // The property is taken out of the properties whichever version wins.
    let from_properties = format_version(&mut properties)?;
    let format_version = version.unwrap_or(from_properties);
    let placement = locations::place(mount, ident, location.as_deref()).await?;
    let creation = TableCreation {
        name: ident.name.clone(),
        location: Some(placement.location.recorded_as(location.as_deref())),
        format_version,
        schema,
        partition_spec: spec,
        sort_order: order,
        properties,
    };
    let built = TableMetadataBuilder::from_table_creation(creation).and_then(|mut builder| {
        if let Some(uuid) = uuid {
            builder = builder.assign_uuid(uuid);
        }
        for update in rest {
            builder = update.apply(builder)?;
        }
        builder.build()
    });
    // A reservation the store made for the table goes when the metadata cannot be built.
    let metadata = match built {
        Ok(built) => built.metadata,
        Err(e) => {
            placement.release(mount).await;
            return Err(e.into());
        }
    };
    match create(mount, ident, &metadata, &placement, teller, super::updates_json(updates)).await {
        // The assert-create requirement failed (in the words of Iceberg's own catalogs),
        // or a view holds the name.
        Err(Error::AlreadyExists(m)) => Err(Error::CommitFailed(match holder_of(mount, ident).await {
            Member::Table => format!("Requirement failed: table already exists: {}", dotted(mount, ident)),
            Member::View => m,
        })),
        result => result,
    }
}
