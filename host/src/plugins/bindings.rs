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
    CapabilitySet, Error as WitError, Ident, NamePage, NamespacePage, PageRequest, Pointer, PropertiesUpdate,
    TableCommit,
};
