//! The components that ship inside the binary, and drop-in ones read from files.

use std::sync::Arc;

/// The native backend, built from `plugins/native` by host/build.rs.
static NATIVE: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/native.wasm"));
/// The rest backend, built from `plugins/rest`.
static REST: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/rest.wasm"));

/// The bytes of the component a `backend` setting names: a built-in name or a file path.
pub fn component(backend: &str) -> Result<Arc<[u8]>, String> {
    match backend {
        "native" => Ok(Arc::from(NATIVE)),
        "rest" => Ok(Arc::from(REST)),
        path => std::fs::read(path).map(Arc::from).map_err(|e| format!("cannot read component file {path}: {e}")),
    }
}
