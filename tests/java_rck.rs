//! Iceberg's REST Compatibility Kit (Iceberg's own catalog tests, through its Java
//! `RESTCatalog`) against a real Rustberg, through `tests/java/rck.sh`: the whole tree,
//! a native mount on Postgres, and rest mounts, each targeted by its own prefix
//! (`?warehouse=<mount>`). On the tree and native mounts every test passes; a test is
//! skipped only by the kit's own switches or where `/v1/config` leaves out an endpoint
//! it needs. Through a read-write rest mount of an independent catalog (another
//! Rustberg, Iceberg's own reference server), the kit has the same outcome, test by
//! test, as against that catalog directly: a test that fails only through the mount is a
//! bug here.
//!
//! The kit places tables at `file:/tmp/<namespace>/<table>` and views in the JVM's
//! temporary folder, so the catalog under test has its warehouse at `file:///tmp` with
//! `unstructured_locations` (a view may lie outside its namespace's folder).

use crate::support;

use std::collections::BTreeSet;
use std::process::Command;

use support::moto::Moto;
use support::peers::Peer;
use support::python::repo_root;
use support::{postgres_database, Server};

/// The outcome of one run: the tests that failed and the counts of its last line.
#[derive(Debug)]
struct Outcome {
    failed: BTreeSet<String>,
    skipped: Vec<String>,
    passed: u32,
    /// The last line: `N passed, N failed, N skipped`.
    summary: String,
}

/// Runs the suite against `server` (as the principal `credential`, `id:secret`),
/// through the prefix of `warehouse` if given.
fn run_rck(server: &Server, credential: &str, warehouse: Option<&str>) -> Outcome {
    // Rustberg takes a dot inside a namespace or table name.
    run_rck_at(&server.base, credential, warehouse, true)
}

/// Runs the suite against the catalog at `base`; `dots`: it takes a dot inside a name.
fn run_rck_at(base: &str, credential: &str, warehouse: Option<&str>, dots: bool) -> Outcome {
    let started = std::time::Instant::now();
    let output = Command::new("bash")
        .arg(repo_root().join("tests/java/rck.sh"))
        .arg(base)
        .arg(credential)
        .args(warehouse)
        .env("RCK_SUPPORTS_NAMES_WITH_DOT", dots.to_string())
        .output()
        .expect("running tests/java/rck.sh (Java 17 and Maven are needed)");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    eprintln!("RCK against {base} {warehouse:?}: {summary} in {:.0?}\n{stdout}", started.elapsed());
    let count = |word: &str| {
        summary
            .split(", ")
            .find_map(|part| part.strip_suffix(word)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{word}` count in {summary:?}: {}", String::from_utf8_lossy(&output.stderr)))
    };
    let named = |tag: &str| -> Vec<String> {
        stdout.lines().filter_map(|l| Some(l.strip_prefix(tag)?.split(':').next()?.trim().to_string())).collect()
    };
    let outcome = Outcome {
        failed: named("FAILED").into_iter().collect(),
        skipped: named("SKIPPED"),
        passed: count(" passed"),
        summary: summary.clone(),
    };
    assert_eq!(outcome.failed.len(), count(" failed") as usize, "every failure is named: {stdout}");
    outcome
}

/// The skips the kit makes by itself, whatever the catalog: names with a slash (off in the
/// kit), nested and empty namespaces (the base tests' defaults), one test disabled.
const KIT_SKIPS: &[&str] = &[
    "RESTCompatibilityKitCatalogTests.testTableNameWithSlash",
    "RESTCompatibilityKitCatalogTests.testNamespaceWithSlash",
    "RESTCompatibilityKitCatalogTests.testListNestedNamespaces",
    "RESTCompatibilityKitCatalogTests.testDropNamespaceWithNestedNamespace",
    "RESTCompatibilityKitCatalogTests.createAndDropEmptyNamespace",
    "RESTCompatibilityKitCatalogTests.listTablesInEmptyNamespace",
    "RESTCompatibilityKitCatalogTests.namespacePropertiesOnEmptyNamespace",
    "RESTCompatibilityKitCatalogTests.listNamespacesWithEmptyNamespace",
    "RESTCompatibilityKitCatalogTests.createTableInUniqueLocation",
    "RESTCompatibilityKitViewCatalogTests.listViewsInEmptyNamespace",
];

/// Where the kit's tables and views go (see the module's comment).
const KIT_WAREHOUSE: &str = "warehouse_location = \"file:///tmp\"\nunstructured_locations = true\n";

/// A writable catalog: no failure, no skip beyond the kit's own.
fn assert_writable_passes(outcome: &Outcome) {
    assert!(outcome.failed.is_empty(), "RCK tests failed: {:?}", outcome.failed);
    let skipped: BTreeSet<_> = outcome.skipped.iter().map(String::as_str).collect();
    assert_eq!(skipped, KIT_SKIPS.iter().copied().collect(), "only the kit's own skips");
    assert!(outcome.passed >= 130, "the suite ran: {} passed", outcome.passed);
}

#[test]
fn the_rck_passes_against_the_whole_tree() {
    let _turn = support::jvm_turn_blocking();
    let server = Server::start(&format!("[storage]\n{KIT_WAREHOUSE}"));
    let credential = server.credential.clone().expect("a minted admin");
    assert_writable_passes(&run_rck(&server, &credential, None));
}

#[tokio::test]
async fn the_rck_passes_against_a_native_mount_on_postgres() {
    let _turn = support::jvm_turn().await;
    let Some(database) = postgres_database().await else { return };
    let server = Server::start(&format!(
        "[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{database}\"\n{KIT_WAREHOUSE}owner = \"acme\"\n"
    ));
    let credential = server.credential.clone().expect("a minted admin");
    let outcome = tokio::task::spawn_blocking(move || run_rck(&server, &credential, Some("pg"))).await.unwrap();
    assert_writable_passes(&outcome);
}

/// A rest mount is read-only by default: its `/v1/config` advertises no mutating endpoint,
/// so the Java client refuses every write itself and the tests that need one are skipped;
/// nothing fails.
#[test]
fn the_rck_passes_against_a_read_only_rest_mount_of_another_rustberg() {
    let _turn = support::jvm_turn_blocking();
    let remote = Server::start("");
    let token = remote.admin_token();
    let server = Server::try_start_with_env(
        &format!(
            "[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\ntoken_env = \"PARTNER_TOKEN\"\n",
            remote.base
        ),
        &[("PARTNER_TOKEN", &token)],
    )
    .unwrap_or_else(|out| panic!("{out}"));
    let credential = server.credential.clone().expect("a minted admin");
    let outcome = run_rck(&server, &credential, Some("partner"));
    assert!(outcome.failed.is_empty(), "no test fails through a read-only mount: {:?}", outcome.failed);
    assert!(outcome.passed > 0, "the read-only tests ran");
    let by_config: Vec<_> = outcome.skipped.iter().filter(|t| !KIT_SKIPS.contains(&t.as_str())).collect();
    assert!(!by_config.is_empty(), "the writes are skipped");
}

/// Test by test, the kit through the mount has the outcome it has against the peer.
fn assert_same_outcome(peer: &str, direct: &Outcome, mounted: &Outcome) {
    eprintln!("MEASURE rck {peer}: directly {}; through a read-write rest mount {}", direct.summary, mounted.summary);
    assert!(direct.passed > 50, "the kit ran against {peer} directly: {direct:?}");
    assert_eq!(mounted.failed, direct.failed, "{peer}: the tests that fail through the mount and directly");
    let skipped = |o: &Outcome| o.skipped.iter().cloned().collect::<BTreeSet<_>>();
    assert_eq!(skipped(mounted), skipped(direct), "{peer}: the tests skipped through the mount and directly");
    assert_eq!(mounted.passed, direct.passed, "{peer}: as many pass through the mount");
}

/// A Rustberg mounting `remote` read-write under `partner`.
fn mounting(remote: &str, token: Option<&str>) -> Server {
    let auth = token.map(|_| "token_env = \"PARTNER_TOKEN\"\n").unwrap_or_default();
    let config = format!(
        "[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{remote}\"\nowner = \"default\"\nread_only = false\n{auth}"
    );
    let env: Vec<(&str, &str)> = token.map(|t| ("PARTNER_TOKEN", t)).into_iter().collect();
    Server::try_start_with_env(&config, &env).unwrap_or_else(|out| panic!("{out}"))
}

#[test]
fn the_rck_through_a_read_write_mount_of_another_rustberg_matches_it_directly() {
    let _turn = support::jvm_turn_blocking();
    let remote = Server::start(&format!("[storage]\n{KIT_WAREHOUSE}"));
    let direct = run_rck(&remote, remote.credential.as_deref().expect("a minted admin"), None);
    let remote = Server::start(&format!("[storage]\n{KIT_WAREHOUSE}"));
    let server = mounting(&remote.base, Some(&remote.admin_token()));
    let mounted = run_rck(&server, server.credential.as_deref().expect("a minted admin"), Some("partner"));
    assert_same_outcome("another Rustberg", &direct, &mounted);
}

/// Iceberg's reference server uses `.` between namespace levels, and takes no dot in a
/// name.
#[test]
fn the_rck_through_a_read_write_mount_of_icebergs_reference_server_matches_it_directly() {
    let _turn = support::jvm_turn_blocking();
    let reference = Peer::iceberg_reference();
    let direct = run_rck_at(&reference.base, "-", None, false);
    let reference = Peer::iceberg_reference();
    let server = mounting(&reference.base, None);
    let credential = server.credential.clone().expect("a minted admin");
    let mounted = run_rck_at(&server.base, &credential, Some("partner"), false);
    assert_same_outcome("Iceberg's reference server", &direct, &mounted);
}

/// Nessie serves its Iceberg REST API under `/iceberg`, with the prefix `main|warehouse`
/// (sent encoded), its warehouse on moto; it takes no credential and no dot in a name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rck_through_a_read_write_mount_of_nessie_matches_it_directly() {
    let _turn = support::jvm_turn().await;
    let moto = Moto::start("nessie").await;
    let s3 = moto.url.clone();
    let outcomes = tokio::task::spawn_blocking(move || {
        let nessie = Peer::nessie(&s3, "nessie");
        let direct = run_rck_at(&format!("{}/iceberg", nessie.base), "-", Some("warehouse"), false);
        drop(nessie);
        let nessie = Peer::nessie(&s3, "nessie");
        let server = mounting(&format!("{}/iceberg?warehouse=warehouse", nessie.base), None);
        let credential = server.credential.clone().expect("a minted admin");
        (direct, run_rck_at(&server.base, &credential, Some("partner"), false))
    })
    .await
    .unwrap();
    assert_same_outcome("Nessie", &outcomes.0, &outcomes.1);
}
