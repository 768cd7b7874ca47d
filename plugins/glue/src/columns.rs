//! The storage descriptor's columns, mirrored from a table's current Iceberg schema
//! the way Iceberg's own Glue catalogs write them, so engines that read Glue's columns
//! see the same table.

use serde_json::{json, Value};

/// Glue's type string for an Iceberg type.
fn glue_type(t: &Value) -> String {
    if let Some(primitive) = t.as_str() {
        return match primitive {
            "long" => "bigint".into(),
            "time" | "uuid" => "string".into(),
            "timestamptz" | "timestamp_ns" | "timestamptz_ns" => "timestamp".into(),
            p if p.starts_with("fixed") => "binary".into(),
            p if p.starts_with("decimal") => p.replace(' ', ""),
            p => p.into(),
        };
    }
    match t["type"].as_str() {
        Some("struct") => {
            let fields: Vec<String> = t["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| format!("{}:{}", f["name"].as_str().unwrap_or_default(), glue_type(&f["type"])))
                .collect();
            format!("struct<{}>", fields.join(","))
        }
        Some("list") => format!("array<{}>", glue_type(&t["element"])),
        Some("map") => format!("map<{},{}>", glue_type(&t["key"]), glue_type(&t["value"])),
        _ => "string".into(),
    }
}

/// The table's location and the columns of its current schema, from its metadata JSON.
pub fn describe(metadata_json: &str) -> Result<(String, Vec<Value>), String> {
    let metadata: Value =
        serde_json::from_str(metadata_json).map_err(|e| format!("the table metadata is not JSON: {e}"))?;
    let location = metadata["location"].as_str().ok_or("the table metadata has no location")?.to_string();
    let current = metadata["current-schema-id"].as_i64().unwrap_or(0);
    let schema = metadata["schemas"]
        .as_array()
        .and_then(|schemas| schemas.iter().find(|s| s["schema-id"].as_i64() == Some(current)))
        .or(metadata.get("schema"))
        .ok_or("the table metadata has no current schema")?;
    let columns = schema["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|field| {
            let mut column = json!({
                "Name": field["name"],
                "Type": glue_type(&field["type"]),
                "Parameters": {
                    "iceberg.field.id": field["id"].to_string(),
                    "iceberg.field.optional": (!field["required"].as_bool().unwrap_or(false)).to_string(),
                    "iceberg.field.current": "true",
                },
            });
            if let Some(doc) = field["doc"].as_str() {
                column["Comment"] = json!(doc);
            }
            column
        })
        .collect();
    Ok((location, columns))
}
