//! A backend that fails after applying a change, for the commit-state-unknown tests.
//!
//! Namespaces and table pointers live in the kv key space. `commit-table` swaps the
//! pointer and then traps; so do the creates and drops of namespaces and tables named
//! `unknown-…`. The host must keep the metadata file it wrote, since the pointer names
//! it, and carry through what goes with the change (an owner, revoked grants). A
//! namespace created with the property `test.delay-ms` waits that long before it is
//! written, so a test can act while the create is under way.

wit_bindgen::generate!({ world: "kv-backend", path: "../../../wit" });

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::kv::{self, Check, Write};
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
    TableCommit,
};

include!("../../stub.rs");

struct Flaky;

fn namespace_key(ns: &[String]) -> Vec<u8> {
    format!("n/{}", ns.join("\u{1f}")).into_bytes()
}

fn table_key(id: &Ident) -> Vec<u8> {
    format!("t/{}/{}", id.namespace.join("\u{1f}"), id.name).into_bytes()
}

/// A pointer stored as `<metadata location>\n<metadata json>`.
fn encode(p: &Pointer) -> Vec<u8> {
    format!("{}\n{}", p.metadata_location, p.metadata_json).into_bytes()
}

fn decode(bytes: &[u8]) -> Pointer {
    let text = String::from_utf8_lossy(bytes);
    let (location, json) = text.split_once('\n').unwrap_or((&text, ""));
    Pointer {
        metadata_location: location.to_string(),
        metadata_json: json.to_string(),
        config: vec![],
        storage_credentials: String::new(),
    }
}

fn write(key: Vec<u8>, value: Vec<u8>) -> Write {
    Write { key, value: Some(value) }
}

impl Guest for Flaky {
    fn describe() -> Result<Description, Error> {
        Ok(Description { features: Features::WRITES | Features::HOST_READABLE_MANIFESTS, remember: vec![] })
    }

    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        let delay = props.iter().find(|(k, _)| k == "test.delay-ms").and_then(|(_, v)| v.parse().ok());
        if let Some(ms) = delay {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let key = namespace_key(&ns);
        kv::commit(&[Check::Absent(key.clone())], &[write(key, vec![])])
            .map_err(|_| Error::AlreadyExists("namespace exists".into()))?;
        fail_after_applying(ns.last().map(String::as_str));
        Ok(props)
    }

    fn drop_namespace(ns: Vec<String>) -> Result<(), Error> {
        let key = namespace_key(&ns);
        kv::commit(&[Check::Present(key.clone())], &[Write { key, value: None }])
            .map_err(|_| Error::NotFound("no such namespace".into()))?;
        fail_after_applying(ns.last().map(String::as_str));
        Ok(())
    }

    fn drop_table(id: Ident) -> Result<Pointer, Error> {
        let key = table_key(&id);
        let entry = kv::get(&key)?.ok_or_else(|| Error::NotFound("no such table".into()))?;
        kv::commit(&[Check::AtVersion((key.clone(), entry.version))], &[Write { key, value: None }])
            .map_err(|_| Error::Conflict("the table changed".into()))?;
        fail_after_applying(Some(&id.name));
        Ok(decode(&entry.value))
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        match kv::get(&namespace_key(&ns))? {
            Some(_) => Ok(vec![]),
            None => Err(Error::NotFound(format!("namespace {} does not exist", ns.join(".")))),
        }
    }

    /// A table named `bare-…` comes back without its metadata JSON (the WIT allows
    /// that); one named `garbled-…` with JSON cut short.
    fn load_table(id: Ident, _: Option<String>) -> Result<Pointer, Error> {
        let mut pointer = match kv::get(&table_key(&id))? {
            Some(entry) => decode(&entry.value),
            None => return Err(Error::NotFound(format!("table {} does not exist", id.name))),
        };
        if id.name.starts_with("bare-") {
            pointer.metadata_json.clear();
        } else if id.name.starts_with("garbled-") {
            pointer.metadata_json.truncate(pointer.metadata_json.len() / 2);
        }
        Ok(pointer)
    }

    fn create_table(id: Ident, state: Pointer) -> Result<(), Error> {
        let key = table_key(&id);
        kv::commit(&[Check::Absent(key.clone())], &[write(key, encode(&state))])
            .map_err(|_| Error::AlreadyExists("table exists".into()))?;
        fail_after_applying(Some(&id.name));
        Ok(())
    }

    fn commit_table(id: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        let key = table_key(&id);
        let entry = kv::get(&key)?.ok_or_else(|| Error::NotFound("no such table".into()))?;
        if decode(&entry.value).metadata_location != expected {
            return Err(Error::Conflict("the table changed".into()));
        }
        kv::commit(&[Check::AtVersion((key.clone(), entry.version))], &[write(key, encode(&new))])
            .map_err(|_| Error::Conflict("the table changed".into()))?;
        panic!("deliberate failure after the commit applied");
    }

    fn list_namespaces(_: Option<Vec<String>>, _: PageRequest) -> Result<NamespacePage, Error> {
        Ok(NamespacePage { items: vec![], done: true })
    }
    fn update_namespace_properties(_: Vec<String>, _: Vec<String>, _: Properties) -> Result<PropertiesUpdate, Error> {
        Err(no())
    }
    fn list_tables(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        Ok(NamePage { items: vec![], done: true })
    }
    fn rename_table(_: Ident, _: Ident) -> Result<(), Error> {
        Err(no())
    }
    unsupported_views!();
    fn list_views(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        Ok(NamePage { items: vec![], done: true })
    }
    fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> {
        Err(no())
    }
}

/// Traps when `name` is `unknown-…`: the change has applied, the host is not told.
fn fail_after_applying(name: Option<&str>) {
    if name.is_some_and(|n| n.starts_with("unknown-")) {
        panic!("deliberate failure after the change applied");
    }
}

export!(Flaky);
