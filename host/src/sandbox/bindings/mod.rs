//! Host-side bindings, one module per series of the contract the host loads: the
//! current one here (from `wit/`), and `v0_1` (from the frozen `wit/0.1/`). Both series
//! share every type but the backend's description, so a call reads the same for
//! either ([`in_series`]).

pub mod v0_1;

wasmtime::component::bindgen!({
    world: "catalog-host",
    path: "../wit",
    imports: { default: async | trappable },
    exports: { default: async },
});

pub use self::rustberg::catalog::types::{
    Description, Error as WitError, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest,
    Pointer, PropertiesUpdate, TableCommit,
};
pub use exports::rustberg::catalog::backend::Guest as BackendExports;

/// The optional exports, `placement` (since 0.1.2), `key-listings` (since 0.1.3) and
/// `forwarding` (since 0.2.2): looked up beside `backend` in each component, and used
/// only where they are there.
pub mod optional {
    wasmtime::component::bindgen!({
        world: "optional-exports",
        path: "../wit",
        exports: { default: async },
        with: { "rustberg:catalog/types": super::rustberg::catalog::types },
    });

    pub use exports::rustberg::catalog::forwarding::{
        Answer, Forwarded, Guest as Forwarding, GuestIndices as ForwardingIndices,
    };
    pub use exports::rustberg::catalog::key_listings::{Guest as KeyListings, GuestIndices as KeyListingsIndices};
    pub use exports::rustberg::catalog::placement::{Guest as Placement, GuestIndices as PlacementIndices};
}

/// The exports of the components that are not backends (since 0.2.3): an admission
/// gate's and an event sink's.
pub mod hooks {
    wasmtime::component::bindgen!({
        world: "hook-exports",
        path: "../wit",
        exports: { default: async },
        with: { "rustberg:catalog/types": super::rustberg::catalog::types },
    });

    pub use exports::rustberg::catalog::admission_gate::{
        Guest as Gate, GuestIndices as GateIndices, Proposal, Verdict,
    };
    pub use exports::rustberg::catalog::event_sink::{Guest as Sink, GuestIndices as SinkIndices};
}

/// Something a component has in the series it was built against.
pub enum Series<Old, Current> {
    V0_1(Old),
    V0_2(Current),
}

/// The `backend` export, prepared for instantiation.
pub type BackendExportPre<T> = Series<v0_1::CatalogHostPre<T>, CatalogHostPre<T>>;
/// Where the `backend` export's functions are, found once per component.
pub type BackendExportIndices = Series<v0_1::CatalogHostIndices, CatalogHostIndices>;
/// An instance's `backend` export.
pub type BackendExport = Series<v0_1::CatalogHost, CatalogHost>;
pub type PlacementIndices = Series<v0_1::optional::PlacementIndices, optional::PlacementIndices>;
pub type Placement = Series<v0_1::optional::Placement, optional::Placement>;
pub type KeyListingsIndices = Series<v0_1::optional::KeyListingsIndices, optional::KeyListingsIndices>;
pub type KeyListings = Series<v0_1::optional::KeyListings, optional::KeyListings>;

/// Runs `$body` with `$x` bound to what `$value` holds, whichever its series (the
/// body reads the same for both: the types are shared).
macro_rules! in_series {
    ($value:expr, |$x:ident| $body:expr) => {
        match $value {
            $crate::sandbox::bindings::Series::V0_1($x) => $body,
            $crate::sandbox::bindings::Series::V0_2($x) => $body,
        }
    };
}

/// Like [`in_series`], keeping the series of the result.
macro_rules! map_series {
    ($value:expr, |$x:ident| $body:expr) => {
        match $value {
            $crate::sandbox::bindings::Series::V0_1($x) => $crate::sandbox::bindings::Series::V0_1($body),
            $crate::sandbox::bindings::Series::V0_2($x) => $crate::sandbox::bindings::Series::V0_2($body),
        }
    };
}

pub(crate) use {in_series, map_series};
