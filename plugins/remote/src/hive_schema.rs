//! A table's current Iceberg schema as Hive columns, with the type strings Iceberg's own
//! Hive and Glue catalogs write, so engines that read a metastore's columns see the table.

use serde_json::Value;

/// One top-level column of the current schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    /// Hive's type string (`bigint`, `struct<a:int>`, `decimal(9,2)`, …).
    pub hive_type: String,
    /// The Iceberg field id.
    pub id: i64,
    pub optional: bool,
    pub doc: Option<String>,
}

/// Hive's type string for an Iceberg type.
pub fn hive_type(t: &Value) -> String {
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
                .map(|f| format!("{}:{}", f["name"].as_str().unwrap_or_default(), hive_type(&f["type"])))
                .collect();
            format!("struct<{}>", fields.join(","))
        }
        Some("list") => format!("array<{}>", hive_type(&t["element"])),
        Some("map") => format!("map<{},{}>", hive_type(&t["key"]), hive_type(&t["value"])),
        _ => "string".into(),
    }
}

/// The current schema of parsed table or view metadata (a view's is its current version's).
pub fn current_schema(metadata: &Value) -> Option<&Value> {
    let version_schema = || {
        let current = metadata["current-version-id"].as_i64()?;
        let versions = metadata["versions"].as_array()?;
        versions.iter().find(|v| v["version-id"].as_i64() == Some(current))?["schema-id"].as_i64()
    };
    let current = metadata["current-schema-id"].as_i64().or_else(version_schema).unwrap_or(0);
    metadata["schemas"]
        .as_array()
        .and_then(|schemas| schemas.iter().find(|s| s["schema-id"].as_i64() == Some(current)))
        .or(metadata.get("schema"))
}

/// The table's location and the columns of its current schema, from parsed metadata.
pub fn describe(metadata: &Value) -> Result<(String, Vec<Column>), String> {
    let location = metadata["location"].as_str().ok_or("the table metadata has no location")?.to_string();
    let schema = current_schema(metadata).ok_or("the table metadata has no current schema")?;
    let columns = schema["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|field| Column {
            name: field["name"].as_str().unwrap_or_default().to_string(),
            hive_type: hive_type(&field["type"]),
            id: field["id"].as_i64().unwrap_or_default(),
            optional: !field["required"].as_bool().unwrap_or(false),
            doc: field["doc"].as_str().map(str::to_string),
        })
        .collect();
    Ok((location, columns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_types_read_as_hive_writes_them() {
        let t = json!({"type": "struct", "fields": [
            {"id": 2, "name": "a", "type": "long"},
            {"id": 3, "name": "b", "type": {"type": "list", "element": "decimal(9, 2)"}},
            {"id": 4, "name": "c", "type": {"type": "map", "key": "string", "value": "timestamptz"}}]});
        assert_eq!(hive_type(&t), "struct<a:bigint,b:array<decimal(9,2)>,c:map<string,timestamp>>");
        assert_eq!(hive_type(&json!("fixed[16]")), "binary");
    }

    #[test]
    fn columns_come_from_the_current_schema() {
        let metadata = json!({"location": "s3://b/t", "current-schema-id": 1, "schemas": [
            {"schema-id": 0, "fields": [{"id": 1, "name": "old", "type": "int", "required": true}]},
            {"schema-id": 1, "fields": [{"id": 1, "name": "id", "type": "int", "required": true, "doc": "key"},
                                         {"id": 2, "name": "v", "type": "string", "required": false}]}]});
        let (location, columns) = describe(&metadata).unwrap();
        assert_eq!(location, "s3://b/t");
        assert_eq!(columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id", "v"]);
        assert!(!columns[0].optional && columns[1].optional);
        assert_eq!(columns[0].doc.as_deref(), Some("key"));
    }
}
