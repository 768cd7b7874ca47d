//! What an event says, in the shape of the REST spec's events proposal (`Event`, with
//! an `operation` tagged by `operation-type`), and the same event as CloudEvents 1.0
//! JSON for the sinks that push it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One committed change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Event {
    /// A UUIDv7, made once: consumers deduplicate by it, and the outbox orders by it.
    pub event_id: String,
    /// The request that made the change (`X-Request-ID`).
    pub request_id: String,
    /// How many events that request made (a multi-table commit makes one per table).
    pub request_event_count: u32,
    pub timestamp_ms: i64,
    pub actor: Actor,
    pub operation: Operation,
}

/// Who made the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Actor {
    pub principal: String,
    pub tenant: String,
}

/// A table or view by name, as the REST API names it (the mount is the namespace's
/// first level).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Identifier {
    pub namespace: Vec<String>,
    pub name: String,
}

/// What changed. The spec's operation types, and `custom` ones (`x-…`) for what it
/// has none for (principals, tenants, grants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "operation-type", rename_all = "kebab-case")]
pub enum Operation {
    CreateNamespace {
        namespace: Vec<String>,
        properties: BTreeMap<String, String>,
    },
    #[serde(rename_all = "kebab-case")]
    UpdateNamespaceProperties {
        namespace: Vec<String>,
        updated: Vec<String>,
        removed: Vec<String>,
    },
    DropNamespace {
        namespace: Vec<String>,
    },
    CreateTable(TableChange),
    RegisterTable(TableChange),
    UpdateTable(TableChange),
    DropTable(TableChange),
    RenameTable(Renamed),
    CreateView(ViewChange),
    UpdateView(ViewChange),
    DropView(ViewChange),
    RenameView(Renamed),
    #[serde(rename_all = "kebab-case")]
    Custom {
        /// `x-…`.
        custom_type: String,
        #[serde(flatten)]
        details: BTreeMap<String, Value>,
    },
}

/// A table created, registered, committed or dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableChange {
    pub identifier: Identifier,
    pub table_uuid: String,
    #[serde(flatten)]
    pub metadata: MetadataChange,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots_added: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots_removed: Vec<i64>,
    /// A drop's: whether the table's files were purged (an unregister is a drop that
    /// keeps them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge: Option<bool>,
}

/// A view created, replaced or dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ViewChange {
    pub identifier: Identifier,
    pub view_uuid: String,
    #[serde(flatten)]
    pub metadata: MetadataChange,
}

/// How a table's or view's metadata changed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MetadataChange {
    /// The metadata file before the change (none for a create).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_location_before: Option<String>,
    /// The metadata file after it (none for a drop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_location: Option<String>,
    /// The updates as the client sent them (a commit's; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<Value>,
}

/// A table or view renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Renamed {
    pub source: Identifier,
    pub destination: Identifier,
    /// The table's or view's uuid.
    pub uuid: String,
}

/// The snapshots a commit's updates add and remove (`add-snapshot`,
/// `remove-snapshots`), by id, in the updates' order.
pub fn snapshots_of(updates: &[Value]) -> (Vec<i64>, Vec<i64>) {
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for update in updates {
        match update["action"].as_str() {
            Some("add-snapshot") => added.extend(update["snapshot"]["snapshot-id"].as_i64()),
            Some("remove-snapshots") => {
                removed.extend(update["snapshot-ids"].as_array().into_iter().flatten().filter_map(Value::as_i64))
            }
            _ => {}
        }
    }
    (added, removed)
}

impl Operation {
    /// The spec's `operation-type` (or the custom type).
    pub fn kind(&self) -> &str {
        match self {
            Operation::CreateNamespace { .. } => "create-namespace",
            Operation::UpdateNamespaceProperties { .. } => "update-namespace-properties",
            Operation::DropNamespace { .. } => "drop-namespace",
            Operation::CreateTable(_) => "create-table",
            Operation::RegisterTable(_) => "register-table",
            Operation::UpdateTable(_) => "update-table",
            Operation::DropTable(_) => "drop-table",
            Operation::RenameTable(_) => "rename-table",
            Operation::CreateView(_) => "create-view",
            Operation::UpdateView(_) => "update-view",
            Operation::DropView(_) => "drop-view",
            Operation::RenameView(_) => "rename-view",
            Operation::Custom { custom_type, .. } => custom_type,
        }
    }

    /// What the change is about: the one place that sorts the operations by object.
    pub fn subject(&self) -> Subject<'_> {
        match self {
            Operation::CreateNamespace { namespace, .. }
            | Operation::UpdateNamespaceProperties { namespace, .. }
            | Operation::DropNamespace { namespace } => Subject::Namespace(namespace),
            Operation::CreateTable(t)
            | Operation::RegisterTable(t)
            | Operation::UpdateTable(t)
            | Operation::DropTable(t) => {
                Subject::Object(ObjectType::Table, [&t.identifier, &t.identifier], &t.table_uuid)
            }
            Operation::CreateView(v) | Operation::UpdateView(v) | Operation::DropView(v) => {
                Subject::Object(ObjectType::View, [&v.identifier, &v.identifier], &v.view_uuid)
            }
            Operation::RenameTable(r) => Subject::Object(ObjectType::Table, [&r.source, &r.destination], &r.uuid),
            Operation::RenameView(r) => Subject::Object(ObjectType::View, [&r.source, &r.destination], &r.uuid),
            Operation::Custom { .. } => Subject::Other,
        }
    }

    /// The namespace the change is in (a namespace's own, or its table's or view's;
    /// a rename's source): what a subject, a filter and a read check go by.
    pub fn namespace(&self) -> &[String] {
        match self.subject() {
            Subject::Namespace(namespace) => namespace,
            Subject::Object(_, [source, _], _) => &source.namespace,
            Subject::Other => &[],
        }
    }
}

/// What an operation is about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Subject<'a> {
    Namespace(&'a [String]),
    /// A table or view: its name before and after the change (the same but for a
    /// rename), and its uuid.
    Object(ObjectType, [&'a Identifier; 2], &'a str),
    /// A custom operation's: none the host knows.
    Other,
}

/// The kinds of catalog objects, as the spec names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectType {
    Namespace,
    Table,
    View,
}

impl Event {
    /// The event as a CloudEvents 1.0 JSON envelope (structured mode): `type` is the
    /// operation type under `org.apache.iceberg.`, `source` this catalog, `subject` the
    /// namespace, dotted; the event itself is `data`.
    pub fn cloud_event(&self, source: &str) -> Value {
        let time = jiff::Timestamp::from_millisecond(self.timestamp_ms).map(|t| t.to_string()).unwrap_or_default();
        serde_json::json!({
            "specversion": "1.0",
            "id": self.event_id,
            "source": source,
            "type": format!("org.apache.iceberg.{}", self.operation.kind()),
            "subject": self.operation.namespace().join("."),
            "time": time,
            "datacontenttype": "application/json",
            "data": self,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit() -> Event {
        let updates = vec![
            serde_json::json!({"action": "add-snapshot", "snapshot": {"snapshot-id": 7, "timestamp-ms": 1}}),
            serde_json::json!({"action": "remove-snapshots", "snapshot-ids": [3, 4]}),
            serde_json::json!({"action": "set-properties", "updates": {"k": "v"}}),
        ];
        let (snapshots_added, snapshots_removed) = snapshots_of(&updates);
        Event {
            event_id: "0190a000-0000-7000-8000-000000000001".into(),
            request_id: "r-1".into(),
            request_event_count: 1,
            timestamp_ms: 1_780_000_000_123,
            actor: Actor { principal: "alice".into(), tenant: "acme".into() },
            operation: Operation::UpdateTable(TableChange {
                identifier: Identifier { namespace: vec!["prod".into(), "sales".into()], name: "orders".into() },
                table_uuid: "9c12e2f3-0000-4000-8000-000000000000".into(),
                metadata: MetadataChange {
                    metadata_location_before: Some("s3://w/orders/metadata/00001-a.metadata.json".into()),
                    metadata_location: Some("s3://w/orders/metadata/00002-b.metadata.json".into()),
                    updates,
                },
                snapshots_added,
                snapshots_removed,
                purge: None,
            }),
        }
    }

    /// The spec's names: kebab-case fields, the operation tagged by `operation-type`.
    #[test]
    fn an_event_is_written_in_the_spec_shape_and_read_back() {
        let event = commit();
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["event-id"], "0190a000-0000-7000-8000-000000000001");
        assert_eq!(json["request-event-count"], 1);
        assert_eq!(json["operation"]["operation-type"], "update-table");
        assert_eq!(json["operation"]["identifier"]["namespace"], serde_json::json!(["prod", "sales"]));
        assert_eq!(json["operation"]["snapshots-added"], serde_json::json!([7]));
        assert_eq!(json["operation"]["metadata-location"], "s3://w/orders/metadata/00002-b.metadata.json");
        assert_eq!(json["operation"]["updates"].as_array().map(Vec::len), Some(3));
        assert_eq!(json["operation"]["snapshots-removed"], serde_json::json!([3, 4]));
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), event);

        let dropped = Operation::DropNamespace { namespace: vec!["prod".into()] };
        assert_eq!(
            serde_json::to_value(&dropped).unwrap(),
            serde_json::json!({"operation-type": "drop-namespace", "namespace": ["prod"]})
        );
        let custom = Operation::Custom {
            custom_type: "x-grant-changed".into(),
            details: BTreeMap::from([("role".into(), "reader".into())]),
        };
        let json = serde_json::to_value(&custom).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"operation-type": "custom", "custom-type": "x-grant-changed", "role": "reader"})
        );
        assert_eq!(serde_json::from_value::<Operation>(json).unwrap(), custom);
    }

    #[test]
    fn the_cloud_event_carries_the_event() {
        let event = commit();
        let envelope = event.cloud_event("rustberg://catalog.example");
        assert_eq!(envelope["specversion"], "1.0");
        assert_eq!(envelope["id"], event.event_id);
        assert_eq!(envelope["type"], "org.apache.iceberg.update-table");
        assert_eq!(envelope["subject"], "prod.sales");
        assert_eq!(envelope["time"], "2026-05-28T20:26:40.123Z");
        assert_eq!(serde_json::from_value::<Event>(envelope["data"].clone()).unwrap(), event);
    }
}
