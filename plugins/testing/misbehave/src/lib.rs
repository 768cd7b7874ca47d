//! A deliberately misbehaving backend for the plugin isolation tests.
//!
//! `create-namespace` and `load-namespace` misbehave by name: `trap` panics, `loop`
//! never returns, `bomb` allocates until memory runs out. Other names are created
//! (nothing is stored) and are then not found. Loading `config.<key>` answers the
//! mount's setting `<key>` as the property `value`.
//!
//! Its listings are served by the host from its keys (`key-listings`), while its own
//! `list-namespaces` answers nothing: creating `listed` stores the key `names/listed`,
//! and creating `garbage` a key under `names/` that is not UTF-8. Listing tables traps;
//! listing views fails as unavailable.

wit_bindgen::generate!({ world: "listing-kv-backend", path: "../../../wit" });

use exports::rustberg::catalog::backend::Guest;
use exports::rustberg::catalog::key_listings::Guest as KeyListings;
use rustberg::catalog::kv;
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
    TableCommit,
};

include!("../../stub.rs");

struct Misbehave;

fn misbehave(ns: &[String]) {
    match ns.first().map(String::as_str) {
        Some("trap") => panic!("deliberate trap"),
        Some("loop") => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Some("bomb") => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        _ => {}
    }
}

impl Guest for Misbehave {
    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        misbehave(&ns);
        let key = match ns.as_slice() {
            [name] if name == "listed" => [LISTED, name.as_bytes()].concat(),
            [name] if name == "garbage" => [LISTED, &[0xff, 0xfe][..]].concat(),
            _ => return Ok(props),
        };
        kv::commit(&[], &[kv::Write { key, value: Some(vec![]) }]).map_err(|_| Error::Unavailable("kv".into()))?;
        Ok(props)
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        misbehave(&ns);
        if let [first, key] = ns.as_slice() {
            if first == "config" {
                return Ok(vec![("value".into(), rustberg::catalog::config::get(key).unwrap_or_default())]);
            }
        }
        Err(Error::NotFound(format!("namespace {} does not exist", ns.join("."))))
    }

    fn describe() -> Result<Description, Error> {
        // The writes this component does not override answer unsupported.
        Ok(Description { features: Features::WRITES, remember: vec![] })
    }

    unsupported_backend_rest!();
}

/// Where the namespaces the host lists are keyed.
const LISTED: &[u8] = b"names/";

impl KeyListings for Misbehave {
    fn namespaces(_: Option<Vec<String>>) -> Result<Vec<u8>, Error> {
        Ok(LISTED.to_vec())
    }

    fn tables(_: Vec<String>) -> Result<Vec<u8>, Error> {
        panic!("deliberate trap while naming a prefix")
    }

    fn views(_: Vec<String>) -> Result<Vec<u8>, Error> {
        Err(Error::Unavailable("the views are somewhere else".into()))
    }
}

export!(Misbehave);
