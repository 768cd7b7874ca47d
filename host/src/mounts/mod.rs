//! The mount table: which backend and warehouse serve a namespace.
//!
//! A mount claims one top-level name: `prod.analytics.events` goes to the mount
//! `prod` as `analytics.events`. Names no mount claims reach the root catalog
//! (`storage.catalog_url`). The mount name is stripped here on the way down
//! ([`Mounts::route`]) and restored here on the way up ([`Mount::restore`]); a
//! backend never sees the name it is mounted under.

mod open;

use std::collections::BTreeMap;

pub use open::{check_name, component_grants, http_grant, mount_grants, open_mounts, refuse_shadowing, tcp_grant};

use crate::backends::Backend;
use crate::endpoints::Endpoint;
use crate::error::Error;
use crate::sandbox::bindings::Features;
use crate::storage::warehouse::Warehouse;

/// A backend with the warehouse it governs.
pub struct Mount {
    /// The mount's name; `None` for the root catalog.
    pub name: Option<String>,
    /// The cursor space of this mount's listings (part of every page token).
    pub space: String,
    pub backend: Backend,
    /// The warehouse this mount governs; `None` for a mount of somebody else's catalog.
    pub warehouse: Option<Warehouse>,
    /// The tenant owning the whole mount (authoritative; `None` for the root catalog,
    /// whose namespaces record their own owners).
    pub owner: Option<String>,
    /// Refuse every write (501).
    pub read_only: bool,
    /// The backend as configured: a built-in's name or a component's path.
    pub source: String,
}

impl Mount {
    /// How the mount is named in messages.
    pub fn label(&self) -> &str {
        self.backend.label()
    }

    /// A namespace of this backend as clients see it.
    pub fn restore(&self, mut local: Vec<String>) -> Vec<String> {
        if let Some(name) = &self.name {
            local.insert(0, name.clone());
        }
        local
    }

    /// The warehouse this mount governs, for operations that write files.
    pub fn warehouse(&self) -> Result<&Warehouse, Error> {
        self.warehouse
            .as_ref()
            .ok_or_else(|| Error::Unsupported(format!("{} has no warehouse on this server", self.label())))
    }

    /// The warehouse whose files the host reads, plans over and vends credentials for:
    /// the mount's warehouse, if its backend lets the host read its manifests
    /// (`host-readable-manifests`). A mount without one vends and plans nothing.
    pub fn served_files(&self) -> Option<&Warehouse> {
        self.warehouse.as_ref().filter(|_| self.backend.does(Features::HOST_READABLE_MANIFESTS))
    }

    /// Whether what this mount's backend declares serves `endpoint`.
    pub fn supports(&self, endpoint: Endpoint) -> bool {
        endpoint.served_with(self.backend.features(), self.backend.places_tables())
    }

    /// Refuses, naming the mount and `why` (if it is not plain), an endpoint its backend
    /// did not declare.
    pub fn require_endpoint(&self, endpoint: Endpoint, why: Option<&str>) -> Result<(), Error> {
        if self.supports(endpoint) {
            return Ok(());
        }
        let why = why.map(|why| format!(" ({why})")).unwrap_or_default();
        Err(Error::Unsupported(format!("{} does not support {}{why}", self.label(), endpoint.operation())))
    }

    /// A listing this mount's backend could not advance, naming the mount.
    pub fn stuck(&self, why: &str) -> Error {
        Error::Internal(format!("{}: {why}", self.label()))
    }

    /// Refuses a write under a read-only mount.
    pub fn check_writable(&self) -> Result<(), Error> {
        if self.read_only {
            return Err(Error::Unsupported(format!("{} is read-only", self.label())));
        }
        Ok(())
    }
}

/// Every mount of the server.
pub struct Mounts {
    root: Mount,
    named: BTreeMap<String, Mount>,
}

impl Mounts {
    pub fn new(root: Mount, named: BTreeMap<String, Mount>) -> Self {
        Self { root, named }
    }

    /// The mount serving `namespace`, and the namespace as that backend knows it (empty
    /// for a mount root).
    pub fn route<'a>(&self, namespace: &'a [String]) -> (&Mount, &'a [String]) {
        match namespace.split_first() {
            Some((first, rest)) => match self.named.get(first) {
                Some(mount) => (mount, rest),
                None => (&self.root, namespace),
            },
            None => (&self.root, namespace),
        }
    }

    /// Routes the namespace a table or view lives in. A mount root holds namespaces,
    /// not tables: naming a table directly under it is a bad request.
    pub fn route_container<'a>(&self, namespace: &'a [String]) -> Result<(&Mount, &'a [String]), Error> {
        let (mount, local) = self.route(namespace);
        if local.is_empty() {
            return Err(Error::BadRequest(match &mount.name {
                Some(name) => format!(
                    "{name} is the root of {}: it holds namespaces, not tables or views; use {name}.<namespace>.<name>",
                    mount.label()
                ),
                None => "tables and views live inside a namespace".into(),
            }));
        }
        Ok((mount, local))
    }

    /// The root catalog.
    pub fn root(&self) -> &Mount {
        &self.root
    }

    /// The named mounts, sorted by name.
    pub fn named(&self) -> impl Iterator<Item = (&String, &Mount)> {
        self.named.iter()
    }

    /// Every mount, the root catalog first.
    pub fn all(&self) -> impl Iterator<Item = &Mount> {
        std::iter::once(&self.root).chain(self.named.values())
    }
}
