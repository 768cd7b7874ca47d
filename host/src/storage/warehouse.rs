//! A warehouse: where table data and metadata files live, accessed through the
//! `iceberg` crate's FileIO (the local file system, or S3 through opendal).

use std::sync::Arc;

use iceberg::io::{FileIO, FileIOBuilder};
use iceberg::spec::TableMetadata;
use iceberg_storage_opendal::OpenDalStorageFactory;

use crate::config::S3Config;
use crate::error::Error;

/// One warehouse root and the FileIO that reaches it.
#[derive(Clone, Debug)]
pub struct Warehouse {
    /// The root, e.g. `file:///var/lib/rustberg/warehouse`, without a trailing slash.
    root: String,
    io: FileIO,
}

impl Warehouse {
    /// A warehouse at `root` (`file:///…` or `s3://bucket/…`); an `s3://` one is
    /// reached with the server's `[storage.s3]` settings.
    pub fn open(root: &str, s3: &S3Config) -> Self {
        let root = root.trim_end_matches('/').to_string();
        let io = if root.starts_with("s3://") { s3_file_io(s3) } else { FileIO::new_with_fs() };
        Self { root, io }
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn io(&self) -> &FileIO {
        &self.io
    }

    /// Whether `location` lies inside this warehouse.
    pub fn contains(&self, location: &str) -> bool {
        let location = location.trim_end_matches('/');
        location.strip_prefix(&self.root).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            && !location.split('/').any(|part| part == "..")
    }

    /// The default location of a new table or view: unique, so a name reused after a
    /// rename or drop never shares files with its predecessor.
    pub fn default_location(&self, namespace: &[String], name: &str) -> String {
        let mut location = self.root.clone();
        for part in namespace {
            location.push('/');
            location.push_str(&encode_path_part(part));
        }
        location.push('/');
        location.push_str(&encode_path_part(name));
        location.push('-');
        location.push_str(&uuid::Uuid::now_v7().simple().to_string());
        location
    }

    /// Reads and parses a table metadata file; a missing or invalid file is a bad request.
    pub async fn read_table_metadata(&self, location: &str) -> Result<TableMetadata, Error> {
        TableMetadata::read_from(&self.io, location)
            .await
            .map_err(|e| Error::BadRequest(format!("cannot read table metadata at {location}: {e}")))
    }

    /// Deletes one file; failures are logged, not returned (used to clean up after a lost commit).
    pub async fn delete_quietly(&self, location: &str) {
        if let Err(e) = self.io.delete(location).await {
            tracing::warn!(location, error = %e, "could not delete an orphaned file");
        }
    }

    /// Deletes everything under a table's location (purge). Refuses locations outside the warehouse.
    pub async fn purge(&self, location: &str) -> Result<(), Error> {
        if !self.contains(location) || location.trim_end_matches('/') == self.root {
            tracing::warn!(location, "not purging a location outside the warehouse");
            return Ok(());
        }
        self.io.delete_prefix(location).await.map_err(|e| Error::Internal(format!("purging {location}: {e}")))
    }
}

/// A FileIO for `s3://` locations with the server's own endpoint, region and keys.
fn s3_file_io(s3: &S3Config) -> FileIO {
    use iceberg::io::{S3_ACCESS_KEY_ID, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY};
    let mut builder = FileIOBuilder::new(Arc::new(OpenDalStorageFactory::S3 { customized_credential_load: None }))
        .with_prop(S3_REGION, &s3.region)
        .with_prop(S3_PATH_STYLE_ACCESS, s3.path_style);
    if let Some(endpoint) = &s3.endpoint {
        builder = builder.with_prop(S3_ENDPOINT, endpoint);
    }
    if let Some((id, secret)) = s3.keys() {
        builder = builder.with_prop(S3_ACCESS_KEY_ID, id).with_prop(S3_SECRET_ACCESS_KEY, secret);
    }
    builder.build()
}

/// Keeps a namespace or table name safe as one path segment.
fn encode_path_part(part: &str) -> String {
    let safe = part
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .collect::<String>()
        .replace("..", "__");
    if safe == "." {
        "_".into()
    } else {
        safe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement() {
        let w = Warehouse::open("file:///data/wh/", &S3Config::default());
        assert!(w.contains("file:///data/wh/a/b"));
        assert!(w.contains("file:///data/wh"));
        assert!(!w.contains("file:///data/wh2/a"));
        assert!(!w.contains("file:///data/wh/../etc"));
        assert!(!w.contains("file:///elsewhere"));
    }

    #[test]
    fn default_locations_are_inside_and_unique() {
        let w = Warehouse::open("file:///data/wh", &S3Config::default());
        let a = w.default_location(&["db".into(), "../x".into()], "t/1");
        assert!(w.contains(&a), "{a}");
        assert_ne!(a, w.default_location(&["db".into(), "../x".into()], "t/1"));
    }
}
