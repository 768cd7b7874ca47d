//! Host-side bindings generated from `wit/` (the `catalog-host` world: every
//! capability the host can offer, and the `backend` export).

wasmtime::component::bindgen!({
    world: "catalog-host",
    path: "../wit",
    imports: { default: async | trappable },
    exports: { default: async },
});

pub use exports::rustberg::catalog::backend::Guest as BackendExports;
pub use rustberg::catalog::types::{
    CapabilitySet, Error as WitError, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    PropertiesUpdate, TableCommit,
};

/// The optional exports, `placement` (since 0.1.2) and `key-listings` (since 0.1.3):
/// looked up beside `backend` in each component, and used only where they are there.
pub mod optional {
    wasmtime::component::bindgen!({
        world: "optional-exports",
        path: "../wit",
        exports: { default: async },
        with: { "rustberg:catalog/types": super::rustberg::catalog::types },
    });

    pub use exports::rustberg::catalog::key_listings::{Guest as KeyListings, GuestIndices as KeyListingsIndices};
    pub use exports::rustberg::catalog::placement::{Guest as Placement, GuestIndices as PlacementIndices};
}
