//! Server-side scan planning: which data files (and which delete files with them)
//! a scan of one snapshot must read, decided by the `iceberg` crate's planner over
//! the manifest list and manifests read through the mount's warehouse.
//!
//! Incremental scans (`start-snapshot-id`, `end-snapshot-id`) plan the data files
//! each append snapshot in the range added.
//!
//! A plan is a pure function of the table metadata and the request, so plan ids and
//! plan tasks of plans answered at once are signed requests rather than stored state:
//! any process can answer for them. A plan that outruns its budget is held by the
//! process computing it (`plans`) until its client fetches it.

mod content_file;
pub mod filter;
pub mod plans;
pub mod restrictions;

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use iceberg::expr::Predicate;
use iceberg::spec::{
    Manifest, ManifestEntryRef, ManifestFile, ManifestList, ManifestStatus, Operation, SnapshotRef, TableMetadata,
};
use iceberg::table::Table;
use iceberg::TableIdent;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use self::content_file::ContentFile;
use self::restrictions::Restrictions;
use crate::error::Error;
use crate::storage::location::Location;
use crate::storage::scoped;
use crate::storage::warehouse::Warehouse;

/// Manifests read at once while collecting the planned files' entries.
const MANIFEST_READS: usize = 8;

/// At most this many file scan tasks go in one response; the rest are plan tasks.
pub const TASKS_PER_RESPONSE: usize = 1000;

/// `PlanTableScanRequest`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PlanRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub select: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rows_requested: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_snapshot_schema: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_snapshot_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_snapshot_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats_fields: Option<Vec<String>>,
}

/// One file scan task: a data file and the indexes of its delete files.
struct Task {
    data_file: Value,
    deletes: Vec<usize>,
}

/// A completed plan, ordered by data file path.
pub struct Plan {
    tasks: Vec<Task>,
    delete_files: Vec<Value>,
    /// What each task's rows must still be filtered by: the request's whole filter
    /// (always a sound residual), `true` without one. Iceberg's Java client requires it.
    residual: Value,
}

impl Plan {
    /// How many file scan tasks the plan holds.
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// `file-scan-tasks` and `delete-files` for tasks `[start, start + count)`, with
    /// only the delete files those tasks reference.
    pub fn slice(&self, start: usize, count: usize) -> (Vec<Value>, Vec<Value>) {
        let mut delete_files = Vec::new();
        let mut renumbered: HashMap<usize, usize> = HashMap::new();
        let tasks = self
            .tasks
            .iter()
            .skip(start)
            .take(count)
            .map(|task| {
                let mut t = json!({ "data-file": task.data_file, "residual-filter": self.residual });
                if !task.deletes.is_empty() {
                    let refs: Vec<usize> = task
                        .deletes
                        .iter()
                        .map(|d| {
                            *renumbered.entry(*d).or_insert_with(|| {
                                delete_files.push(self.delete_files[*d].clone());
                                delete_files.len() - 1
                            })
                        })
                        .collect();
                    t["delete-file-references"] = json!(refs);
                }
                t
            })
            .collect();
        (tasks, delete_files)
    }
}

/// A request checked against its table: the snapshots to plan and what to plan them
/// with. Everything the client got wrong is refused here (400), before any I/O, so a
/// plan that runs in the background fails only for the server's reasons.
pub struct Prepared {
    metadata: TableMetadata,
    scope: Scope,
    predicate: Option<Predicate>,
    residual: Value,
    stats_fields: HashSet<i32>,
    select: Option<Vec<String>>,
    case_sensitive: bool,
}

/// Checks `req` against the table described by `metadata`. A restricted caller's
/// (`restricted`) row filter is added to the request's: only files it may match are
/// planned, every task's residual carries it, and no statistics of a masked column are
/// handed out. A row filter that does not bind to the planned snapshot's schema (time
/// travel to before a column existed) plans nothing.
pub fn prepare(
    metadata: TableMetadata,
    req: &PlanRequest,
    restricted: Option<&Restrictions>,
) -> Result<Prepared, Error> {
    let scope = Scope::of(&metadata, req)?;
    let schema = match scope.snapshots.last() {
        Some(snapshot) => {
            snapshot.schema(&metadata).map_err(|e| Error::Internal(format!("the snapshot's schema: {e}")))?
        }
        None => metadata.current_schema().clone(),
    };
    // The request is checked even when there is nothing to plan.
    let case_sensitive = req.case_sensitive.unwrap_or(true);
    let mut predicate = req.filter.as_ref().map(|f| filter::parse(f, &schema, case_sensitive)).transpose()?;
    let mut stats_fields = field_ids("stats-fields", req.stats_fields.as_deref(), &schema, case_sensitive)?;
    field_ids("select", req.select.as_deref(), &schema, case_sensitive)?;
    let mut residual = req.filter.clone().unwrap_or(Value::Bool(true));
    if let Some(restricted) = restricted {
        let (row_filter, rows) = match filter::parse(&restricted.row_filter, &schema, true) {
            Ok(rows) => (restricted.row_filter.clone(), rows),
            Err(_) => (Value::Bool(false), Predicate::AlwaysFalse),
        };
        predicate = Some(match predicate {
            Some(asked) => asked.and(rows),
            None => rows,
        });
        residual = match residual {
            Value::Bool(true) => row_filter,
            asked => json!({"type": "and", "left": asked, "right": row_filter}),
        };
        stats_fields.retain(|id| !restricted.masked.contains(id));
    }
    Ok(Prepared { metadata, scope, predicate, residual, stats_fields, select: req.select.clone(), case_sensitive })
}

/// Plans the prepared scan, over files `warehouse` reaches. Only files under the
/// table's `location` are read: a snapshot naming a manifest list, manifest, data or
/// delete file elsewhere is refused (400).
pub async fn run(prepared: Prepared, warehouse: &Warehouse, location: &Location) -> Result<Plan, Error> {
    let Prepared { metadata, scope, predicate, residual, stats_fields, select, case_sensitive } = prepared;
    if scope.snapshots.is_empty() {
        return Ok(Plan { tasks: Vec::new(), delete_files: Vec::new(), residual });
    }

    for snapshot in &scope.snapshots {
        outside_check(location, snapshot.manifest_list())?;
    }
    let io = warehouse.scoped_io(location);
    let table = Table::builder()
        .metadata(metadata.clone())
        .identifier(TableIdent::from_strs(["scan", "table"]).expect("a valid identifier"))
        .file_io(io.clone())
        .runtime(iceberg::Runtime::try_current().map_err(|e| Error::Internal(e.to_string()))?)
        .readonly(true)
        // A table is opened per plan, which reads each manifest once: a cache would only
        // hold memory (up to 32 MiB) for the plan's duration.
        .disable_cache()
        .build()
        .map_err(|e| Error::Internal(format!("opening the table for planning: {e}")))?;
    let mut planned = Vec::new();
    let mut files = HashMap::new();
    for snapshot in &scope.snapshots {
        let mut scan = table.scan().snapshot_id(snapshot.snapshot_id()).with_case_sensitive(case_sensitive);
        scan = match &select {
            Some(columns) => scan.select(columns),
            None => scan.select_all(),
        };
        if let Some(predicate) = &predicate {
            scan = scan.with_filter(predicate.clone());
        }
        let scan = scan.build().map_err(|e| Error::BadRequest(format!("cannot plan this scan: {e}")))?;
        let mut tasks: Vec<iceberg::scan::FileScanTask> =
            scan.plan_files().await.map_err(unreadable)?.try_collect().await.map_err(unreadable)?;

        // The planner names files by path; the response carries their full manifest
        // entries. An incremental scan keeps only what each snapshot added.
        let mut wanted: HashSet<&str> = tasks.iter().map(|t| t.data_file_path.as_str()).collect();
        wanted.extend(tasks.iter().flat_map(|t| t.deletes.iter().map(|d| d.file_path.as_str())));
        let added_by = scope.incremental.then(|| snapshot.snapshot_id());
        let found = manifest_entries(&io, &metadata, snapshot, &wanted, added_by, &stats_fields).await?;
        if scope.incremental {
            tasks.retain(|t| found.contains_key(&t.data_file_path));
            // Appends add no deletes, and older deletes cannot apply to newer rows.
            tasks.iter_mut().for_each(|t| t.deletes.clear());
        }
        files.extend(found);
        planned.extend(tasks);
    }

    for t in &planned {
        outside_check(location, &t.data_file_path)?;
        for d in &t.deletes {
            outside_check(location, &d.file_path)?;
        }
    }
    let mut delete_index: HashMap<&str, usize> = HashMap::new();
    let mut delete_files = Vec::new();
    let mut tasks = Vec::with_capacity(planned.len());
    for t in &planned {
        let data_file = files.get(t.data_file_path.as_str()).cloned().ok_or_else(|| missing(&t.data_file_path))?;
        let mut deletes = Vec::with_capacity(t.deletes.len());
        for d in &t.deletes {
            let index = match delete_index.get(d.file_path.as_str()) {
                Some(index) => *index,
                None => {
                    delete_files.push(files.get(d.file_path.as_str()).cloned().ok_or_else(|| missing(&d.file_path))?);
                    delete_index.insert(d.file_path.as_str(), delete_files.len() - 1);
                    delete_files.len() - 1
                }
            };
            deletes.push(index);
        }
        deletes.sort_unstable();
        tasks.push((t.data_file_path.clone(), Task { data_file, deletes }));
    }
    // Plan tasks address slices of the plan, so its order must not depend on I/O timing.
    tasks.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Plan { tasks: tasks.into_iter().map(|(_, t)| t).collect(), delete_files, residual })
}

/// Which snapshots a request plans: one (point in time), or for an incremental scan
/// the appends after `start-snapshot-id` up to and including `end-snapshot-id`.
struct Scope {
    snapshots: Vec<SnapshotRef>,
    incremental: bool,
}

impl Scope {
    fn of(metadata: &TableMetadata, req: &PlanRequest) -> Result<Scope, Error> {
        let find = |id: i64| {
            metadata
                .snapshot_by_id(id)
                .cloned()
                .ok_or_else(|| Error::BadRequest(format!("the table has no snapshot {id}")))
        };
        if req.start_snapshot_id.is_none() && req.end_snapshot_id.is_none() {
            let snapshot = match req.snapshot_id {
                Some(id) => Some(find(id)?),
                None => metadata.current_snapshot().cloned(),
            };
            return Ok(Scope { snapshots: snapshot.into_iter().collect(), incremental: false });
        }
        if req.snapshot_id.is_some() {
            return Err(Error::BadRequest("snapshot-id and an incremental range exclude each other".into()));
        }
        let end = req
            .end_snapshot_id
            .ok_or_else(|| Error::BadRequest("end-snapshot-id is required with start-snapshot-id".into()))?;
        if let Some(start) = req.start_snapshot_id {
            find(start)?;
        }
        // Walk back from the end to the start (exclusive), keeping the appends.
        let mut snapshots = Vec::new();
        let mut next = Some(find(end)?);
        while let Some(snapshot) = next {
            if Some(snapshot.snapshot_id()) == req.start_snapshot_id {
                break;
            }
            next = snapshot.parent_snapshot_id().and_then(|id| metadata.snapshot_by_id(id).cloned());
            if next.is_none() && req.start_snapshot_id.is_some() {
                let start = req.start_snapshot_id.unwrap_or_default();
                return Err(Error::BadRequest(format!(
                    "start-snapshot-id {start} is not an ancestor of end-snapshot-id {end}"
                )));
            }
            if snapshot.summary().operation == Operation::Append {
                snapshots.push(snapshot);
            }
        }
        snapshots.reverse();
        Ok(Scope { snapshots, incremental: true })
    }
}

fn unreadable(e: iceberg::Error) -> Error {
    if scoped::is_refusal(&e) {
        return Error::BadRequest(format!("the table's metadata names a file outside the table's location: {e}"));
    }
    Error::Internal(format!("planning the scan: {e}"))
}

/// Refuses a file a snapshot names outside the table's location.
fn outside_check(location: &Location, path: &str) -> Result<(), Error> {
    if location.contains_path(path) {
        return Ok(());
    }
    Err(Error::BadRequest(format!(
        "the table's metadata names {path}, which is outside the table's location {location}: not planned"
    )))
}

fn missing(path: &str) -> Error {
    Error::Internal(format!("planned {path} but no live manifest entry lists it"))
}

/// The column ids a request field (`select`, `stats-fields`) names.
fn field_ids(
    what: &str,
    names: Option<&[String]>,
    schema: &iceberg::spec::Schema,
    case_sensitive: bool,
) -> Result<HashSet<i32>, Error> {
    names
        .unwrap_or_default()
        .iter()
        .map(|name| {
            let field =
                if case_sensitive { schema.field_by_name(name) } else { schema.field_by_name_case_insensitive(name) };
            field.map(|f| f.id).ok_or_else(|| Error::BadRequest(format!("{what}: no column named {name:?}")))
        })
        .collect()
}

/// The live manifest entries of `snapshot` for the `wanted` files, as spec JSON;
/// with `added_by`, only the entries that snapshot added.
async fn manifest_entries(
    io: &iceberg::io::FileIO,
    metadata: &TableMetadata,
    snapshot: &SnapshotRef,
    wanted: &HashSet<&str>,
    added_by: Option<i64>,
    stats_fields: &HashSet<i32>,
) -> Result<HashMap<String, Value>, Error> {
    let mut found = HashMap::with_capacity(wanted.len());
    if wanted.is_empty() {
        return Ok(found);
    }
    let bytes = io.new_input(snapshot.manifest_list()).map_err(unreadable)?.read().await.map_err(unreadable)?;
    let list = ManifestList::parse_with_version(&bytes, metadata.format_version()).map_err(unreadable)?;
    let schema = snapshot.schema(metadata).map_err(unreadable)?;
    // Read a few at a time: a table of thousands of manifests is read in a fraction of
    // the time, and each is let go once its entries are taken.
    let read: Vec<ManifestFile> =
        list.entries().iter().filter(|m| added_by.is_none_or(|id| m.added_snapshot_id == id)).cloned().collect();
    let reads = read.into_iter().map(|manifest_file| load_manifest(io.clone(), manifest_file));
    let mut reads = futures::stream::iter(reads).buffer_unordered(MANIFEST_READS);
    while let Some((manifest_file, manifest)) = reads.try_next().await? {
        let spec = metadata
            .partition_spec_by_id(manifest_file.partition_spec_id)
            .ok_or_else(|| Error::Internal(format!("no partition spec {}", manifest_file.partition_spec_id)))?;
        let partition_type = spec.partition_type(&schema).map_err(unreadable)?;
        let added = |e: &&ManifestEntryRef| {
            added_by.is_none_or(|id| e.status() == ManifestStatus::Added && e.snapshot_id() == Some(id))
        };
        for entry in manifest.entries().iter().filter(|e| e.is_alive()).filter(added) {
            let file = entry.data_file();
            if wanted.contains(file.file_path()) {
                let content = ContentFile {
                    file,
                    spec_id: manifest_file.partition_spec_id,
                    partition_type: &partition_type,
                    stats_fields,
                };
                found.insert(file.file_path().to_string(), content.to_json());
            }
        }
    }
    Ok(found)
}

/// One manifest, with the entry of the list that names it.
async fn load_manifest(io: iceberg::io::FileIO, file: ManifestFile) -> Result<(ManifestFile, Manifest), Error> {
    let manifest = file.load_manifest(&io).await.map_err(unreadable)?;
    Ok((file, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_carries_only_its_delete_files_renumbered() {
        let task = |path: &str, deletes: Vec<usize>| Task { data_file: json!({ "file-path": path }), deletes };
        let plan = Plan {
            tasks: vec![task("a", vec![1]), task("b", vec![]), task("c", vec![0, 1])],
            delete_files: vec![json!("d0"), json!("d1")],
            residual: json!(true),
        };
        let (tasks, deletes) = plan.slice(0, 2);
        assert_eq!(tasks.len(), 2);
        assert_eq!(deletes, vec![json!("d1")]);
        assert_eq!(tasks[0]["delete-file-references"], json!([0]));
        assert!(tasks[1].get("delete-file-references").is_none());
        let (tasks, deletes) = plan.slice(2, 2);
        assert_eq!(tasks[0]["data-file"]["file-path"], "c");
        assert_eq!(deletes, vec![json!("d0"), json!("d1")]);
        assert_eq!(tasks[0]["delete-file-references"], json!([0, 1]));
        assert!(plan.slice(3, 2).0.is_empty());
    }
}
