//! The components that ship inside the binary, and drop-in ones read from files.

use std::ops::Deref;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::config::BuiltinBackend;

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
/// The Hive Metastore backend, built from `plugins/hms`.
static HMS: Embedded = built!("hms.wasm");

/// A built-in component's bytes and digest. What it does, it declares as any component
/// does.
fn embedded(backend: BuiltinBackend) -> &'static Embedded {
    match backend {
        BuiltinBackend::Native => &NATIVE,
        BuiltinBackend::Rest => &REST,
        BuiltinBackend::Glue => &GLUE,
        BuiltinBackend::S3Tables => &S3TABLES,
        BuiltinBackend::Hms => &HMS,
    }
}

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

/// The component a `backend` setting names: a built-in name or a file path.
pub fn component(backend: &str) -> Result<Wasm, String> {
    match BuiltinBackend::named(backend).map(embedded) {
        Some((bytes, digest)) => Ok(Wasm { bytes: Bytes::from_static(bytes), digest: **digest }),
        None => std::fs::read(backend).map(Wasm::new).map_err(|e| format!("cannot read component file {backend}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_built_in_digest_is_the_sha256_of_its_bytes() {
        for backend in BuiltinBackend::ALL {
            let (name, wasm) = (backend.name(), component(backend.name()).unwrap());
            assert_eq!(*wasm.digest(), <[u8; 32]>::from(Sha256::digest(&*wasm)), "{name}");
        }
    }
}
