//! Iceberg tables and views as metastore tables, by the conventions of Iceberg's own
//! HiveCatalog, so a table made here is an ordinary Iceberg table to Spark's and
//! PyIceberg's HiveCatalogs, and the other way round:
//!
//! - a table is an `EXTERNAL_TABLE` with `EXTERNAL=TRUE`, `table_type=ICEBERG`,
//!   `metadata_location` and `previous_metadata_location`; a view a `VIRTUAL_VIEW` with
//!   `table_type=iceberg-view`;
//! - its other parameters are what Java's HiveTableOperations exposes: the table
//!   properties, `uuid`, the current snapshot's id, summary and time, the snapshot
//!   count, and the current schema, partition spec and sort order as JSON (each only
//!   while shorter than Java's default limit). A commit removes the parameters of
//!   properties the table no longer has, as Java's does; those Hive keeps itself
//!   (statistics, `transient_lastDdlTime`, ...) stay;
//! - its storage descriptor holds the current schema's columns in Hive types, the
//!   table location, `FileInputFormat`/`FileOutputFormat` and `LazySimpleSerDe`.

use std::collections::BTreeMap;

use rustberg_remote::hive_schema;
use serde_json::Value;

use crate::metastore::{FieldSchema, SerDeInfo, StorageDescriptor, Table};
use crate::rustberg::catalog::clock;
use crate::rustberg::catalog::types::{Error, Pointer};

pub const TABLE_TYPE: &str = "table_type";
pub const METADATA_LOCATION: &str = "metadata_location";
pub const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";
const ICEBERG: &str = "ICEBERG";
const ICEBERG_VIEW: &str = "iceberg-view";
const EXTERNAL_TABLE: &str = "EXTERNAL_TABLE";
const VIRTUAL_VIEW: &str = "VIRTUAL_VIEW";
/// Java's `iceberg.hive.table-property-max-size` default: longer values stay out.
const MAX_PARAMETER_SIZE: usize = 32_672;

/// The parameters Hive keeps on a table itself, or that Java's HiveCatalog sets beside
/// the table properties: a commit keeps them though no property names them.
const HIVE_OWNED: &[&str] = &[
    "EXTERNAL",
    TABLE_TYPE,
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    "storage_handler",
    "transient_lastDdlTime",
    "last_modified_by",
    "last_modified_time",
    "numFiles",
    "numFilesErasureCoded",
    "numRows",
    "rawDataSize",
    "totalSize",
    "COLUMN_STATS_ACCURATE",
    "STATS_GENERATED",
    "DO_NOT_UPDATE_STATS",
    "TRANSLATED_TO_EXTERNAL",
    "external.table.purge",
    "bucketing_version",
    "OBJCAPABILITIES",
];

/// A table or a view.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Table,
    View,
}

impl Kind {
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::View => "view",
        }
    }
}

fn parameter<'a>(table: &'a Table, key: &str) -> Option<&'a str> {
    table.parameters.as_ref()?.get(key).map(String::as_str)
}

/// What a metastore table is to Iceberg, if anything.
pub fn kind_of(table: &Table) -> Option<Kind> {
    let declared = parameter(table, TABLE_TYPE)?;
    let hive_type = table.table_type.as_deref().unwrap_or_default();
    if declared.eq_ignore_ascii_case(ICEBERG_VIEW) && hive_type.eq_ignore_ascii_case(VIRTUAL_VIEW) {
        Some(Kind::View)
    } else if declared.eq_ignore_ascii_case(ICEBERG) {
        Some(Kind::Table)
    } else {
        None
    }
}

pub fn metadata_location(table: &Table) -> String {
    parameter(table, METADATA_LOCATION).unwrap_or_default().to_string()
}

/// The pointer of a metastore table: its metadata location; the host reads the file.
pub fn pointer_of(table: &Table) -> Pointer {
    Pointer {
        metadata_location: metadata_location(table),
        metadata_json: String::new(),
        config: vec![],
        storage_credentials: String::new(),
    }
}

fn now_seconds() -> i32 {
    (clock::now_millis() / 1000) as i32
}

/// A new metastore entry for `state`, owned by `owner`.
pub fn new_entry(kind: Kind, db: &str, name: &str, owner: &str, state: &Pointer) -> Result<Table, Error> {
    let now = now_seconds();
    let mut table = Table {
        table_name: Some(name.to_string()),
        db_name: Some(db.to_string()),
        owner: Some(owner.to_string()),
        create_time: Some(now),
        last_access_time: Some(now),
        retention: Some(i32::MAX),
        sd: None,
        partition_keys: Some(vec![]),
        parameters: Some(BTreeMap::new()),
        view_original_text: None,
        view_expanded_text: None,
        table_type: Some(
            match kind {
                Kind::Table => EXTERNAL_TABLE,
                Kind::View => VIRTUAL_VIEW,
            }
            .to_string(),
        ),
        temporary: None,
    };
    if kind == Kind::Table {
        table.parameters.get_or_insert_default().insert("EXTERNAL".into(), "TRUE".into());
    }
    install(kind, &mut table, state, None)?;
    Ok(table)
}

/// Points `table` at `state`, `previous` being the metadata location it replaces.
pub fn install(kind: Kind, table: &mut Table, state: &Pointer, previous: Option<&str>) -> Result<(), Error> {
    let metadata: Value = serde_json::from_str(&state.metadata_json)
        .map_err(|e| Error::BadRequest(format!("the {} metadata is not JSON: {e}", kind.noun())))?;
    let (location, columns) = hive_schema::describe(&metadata).map_err(Error::BadRequest)?;
    let parameters = table.parameters.get_or_insert_default();
    parameters.insert(
        TABLE_TYPE.into(),
        match kind {
            Kind::Table => ICEBERG,
            Kind::View => ICEBERG_VIEW,
        }
        .into(),
    );
    parameters.insert(METADATA_LOCATION.into(), state.metadata_location.clone());
    match previous {
        Some(previous) => parameters.insert(PREVIOUS_METADATA_LOCATION.into(), previous.to_string()),
        None => parameters.remove(PREVIOUS_METADATA_LOCATION),
    };
    if kind == Kind::Table {
        expose(parameters, &metadata);
    }
    table.sd = Some(storage_descriptor(location, columns));
    Ok(())
}

/// The parameters Java's HiveTableOperations derives from table metadata.
fn expose(parameters: &mut BTreeMap<String, String>, metadata: &Value) {
    // What the metadata no longer says goes: obsolete properties and derived values.
    // (The host sends only the new metadata, so every parameter Hive does not keep
    // itself counts as a property, where Java compares with the previous metadata.)
    let properties = metadata["properties"].as_object();
    parameters.retain(|key, _| HIVE_OWNED.contains(&key.as_str()) || properties.is_some_and(|p| p.contains_key(key)));
    let mut put = |key: &str, value: String| {
        if value.len() <= MAX_PARAMETER_SIZE {
            parameters.insert(key.to_string(), value);
        }
    };
    for (key, value) in metadata["properties"].as_object().into_iter().flatten() {
        put(key, value.as_str().unwrap_or_default().to_string());
    }
    if let Some(uuid) = metadata["table-uuid"].as_str() {
        put("uuid", uuid.to_string());
    }
    let snapshots = metadata["snapshots"].as_array().map_or(0, Vec::len);
    put("snapshot-count", snapshots.to_string());
    let current = metadata["current-snapshot-id"].as_i64().filter(|id| *id >= 0);
    let snapshot =
        current.and_then(|id| metadata["snapshots"].as_array()?.iter().find(|s| s["snapshot-id"].as_i64() == Some(id)));
    if let Some(snapshot) = snapshot {
        put("current-snapshot-id", snapshot["snapshot-id"].to_string());
        put("current-snapshot-timestamp-ms", snapshot["timestamp-ms"].to_string());
        if let Some(summary) = snapshot.get("summary") {
            put("current-snapshot-summary", summary.to_string());
        }
    }
    if let Some(schema) = hive_schema::current_schema(metadata) {
        put("current-schema", schema.to_string());
    }
    let default_of = |list: &str, id: &str, key: &str| {
        let wanted = metadata[id].as_i64()?;
        metadata[list].as_array()?.iter().find(|item| item[key].as_i64() == Some(wanted)).map(Value::to_string)
    };
    if let Some(spec) = default_of("partition-specs", "default-spec-id", "spec-id") {
        put("default-partition-spec", spec);
    }
    if let Some(order) = default_of("sort-orders", "default-sort-order-id", "order-id") {
        put("default-sort-order", order);
    }
}

fn storage_descriptor(location: String, columns: Vec<hive_schema::Column>) -> StorageDescriptor {
    StorageDescriptor {
        cols: Some(columns.into_iter().map(|c| FieldSchema::new(c.name, c.hive_type, c.doc)).collect()),
        location: Some(location),
        input_format: Some("org.apache.hadoop.mapred.FileInputFormat".into()),
        output_format: Some("org.apache.hadoop.mapred.FileOutputFormat".into()),
        compressed: None,
        num_buckets: None,
        serde_info: Some(SerDeInfo::new(
            None,
            "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe".to_string(),
            BTreeMap::new(),
        )),
        bucket_cols: None,
        sort_cols: None,
        parameters: None,
    }
}
