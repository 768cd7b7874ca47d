//! A change's events riding its commit: where the backend's commit goes to the store the
//! outbox is in (the root catalog, on redb or Postgres), the events are written in that
//! same commit, so a crash cannot keep the change and lose its events; elsewhere they
//! are written right after the change lands.

use crate::events::event::{Identifier, MetadataChange, TableChange};
use crate::events::{Operation, Teller};
use crate::mounts::Mount;
use crate::sandbox::attempt::{Attempt, Ridden, Rider};
use crate::sandbox::bindings::{Ident, Pointer};
use crate::storage::kv::Commit;

/// The events of one change, on their way.
pub struct Telling {
    /// The events' commit, when events are on.
    commit: Option<Commit>,
    /// Whether the attempt carries them.
    carried: bool,
}

impl Telling {
    /// The events of `operations`, carried by `attempt`'s commit to the outbox's store.
    pub fn ride(teller: &Teller, attempt: &mut Attempt, operations: Vec<Operation>) -> Self {
        let (Some(commit), Some(space)) = (teller.commit(operations), teller.space()) else {
            return Self { commit: None, carried: false };
        };
        let carried = attempt.carry(Rider { space: space.clone(), commit: commit.clone() }).is_ok();
        Self { commit: Some(commit), carried }
    }

    /// The change landed: its events were written with it, or are written now.
    pub async fn landed(self, teller: &Teller, attempt: &Attempt) {
        let Some(commit) = self.commit else { return };
        match self.carried && attempt.ridden() == Ridden::Landed {
            true => teller.written(),
            // The same ids: written twice (a backend that swallowed a failed commit),
            // a consumer deduplicates them.
            false => teller.write(commit).await,
        }
    }
}

/// A table or view by the name clients use (the mount's name restored).
pub fn identifier(mount: &Mount, ident: &Ident) -> Identifier {
    Identifier { namespace: mount.restore(ident.namespace.clone()), name: ident.name.clone() }
}

/// A table's event body: `before` and `after` its change, with the updates it applied.
pub fn table_change(
    mount: &Mount,
    ident: &Ident,
    uuid: String,
    before: Option<&str>,
    after: Option<&str>,
    updates: Vec<serde_json::Value>,
) -> TableChange {
    let (snapshots_added, snapshots_removed) = crate::events::event::snapshots_of(&updates);
    TableChange {
        identifier: identifier(mount, ident),
        table_uuid: uuid,
        metadata: MetadataChange {
            metadata_location_before: before.map(str::to_string),
            metadata_location: after.map(str::to_string),
            updates,
        },
        snapshots_added,
        snapshots_removed,
        purge: None,
    }
}

/// The uuid a table's or view's metadata JSON names (empty when the pointer carries
/// no JSON, or it names none).
pub fn uuid_of(pointer: &Pointer) -> String {
    uuid_in(pointer.metadata_json.as_bytes())
}

/// The uuid table or view metadata JSON names (empty when it names none).
pub fn uuid_in(json: &[u8]) -> String {
    serde_json::from_slice::<Uuids>(json).map(Uuids::uuid).unwrap_or_default()
}

/// The uuid fields of table or view metadata (the rest is skipped unread).
#[derive(serde::Deserialize, Default)]
pub struct Uuids {
    #[serde(rename = "table-uuid")]
    table: Option<String>,
    #[serde(rename = "view-uuid")]
    view: Option<String>,
}

impl Uuids {
    /// The table's or view's uuid (empty when it names none).
    pub fn uuid(self) -> String {
        self.table.or(self.view).unwrap_or_default()
    }
}
