//! Every end-to-end test, in one binary that links the server's dependencies once: a
//! module per area, each the file of that name beside this one. Each test starts the
//! real `rustberg` binary (and, where it needs them, real peers) and talks to it over
//! the network. `cargo test --release` runs them all; `cargo test --release -- hms::`
//! one area.

mod support;

mod authorization;
mod behaviour;
mod clients;
mod concurrent_commits;
mod conformance;
mod console;
mod docs;
mod durability;
mod events;
mod faults;
mod federation;
mod gates;
mod glue;
mod hms;
mod java_rck;
mod layers;
mod locations;
mod nessie;
mod oidc;
mod operations;
mod plugin_isolation;
mod plugin_kit;
mod read_policies;
mod recovery;
mod rest_api;
mod rest_mounts;
mod s3tables;
mod scan_planning;
mod shared_postgres;
mod signing;
mod soak;
mod spark;
mod storage;
mod table_metadata;
mod transactions;
mod trino;
mod views;

/// Every file in tests/ is a module above: one forgotten would silently never run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let this = std::fs::read_to_string(here.join("end_to_end.rs")).unwrap();
    for entry in std::fs::read_dir(&here).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "end_to_end") {
            assert!(
                this.contains(&format!("\nmod {module};\n")),
                "tests/{name} is not declared in tests/end_to_end.rs"
            );
        }
    }
}
