//! A warehouse: where table data and metadata files live, accessed through the
//! `iceberg` crate's FileIO (the local file system, or S3 through opendal).
//!
//! Every location used in a warehouse is a [`Location`] checked by
//! [`Warehouse::locate`], and every file is reached through a FileIO scoped to the
//! location the request may touch.

use std::sync::Arc;

use iceberg::io::{FileIO, LocalFsStorageFactory, Storage, StorageConfig, StorageFactory};
use iceberg_storage_opendal::OpenDalStorageFactory;

use super::location::{Location, LocationError, Reach, Scheme};
use super::location_index::LocationIndex;
use super::scoped::ScopedStorage;
use crate::config::S3Config;

/// One warehouse root, the storage that reaches it, and the location index.
#[derive(Clone)]
pub struct Warehouse {
    /// A location, or (for a store that assigns every table a bucket of its own) a
    /// bucket pattern: then every table location is one its backend assigned.
    root: Reach,
    storage: Arc<dyn Storage>,
    /// FileIO for anything under the root.
    io: FileIO,
    /// Warehouses of other catalogs that lie inside this one: never this one's.
    nested: Vec<Reach>,
    index: LocationIndex,
    /// Whether a table or view may lie anywhere in the warehouse, not only under its
    /// namespace's location (still never overlapping another's).
    unstructured: bool,
}

impl std::fmt::Debug for Warehouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warehouse").field("root", &self.root.to_string()).finish()
    }
}

impl Warehouse {
    /// A warehouse at `root` (`file:///…`, `s3://bucket/…`, or a bucket pattern
    /// `s3://*--table-s3`); an `s3://` one is reached with the store's settings.
    pub fn open(root: &str, s3: &S3Config, index: LocationIndex) -> Result<Self, String> {
        let root = Reach::parse(root).map_err(|e| format!("warehouse {e}"))?;
        let scheme = match &root {
            Reach::Under(location) if location.key().is_empty() => {
                return Err(format!("warehouse {root}: a warehouse needs a path below the bucket or file system root"))
            }
            Reach::Under(location) => location.scheme(),
            Reach::Buckets(_) => Scheme::S3,
        };
        let storage = match scheme {
            Scheme::S3 => s3_storage(s3),
            Scheme::File => LocalFsStorageFactory.build(&StorageConfig::new()),
        }
        .map_err(|e| format!("warehouse {root}: {e}"))?;
        let io = ScopedStorage::file_io(storage.clone(), root.clone());
        Ok(Self { root, storage, io, nested: Vec::new(), index, unstructured: false })
    }

    /// This warehouse, letting a client place a table or view anywhere in it
    /// (`unstructured_locations`).
    pub fn with_unstructured_locations(mut self, unstructured: bool) -> Self {
        self.unstructured = unstructured;
        self
    }

    /// Whether a table or view may lie outside its namespace's location.
    pub fn unstructured(&self) -> bool {
        self.unstructured
    }

    pub fn root(&self) -> &Reach {
        &self.root
    }

    /// Whether its backend assigns table locations (a bucket pattern): namespaces then
    /// have no location, and a client may not choose one for a table.
    pub fn assigned(&self) -> bool {
        matches!(self.root, Reach::Buckets(_))
    }

    /// FileIO for anything in this warehouse.
    pub fn io(&self) -> &FileIO {
        &self.io
    }

    /// FileIO that reaches only what lies under `location`.
    pub fn scoped_io(&self, location: &Location) -> FileIO {
        ScopedStorage::file_io(self.storage.clone(), Reach::Under(location.clone()))
    }

    pub fn index(&self) -> &LocationIndex {
        &self.index
    }

    /// Records the warehouses of other catalogs; those inside this one are excluded from it.
    pub fn exclude_nested<'a>(&mut self, others: impl Iterator<Item = &'a Reach>) {
        self.nested = others
            .filter(|other| match (other, &self.root) {
                (Reach::Under(other), Reach::Under(root)) => other.is_strictly_within(root),
                (Reach::Under(other), Reach::Buckets(_)) => self.root.contains(other),
                // A bucket pattern names whole buckets: none lies strictly inside a location.
                (Reach::Buckets(_), _) => false,
            })
            .cloned()
            .collect();
    }

    /// Parses `raw` and checks that it lies in this warehouse (and in no other
    /// catalog's warehouse nested inside it).
    pub fn locate(&self, raw: &str) -> Result<Location, LocationError> {
        let location = Location::parse(raw)?;
        if !self.root.contains(&location) {
            return Err(LocationError::OutsideWarehouse(self.root.to_string()));
        }
        if let Some(other) = self.nested.iter().find(|n| n.contains(&location)) {
            return Err(LocationError::OtherWarehouse(other.to_string()));
        }
        Ok(location)
    }

    /// Deletes one file the server wrote for a change that did not apply; failures are
    /// logged, not returned.
    pub async fn delete_quietly(&self, location: &str) {
        if let Err(e) = self.io.delete(location).await {
            tracing::warn!(location, error = %e, "could not delete an orphaned file");
        }
    }
}

/// The storage for `s3://` locations with the server's own endpoint, region and keys.
fn s3_storage(s3: &S3Config) -> iceberg::Result<Arc<dyn Storage>> {
    use iceberg::io::{S3_ACCESS_KEY_ID, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY};
    let mut config = StorageConfig::new()
        .with_prop(S3_REGION, s3.region.clone())
        .with_prop(S3_PATH_STYLE_ACCESS, s3.path_style.to_string());
    if let Some(endpoint) = &s3.endpoint {
        config = config.with_prop(S3_ENDPOINT, endpoint.clone());
    }
    if let Some((id, secret)) = s3.keys() {
        config = config.with_prop(S3_ACCESS_KEY_ID, id).with_prop(S3_SECRET_ACCESS_KEY, secret);
    }
    OpenDalStorageFactory::S3 { customized_credential_load: None }.build(&config)
}
