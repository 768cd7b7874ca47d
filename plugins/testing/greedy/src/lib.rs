//! A backend that imports `http` although a kv mount does not grant it: the host
//! must refuse to load it at start-up, naming the import.

wit_bindgen::generate!({ world: "http-backend", path: "../../../wit" });

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::http::{self, Request};
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
    TableCommit,
};

include!("../../stub.rs");

struct Greedy;

impl Guest for Greedy {
    fn load_namespace(_: Vec<String>) -> Result<Properties, Error> {
        let req = Request { method: "GET".into(), path: "/".into(), headers: vec![], body: vec![] };
        http::send(&req).map(|_| vec![])
    }

    fn create_namespace(_: Vec<String>, _: Properties) -> Result<Properties, Error> {
        Err(no())
    }

    fn describe() -> Result<Description, Error> {
        // The writes this component does not override answer unsupported.
        Ok(Description { features: Features::WRITES, remember: vec![] })
    }

    unsupported_backend_rest!();
}

export!(Greedy);
