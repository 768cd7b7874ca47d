//! Table metadata the host holds in memory: the JSON of the metadata files it wrote
//! or read, by mount and metadata location, under a byte budget. A metadata file is
//! written once and never changed, so what is held for a location is never stale.
//!
//! A backend need record only a table's pointer (the native backend keeps only the
//! location): a load takes the JSON from here, or reads the file once, so the
//! metadata never crosses the plugin boundary on a native load, and a commit made on
//! this host hands the next commit its metadata without a parse.

use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use bytes::Bytes;
use iceberg::spec::TableMetadata;

use super::locations;
use crate::error::Error;
use crate::mounts::Mount;
use crate::sandbox::bindings::Pointer;
use crate::storage::location::{Location, Scheme};
use crate::storage::warehouse::Warehouse;

/// What is held of one metadata file.
pub struct Held {
    /// The file's JSON, uncompressed: what clients are served.
    pub json: Bytes,
    /// The table location it records, as written (empty if it records none).
    pub location: String,
    /// The metadata itself, when this host built it and no change has taken it since.
    built: Mutex<Option<TableMetadata>>,
    /// Whether it was held with its metadata built: what it weighs. The cache weighs an
    /// entry again when it removes it, so the weight must not change with a take.
    weighs_built: bool,
    /// The JSON with only the snapshots a branch or tag references (`snapshots=refs`),
    /// made at the first such load. Not weighed: a table has few refs, so it is a small
    /// part of the JSON it is made from.
    refs_json: OnceLock<Bytes>,
    /// The metadata file's path when it is on the local file system, found at the
    /// first load that checks it is still there (parsing the location each time was a
    /// twentieth of a load).
    local_file: OnceLock<Option<Box<str>>>,
}

impl Held {
    fn new(json: Bytes, location: String, built: Option<TableMetadata>) -> Self {
        Self {
            json,
            location,
            weighs_built: built.is_some(),
            built: Mutex::new(built),
            refs_json: OnceLock::new(),
            local_file: OnceLock::new(),
        }
    }

    /// The metadata file's local path, worked out once (`metadata_location`: the
    /// location this is held under).
    fn local_file(&self, metadata_location: &str) -> Option<&str> {
        self.local_file.get_or_init(|| local_file(metadata_location)).as_deref()
    }

    /// The JSON with only the snapshots that branches and tags reference: what a load
    /// with `snapshots=refs` serves.
    pub fn refs_json(&self) -> Result<Bytes, serde_json::Error> {
        if let Some(json) = self.refs_json.get() {
            return Ok(json.clone());
        }
        let json = Bytes::from(referenced_snapshots_only(&self.json)?);
        Ok(self.refs_json.get_or_init(|| json).clone())
    }

    /// The metadata, parsed (or copied, when this host built it).
    pub fn metadata(&self) -> Result<TableMetadata, serde_json::Error> {
        let built = self.built.lock().expect("held metadata").clone();
        built.map_or_else(|| self.parse(), Ok)
    }

    /// The metadata, to build the next version from: the one this host built, taken
    /// (copying it was a tenth of a commit; a change that then fails leaves the next
    /// one to parse the file), else parsed.
    pub fn take_metadata(&self) -> Result<TableMetadata, serde_json::Error> {
        let built = self.built.lock().expect("held metadata").take();
        built.map_or_else(|| self.parse(), Ok)
    }

    /// Metadata JSON just read, parsed now or only scanned. Refused if not well-formed
    /// JSON; metadata that does not parse is held unparsed, for whoever parses it to
    /// refuse.
    fn read(json: Bytes, parse: Parse) -> Result<Self, serde_json::Error> {
        if let Parse::Now = parse {
            crate::telemetry::table_metadata_parse();
            if let Ok(metadata) = serde_json::from_slice::<TableMetadata>(&json) {
                return Ok(Self::new(json, metadata.location().to_string(), Some(metadata)));
            }
        }
        let recorded = locations::recorded_location(&json)?;
        Ok(Self::new(json, recorded, None))
    }

    fn parse(&self) -> Result<TableMetadata, serde_json::Error> {
        crate::telemetry::table_metadata_parse();
        serde_json::from_slice(&self.json)
    }
}

/// Metadata JSON without the snapshots no branch or tag references; everything else
/// (the snapshot log included) as it was.
fn referenced_snapshots_only(json: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut metadata: serde_json::Value = serde_json::from_slice(json)?;
    let referenced: std::collections::HashSet<i64> = metadata["refs"]
        .as_object()
        .into_iter()
        .flat_map(|refs| refs.values())
        .chain(std::iter::once(&metadata["current-snapshot-id"]))
        .filter_map(|r| r.get("snapshot-id").unwrap_or(r).as_i64())
        .collect();
    if let Some(snapshots) = metadata.get_mut("snapshots").and_then(serde_json::Value::as_array_mut) {
        snapshots.retain(|s| s["snapshot-id"].as_i64().is_some_and(|id| referenced.contains(&id)));
    }
    serde_json::to_vec(&metadata)
}

/// The memory all held metadata may take, counted as its JSON's size (a built
/// metadata counted again, several times over: parsed, it takes more than its JSON).
const BUDGET_BYTES: u64 = 256 << 20;
const BUILT_WEIGHT: u64 = 4;
/// How many files are expected to be held (the cache's initial room, not a limit).
const EXPECTED_FILES: usize = 1024;

/// The mount's key space and the metadata location: a location of one mount never
/// answers for another's.
type Key = (String, String);

#[derive(Clone)]
struct BySize;

impl quick_cache::Weighter<Key, Arc<Held>> for BySize {
    fn weight(&self, key: &Key, held: &Arc<Held>) -> u64 {
        // A metadata taken later is still counted, until its version is forgotten
        // (the commit after it landed).
        let json = held.json.len() as u64 * if held.weighs_built { 1 + BUILT_WEIGHT } else { 1 };
        json + (key.0.len() + key.1.len() + held.location.len()) as u64
    }
}

/// One shard: the cache splits its budget evenly over its shards, and a shard's
/// share (8 MiB of 256 on a machine with 8 cores or more) would refuse a large
/// table's metadata. Reads take the shard's lock shared.
static HELD: LazyLock<quick_cache::sync::Cache<Key, Arc<Held>, BySize>> = LazyLock::new(|| {
    let options = quick_cache::OptionsBuilder::new()
        .estimated_items_capacity(EXPECTED_FILES)
        .weight_capacity(BUDGET_BYTES)
        .shards(1)
        .build()
        .expect("valid cache options");
    quick_cache::sync::Cache::with_options(options, BySize, Default::default(), Default::default())
});

fn key(mount: &Mount, metadata_location: &str) -> Key {
    (mount.space.clone(), metadata_location.to_string())
}

/// A [`Key`] borrowed, to look one up without copying it (hashed as the key is).
#[derive(Hash)]
struct KeyRef<'a>(&'a str, &'a str);

impl quick_cache::Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// Holds the metadata this host just wrote at `metadata_location`.
pub fn keep_built(mount: &Mount, metadata_location: &str, json: Bytes, metadata: TableMetadata) {
    let location = metadata.location().to_string();
    HELD.insert(key(mount, metadata_location), Arc::new(Held::new(json, location, Some(metadata))));
}

/// Forgets a metadata file: one removed again (its commit did not apply), or one a
/// commit just replaced. A table's earlier versions are not loaded again (a pointer
/// names the current one), and kept they filled the budget within a few thousand
/// commits, after which the cache evicted the new versions as readily as the dead
/// ones and commits parsed their base instead of reusing it.
pub fn forget(mount: &Mount, metadata_location: &str) {
    HELD.remove(&key(mount, metadata_location));
}

/// The metadata a loaded pointer names, for serving it: held, else taken from the
/// pointer when the backend returned it (a remote catalog's; copied, the pointer may
/// be a kept answer), else read from the mount's served files. Metadata that is not
/// well-formed JSON is refused (502, naming the mount): it is spliced into responses
/// as it is.
pub async fn served(mount: &Mount, pointer: &Pointer) -> Result<Arc<Held>, Error> {
    let location = &pointer.metadata_location;
    if pointer.metadata_json.is_empty() {
        if let Some(held) = HELD.get(&KeyRef(&mount.space, location)) {
            still_there(mount, location, held.local_file(location))?;
            return Ok(held);
        }
        still_there(mount, location, local_file(location).as_deref())?;
    }
    held(mount, pointer, mount.served_files(), "this server reads no files of this mount", Parse::Later).await
}

/// The path of a metadata file on the local file system (`None` for any other store).
fn local_file(metadata_location: &str) -> Option<Box<str>> {
    let file = Location::parse(metadata_location).ok()?;
    (file.scheme() == Scheme::File).then(|| format!("/{}", file.key()).into())
}

/// Fails with 404 `NotFoundException` (Iceberg's words for a file that cannot be
/// opened) when a metadata file on the local file system is gone: the JSON held for it
/// would serve a table whose files were moved away behind the catalog's back. One
/// `stat`, so only local files are checked; an object store's is not asked on a load.
fn still_there(mount: &Mount, metadata_location: &str, local_file: Option<&str>) -> Result<(), Error> {
    let Some(path) = local_file else { return Ok(()) };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound(format!(
            "Failed to open input stream for file: {metadata_location} (the current metadata file of this \
                 table in {} is gone; the table is still recorded)",
            mount.label()
        ))),
        _ => Ok(()),
    }
}

/// Why a change cannot read a metadata file the backend did not return.
const NO_WAREHOUSE: &str = "the mount has no warehouse on this server";

/// The metadata a loaded pointer names, for changing it: as [`served`], reading the
/// file from the mount's warehouse. JSON not held yet is parsed at once and held
/// built, for the change to take: scanning it for its location first, as a load does,
/// cost a quarter of the parse again.
pub async fn current(mount: &Mount, pointer: &Pointer) -> Result<Arc<Held>, Error> {
    held(mount, pointer, mount.warehouse.as_ref(), NO_WAREHOUSE, Parse::Now).await
}

/// The table location the metadata a loaded pointer names records (empty if none), as
/// [`current`] reads it but without parsing the rest.
pub async fn current_location(mount: &Mount, pointer: &Pointer) -> Result<String, Error> {
    Ok(held(mount, pointer, mount.warehouse.as_ref(), NO_WAREHOUSE, Parse::Later).await?.location.clone())
}

/// Whether JSON read to be held is parsed now or only scanned (checked well-formed and
/// its location read), leaving the parse to whoever needs the metadata.
enum Parse {
    Now,
    Later,
}

async fn held(
    mount: &Mount,
    pointer: &Pointer,
    files: Option<&Warehouse>,
    no_files: &str,
    parse: Parse,
) -> Result<Arc<Held>, Error> {
    let location = &pointer.metadata_location;
    let unusable = |why: String| Error::BadGateway(format!("{}: the metadata of {location} {why}", mount.label()));
    let returned = &pointer.metadata_json;
    if let Some(held) = HELD.get(&KeyRef(&mount.space, location)) {
        // The same length for the same file: what was checked before (a backend
        // returning other JSON for a location misleads only its own clients).
        if returned.is_empty() || returned.len() == held.json.len() {
            return Ok(held);
        }
    }
    let json = match returned.is_empty() {
        false => Bytes::copy_from_slice(returned.as_bytes()),
        true => {
            let files = files.ok_or_else(|| unusable(format!("was not returned, and {no_files}")))?;
            // Boxed: reading a file would size the future of every load.
            Box::pin(read(files, location)).await.map_err(|why| unusable(format!("was not returned and {why}")))?
        }
    };
    let held = Arc::new(Held::read(json, parse).map_err(|_| unusable("is not valid JSON".into()))?);
    HELD.insert(key(mount, location), held.clone());
    Ok(held)
}

/// Reads a metadata file's JSON, uncompressing a gzip one.
async fn read(files: &Warehouse, location: &str) -> Result<Bytes, String> {
    let bytes =
        async { files.io().new_input(location)?.read().await }.await.map_err(|e| format!("cannot be read: {e}"))?;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let metadata = TableMetadata::read_from(files.io(), location).await.map_err(|e| format!("cannot be read: {e}"))?;
    super::metadata_json(&metadata, 0).map(Bytes::from).map_err(|e| format!("cannot be written as JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small table's metadata, located at file:///w/t.
    fn metadata() -> TableMetadata {
        iceberg::spec::TableMetadataBuilder::new(
            iceberg::spec::Schema::builder().build().unwrap(),
            iceberg::spec::UnboundPartitionSpec::builder().build(),
            iceberg::spec::SortOrder::unsorted_order(),
            "file:///w/t".to_string(),
            iceberg::spec::FormatVersion::V2,
            Default::default(),
        )
        .unwrap()
        .build()
        .unwrap()
        .metadata
    }

    /// `snapshots=refs` keeps the snapshots a branch or tag names, and nothing else.
    #[test]
    fn refs_keep_only_referenced_snapshots() {
        let snapshot = |id: i64| serde_json::json!({"snapshot-id": id, "timestamp-ms": id});
        let json = serde_json::json!({
            "format-version": 2, "current-snapshot-id": 3,
            "snapshots": [snapshot(1), snapshot(2), snapshot(3)],
            "refs": {"main": {"snapshot-id": 3, "type": "branch"}, "v1": {"snapshot-id": 1, "type": "tag"}},
            "snapshot-log": [{"snapshot-id": 1}, {"snapshot-id": 2}, {"snapshot-id": 3}]
        });
        let held = Held::new(serde_json::to_vec(&json).unwrap().into(), String::new(), None);
        let refs: serde_json::Value = serde_json::from_slice(&held.refs_json().unwrap()).unwrap();
        let ids: Vec<i64> =
            refs["snapshots"].as_array().unwrap().iter().map(|s| s["snapshot-id"].as_i64().unwrap()).collect();
        assert_eq!(ids, [1, 3]);
        assert_eq!(refs["snapshot-log"], json["snapshot-log"], "the log is the table's history, kept");
        assert_eq!(refs["refs"], json["refs"]);
    }

    /// A held metadata weighs the same before and after a commit takes it: the cache
    /// weighs an entry again to remove it, and a lighter entry left the difference
    /// counted forever (after a few thousand commits the cache seemed full and evicted
    /// every new version, so every commit parsed its base).
    #[test]
    fn taking_the_metadata_leaves_the_weight() {
        let metadata = metadata();
        let json = Bytes::from(crate::tables::metadata_json(&metadata, 0).unwrap());
        let held = Arc::new(Held::new(json, "file:///w/t".into(), Some(metadata)));
        let key = ("held-test".to_string(), "file:///w/t/metadata/00000-a.metadata.json".to_string());
        let weight = quick_cache::Weighter::weight(&BySize, &key, &held);
        assert!(held.take_metadata().is_ok());
        assert!(held.built.lock().unwrap().is_none(), "taken, not copied");
        assert_eq!(quick_cache::Weighter::weight(&BySize, &key, &held), weight);
    }

    /// Metadata read for a change is held parsed, so the change takes it without a
    /// second pass; read for a load, only scanned. Either way JSON that is not
    /// well-formed is refused, and metadata that does not parse is held for its parser
    /// to refuse.
    #[test]
    fn metadata_read_for_a_change_is_parsed_once() {
        let json = Bytes::from(crate::tables::metadata_json(&metadata(), 0).unwrap());
        let read = Held::read(json.clone(), Parse::Now).unwrap();
        assert!(read.built.lock().unwrap().is_some(), "parsed as it was read");
        assert_eq!(read.location, "file:///w/t");
        let scanned = Held::read(json, Parse::Later).unwrap();
        assert!(scanned.built.lock().unwrap().is_none());
        assert_eq!(scanned.location, "file:///w/t");

        let not_metadata = Held::read(Bytes::from_static(br#"{"location": "file:///w/x"}"#), Parse::Now).unwrap();
        assert_eq!(not_metadata.location, "file:///w/x");
        assert!(not_metadata.take_metadata().is_err());
        assert!(Held::read(Bytes::from_static(b"{\"location\": "), Parse::Now).is_err());
    }

    /// 40 MiB of metadata is held: it would exceed the share of one of several shards
    /// (32 MiB each on 2 cores, 8 MiB on 8 or more).
    #[test]
    fn large_metadata_is_held_whatever_the_cores() {
        let key = ("held-test".to_string(), "file:///w/t/metadata/00001-big.metadata.json".to_string());
        let json = Bytes::from(vec![b' '; 40 << 20]);
        HELD.insert(key.clone(), Arc::new(Held::new(json, String::new(), None)));
        assert!(HELD.get(&key).is_some_and(|held| held.json.len() == 40 << 20));
        // Found by a borrowed key too (hashed as the owned one).
        assert!(HELD.get(&KeyRef(&key.0, &key.1)).is_some());
        HELD.remove(&key);
    }
}
