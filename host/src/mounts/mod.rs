//! The mount table: which backend and warehouse serve a namespace.
//!
//! For now there is one mount, the root catalog (`storage.catalog_url`); named
//! mounts claiming top-level namespaces come with federation.

use crate::error::Error;
use crate::plugins::Backend;
use crate::storage::warehouse::Warehouse;

/// A backend with the warehouse it governs.
pub struct Mount {
    /// The namespace levels the mount claims (empty for the root catalog); stripped
    /// on the way down, restored on the way up.
    pub prefix: Vec<String>,
    /// The cursor space of this mount's listings (part of every page token).
    pub space: String,
    pub backend: Backend,
    pub warehouse: Warehouse,
}

impl Mount {
    /// A namespace of this backend as clients see it.
    pub fn restore(&self, mut local: Vec<String>) -> Vec<String> {
        if !self.prefix.is_empty() {
            local.splice(0..0, self.prefix.iter().cloned());
        }
        local
    }
}

/// Every mount of the server.
pub struct Mounts {
    root: Mount,
}

impl Mounts {
    pub fn new(root: Mount) -> Self {
        Self { root }
    }

    /// The mount serving `namespace`, and the namespace as that backend knows it.
    pub fn route<'a>(&self, namespace: &'a [String]) -> Result<(&Mount, &'a [String]), Error> {
        Ok((&self.root, namespace))
    }

    /// The mount that serves the top level of the tree.
    pub fn root(&self) -> &Mount {
        &self.root
    }

    /// Every mount, for capability negotiation and health.
    pub fn all(&self) -> impl Iterator<Item = &Mount> {
        std::iter::once(&self.root)
    }
}
