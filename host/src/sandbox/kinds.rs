//! The kinds of component the sandbox runs, each by the interface it exports: a catalog
//! backend (`backend`, with its optional interfaces, in the series of the contract it
//! was built against), an admission gate (`admission-gate`) and an event sink
//! (`event-sink`). A pool finds a kind's exports once per component and loads them in
//! each instance.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::bindings::{
    hooks, map_series, optional, v0_1, BackendExport, BackendExportIndices, KeyListings, KeyListingsIndices, Placement,
    PlacementIndices, Series,
};
use super::host_state::HostState;

/// A kind of component: what it exports, found once per component and loaded in
/// each instance.
pub trait Kind: Send + Sync + 'static {
    /// Where its exports are in a component.
    type Indices: Send + Sync + 'static;
    /// Its exports in one instance.
    type Exports: Send + Sync + 'static;
    /// How messages call it: "backend", "gate", "sink".
    const NOUN: &'static str;
    /// The interface of the contract that makes a component one of this kind.
    const INTERFACE: &'static str;
    /// Finds its exports in `pre`, built against the series `(major, minor)`; fails
    /// when the component does not export them as that series writes them.
    fn find(pre: &InstancePre<HostState>, series: (u64, u64)) -> wasmtime::Result<Self::Indices>;
    fn load(
        indices: &Self::Indices,
        store: &mut Store<HostState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<Self::Exports>;
}

/// A catalog backend: `backend`, and the optional interfaces beside it.
pub struct BackendKind;

/// Where a backend's exports are, in the series of the contract it was built against.
pub struct BackendIndices {
    backend: BackendExportIndices,
    pub(super) placement: Option<PlacementIndices>,
    pub(super) key_listings: Option<KeyListingsIndices>,
    pub(super) forwarding: Option<optional::ForwardingIndices>,
}

impl Kind for BackendKind {
    type Indices = BackendIndices;
    type Exports = Exports;
    const NOUN: &'static str = "backend";
    const INTERFACE: &'static str = "backend";

    fn find(pre: &InstancePre<HostState>, series: (u64, u64)) -> wasmtime::Result<BackendIndices> {
        Ok(match series {
            (0, 1) => BackendIndices {
                backend: Series::V0_1(v0_1::CatalogHostIndices::new(pre)?),
                // Absent from components built before 0.1.2, and from most after.
                placement: v0_1::optional::PlacementIndices::new(pre).ok().map(Series::V0_1),
                // Absent from components built before 0.1.3, and from every one without keys.
                key_listings: v0_1::optional::KeyListingsIndices::new(pre).ok().map(Series::V0_1),
                forwarding: None,
            },
            _ => BackendIndices {
                backend: Series::V0_2(super::bindings::CatalogHostIndices::new(pre)?),
                placement: super::bindings::optional::PlacementIndices::new(pre).ok().map(Series::V0_2),
                key_listings: super::bindings::optional::KeyListingsIndices::new(pre).ok().map(Series::V0_2),
                forwarding: optional::ForwardingIndices::new(pre).ok(),
            },
        })
    }

    fn load(
        indices: &BackendIndices,
        store: &mut Store<HostState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<Exports> {
        let backend = map_series!(&indices.backend, |b| b.load(&mut *store, instance)?);
        let placement = indices
            .placement
            .as_ref()
            .map(|p| Ok::<_, wasmtime::Error>(map_series!(p, |p| p.load(&mut *store, instance)?)))
            .transpose()?;
        let key_listings = indices
            .key_listings
            .as_ref()
            .map(|k| Ok::<_, wasmtime::Error>(map_series!(k, |k| k.load(&mut *store, instance)?)))
            .transpose()?;
        let forwarding = indices.forwarding.as_ref().map(|f| f.load(&mut *store, instance)).transpose()?;
        Ok(Exports { backend, placement, key_listings, forwarding })
    }
}

/// An admission gate (`admission-gate`, since 0.2.3).
pub struct GateKind;

impl Kind for GateKind {
    type Indices = hooks::GateIndices;
    type Exports = hooks::Gate;
    const NOUN: &'static str = "gate";
    const INTERFACE: &'static str = "admission-gate";

    fn find(pre: &InstancePre<HostState>, _: (u64, u64)) -> wasmtime::Result<hooks::GateIndices> {
        hooks::GateIndices::new(pre)
    }

    fn load(
        indices: &hooks::GateIndices,
        store: &mut Store<HostState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<hooks::Gate> {
        indices.load(store, instance)
    }
}

/// An event sink (`event-sink`, since 0.2.3).
pub struct SinkKind;

impl Kind for SinkKind {
    type Indices = hooks::SinkIndices;
    type Exports = hooks::Sink;
    const NOUN: &'static str = "sink";
    const INTERFACE: &'static str = "event-sink";

    fn find(pre: &InstancePre<HostState>, _: (u64, u64)) -> wasmtime::Result<hooks::SinkIndices> {
        hooks::SinkIndices::new(pre)
    }

    fn load(
        indices: &hooks::SinkIndices,
        store: &mut Store<HostState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<hooks::Sink> {
        indices.load(store, instance)
    }
}

/// What a backend instance exports: `backend`, and the optional interfaces it has, in
/// the series of the contract it was built against.
pub struct Exports {
    pub backend: BackendExport,
    pub placement: Option<Placement>,
    pub key_listings: Option<KeyListings>,
    /// Only in the current series (since 0.2.2).
    pub forwarding: Option<optional::Forwarding>,
}
