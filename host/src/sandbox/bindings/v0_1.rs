//! The 0.1.x series of the contract, which the host still loads: its bindings (from the
//! frozen `wit/0.1/`), its imports served by the current series' implementations, and
//! what its `capabilities` (endpoint strings) say in the current series' features.

use super::rustberg::catalog as current;
use super::{Description, Features, WitError};
use crate::sandbox::host_state::HostState;

/// The 0.1 series' types: the current series' (which kept every one of them), and the
/// `capability-set` the next series replaced by `features`.
pub mod types {
    pub use crate::sandbox::bindings::rustberg::catalog::types::*;

    /// What a 0.1.x backend said it can do.
    #[derive(
        wasmtime::component::ComponentType, wasmtime::component::Lift, wasmtime::component::Lower, Clone, Debug,
    )]
    #[component(record)]
    pub struct CapabilitySet {
        /// REST endpoints it serves, as the spec writes them.
        pub endpoints: Vec<String>,
        #[component(name = "can-write")]
        pub can_write: bool,
        #[component(name = "host-readable-manifests")]
        pub host_readable_manifests: bool,
        pub remember: Vec<(String, String)>,
    }
}

wasmtime::component::bindgen!({
    world: "catalog-host",
    path: "../wit/0.1",
    imports: { default: async | trappable },
    exports: { default: async },
    with: { "rustberg:catalog/types": crate::sandbox::bindings::v0_1::types },
});

/// The 0.1 series' optional exports.
pub mod optional {
    wasmtime::component::bindgen!({
        world: "optional-exports",
        path: "../wit/0.1",
        exports: { default: async },
        with: { "rustberg:catalog/types": crate::sandbox::bindings::v0_1::types },
    });

    pub use exports::rustberg::catalog::key_listings::{Guest as KeyListings, GuestIndices as KeyListingsIndices};
    pub use exports::rustberg::catalog::placement::{Guest as Placement, GuestIndices as PlacementIndices};
}

use self::rustberg::catalog::{clock, config, http, kv, log};

/// The endpoints, as the frozen 0.1 contract lists them, that turn on a feature: its
/// own vocabulary, which stays as it was whatever the host's endpoint table becomes.
const UPDATE_PROPERTIES: &str = "POST /v1/{prefix}/namespaces/{namespace}/properties";
const LOAD_VIEW: &str = "GET /v1/{prefix}/namespaces/{namespace}/views/{view}";
const RENAME_TABLE: &str = "POST /v1/{prefix}/tables/rename";
const RENAME_VIEW: &str = "POST /v1/{prefix}/views/rename";
const COMMIT_TRANSACTION: &str = "POST /v1/{prefix}/transactions/commit";

/// What a 0.1.x backend's capabilities say in features: each endpoint it listed turns
/// on the feature that serves it. Nothing beyond the contract is assumed of it.
pub fn describe(capabilities: types::CapabilitySet) -> Description {
    let lists = |endpoint: &str| capabilities.endpoints.iter().any(|e| e == endpoint);
    let mut features = Features::empty();
    for (listed, feature) in [
        (capabilities.can_write, Features::WRITES),
        (capabilities.host_readable_manifests, Features::HOST_READABLE_MANIFESTS),
        (lists(UPDATE_PROPERTIES), Features::NAMESPACE_PROPERTIES),
        (lists(LOAD_VIEW), Features::VIEWS),
        (lists(RENAME_TABLE) || lists(RENAME_VIEW), Features::RENAME),
        (lists(COMMIT_TRANSACTION), Features::MULTI_TABLE_COMMIT),
    ] {
        if listed {
            features |= feature;
        }
    }
    Description { features, remember: capabilities.remember }
}

impl kv::Host for HostState {
    async fn get(&mut self, key: Vec<u8>) -> wasmtime::Result<Result<Option<kv::Entry>, WitError>> {
        Ok(current::kv::Host::get(self, key).await?.map(|read| read.map(entry)))
    }

    async fn scan(
        &mut self,
        start: Vec<u8>,
        end: Option<Vec<u8>>,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<kv::Entry>, WitError>> {
        Ok(current::kv::Host::scan(self, start, end, limit).await?.map(|rows| rows.into_iter().map(entry).collect()))
    }

    async fn commit(
        &mut self,
        checks: Vec<kv::Check>,
        writes: Vec<kv::Write>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        let checks = checks
            .into_iter()
            .map(|check| match check {
                kv::Check::Absent(k) => current::kv::Check::Absent(k),
                kv::Check::Present(k) => current::kv::Check::Present(k),
                kv::Check::AtVersion(at) => current::kv::Check::AtVersion(at),
                kv::Check::PrefixEmpty(p) => current::kv::Check::PrefixEmpty(p),
            })
            .collect();
        let writes = writes.into_iter().map(|w| current::kv::Write { key: w.key, value: w.value }).collect();
        current::kv::Host::commit(self, checks, writes).await
    }
}

fn entry(e: current::kv::Entry) -> kv::Entry {
    kv::Entry { key: e.key, value: e.value, version: e.version }
}

impl log::Host for HostState {
    async fn log(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            log::Level::Trace => current::log::Level::Trace,
            log::Level::Debug => current::log::Level::Debug,
            log::Level::Info => current::log::Level::Info,
            log::Level::Warn => current::log::Level::Warn,
            log::Level::Error => current::log::Level::Error,
        };
        current::log::Host::log(self, level, message).await
    }
}

impl clock::Host for HostState {
    async fn now_millis(&mut self) -> wasmtime::Result<u64> {
        current::clock::Host::now_millis(self).await
    }
}

impl config::Host for HostState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        current::config::Host::get(self, key).await
    }

    async fn keys(&mut self) -> wasmtime::Result<Vec<String>> {
        current::config::Host::keys(self).await
    }
}

impl http::Host for HostState {
    async fn send(&mut self, req: http::Request) -> wasmtime::Result<Result<http::Response, WitError>> {
        let req = current::http::Request { method: req.method, path: req.path, headers: req.headers, body: req.body };
        let sent = current::http::Host::send(self, req).await?;
        Ok(sent.map(|r| http::Response { status: r.status, headers: r.headers, body: r.body }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::Endpoint;

    /// The 0.1 contract's strings are the spec's, as the endpoint table writes them.
    #[test]
    fn the_0_1_endpoint_strings_are_the_specs() {
        for (string, endpoint) in [
            (UPDATE_PROPERTIES, Endpoint::UpdateNamespaceProperties),
            (LOAD_VIEW, Endpoint::LoadView),
            (RENAME_TABLE, Endpoint::RenameTable),
            (RENAME_VIEW, Endpoint::RenameView),
            (COMMIT_TRANSACTION, Endpoint::CommitTransaction),
        ] {
            assert_eq!(string, endpoint.spec());
        }
    }

    #[test]
    fn a_0_1_backend_is_described_by_the_endpoints_it_listed() {
        let listed = |endpoints: &[Endpoint]| types::CapabilitySet {
            endpoints: endpoints.iter().map(|e| e.spec().to_string()).collect(),
            can_write: true,
            host_readable_manifests: false,
            remember: vec![("prefix".into(), "p".into())],
        };
        let plain = describe(listed(&[Endpoint::ListNamespaces, Endpoint::LoadTable]));
        assert_eq!(plain.features, Features::WRITES);
        assert_eq!(plain.remember, vec![("prefix".to_string(), "p".to_string())]);
        let all = describe(listed(&[Endpoint::LoadView, Endpoint::RenameTable, Endpoint::CommitTransaction]));
        assert_eq!(all.features, Features::WRITES | Features::VIEWS | Features::RENAME | Features::MULTI_TABLE_COMMIT);
    }
}
