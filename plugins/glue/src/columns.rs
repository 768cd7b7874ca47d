//! The storage descriptor's columns, mirrored from a table's current Iceberg schema
//! the way Iceberg's own Glue catalogs write them, so engines that read Glue's columns
//! see the same table.

use rustberg_remote::hive_schema;
use serde_json::{json, Value};

/// The table's location and its Glue columns, from its metadata JSON.
pub fn describe(metadata_json: &str) -> Result<(String, Vec<Value>), String> {
    let metadata: Value =
        serde_json::from_str(metadata_json).map_err(|e| format!("the table metadata is not JSON: {e}"))?;
    let (location, columns) = hive_schema::describe(&metadata)?;
    let columns = columns
        .into_iter()
        .map(|column| {
            let mut glue = json!({
                "Name": column.name,
                "Type": column.hive_type,
                "Parameters": {
                    "iceberg.field.id": column.id.to_string(),
                    "iceberg.field.optional": column.optional.to_string(),
                    "iceberg.field.current": "true",
                },
            });
            if let Some(doc) = column.doc {
                glue["Comment"] = json!(doc);
            }
            glue
        })
        .collect();
    Ok((location, columns))
}
