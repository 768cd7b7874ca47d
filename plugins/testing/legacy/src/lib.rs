//! A backend built against the first published contract, `rustberg:catalog@0.1.0`
//! (frozen in `wit/` beside this crate): hosts of every later 0.1.x version must keep loading it.
//! It serves one namespace from its configuration and nothing else.

wit_bindgen::generate!({ world: "kv-backend", path: "wit" });

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::config;
use rustberg::catalog::types::{
    CapabilitySet, Error, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
    TableCommit,
};

include!("../../stub.rs");

struct Legacy;

impl Guest for Legacy {
    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        match ns.as_slice() {
            [name] if *name == "legacy" => Ok(vec![("contract".into(), config::get("contract").unwrap_or_default())]),
            _ => Err(Error::NotFound(format!("namespace {} does not exist", ns.join(".")))),
        }
    }

    fn create_namespace(_: Vec<String>, _: Properties) -> Result<Properties, Error> {
        Err(no())
    }

    fn capabilities() -> Result<CapabilitySet, Error> {
        Ok(CapabilitySet {
            endpoints: vec!["GET /v1/{prefix}/namespaces".into()],
            can_write: true,
            host_readable_manifests: false,
            remember: vec![],
        })
    }

    unsupported_backend_rest!();
}

export!(Legacy);
