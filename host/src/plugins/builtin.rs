//! The components that ship inside the binary, and drop-in ones read from files.

use std::ops::Deref;

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// A built-in component's bytes and their SHA-256, both written by host/build.rs.
type Embedded = (&'static [u8], &'static [u8; 32]);

/// The [`Embedded`] component `file` of host/build.rs's output.
macro_rules! built {
    ($file:literal) => {
        (
            include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/", $file)) as &[u8],
            include_bytes!(concat!(env!("RUSTBERG_COMPONENTS_DIR"), "/", $file, ".sha256")),
        )
    };
}

/// The native backend, built from `plugins/native` by host/build.rs.
static NATIVE: Embedded = built!("native.wasm");
/// The rest backend, built from `plugins/rest`.
static REST: Embedded = built!("rest.wasm");
/// The AWS Glue backend, built from `plugins/glue`.
static GLUE: Embedded = built!("glue.wasm");
/// The Amazon S3 Tables backend, built from `plugins/s3tables`.
static S3TABLES: Embedded = built!("s3tables.wasm");

/// The built-in components by name: their bytes and digest, and what a mount grants
/// them unless it says otherwise (`grants`).
const BUILTINS: &[(&str, &Embedded, &[&str])] = &[
    ("native", &NATIVE, &["kv"]),
    ("rest", &REST, &["http"]),
    ("glue", &GLUE, &["http"]),
    ("s3tables", &S3TABLES, &["http"]),
];

/// A component: its bytes and their SHA-256, which names its compiled form in the
/// cache. A built-in's digest was computed when the binary was built, so a start with
/// the compiled form cached neither hashes nor copies the bytes, nor reads them in.
#[derive(Clone)]
pub struct Wasm {
    bytes: Bytes,
    digest: [u8; 32],
}

impl Wasm {
    /// Bytes from elsewhere (a file), hashed now.
    pub fn new(bytes: Vec<u8>) -> Self {
        let digest = Sha256::digest(&bytes).into();
        Self { bytes: bytes.into(), digest }
    }

    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }
}

impl Deref for Wasm {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

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

/// Whether the built-in `backend` creates a namespace in a single commit to its key
/// space and makes no other, so that a commit of the host's may ride it (`riders`).
/// A drop-in component is never assumed to.
pub fn creates_a_namespace_in_one_commit(backend: &str) -> bool {
    backend == "native"
}

/// The component a `backend` setting names: a built-in name or a file path.
pub fn component(backend: &str) -> Result<Wasm, String> {
    match BUILTINS.iter().find(|(name, _, _)| *name == backend) {
        Some((_, (bytes, digest), _)) => Ok(Wasm { bytes: Bytes::from_static(bytes), digest: **digest }),
        None => std::fs::read(backend).map(Wasm::new).map_err(|e| format!("cannot read component file {backend}: {e}")),
    }
}

/// The grants a mount of `backend` gets when its configuration names none.
pub fn default_grants(backend: &str) -> &'static [&'static str] {
    BUILTINS.iter().find(|(name, _, _)| *name == backend).map_or(DROP_IN_GRANTS, |(_, _, grants)| grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_built_in_digest_is_the_sha256_of_its_bytes() {
        for (name, _, _) in BUILTINS {
            let wasm = component(name).unwrap();
            assert_eq!(*wasm.digest(), <[u8; 32]>::from(Sha256::digest(&*wasm)), "{name}");
        }
    }
}
