//! Metadata files: written once under the table's location (snapshots in commit
//! order), and the pointer a backend records for one.

use bytes::Bytes;
use iceberg::compression::CompressionCodec;
use iceberg::spec::TableMetadata;
use iceberg::MetadataLocation;

use super::held;
use super::locations;
use crate::error::Error;
use crate::mounts::Mount;
use crate::sandbox::bindings::Pointer;
use crate::storage::location::Location;

use super::Committed;

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
pub(super) async fn write_metadata(
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
    let uuid = metadata.uuid().to_string();
    held::keep_built(mount, &metadata_location, json.clone(), metadata);
    Ok(Committed { metadata_location, metadata_json: json, uuid })
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
pub(super) fn snapshots_in_commit_order(json: Vec<u8>) -> Vec<u8> {
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
pub(super) fn pointer_of(committed: &Committed) -> Pointer {
    Pointer {
        // Checked as UTF-8 the fast way (it is: serde_json wrote it), not char by char.
        metadata_json: String::from_utf8(committed.metadata_json.to_vec())
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ..location_only(committed)
    }
}

pub(super) fn location_only(committed: &Committed) -> Pointer {
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
pub(super) fn table_pointer(mount: &Mount, committed: &Committed) -> Pointer {
    match mount.backend.wants_table_json() {
        true => pointer_of(committed),
        false => location_only(committed),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use iceberg::spec::{
        FormatVersion, NestedField, PrimitiveType, Schema, SortOrder, TableMetadataBuilder, Type, UnboundPartitionSpec,
    };

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
