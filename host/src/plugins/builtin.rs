//! The components that ship inside the binary, and drop-in ones read from files.

use std::sync::Arc;

/// The native backend, built from `plugins/native` by host/build.rs.
static NATIVE: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/native.wasm"));
/// The rest backend, built from `plugins/rest`.
static REST: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/rest.wasm"));
/// The AWS Glue backend, built from `plugins/glue`.
static GLUE: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/glue.wasm"));

/// The Amazon S3 Tables backend, built from `plugins/s3tables`.
static S3TABLES: &[u8] = include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/s3tables.wasm"));

/// The built-in components by name: their bytes, and what a mount grants them unless
/// it says otherwise (`grants`).
const BUILTINS: &[(&str, &[u8], &[&str])] = &[
    ("native", NATIVE, &["kv"]),
    ("rest", REST, &["http"]),
    ("glue", GLUE, &["http"]),
    ("s3tables", S3TABLES, &["http"]),
];

/// What a mount grants a component by default: a built-in's own grants; a key space
/// for a drop-in file.
pub const DROP_IN_GRANTS: &[&str] = &["kv"];

/// Whether the built-in `backend` answers every read from its key space alone (it reads
/// no clock and no setting to answer, and keeps nothing between calls), so the host may
/// keep its answers while the space is unchanged. A drop-in component is never assumed to.
pub fn answers_from_keys_alone(backend: &str) -> bool {
    backend == "native"
}

/// Whether every write of the built-in `backend` is checked against each entry it read
/// to decide it (its presence, absence or version), so that within one attempt at a
/// change the host may answer a read again with what it read before (`change_reads`).
/// A drop-in component is never assumed to.
pub fn checks_what_it_read(backend: &str) -> bool {
    backend == "native"
}

/// Whether the built-in `backend` records only a table's metadata location, so the host
/// need not send it the table's metadata JSON on a create or commit. A drop-in
/// component is always sent it.
pub fn records_table_location_only(backend: &str) -> bool {
    backend == "native"
}

/// The bytes of the component a `backend` setting names: a built-in name or a file path.
pub fn component(backend: &str) -> Result<Arc<[u8]>, String> {
    match BUILTINS.iter().find(|(name, _, _)| *name == backend) {
        Some((_, bytes, _)) => Ok(Arc::from(*bytes)),
        None => std::fs::read(backend).map(Arc::from).map_err(|e| format!("cannot read component file {backend}: {e}")),
    }
}

/// The grants a mount of `backend` gets when its configuration names none.
pub fn default_grants(backend: &str) -> &'static [&'static str] {
    BUILTINS.iter().find(|(name, _, _)| *name == backend).map_or(DROP_IN_GRANTS, |(_, _, grants)| grants)
}
