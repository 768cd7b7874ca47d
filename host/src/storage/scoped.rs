//! A FileIO that reaches only the files under one location.
//!
//! The server's storage keys can read and delete anything in a bucket. Planning a
//! scan or purging a table follows paths written in metadata files, which a client
//! wrote; through a scoped FileIO a path outside the table's location fails before
//! any byte is read or deleted, whichever code follows it (the `iceberg` crate's
//! planner included).

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use iceberg::io::{
    FileIO, FileIOBuilder, FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use iceberg::{Error, ErrorKind, Result};

use super::location::Reach;

/// The message every refusal starts with (how callers tell it from an I/O failure).
pub const OUTSIDE: &str = "outside the location this request may reach";

/// A storage that refuses every path not in `scope`. FileIO copies it into every file
/// it opens, so both parts are shared, not copied.
#[derive(Debug, Clone)]
pub struct ScopedStorage {
    inner: Arc<dyn Storage>,
    scope: Arc<Reach>,
}

/// Whether an error is a scoped storage's refusal.
pub fn is_refusal(e: &Error) -> bool {
    e.kind() == ErrorKind::PreconditionFailed && e.message().starts_with(OUTSIDE)
}

impl ScopedStorage {
    /// A FileIO over `inner` that reaches only what lies in `scope`.
    pub fn file_io(inner: Arc<dyn Storage>, scope: Reach) -> FileIO {
        FileIOBuilder::new(Arc::new(ScopedFactory(ScopedStorage { inner, scope: Arc::new(scope) }))).build()
    }

    fn check(&self, path: &str) -> Result<()> {
        if self.scope.contains_path(path) {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::PreconditionFailed, format!("{OUTSIDE}: {path} is not under {}", self.scope)))
        }
    }
}

/// FileIO's storages and factories are `typetag` (de)serializable; a scoped one
/// holds a live storage and is never serialized, so both directions refuse.
macro_rules! never_serialized {
    ($type:ty) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("a scoped storage is not serializable"))
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(_: D) -> std::result::Result<Self, D::Error> {
                Err(serde::de::Error::custom("a scoped storage is not deserializable"))
            }
        }
    };
}

never_serialized!(ScopedStorage);
never_serialized!(ScopedFactory);

#[async_trait]
#[typetag::serde(name = "rustberg-scoped")]
impl Storage for ScopedStorage {
    async fn exists(&self, path: &str) -> Result<bool> {
        self.check(path)?;
        self.inner.exists(path).await
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        self.check(path)?;
        self.inner.metadata(path).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.check(path)?;
        self.inner.read(path).await
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        self.check(path)?;
        self.inner.reader(path).await
    }

    async fn write(&self, path: &str, bs: Bytes) -> Result<()> {
        self.check(path)?;
        self.inner.write(path, bs).await
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn FileWrite>> {
        self.check(path)?;
        self.inner.writer(path).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.check(path)?;
        self.inner.delete(path).await
    }

    async fn delete_prefix(&self, path: &str) -> Result<()> {
        // Purges delete the files a table's metadata names, never a prefix.
        Err(Error::new(ErrorKind::PreconditionFailed, format!("{OUTSIDE}: prefix deletes are refused ({path})")))
    }

    async fn delete_stream(&self, paths: BoxStream<'static, String>) -> Result<()> {
        let paths: Vec<String> = paths.collect().await;
        for path in &paths {
            self.check(path)?;
        }
        self.inner.delete_stream(futures::stream::iter(paths).boxed()).await
    }

    fn new_input(&self, path: &str) -> Result<InputFile> {
        self.check(path)?;
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> Result<OutputFile> {
        self.check(path)?;
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}

/// Hands FileIO the one scoped storage it was made with.
#[derive(Debug)]
struct ScopedFactory(ScopedStorage);

#[typetag::serde(name = "rustberg-scoped-factory")]
impl StorageFactory for ScopedFactory {
    fn build(&self, _: &StorageConfig) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::location::Location;

    #[tokio::test]
    async fn nothing_outside_the_scope_is_read_written_or_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(&format!("file://{}", dir.path().display())).unwrap();
        let inner = iceberg::io::LocalFsStorageFactory.build(&StorageConfig::new()).unwrap();
        let table = root.child("t");
        let outside = format!("{root}/secret.txt");
        std::fs::write(dir.path().join("secret.txt"), "x").unwrap();
        let io = ScopedStorage::file_io(inner, Reach::Under(table.clone()));
        io.new_output(format!("{table}/a.txt")).unwrap().write("a".into()).await.unwrap();
        assert_eq!(io.new_input(format!("{table}/a.txt")).unwrap().read().await.unwrap(), "a");
        for path in [outside.as_str(), &format!("{table}/../secret.txt"), &format!("{table}2/x")] {
            assert!(is_refusal(&io.new_input(path).unwrap_err()), "{path}");
            assert!(is_refusal(&io.delete(path).await.unwrap_err()), "{path}");
        }
        assert!(is_refusal(&io.delete_prefix(table.to_string()).await.unwrap_err()));
        assert!(dir.path().join("secret.txt").exists());
    }
}
