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

/// What the host knows of how a built-in component behaves beyond its contract, and
/// may rely on to do less work. A drop-in component is never assumed any of it
/// ([`Traits::NONE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traits {
    /// It answers every read from its key space alone (it reads no clock and no
    /// setting to answer, and keeps nothing between calls), so the host may keep its
    /// answers while the space is unchanged.
    pub answers_from_keys_alone: bool,
    /// Every write it makes is checked against each entry it read to decide it (its
    /// presence, absence or version), so within one attempt at a change the host may
    /// answer a read again with what it read before (`change_reads`).
    pub checks_what_it_read: bool,
    /// It records only a table's metadata location, so the host need not send it the
    /// table's metadata JSON on a create or commit.
    pub records_table_location_only: bool,
    /// It creates a namespace in a single commit to its key space and makes no other,
    /// so a commit of the host's may ride it (`riders`).
    pub creates_a_namespace_in_one_commit: bool,
}

impl Traits {
    /// Nothing assumed: how every drop-in component is treated.
    pub const NONE: Traits = Traits {
        answers_from_keys_alone: false,
        checks_what_it_read: false,
        records_table_location_only: false,
        creates_a_namespace_in_one_commit: false,
    };

    /// The native backend's: a pointer store over its key space and nothing else.
    const POINTER_STORE: Traits = Traits {
        answers_from_keys_alone: true,
        checks_what_it_read: true,
        records_table_location_only: true,
        creates_a_namespace_in_one_commit: true,
    };
}

/// A built-in component: its name, bytes and digest, what a mount grants it unless it
/// says otherwise (`grants`), and what the host knows of it.
struct Builtin {
    name: &'static str,
    embedded: &'static Embedded,
    grants: &'static [&'static str],
    traits: Traits,
}

const BUILTINS: &[Builtin] = &[
    Builtin { name: "native", embedded: &NATIVE, grants: &["kv"], traits: Traits::POINTER_STORE },
    Builtin { name: "rest", embedded: &REST, grants: &["http"], traits: Traits::NONE },
    Builtin { name: "glue", embedded: &GLUE, grants: &["http"], traits: Traits::NONE },
    Builtin { name: "s3tables", embedded: &S3TABLES, grants: &["http"], traits: Traits::NONE },
];

fn builtin(backend: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == backend)
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

/// What a mount grants a component by default: a built-in's own grants; a key space
/// for a drop-in file.
pub const DROP_IN_GRANTS: &[&str] = &["kv"];

/// What the host knows of the component a `backend` setting names: a built-in's
/// traits, nothing of a drop-in file.
pub fn traits(backend: &str) -> Traits {
    builtin(backend).map_or(Traits::NONE, |b| b.traits)
}

/// The component a `backend` setting names: a built-in name or a file path.
pub fn component(backend: &str) -> Result<Wasm, String> {
    match builtin(backend) {
        Some(Builtin { embedded: (bytes, digest), .. }) => {
            Ok(Wasm { bytes: Bytes::from_static(bytes), digest: **digest })
        }
        None => std::fs::read(backend).map(Wasm::new).map_err(|e| format!("cannot read component file {backend}: {e}")),
    }
}

/// The grants a mount of `backend` gets when its configuration names none.
pub fn default_grants(backend: &str) -> &'static [&'static str] {
    builtin(backend).map_or(DROP_IN_GRANTS, |b| b.grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_built_in_digest_is_the_sha256_of_its_bytes() {
        for Builtin { name, .. } in BUILTINS {
            let wasm = component(name).unwrap();
            assert_eq!(*wasm.digest(), <[u8; 32]>::from(Sha256::digest(&*wasm)), "{name}");
        }
    }

    /// A drop-in file is assumed nothing, whatever its path says.
    #[test]
    fn a_drop_in_component_is_assumed_nothing() {
        assert!(traits("native").records_table_location_only);
        for file in ["/plugins/native", "native.wasm", "./native", "rest"] {
            assert_eq!(traits(file), Traits::NONE, "{file}");
        }
    }
}
