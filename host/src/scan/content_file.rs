//! Data and delete files as the spec's `ContentFile` JSON (`DataFile`,
//! `PositionDeleteFile`, `EqualityDeleteFile`).

use std::collections::{HashMap, HashSet};

use iceberg::spec::{DataContentType, DataFile, Datum, Literal, StructType, Type};
use serde_json::{json, Map, Value};

/// One file of a manifest entry, with what it takes to write it as the spec does.
pub struct ContentFile<'a> {
    pub file: &'a DataFile,
    /// The partition spec of the manifest the file was listed in.
    pub spec_id: i32,
    /// That spec's partition type, to write partition values in the spec's JSON.
    pub partition_type: &'a StructType,
    /// The columns whose statistics the client asked for (`stats-fields`).
    pub stats_fields: &'a HashSet<i32>,
}

impl ContentFile<'_> {
    pub fn to_json(&self) -> Value {
        let f = self.file;
        let partition: Vec<Value> = f
            .partition()
            .iter()
            .zip(self.partition_type.fields())
            .map(|(value, field)| match value {
                Some(literal) => literal.clone().try_into_json(&field.field_type).unwrap_or(Value::Null),
                None => Value::Null,
            })
            .collect();
        let mut o = Map::new();
        let content = match f.content_type() {
            DataContentType::Data => "data",
            DataContentType::PositionDeletes => "position-deletes",
            DataContentType::EqualityDeletes => "equality-deletes",
        };
        o.insert("content".into(), json!(content));
        o.insert("file-path".into(), json!(f.file_path()));
        o.insert("file-format".into(), json!(f.file_format().to_string()));
        o.insert("spec-id".into(), json!(self.spec_id));
        o.insert("partition".into(), Value::Array(partition));
        o.insert("file-size-in-bytes".into(), json!(f.file_size_in_bytes()));
        o.insert("record-count".into(), json!(f.record_count()));
        if let Some(key) = f.key_metadata() {
            o.insert("key-metadata".into(), json!(hex_upper(key)));
        }
        if let Some(offsets) = f.split_offsets() {
            o.insert("split-offsets".into(), json!(offsets));
        }
        if let Some(id) = f.sort_order_id() {
            o.insert("sort-order-id".into(), json!(id));
        }
        match f.content_type() {
            DataContentType::Data => {
                if let Some(id) = f.first_row_id() {
                    o.insert("first-row-id".into(), json!(id));
                }
                if !self.stats_fields.is_empty() {
                    self.insert_stats(&mut o);
                }
            }
            DataContentType::PositionDeletes => {
                if let (Some(offset), Some(size)) = (f.content_offset(), f.content_size_in_bytes()) {
                    o.insert("content-offset".into(), json!(offset));
                    o.insert("content-size-in-bytes".into(), json!(size));
                }
            }
            DataContentType::EqualityDeletes => {
                o.insert("equality-ids".into(), json!(f.equality_ids().unwrap_or_default()));
            }
        }
        Value::Object(o)
    }

    /// Column statistics of the requested columns, as `CountMap`s and `ValueMap`s.
    fn insert_stats(&self, o: &mut Map<String, Value>) {
        let f = self.file;
        for (name, counts) in [
            ("column-sizes", f.column_sizes()),
            ("value-counts", f.value_counts()),
            ("null-value-counts", f.null_value_counts()),
            ("nan-value-counts", f.nan_value_counts()),
        ] {
            let (keys, values): (Vec<i32>, Vec<u64>) = sorted(counts, self.stats_fields).into_iter().unzip();
            if !keys.is_empty() {
                o.insert(name.into(), json!({ "keys": keys, "values": values }));
            }
        }
        for (name, bounds) in [("lower-bounds", f.lower_bounds()), ("upper-bounds", f.upper_bounds())] {
            let (keys, values): (Vec<i32>, Vec<Value>) =
                sorted(bounds, self.stats_fields).into_iter().map(|(k, d)| (k, datum_json(&d))).unzip();
            if !keys.is_empty() {
                o.insert(name.into(), json!({ "keys": keys, "values": values }));
            }
        }
    }
}

/// The entries of `map` for the wanted columns, by column id.
fn sorted<T: Clone>(map: &HashMap<i32, T>, wanted: &HashSet<i32>) -> Vec<(i32, T)> {
    let mut entries: Vec<(i32, T)> =
        map.iter().filter(|(k, _)| wanted.contains(k)).map(|(k, v)| (*k, v.clone())).collect();
    entries.sort_by_key(|(k, _)| *k);
    entries
}

/// A value in the spec's single-value JSON serialization.
fn datum_json(d: &Datum) -> Value {
    Literal::Primitive(d.literal().clone())
        .try_into_json(&Type::Primitive(d.data_type().clone()))
        .unwrap_or(Value::Null)
}

/// Binary values are upper-case hex in the spec's JSON.
fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}
