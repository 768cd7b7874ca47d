//! A warehouse: where table data and metadata files live, accessed through the
//! `iceberg` crate's FileIO.

use iceberg::io::FileIO;
use iceberg::spec::TableMetadata;

use crate::error::Error;

/// One warehouse root and the FileIO that reaches it.
#[derive(Clone, Debug)]
pub struct Warehouse {
    /// The root, e.g. `file:///var/lib/rustberg/warehouse`, without a trailing slash.
    root: String,
    io: FileIO,
}

impl Warehouse {
    pub fn new(root: String) -> Self {
        Self { root: root.trim_end_matches('/').to_string(), io: FileIO::new_with_fs() }
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
        let w = Warehouse::new("file:///data/wh/".into());
        assert!(w.contains("file:///data/wh/a/b"));
        assert!(w.contains("file:///data/wh"));
        assert!(!w.contains("file:///data/wh2/a"));
        assert!(!w.contains("file:///data/wh/../etc"));
        assert!(!w.contains("file:///elsewhere"));
    }

    #[test]
    fn default_locations_are_inside_and_unique() {
        let w = Warehouse::new("file:///data/wh".into());
        let a = w.default_location(&["db".into(), "../x".into()], "t/1");
        assert!(w.contains(&a), "{a}");
        assert_ne!(a, w.default_location(&["db".into(), "../x".into()], "t/1"));
    }
}
