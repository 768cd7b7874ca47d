// Shared by the test components: every backend function except the ones a test
// component overrides answers `unsupported` (`unsupported_backend_rest!`), or every
// view change does (`unsupported_views!`, for a component that overrides more). Included with `include!` so each
// component stays one small crate.
macro_rules! unsupported_views {
    () => {
        fn load_view(_: Ident) -> Result<Pointer, Error> { Err(no()) }
        fn create_view(_: Ident, _: Pointer) -> Result<(), Error> { Err(no()) }
        fn commit_view(_: Ident, _: String, _: Pointer) -> Result<(), Error> { Err(no()) }
        fn drop_view(_: Ident) -> Result<Pointer, Error> { Err(no()) }
        fn rename_view(_: Ident, _: Ident) -> Result<(), Error> { Err(no()) }
    };
}

// Not every component that includes this file stubs the whole rest.
#[allow(unused_macros)]
macro_rules! unsupported_backend_rest {
    () => {
        fn list_namespaces(_: Option<Vec<String>>, _: PageRequest) -> Result<NamespacePage, Error> {
            Ok(NamespacePage { items: vec![], done: true })
        }
        fn drop_namespace(_: Vec<String>) -> Result<(), Error> { Err(no()) }
        fn update_namespace_properties(_: Vec<String>, _: Vec<String>, _: Properties) -> Result<PropertiesUpdate, Error> { Err(no()) }
        fn list_tables(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> { Err(no()) }
        fn load_table(_: Ident, _: Option<String>) -> Result<Pointer, Error> { Err(no()) }
        fn create_table(_: Ident, _: Pointer) -> Result<(), Error> { Err(no()) }
        fn commit_table(_: Ident, _: String, _: Pointer) -> Result<(), Error> { Err(no()) }
        fn drop_table(_: Ident) -> Result<Pointer, Error> { Err(no()) }
        fn rename_table(_: Ident, _: Ident) -> Result<(), Error> { Err(no()) }
        fn list_views(_: Vec<String>, _: PageRequest) -> Result<NamePage, Error> { Err(no()) }
        unsupported_views!();
        fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> { Err(no()) }
    };
}

fn no() -> Error {
    Error::Unsupported("a test component".into())
}
