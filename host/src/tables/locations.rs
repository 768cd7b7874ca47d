//! Where namespaces, tables and views live, and the claims that keep them apart.
//!
//! A namespace's location is its `location` property, which must lie strictly under
//! its parent's location, or else its parent's location plus its own name (the
//! warehouse root is the parent of a top-level namespace). A table or view lies
//! strictly under its namespace's location. Each of them claims its location in the
//! index, so none overlaps another, whichever tenant or mount holds it.

use super::{no_such_namespace, Ident};
use crate::error::Error;
use crate::mounts::Mount;
use crate::sandbox::BackendErrorKind;
use crate::storage::kv::{Commit, KvError};
use crate::storage::location::{Location, LocationError};
use crate::storage::location_index::{ClaimId, ClaimKind};
use crate::storage::warehouse::Warehouse;

/// The namespace property holding a namespace's location.
pub const LOCATION_PROPERTY: &str = "location";

/// A 400 naming the location and the rule it broke.
pub fn bad_location(what: &str, raw: &str) -> impl FnOnce(LocationError) -> Error {
    let prefix = format!("{what} {raw:?} is refused");
    move |e| Error::BadRequest(format!("{prefix}: {e}"))
}

/// The locations of a namespace's ancestors and its own, outermost first (the
/// warehouse root first of all).
#[derive(Debug, Clone)]
pub struct Chain(Vec<Location>);

impl Chain {
    /// The location of the innermost namespace (the warehouse root for none).
    pub fn own(&self) -> &Location {
        self.0.last().expect("a chain starts at the warehouse root")
    }

    /// Where a namespace named `name` under this one would go, given its `location`
    /// property if it has one.
    fn child(&self, warehouse: &Warehouse, name: &str, property: Option<&str>) -> Result<Location, Error> {
        match property {
            None => Ok(self.own().child(name)),
            Some(raw) => {
                let location = warehouse.locate(raw).map_err(bad_location("the namespace location", raw))?;
                location.require_strictly_within(self.own()).map_err(bad_location("the namespace location", raw))?;
                Ok(location)
            }
        }
    }

    fn pushed(mut self, location: Location) -> Chain {
        self.0.push(location);
        self
    }
}

/// The refusal of a location chosen by a client where the store assigns them.
fn assigned_here(mount: &Mount) -> Error {
    Error::BadRequest(format!(
        "the store of {} assigns every table its location: no location can be chosen or moved to there, \
         and its namespaces have none",
        mount.label()
    ))
}

/// The location chain of `namespace` (a mount's own namespace), loading each level.
pub async fn chain(mount: &Mount, namespace: &[String]) -> Result<Chain, Error> {
    let warehouse = mount.warehouse()?;
    let root = warehouse.root().location().ok_or_else(|| assigned_here(mount))?;
    let mut chain = Chain(vec![root.clone()]);
    for depth in 1..=namespace.len() {
        let level = &namespace[..depth];
        let properties = mount
            .backend
            .load_namespace(level.to_vec())
            .await
            .map_err(|e| Error::from_backend(e, no_such_namespace(mount, level)))?;
        let property = properties.iter().find(|(k, _)| k == LOCATION_PROPERTY).map(|(_, v)| v.as_str());
        let location = chain.child(warehouse, &level[depth - 1], property)?;
        chain = chain.pushed(location);
    }
    Ok(chain)
}

/// A location chosen (and checked) for a new table, view or namespace, not yet claimed.
#[derive(Debug, Clone)]
pub struct Placement {
    pub location: Location,
    /// The namespaces it lies in (for a namespace: its ancestors; none for a location
    /// the store assigned).
    pub chain: Chain,
    /// The table the backend reserved for this location, when its store assigned it:
    /// released if the create does not go on.
    pub reserved: Option<Ident>,
}

impl Placement {
    /// Releases the backend's reservation, if any (the create did not apply).
    pub async fn release(&self, mount: &Mount) {
        if let Some(table) = &self.reserved {
            release(mount, table).await;
        }
    }

    /// Claims the location for `id`; an overlap is 409 and says nothing of the other.
    /// The claim to release if the change does not apply: none when `id` held it already.
    pub async fn claim(&self, warehouse: &Warehouse, kind: ClaimKind, id: ClaimId) -> Result<Option<NewClaim>, Error> {
        let new = warehouse.index().claim(&self.location, kind, id, &self.chain.0).await?;
        Ok(new.then(|| NewClaim { location: self.location.clone(), id }))
    }

    /// Claims a namespace's location again (`LocationIndex::restore`).
    pub async fn restore(&self, warehouse: &Warehouse, id: ClaimId) -> Result<(), Error> {
        Ok(warehouse.index().restore(&self.location, ClaimKind::Namespace, id, &self.chain.0).await?)
    }

    /// Claims a namespace's location over the claims a dropped namespace there left
    /// below it (`LocationIndex::take_over_leftovers`); the new claim, if made.
    pub async fn take_over_leftovers(&self, warehouse: &Warehouse, id: ClaimId) -> Result<Option<NewClaim>, Error> {
        let index = warehouse.index();
        let taken = index.take_over_leftovers(&self.location, id, &self.chain.0).await?;
        Ok(taken.then(|| NewClaim { location: self.location.clone(), id }))
    }

    /// The commit `claim` makes, to be made with another to the host key space, and the
    /// claim it makes new.
    pub fn claim_commit(&self, warehouse: &Warehouse, kind: ClaimKind, id: ClaimId) -> (Commit, NewClaim) {
        let commit = warehouse.index().claim_commit(&self.location, kind, id, &self.chain.0);
        (commit, NewClaim { location: self.location.clone(), id })
    }
}

/// Where a new table or view goes: the requested location, checked, or a unique
/// default under its namespace's location — or, where the store assigns locations,
/// the one the backend reserved for the table (checked to lie in the warehouse).
pub async fn place(mount: &Mount, ident: &Ident, requested: Option<&str>) -> Result<Placement, Error> {
    let warehouse = mount.warehouse()?;
    if mount.backend.places_tables() {
        return reserve(mount, ident, requested).await;
    }
    let chain = chain(mount, &ident.namespace).await?;
    let (location, chain) = match requested {
        Some(raw) => checked_request(warehouse, chain, raw)?,
        None => (chain.own().child(&format!("{}-{}", ident.name, uuid::Uuid::now_v7().simple())), chain),
    };
    Ok(Placement { location, chain, reserved: None })
}

/// Asks the backend to reserve `ident` and checks the location its store assigned.
async fn reserve(mount: &Mount, ident: &Ident, requested: Option<&str>) -> Result<Placement, Error> {
    if requested.is_some() {
        return Err(assigned_here(mount));
    }
    let assigned = mount.backend.reserve_table(ident.clone()).await.map_err(|e| match e.kind {
        BackendErrorKind::AlreadyExists => Error::AlreadyExists(format!("a table named {} already exists", ident.name)),
        _ => Error::from_backend(e, no_such_namespace(mount, &ident.namespace)),
    })?;
    match mount.warehouse()?.locate(&assigned) {
        // Assigned by the store, under no namespace's location: claimed with none above.
        Ok(location) => Ok(Placement { location, chain: Chain(vec![]), reserved: Some(ident.clone()) }),
        // Never written to nor vended for: the backend answered what it may not.
        Err(e) => {
            release(mount, ident).await;
            Err(Error::BadGateway(format!(
                "{} assigned the table the location {assigned:?}, which is refused: {e}",
                mount.label()
            )))
        }
    }
}

/// Checks a requested table or view location: in the warehouse, strictly under the
/// namespace's location — or, where the warehouse has unstructured locations,
/// anywhere strictly inside it. Returned with the chain to claim it under: the
/// namespaces it lies in (the warehouse root at least).
fn checked_request(warehouse: &Warehouse, chain: Chain, raw: &str) -> Result<(Location, Chain), Error> {
    let location = warehouse.locate(raw).map_err(bad_location("the location", raw))?;
    if location.is_strictly_within(chain.own()) {
        return Ok((location, chain));
    }
    let refused = bad_location("the location", raw);
    if !warehouse.unstructured() {
        return Err(refused(LocationError::NotUnder(chain.own().to_string())));
    }
    let above: Vec<Location> = chain.0.into_iter().take_while(|outer| location.is_strictly_within(outer)).collect();
    match above.is_empty() {
        // The warehouse root itself.
        true => Err(refused(LocationError::WarehouseRoot(warehouse.root().to_string()))),
        false => Ok((location, Chain(above))),
    }
}

/// Releases a table the backend reserved (a create that did not go on); failures
/// are logged.
async fn release(mount: &Mount, table: &Ident) {
    if let Err(e) = mount.backend.release_table(table.clone()).await {
        tracing::warn!(mount = mount.label(), table = %table.name, error = %e, "could not release a reserved table");
    }
}

/// Where a new namespace goes (its parent chain loaded), with its `location` property
/// normalized in `properties`.
pub async fn place_namespace(
    mount: &Mount,
    namespace: &[String],
    properties: &mut [(String, String)],
) -> Result<Placement, Error> {
    let (name, parent) = namespace.split_last().expect("a namespace has a name");
    let chain = chain(mount, parent).await?;
    let property = properties.iter_mut().find(|(k, _)| k == LOCATION_PROPERTY);
    let location = chain.child(mount.warehouse()?, name, property.as_ref().map(|(_, v)| v.as_str()))?;
    if let Some((_, value)) = property {
        *value = location.to_string();
    }
    Ok(Placement { location, chain, reserved: None })
}

/// The location a table's or view's metadata JSON records (empty if it records
/// none), checking the whole of it is JSON without building the rest.
pub fn recorded_location(metadata_json: &[u8]) -> Result<String, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Located {
        #[serde(default)]
        location: String,
    }
    serde_json::from_slice::<Located>(metadata_json).map(|l| l.location)
}

/// Checks a metadata file a client asks to register: it lies under the namespace's
/// location (the only place this request may read).
pub fn registered_file(warehouse: &Warehouse, chain: &Chain, raw: &str) -> Result<Location, Error> {
    let file = warehouse.locate(raw).map_err(bad_location("the metadata location", raw))?;
    file.require_strictly_within(chain.own()).map_err(bad_location("the metadata location", raw))?;
    Ok(file)
}

/// Checks the location a registered metadata `file` names: under the namespace's
/// location, and holding the file.
pub fn registered_location(
    warehouse: &Warehouse,
    chain: &Chain,
    file: &Location,
    raw: &str,
) -> Result<Location, Error> {
    let location = warehouse.locate(raw).map_err(bad_location("the location in the metadata", raw))?;
    location.require_strictly_within(chain.own()).map_err(bad_location("the location in the metadata", raw))?;
    if !file.is_strictly_within(&location) {
        return Err(Error::BadRequest(format!(
            "the metadata file {file} is not under the location {location} it names"
        )));
    }
    Ok(location)
}

/// The claim to release when a change did not apply: a location newly claimed for it.
#[derive(Debug, Clone)]
pub struct NewClaim {
    pub location: Location,
    pub id: ClaimId,
}

impl NewClaim {
    /// Releases the claim (the change it was made for did not apply).
    pub async fn release(&self, warehouse: &Warehouse) {
        if let Err(e) = warehouse.index().release_one(&self.location, self.id).await {
            tracing::warn!(location = %self.location, error = %e, "could not release a location claim");
        }
    }
}

/// Checks a table or view location that a change moves to (`set-location`, or a
/// register that overwrites) and claims it under the id holding `current`.
pub async fn claim_move(
    mount: &Mount,
    namespace: &[String],
    current: &str,
    new: &str,
    kind: ClaimKind,
) -> Result<Option<NewClaim>, Error> {
    let warehouse = mount.warehouse()?;
    if current == new || Location::parse(current).is_ok_and(|c| Location::parse(new) == Ok(c)) {
        return Ok(None);
    }
    let chain = chain(mount, namespace).await?;
    let (location, chain) = checked_request(warehouse, chain, new)?;
    let held = match Location::parse(current) {
        Ok(current) => warehouse.index().holder(&current).await?,
        Err(_) => None,
    };
    let id = held.unwrap_or_default();
    Placement { location, chain, reserved: None }.claim(warehouse, kind, id).await
}

/// Removes what the host wrote for a change that did not apply: its metadata file
/// (if it got that far) and the location it newly claimed (if any).
pub async fn abandon(warehouse: &Warehouse, file: Option<&str>, claim: &Option<NewClaim>) {
    if let Some(file) = file {
        warehouse.delete_quietly(file).await;
    }
    if let Some(claim) = claim {
        claim.release(warehouse).await;
    }
}

/// Releases every location held by whatever holds `location` (a dropped table or view).
pub async fn release_all(warehouse: &Warehouse, location: &Location) {
    match warehouse.index().holder(location).await {
        Ok(Some(id)) => release_id(warehouse, &id).await,
        Ok(None) => {}
        Err(e) => tracing::warn!(location = %location, error = %e, "could not release the claims of a dropped entry"),
    }
}

/// Releases every location `id` holds.
async fn release_id(warehouse: &Warehouse, id: &ClaimId) {
    if let Err(e) = warehouse.index().release(*id).await {
        tracing::warn!(error = %e, "could not release the location claims of a dropped entry");
    }
}

/// Before a table or view whose location is `raw` is renamed into another namespace:
/// its claim is marked (`LocationIndex::mark_moved`), so that a drop of the namespace
/// it leaves, its files still there, keeps the claim. Nothing to mark where the host
/// claims no locations.
pub async fn mark_moved(mount: &Mount, raw: &str) -> Result<(), Error> {
    let Some(warehouse) = mount.warehouse.as_ref().filter(|w| !w.assigned()) else {
        return Ok(());
    };
    // A location outside the warehouse holds no claim.
    let Ok(location) = warehouse.locate(raw) else { return Ok(()) };
    Ok(warehouse.index().mark_moved(&location).await?)
}

/// Releases what `release` (`LocationIndex::release_unchanged`, read before a
/// namespace's drop) releases, after the drop; left where a create of the same name
/// claimed it again meanwhile.
pub async fn release_unchanged(warehouse: &Warehouse, release: &Commit) {
    match warehouse.index().key_space().make(release).await {
        Ok(()) => {}
        Err(KvError::Conflict) => tracing::debug!("a dropped namespace's claim was taken again by its name's create"),
        Err(e) => tracing::warn!(error = %e, "could not release the location claims of a dropped namespace"),
    }
}
