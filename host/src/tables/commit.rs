//! updateTable and commitTransaction: requirements checked against the current
//! metadata, updates applied, a new metadata file written and the pointer swapped, one
//! attempt at a time.

use std::str::FromStr;
use std::sync::Arc;

use iceberg::spec::TableMetadataBuilder;
use iceberg::{MetadataLocation, TableRequirement, TableUpdate};

use super::locations::{self, NewClaim};
use super::{held, serial};
use crate::error::{change_failed, Error};
use crate::mounts::Mount;
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::{Ident, Pointer, TableCommit};
use crate::sandbox::BackendErrorKind;
use crate::storage::location_index::ClaimKind;

use super::load::load_in;
use super::metadata_file::{table_pointer, write_metadata};
use super::telling::{table_change, Telling};
use super::{dotted, invalid_metadata, no_such_table, Committed};
use super::{requirements, staged};
use crate::events::{Operation, Teller};

/// The updates as JSON, for an event.
pub fn updates_json(updates: &[TableUpdate]) -> Vec<serde_json::Value> {
    updates.iter().filter_map(|u| serde_json::to_value(u).ok()).collect()
}

/// How often a commit that lost the compare-and-swap is re-applied to the new
/// current metadata (its requirements are checked again each time): only a failed
/// requirement, or a table that never stops changing, reaches the client as 409.
pub(super) const COMMIT_ATTEMPTS: usize = 16;

/// Applies a commit: checks every requirement against the current metadata,
/// applies the updates, writes a new metadata file and swaps the pointer. A lost
/// swap is retried against the new current metadata; a failed requirement is 409.
/// The new file is deleted only when the backend said the swap did not apply.
///
/// Its event rides the swap's commit (`telling`): one per attempt, written only with
/// the attempt that lands.
pub async fn commit(
    mount: &Mount,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
    teller: &Teller,
) -> Result<Committed, Error> {
    if requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
        // A staged table's create: its event (`create-table`) rides the create.
        return staged::create_from_updates(mount, ident, requirements, updates, teller).await;
    }
    let warehouse = mount.warehouse()?;
    let _turn = serial::one_at_a_time(&mount.space, ident).await;
    for round in 0..COMMIT_ATTEMPTS {
        if round > 0 {
            tokio::time::sleep(crate::storage::kv::swap_backoff(round)).await;
        }
        let mut attempt = mount.backend.attempt();
        let prepared = prepare(mount, &mut attempt, ident, requirements, updates).await?;
        let telling = Telling::ride(teller, &mut attempt, vec![prepared.operation(mount, ident, updates)]);
        let (expected, new) = (prepared.expected.clone(), prepared.new.clone());
        let swapped = mount.backend.commit_table_in(&mut attempt, ident.clone(), expected, new).await;
        match swapped {
            Ok(()) => {
                prepared.landed(mount);
                telling.landed(teller, &attempt).await;
                return Ok(prepared.committed);
            }
            Err(e) if e.kind.did_not_apply() => {
                prepared.undo(mount, warehouse).await;
                if e.kind != BackendErrorKind::Conflict {
                    return Err(Error::from_backend(e, no_such_table(mount, ident)));
                }
            }
            Err(e) => return Err(change_failed(e, no_such_table(mount, ident))),
        }
    }
    Err(Error::CommitFailed(format!("table {} kept changing under concurrent commits; retry", dotted(mount, ident))))
}

/// A change written and ready to swap in: what the swap expects, the new state (as
/// the backend records it, and as the client is answered), and a location newly
/// claimed for it (a `set-location`).
pub(super) struct Prepared {
    expected: String,
    new: Pointer,
    committed: Committed,
    claim: Option<NewClaim>,
}

impl Prepared {
    /// The event of this change, once it lands.
    fn operation(&self, mount: &Mount, ident: &Ident, updates: &[TableUpdate]) -> Operation {
        let (before, after) = (Some(self.expected.as_str()), Some(self.new.metadata_location.as_str()));
        Operation::UpdateTable(table_change(
            mount,
            ident,
            self.committed.uuid.clone(),
            before,
            after,
            updates_json(updates),
        ))
    }

    /// Forgets the version a change that applied replaced: no pointer names it now.
    fn landed(&self, mount: &Mount) {
        held::forget(mount, &self.expected);
    }

    /// Removes what was written for a change that did not apply.
    async fn undo(&self, mount: &Mount, warehouse: &crate::storage::warehouse::Warehouse) {
        held::forget(mount, &self.new.metadata_location);
        locations::abandon(warehouse, Some(&self.new.metadata_location), &self.claim).await;
    }
}

/// Checks the requirements against a table's current metadata, applies the updates
/// and writes the new metadata file. A new location (`set-location`) is checked and
/// claimed first.
pub(super) async fn prepare(
    mount: &Mount,
    attempt: &mut Attempt,
    ident: &Ident,
    requirements: &[TableRequirement],
    updates: &[TableUpdate],
) -> Result<Prepared, Error> {
    // Owned: its location and config go into the commit (copied if a kept answer).
    let pointer = Arc::unwrap_or_clone(load_in(mount, Some(attempt), ident, None).await?);
    let held = held::current(mount, &pointer).await?;
    let current = held.take_metadata().map_err(invalid_metadata(&pointer))?;
    requirements::check(requirements, &current)?;
    let current_location = current.location().to_string();
    let previous = MetadataLocation::from_str(&pointer.metadata_location).ok();
    let mut builder = TableMetadataBuilder::new_from_metadata(current, Some(pointer.metadata_location.clone()));
    for update in updates {
        builder = match update {
            // Stored normalized, like every location.
            TableUpdate::SetLocation { location } => {
                let checked =
                    mount.warehouse()?.locate(location).map_err(locations::bad_location("the location", location))?;
                TableUpdate::SetLocation { location: checked.recorded_as(Some(location)) }.apply(builder)?
            }
            update => update.clone().apply(builder)?,
        };
    }
    let metadata = builder.build()?.metadata;
    let claim =
        locations::claim_move(mount, &ident.namespace, &current_location, metadata.location(), ClaimKind::Table)
            .await?;
    let location = match previous {
        // A moved table writes its next metadata file under its new location.
        Some(previous) if metadata.location() == current_location => {
            previous.with_next_version().with_new_metadata(&metadata)
        }
        _ => MetadataLocation::new_with_metadata(metadata.location(), &metadata),
    };
    let committed = match write_metadata(mount, location, metadata, held.json.len()).await {
        Ok(committed) => committed,
        Err(e) => {
            locations::abandon(mount.warehouse()?, None, &claim).await;
            return Err(e);
        }
    };
    let new = Pointer { config: pointer.config, ..table_pointer(mount, &committed) };
    Ok(Prepared { expected: pointer.metadata_location, new, committed, claim })
}

/// One table's part of a multi-table commit.
pub struct TableChange {
    pub ident: Ident,
    pub requirements: Vec<TableRequirement>,
    pub updates: Vec<TableUpdate>,
}

/// Commits changes to several tables of one backend atomically: every requirement is
/// checked and every new metadata file written first, then one conditional commit
/// swaps every pointer, or none. A refusal answers 409 and leaves no file behind; an
/// unknown outcome keeps the files. It is one attempt: a lost swap is 409, not retried.
///
/// Its events, one per table, ride the one commit.
pub async fn commit_transaction(mount: &Mount, changes: &[TableChange], teller: &Teller) -> Result<(), Error> {
    let mut attempt = mount.backend.attempt();
    let warehouse = mount.warehouse()?;
    let mut prepared = Vec::with_capacity(changes.len());
    let mut outcome = Ok(());
    for change in changes {
        if change.requirements.iter().any(|r| matches!(r, TableRequirement::NotExist)) {
            outcome = Err(Error::BadRequest("assert-create is not supported inside a transaction".into()));
            break;
        }
        match prepare(mount, &mut attempt, &change.ident, &change.requirements, &change.updates).await {
            Ok(p) => prepared.push((change.ident.clone(), p)),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if outcome.is_ok() {
        let operations = prepared.iter().zip(changes).map(|((ident, p), c)| p.operation(mount, ident, &c.updates));
        let telling = Telling::ride(teller, &mut attempt, operations.collect());
        let commits = prepared
            .iter()
            .map(|(ident, p)| TableCommit {
                ident: ident.clone(),
                expected_metadata_location: p.expected.clone(),
                new: p.new.clone(),
            })
            .collect();
        match mount.backend.commit_transaction_in(&mut attempt, commits).await {
            Ok(()) => {
                for (_, p) in &prepared {
                    p.landed(mount);
                }
                telling.landed(teller, &attempt).await;
                return Ok(());
            }
            Err(e) if e.kind == BackendErrorKind::Conflict => {
                outcome = Err(Error::CommitFailed(format!(
                    "a table in the transaction was changed by a concurrent commit; nothing was applied ({})",
                    mount.label()
                )))
            }
            Err(e) if e.kind.did_not_apply() => outcome = Err(Error::from_backend(e, Error::NoSuchTable)),
            Err(e) => return Err(change_failed(e, Error::NoSuchTable)),
        }
    }
    for (_, p) in &prepared {
        p.undo(mount, warehouse).await;
    }
    outcome
}
