//! renameTable inside one backend, and the answer to any rename of a table or view.

use crate::error::{change_failed, Error};
use crate::mounts::Mount;
use crate::sandbox::bindings::Ident;
use crate::sandbox::BackendErrorKind;

use super::{dotted, held, holder_of, locations, no_such_namespace, no_such_table};

/// Fails with NoSuchNamespace unless `namespace` exists: asked before a rename, so a
/// missing destination namespace is reported as such.
pub(super) async fn require_namespace(mount: &Mount, namespace: &[String]) -> Result<(), Error> {
    mount
        .backend
        .load_namespace(namespace.to_vec())
        .await
        .map(|_| ())
        .map_err(|e| Error::from_backend(e, no_such_namespace(mount, namespace)))
}

/// Renames a table inside one backend.
pub async fn rename(mount: &Mount, source: &Ident, destination: &Ident) -> Result<(), Error> {
    require_namespace(mount, &destination.namespace).await?;
    if source.namespace != destination.namespace && mount.warehouse.is_some() {
        let pointer = super::load(mount, source, None).await?;
        locations::mark_moved(mount, &held::current_location(mount, &pointer).await?).await?;
    }
    let renamed = mount.backend.rename_table(source.clone(), destination.clone()).await;
    rename_outcome(mount, source, destination, renamed, no_such_table(mount, source)).await
}

/// The answer to a rename of a table or view: a taken destination in the words Iceberg's
/// clients expect (which kind holds it), a missing source as `absent` says.
pub(super) async fn rename_outcome(
    mount: &Mount,
    source: &Ident,
    destination: &Ident,
    renamed: Result<(), crate::sandbox::BackendError>,
    absent: impl FnOnce(String) -> Error,
) -> Result<(), Error> {
    match renamed {
        Ok(()) => Ok(()),
        Err(e) if e.kind == BackendErrorKind::AlreadyExists => Err(Error::rename_target_taken(
            dotted(mount, source),
            dotted(mount, destination),
            holder_of(mount, destination).await,
        )),
        Err(e) => Err(change_failed(e, absent)),
    }
}
