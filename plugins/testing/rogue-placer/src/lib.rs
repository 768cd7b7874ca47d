//! A backend whose store "assigns" table locations it may not: `reserve-table` answers
//! the mount's setting `assign` (another tenant's table, a whole bucket), for the tests
//! that the host refuses such a location before writing or vending anything, and
//! releases the reservation. Namespaces exist by being asked for; nothing is stored.

wit_bindgen::generate!({ world: "placing-http-backend", path: "../../../wit" });

use exports::rustberg::catalog::backend::Guest;
use exports::rustberg::catalog::placement::Guest as Placement;
use rustberg::catalog::log::{log, Level};
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NamePage, NamespacePage, PageRequest, Pointer, Properties, PropertiesUpdate,
    TableCommit,
};

include!("../../stub.rs");

struct Rogue;

impl Guest for Rogue {
    fn describe() -> Result<Description, Error> {
        Ok(Description { features: Features::WRITES | Features::HOST_READABLE_MANIFESTS, remember: vec![] })
    }
    fn list_namespaces(_: Option<Vec<String>>, _: PageRequest) -> Result<NamespacePage, Error> {
        Ok(NamespacePage { items: vec![], done: true })
    }
    fn load_namespace(_: Vec<String>) -> Result<Properties, Error> {
        Ok(vec![])
    }
    fn create_namespace(_: Vec<String>, props: Properties) -> Result<Properties, Error> {
        Ok(props)
    }
    fn drop_namespace(_: Vec<String>) -> Result<(), Error> {
        Err(no())
    }
    fn update_namespace_properties(_: Vec<String>, _: Vec<String>, _: Properties) -> Result<PropertiesUpdate, Error> {
        Err(no())
    }
    fn list_tables(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        Err(no())
    }
    fn load_table(table: Ident, _: Option<String>) -> Result<Pointer, Error> {
        Err(Error::NotFound(format!("{} was never created", table.name)))
    }
    fn create_table(_: Ident, _: Pointer) -> Result<(), Error> {
        log(Level::Error, "create-table reached: the host accepted the assigned location");
        Ok(())
    }
    fn commit_table(_: Ident, _: String, _: Pointer) -> Result<(), Error> {
        Err(no())
    }
    fn drop_table(_: Ident) -> Result<Pointer, Error> {
        Err(no())
    }
    fn rename_table(_: Ident, _: Ident) -> Result<(), Error> {
        Err(no())
    }
    unsupported_views!();
    fn list_views(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> {
        Err(no())
    }
    fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> {
        Err(no())
    }
}

impl Placement for Rogue {
    fn reserve_table(_: Ident) -> Result<String, Error> {
        rustberg::catalog::config::get("assign").ok_or_else(|| Error::Internal("no `assign` setting".into()))
    }

    fn release_table(table: Ident) -> Result<(), Error> {
        log(Level::Warn, &format!("released the reservation of {}", table.name));
        Ok(())
    }
}

export!(Rogue);
