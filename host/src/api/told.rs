//! The events of changes a handler makes in one call (rather than through a room that
//! rides them on its commit): a forwarded write, told from the remote's answer, and the
//! changes whose events follow them.

use crate::events::event::{MetadataChange, TableChange, ViewChange};
use crate::mounts::Mount;
use crate::sandbox::bindings::Ident;
use crate::tables::telling::{identifier, table_change, Uuids};

/// What a remote's LoadTableResult or LoadViewResult says of the object.
#[derive(serde::Deserialize, Default)]
struct Answered {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<String>,
    #[serde(default)]
    metadata: Uuids,
}

fn answered(answer: &[u8]) -> Answered {
    serde_json::from_slice(answer).unwrap_or_default()
}

/// A forwarded table write, from the remote's answer (the file before it is the
/// remote's to know).
pub fn forwarded_table(mount: &Mount, ident: &Ident, answer: &[u8], updates: Vec<serde_json::Value>) -> TableChange {
    let answered = answered(answer);
    let uuid = answered.metadata.uuid();
    table_change(mount, ident, uuid, None, answered.metadata_location.as_deref(), updates)
}

/// A forwarded view write, from the remote's answer.
pub fn forwarded_view(mount: &Mount, ident: &Ident, answer: &[u8], updates: Vec<serde_json::Value>) -> ViewChange {
    let answered = answered(answer);
    view_change(mount, ident, answered.metadata.uuid(), None, answered.metadata_location, updates)
}

/// A view's event body.
pub fn view_change(
    mount: &Mount,
    ident: &Ident,
    uuid: String,
    before: Option<String>,
    after: Option<String>,
    updates: Vec<serde_json::Value>,
) -> ViewChange {
    ViewChange {
        identifier: identifier(mount, ident),
        view_uuid: uuid,
        metadata: MetadataChange { metadata_location_before: before, metadata_location: after, updates },
    }
}
