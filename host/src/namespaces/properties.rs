//! Reading and changing a namespace's properties. A mount root is synthetic: it has
//! none and they cannot change. A namespace's location is set when it is created: its
//! tables and views were placed and claimed under it.

use std::collections::HashMap;

use super::{absent, Routed};
use crate::error::Error;
use crate::sandbox::bindings::PropertiesUpdate;
use crate::tables::locations::{self, LOCATION_PROPERTY};

/// The properties of the namespace `at`.
pub async fn load(at: Routed<'_>) -> Result<Vec<(String, String)>, Error> {
    if at.local.is_empty() {
        // A mount root exists because the mount does.
        return Ok(Vec::new());
    }
    at.mount.backend.load_namespace(at.local.to_vec()).await.map_err(|e| Error::from_backend(e, absent(at.ns)))
}

/// The properties of the namespace `at`, with its `location` where it records none:
/// the one derived from its parent's, where its tables go (Trino 476 stages a create
/// only in a namespace whose answer names a location). A namespace of a mount without a
/// warehouse here (a remote catalog's) answers as its backend does, and so does one
/// whose location cannot be derived (a backend that holds it without its parent, or a
/// parent whose recorded location is refused): it has none to say.
pub async fn load_located(at: Routed<'_>) -> Result<Vec<(String, String)>, Error> {
    let mut properties = load(at).await?;
    let Some((name, parent)) = at.local.split_last() else { return Ok(properties) };
    let derivable = at.mount.warehouse.as_ref().is_some_and(|w| w.root().location().is_some());
    if derivable && !properties.iter().any(|(k, _)| k == LOCATION_PROPERTY) {
        match locations::chain(at.mount, parent).await {
            Ok(parent) => properties.push((LOCATION_PROPERTY.to_string(), parent.own().child(name).to_string())),
            Err(Error::NoSuchNamespace(_) | Error::BadRequest(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(properties)
}

/// Removes and sets properties of the namespace `at`; what changed.
pub async fn update_properties(
    at: Routed<'_>,
    removals: Vec<String>,
    updates: HashMap<String, String>,
) -> Result<PropertiesUpdate, Error> {
    at.refuse_mount_root("have its properties changed")?;
    at.mount.check_writable()?;
    refuse_location_change(at, &updates, &removals).await?;
    let updates: Vec<(String, String)> = updates.into_iter().collect();
    at.mount
        .backend
        .update_namespace_properties(at.local.to_vec(), removals, updates)
        .await
        .map_err(|e| Error::from_backend(e, absent(at.ns)))
}

/// Refuses a change of the `location` property, unless it sets the same value.
async fn refuse_location_change(
    at: Routed<'_>,
    updates: &HashMap<String, String>,
    removals: &[String],
) -> Result<(), Error> {
    let key = LOCATION_PROPERTY;
    let removed = removals.iter().any(|k| k == key);
    if !updates.contains_key(key) && !removed {
        return Ok(());
    }
    let current = load(at).await?.into_iter().find(|(k, _)| k == key).map(|(_, v)| v);
    if !removed && updates.get(key).is_some_and(|new| Some(new) == current.as_ref()) {
        return Ok(());
    }
    Err(Error::BadRequest(format!(
        "the location of namespace {} is set when it is created and cannot change",
        at.ns.join(".")
    )))
}
