//! Table metadata the host holds in memory: the JSON of the metadata files it wrote
//! or read, by mount and metadata location, under a byte budget. A metadata file is
//! written once and never changed, so what is held for a location is never stale.
//!
//! A backend need record only a table's pointer (the native backend keeps only the
//! location): a load takes the JSON from here, or reads the file once, so the
//! metadata never crosses the plugin boundary on a native load, and a commit made on
//! this host hands the next commit its metadata without a parse.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use iceberg::spec::TableMetadata;

use super::locations;
use crate::error::Error;
use crate::mounts::Mount;
use crate::plugins::bindings::Pointer;
use crate::storage::warehouse::Warehouse;

/// What is held of one metadata file.
pub struct Held {
    /// The file's JSON, uncompressed: what clients are served.
    pub json: Bytes,
    /// The table location it records, as written (empty if it records none).
    pub location: String,
    /// The metadata itself, when this host built it.
    built: Option<Arc<TableMetadata>>,
}

impl Held {
    /// The metadata, parsed (or copied, when this host built it).
    pub fn metadata(&self) -> Result<TableMetadata, serde_json::Error> {
        match &self.built {
            Some(built) => Ok(TableMetadata::clone(built)),
            None => serde_json::from_slice(&self.json),
        }
    }
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
        let json = held.json.len() as u64 * if held.built.is_some() { 1 + BUILT_WEIGHT } else { 1 };
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
pub fn keep_built(mount: &Mount, metadata_location: &str, json: Bytes, metadata: Arc<TableMetadata>) {
    let location = metadata.location().to_string();
    HELD.insert(key(mount, metadata_location), Arc::new(Held { json, location, built: Some(metadata) }));
}

/// Forgets a metadata file that was removed again (its commit did not apply).
pub fn forget(mount: &Mount, metadata_location: &str) {
    HELD.remove(&key(mount, metadata_location));
}

/// The metadata a loaded pointer names, for serving it: taken from the pointer when
/// the backend returned it (a remote catalog's), else held, else read from the
/// mount's served files. The pointer's JSON is moved out. Metadata that is not
/// well-formed JSON is refused (502, naming the mount): it is spliced into responses
/// as it is.
pub async fn served(mount: &Mount, pointer: &mut Pointer) -> Result<Arc<Held>, Error> {
    held(mount, pointer, mount.served_files(), "this server reads no files of this mount").await
}

/// The metadata a loaded pointer names, for changing it: as [`served`], reading the
/// file from the mount's warehouse.
pub async fn current(mount: &Mount, pointer: &mut Pointer) -> Result<Arc<Held>, Error> {
    held(mount, pointer, mount.warehouse.as_ref(), "the mount has no warehouse on this server").await
}

async fn held(
    mount: &Mount,
    pointer: &mut Pointer,
    files: Option<&Warehouse>,
    no_files: &str,
) -> Result<Arc<Held>, Error> {
    let location = &pointer.metadata_location;
    let unusable = |why: String| Error::BadGateway(format!("{}: the metadata of {location} {why}", mount.label()));
    let returned = std::mem::take(&mut pointer.metadata_json);
    if let Some(held) = HELD.get(&KeyRef(&mount.space, location)) {
        // The same length for the same file: what was checked before (a backend
        // returning other JSON for a location misleads only its own clients).
        if returned.is_empty() || returned.len() == held.json.len() {
            return Ok(held);
        }
    }
    let json = match returned.is_empty() {
        false => Bytes::from(returned),
        true => {
            let files = files.ok_or_else(|| unusable(format!("was not returned, and {no_files}")))?;
            // Boxed: reading a file would size the future of every load.
            Box::pin(read(files, location)).await.map_err(|why| unusable(format!("was not returned and {why}")))?
        }
    };
    let recorded = locations::recorded_location(&json).map_err(|_| unusable("is not valid JSON".into()))?;
    let held = Arc::new(Held { json, location: recorded, built: None });
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

    /// 40 MiB of metadata is held: it would exceed the share of one of several shards
    /// (32 MiB each on 2 cores, 8 MiB on 8 or more).
    #[test]
    fn large_metadata_is_held_whatever_the_cores() {
        let key = ("held-test".to_string(), "file:///w/t/metadata/00001-big.metadata.json".to_string());
        let json = Bytes::from(vec![b' '; 40 << 20]);
        HELD.insert(key.clone(), Arc::new(Held { json, location: String::new(), built: None }));
        assert!(HELD.get(&key).is_some_and(|held| held.json.len() == 40 << 20));
        // Found by a borrowed key too (hashed as the owned one).
        assert!(HELD.get(&KeyRef(&key.0, &key.1)).is_some());
        HELD.remove(&key);
    }
}
