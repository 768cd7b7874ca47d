//! A deliberately misbehaving backend for the plugin isolation tests.
//!
//! `create-namespace` and `load-namespace` misbehave by name: `trap` panics, `loop`
//! never returns, `bomb` allocates until memory runs out. Other names are created
//! (nothing is stored) and are then not found. Loading `config.<key>` answers the
//! mount's setting `<key>` as the property `value`.

wit_bindgen::generate!({ world: "kv-backend", path: "../../../wit" });

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::types::{
    CapabilitySet, Error, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
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

    unsupported_backend_rest!();
}

export!(Misbehave);
