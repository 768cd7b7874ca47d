//! Purging a dropped table: deleting exactly the files its metadata reaches — every
//! metadata file in the log, each snapshot's manifest list, its manifests, their
//! data and delete files, statistics and partition-statistics files — that lie
//! under the table's own location. Never a prefix delete.
//!
//! Paths in metadata were written by clients, so everything is read and deleted
//! through a FileIO scoped to the table's location: a path elsewhere (another
//! table's files, say) is counted as refused and neither read nor deleted.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use iceberg::io::FileIO;
use iceberg::spec::{ManifestList, TableMetadata};

use crate::storage::location::Location;
use crate::storage::warehouse::Warehouse;

/// How many deletes run at once.
const PARALLEL_DELETES: usize = 16;

/// What a purge did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub deleted: usize,
    /// Files the metadata names outside the table's location: left alone.
    pub refused: Vec<String>,
    /// Files that could not be read or deleted (already gone, or a storage error).
    pub failed: usize,
}

/// The files `metadata` reaches, split into those under `location` and those elsewhere.
struct Reach<'a> {
    location: &'a Location,
    io: FileIO,
    inside: BTreeSet<String>,
    outside: BTreeSet<String>,
    failed: usize,
}

impl Reach<'_> {
    /// Records a file; true when it is new and lies under the table's location (so it
    /// may be read).
    fn add(&mut self, path: &str) -> bool {
        if self.location.contains_path(path) {
            self.inside.insert(path.to_string())
        } else {
            self.outside.insert(path.to_string());
            false
        }
    }

    async fn follow_snapshots(&mut self, metadata: &TableMetadata) {
        let mut manifests = BTreeMap::new();
        for snapshot in metadata.snapshots() {
            if !self.add(snapshot.manifest_list()) {
                continue;
            }
            let list = match self.io.new_input(snapshot.manifest_list()) {
                Ok(input) => input.read().await,
                Err(e) => Err(e),
            }
            .and_then(|bytes| ManifestList::parse_with_version(&bytes, metadata.format_version()));
            match list {
                Ok(list) => manifests.extend(list.entries().iter().cloned().map(|m| (m.manifest_path.clone(), m))),
                Err(e) => {
                    tracing::warn!(file = snapshot.manifest_list(), error = %e, "purge: cannot read a manifest list");
                    self.failed += 1;
                }
            }
        }
        for (path, manifest) in manifests {
            if !self.add(&path) {
                continue;
            }
            match manifest.load_manifest(&self.io).await {
                Ok(manifest) => {
                    for entry in manifest.entries() {
                        self.add(entry.file_path());
                    }
                }
                Err(e) => {
                    tracing::warn!(file = %path, error = %e, "purge: cannot read a manifest");
                    self.failed += 1;
                }
            }
        }
    }
}

/// Deletes the files `metadata` (stored at `metadata_location`) reaches under `location`.
pub async fn purge(
    warehouse: &Warehouse,
    location: &Location,
    metadata_location: &str,
    metadata: &TableMetadata,
) -> PurgeReport {
    let io = warehouse.scoped_io(location);
    let mut reach = Reach { location, io: io.clone(), inside: BTreeSet::new(), outside: BTreeSet::new(), failed: 0 };
    reach.follow_snapshots(metadata).await;
    reach.add(metadata_location);
    for log in metadata.metadata_log() {
        reach.add(&log.metadata_file);
    }
    for statistics in metadata.statistics_iter() {
        reach.add(&statistics.statistics_path);
    }
    for statistics in metadata.partition_statistics_iter() {
        reach.add(&statistics.statistics_path);
    }
    let Reach { inside, outside, failed, .. } = reach;
    let results: Vec<bool> = futures::stream::iter(inside)
        .map(|path| {
            let io = io.clone();
            async move {
                match io.delete(&path).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(file = %path, error = %e, "purge: cannot delete a file");
                        false
                    }
                }
            }
        })
        .buffer_unordered(PARALLEL_DELETES)
        .collect()
        .await;
    let deleted = results.iter().filter(|ok| **ok).count();
    PurgeReport { deleted, refused: outside.into_iter().collect(), failed: failed + results.len() - deleted }
}
