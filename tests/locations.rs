//! No tenant reaches another's storage. Two tenants, `acme` (the victim, whose table
//! PyIceberg writes) and `evil` (a writer trying every way to place, move, register
//! or plan a table over acme's files), on the root catalog's file warehouse, on a
//! redb mount whose warehouse lies inside the root's, on an S3 warehouse (moto), and on
//! a file warehouse with `unstructured_locations` (a table may lie outside its
//! namespace's folder, never over another's). Every attack is followed by a purge;
//! acme's table must still scan with all rows.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::moto::{s3_storage, Moto};
use support::python::run_pytest;
use support::{acme_and_evil_writers, assert_error, components_dir, schema, Api, Server};

/// Where the victim's table lives.
#[derive(Clone, Copy, Debug)]
enum Store {
    RootFiles,
    RedbMount,
    S3,
    /// The root's file warehouse with `unstructured_locations = true`.
    Unstructured,
}

struct Lab {
    server: Server,
    /// The configuration the server runs with (to start it again).
    config: String,
    moto: Option<Moto>,
    _dir: tempfile::TempDir,
    acme: Api,
    evil: Api,
    /// The root catalog's warehouse.
    warehouse: String,
    /// The victim's namespace, as clients name it, and its table.
    victim_ns: Vec<&'static str>,
    /// Whether a table may lie outside its namespace's folder.
    unstructured: bool,
}

async fn lab(store: Store) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let moto = match store {
        Store::S3 => Some(Moto::start("lake").await),
        _ => None,
    };
    let warehouse = match &moto {
        Some(_) => "s3://lake/warehouse".to_string(),
        None => format!("file://{}/wh", dir.path().display()),
    };
    let unstructured = matches!(store, Store::Unstructured);
    let mut config =
        format!("[storage]\nwarehouse_location = \"{warehouse}\"\nunstructured_locations = {unstructured}\n");
    if let Some(moto) = &moto {
        config += &s3_storage(&moto.url, "server", "server");
    }
    config += &acme_and_evil_writers();
    let victim_ns = match store {
        Store::RedbMount => {
            // The mount's warehouse lies inside the root's: the root catalog must not reach it.
            config += &format!(
                "[mount.m]\nbackend = \"native\"\ncatalog_url = \"redb://{}/m.redb\"\n\
                 warehouse_location = \"{warehouse}/m\"\nowner = \"acme\"\n",
                dir.path().display()
            );
            vec!["m", "sales"]
        }
        _ => vec!["sales"],
    };
    let server = Server::start(&config);
    let acme = server.login("acme", "acme-secret");
    let evil = server.login("evil", "evil-secret");
    Lab { server, config, moto, _dir: dir, acme, evil, warehouse, victim_ns, unstructured }
}

impl Lab {
    /// Runs the victim's PyIceberg script: `setup` writes the table, `verify` scans it.
    fn victim(&self, mode: &str) {
        let table = format!("{}.orders", self.victim_ns.join("."));
        let mut env = vec![
            ("RUSTBERG_URL", self.server.base.clone()),
            ("VICTIM_CREDENTIAL", "acme:acme-secret".to_string()),
            ("VICTIM_TABLE", table),
            ("MODE", mode.to_string()),
        ];
        if let Some(moto) = &self.moto {
            env.push(("S3_ENDPOINT", moto.url.clone()));
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_pytest("test_victim.py", &env);
    }

    fn victim_path(&self) -> String {
        format!("/namespaces/{}/tables/orders", self.victim_ns.join("%1F"))
    }
}

fn parent(location: &str) -> &str {
    location.rsplit_once('/').unwrap().0
}

impl Lab {
    /// A location that must be refused: 400 naming the rule — or, where locations are
    /// unstructured and the rule broken was only "under its namespace", 409 for the
    /// overlap it would make.
    #[track_caller]
    fn assert_location_refused(&self, got: &(u16, Value), what: &str) {
        match self.unstructured {
            true => assert_refused(got, what),
            false => assert_error(got, 400, "BadRequestException"),
        }
    }
}

/// A create that must be refused: 400 naming the rule, or 409 for an overlap.
#[track_caller]
fn assert_refused(got: &(u16, Value), what: &str) {
    assert!(got.0 == 400 || got.0 == 409, "{what} was not refused: {} {}", got.0, got.1);
    let kind = got.1["error"]["type"].as_str().unwrap_or_default();
    assert!(kind == "BadRequestException" || kind == "AlreadyExistsException", "{what}: {}", got.1);
}

async fn attack(lab: &Lab) {
    let (status, victim) = lab.acme.get(&lab.victim_path()).await;
    assert_eq!(status, 200, "{victim}");
    let table_location = victim["metadata"]["location"].as_str().unwrap().to_string();
    let metadata_location = victim["metadata-location"].as_str().unwrap().to_string();
    let manifest_list = victim["metadata"]["snapshots"][0]["manifest-list"].as_str().unwrap().to_string();
    let namespace_location = parent(&table_location).to_string();
    let wh = &lab.warehouse;
    let evil = &lab.evil;
    assert_eq!(evil.post("/namespaces", json!({"namespace": ["evil"]})).await.0, 200);
    let relative = table_location.strip_prefix(&format!("{wh}/")).unwrap().to_string();

    // Creating a table (or view) over acme's files, however the location is spelled.
    for location in [
        table_location.clone(),
        format!("{table_location}/data"),
        namespace_location.clone(),
        wh.clone(),
        format!("{wh}/evil/../{relative}"),
        format!("{wh}/evil/%2e%2e/{relative}"),
        format!("{wh}/evil/%2E%2E/{relative}"),
        format!("{wh}/evil/*"),
        format!("{wh}/evil/t?"),
        format!("{wh}/evil/{{a,b}}"),
        format!("{wh}/evil"),
        format!("{wh}/evil//x"),
    ] {
        let got =
            evil.post("/namespaces/evil/tables", json!({"name": "t", "schema": schema(), "location": location})).await;
        lab.assert_location_refused(&got, &location);
        let got = evil
            .post(
                "/namespaces/evil/tables",
                json!({"name": "s", "schema": schema(), "location": location, "stage-create": true}),
            )
            .await;
        // A staged create claims nothing yet: unstructured, the overlap shows at its commit.
        if !(lab.unstructured && got.0 == 200) {
            lab.assert_location_refused(&got, &location);
        }
    }

    // Outside its namespace's folder but over nobody's files: only where unstructured.
    let elsewhere = format!("{wh}/elsewhere/t");
    let got =
        evil.post("/namespaces/evil/tables", json!({"name": "e", "schema": schema(), "location": elsewhere})).await;
    match lab.unstructured {
        true => assert_eq!(got.0, 200, "{}", got.1),
        false => assert_error(&got, 400, "BadRequestException"),
    }
    if lab.unstructured {
        assert_eq!(got.1["metadata"]["location"], json!(elsewhere));
        assert_eq!(evil.delete("/namespaces/evil/tables/e?purgeRequested=true").await.0, 204);
    }

    // Views take locations by the same rules.
    let view = |location: Option<&str>| {
        let mut body = json!({"name": "v", "schema": schema(), "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {"engine-name": "spark"},
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}], "default-namespace": ["evil"]}});
        if let Some(location) = location {
            body["location"] = json!(location);
        }
        body
    };
    for location in [table_location.as_str(), namespace_location.as_str(), &format!("{wh}/evil/*")] {
        lab.assert_location_refused(&evil.post("/namespaces/evil/views", view(Some(location))).await, location);
    }
    assert_eq!(evil.post("/namespaces/evil/views", view(None)).await.0, 200);
    let body = json!({"updates": [{"action": "set-location", "location": table_location}]});
    assert_refused(&evil.post("/namespaces/evil/views/v", body).await, "a view moved onto acme's table");

    // A namespace whose location is acme's, inside acme's, or the warehouse root.
    for location in [namespace_location.clone(), format!("{namespace_location}/x"), table_location.clone(), wh.clone()]
    {
        let got = evil.post("/namespaces", json!({"namespace": ["evil2"], "properties": {"location": location}})).await;
        assert_refused(&got, &format!("a namespace at {location}"));
    }
    assert_eq!(evil.head("/namespaces/evil2").await, 404);

    // A table of its own, then moved onto acme's location.
    let (status, own) = evil.post("/namespaces/evil/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{own}");
    for location in [table_location.clone(), namespace_location.clone(), format!("{wh}/evil/%2e%2e/{relative}")] {
        let body = json!({"requirements": [], "updates": [{"action": "set-location", "location": location}]});
        assert_refused(&evil.post("/namespaces/evil/tables/t", body).await, &format!("set-location {location}"));
    }
    // Moving inside its own namespace works.
    let body =
        json!({"requirements": [], "updates": [{"action": "set-location", "location": format!("{wh}/evil/moved")}]});
    let (status, moved) = evil.post("/namespaces/evil/tables/t", body).await;
    assert_eq!(status, 200, "{moved}");

    // A snapshot naming acme's manifest list: planning refuses to read it, and the purge
    // must neither read nor delete it.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let body = json!({
        "requirements": [],
        "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": 42, "sequence-number": 1, "timestamp-ms": now,
                "manifest-list": manifest_list, "summary": {"operation": "append"}, "schema-id": 0}},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 42}
        ]
    });
    let (status, stolen) = evil.post("/namespaces/evil/tables/t", body).await;
    assert_eq!(status, 200, "{stolen}");
    assert_error(&evil.post("/namespaces/evil/tables/t/plan", json!({})).await, 400, "BadRequestException");

    // Registering acme's metadata file.
    for overwrite in [false, true] {
        let body = json!({"name": "r", "metadata-location": metadata_location, "overwrite": overwrite});
        assert_error(&evil.post("/namespaces/evil/register", body).await, 400, "BadRequestException");
    }
    let body = json!({"name": "t", "metadata-location": metadata_location, "overwrite": true});
    assert_error(&evil.post("/namespaces/evil/register", body).await, 400, "BadRequestException");

    // Every purge evil can ask for.
    assert_eq!(evil.delete("/namespaces/evil/tables/t?purgeRequested=true").await.0, 204);
    let log = lab.server.output_once_it_says("left alone files outside");
    assert!(log.contains(&manifest_list), "the purge names what it left alone:\n{log}");
    assert_error(&evil.get("/namespaces/evil/tables/t").await, 404, "NoSuchTableException");
}

async fn suite(store: Store) {
    let lab = lab(store).await;
    tokio::task::block_in_place(|| lab.victim("setup"));
    attack(&lab).await;
    tokio::task::block_in_place(|| lab.victim("verify"));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_reaches_another_tenants_files_in_the_root_catalog() {
    suite(Store::RootFiles).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_reaches_another_tenants_files_in_a_mount() {
    suite(Store::RedbMount).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_reaches_another_tenants_files_on_s3() {
    suite(Store::S3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tenant_reaches_another_tenants_files_where_locations_are_unstructured() {
    suite(Store::Unstructured).await;
}

/// Registering files a table already holds is 409; a rename keeps the table's claim.
#[tokio::test(flavor = "multi_thread")]
async fn a_location_is_held_once_and_kept_across_a_rename() {
    let lab = lab(Store::RootFiles).await;
    let acme = &lab.acme;
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let location = format!("{}/db/t", lab.warehouse);
    let (status, created) =
        acme.post("/namespaces/db/tables", json!({"name": "t", "schema": schema(), "location": location})).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["metadata"]["location"], location.as_str());
    let metadata_location = created["metadata-location"].as_str().unwrap();

    let twice =
        acme.post("/namespaces/db/register", json!({"name": "t2", "metadata-location": metadata_location})).await;
    assert_error(&twice, 409, "AlreadyExistsException");
    let same = acme.post("/namespaces/db/tables", json!({"name": "u", "schema": schema(), "location": location})).await;
    assert_error(&same, 409, "AlreadyExistsException");

    let rename =
        json!({"source": {"namespace": ["db"], "name": "t"}, "destination": {"namespace": ["db"], "name": "t3"}});
    assert_eq!(acme.post("/tables/rename", rename).await.0, 204);
    let again =
        acme.post("/namespaces/db/tables", json!({"name": "u", "schema": schema(), "location": location})).await;
    assert_error(&again, 409, "AlreadyExistsException");

    // Dropped without purge, the files belong to nobody: re-registering them works.
    assert_eq!(acme.delete("/namespaces/db/tables/t3").await.0, 204);
    let mut registered = (0, Value::Null);
    for _ in 0..50 {
        registered =
            acme.post("/namespaces/db/register", json!({"name": "back", "metadata-location": metadata_location})).await;
        if registered.0 == 200 {
            break;
        }
        // The claim is released just after the drop answers.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(registered.0, 200, "{}", registered.1);
    assert_eq!(registered.1["metadata"]["location"], location.as_str());
}

/// A table renamed into another namespace keeps its files where they are, and its
/// claim on them: dropping its old namespace and making it again gives nobody a way
/// to create a table over those files (its credentials would reach them), while the
/// old name is free again.
#[tokio::test(flavor = "multi_thread")]
async fn a_table_renamed_away_keeps_its_files_when_its_old_namespace_goes_and_comes_back() {
    let lab = lab(Store::RootFiles).await;
    let acme = &lab.acme;
    for ns in ["a", "b"] {
        assert_eq!(acme.post("/namespaces", json!({"namespace": [ns]})).await.0, 200);
    }
    let (status, created) = acme.post("/namespaces/a/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{created}");
    let location = created["metadata"]["location"].as_str().unwrap().to_string();
    let metadata_location = created["metadata-location"].as_str().unwrap().to_string();
    let rename = json!({"source": {"namespace": ["a"], "name": "t"}, "destination": {"namespace": ["b"], "name": "t"}});
    assert_eq!(acme.post("/tables/rename", rename).await.0, 204);
    assert_eq!(acme.delete("/namespaces/a").await.0, 204);
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["a"]})).await.0, 200, "the name is free again");

    let over = json!({"name": "x", "schema": schema(), "location": location});
    assert_error(&acme.post("/namespaces/a/tables", over).await, 409, "AlreadyExistsException");
    let register = json!({"name": "y", "metadata-location": metadata_location});
    assert_error(&acme.post("/namespaces/a/register", register).await, 409, "AlreadyExistsException");
    assert_eq!(acme.get("/namespaces/b/tables/t").await.0, 200);
}

/// A namespace's location lies under its parent's and cannot change afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn namespace_locations_nest_and_stay() {
    let lab = lab(Store::RootFiles).await;
    let acme = &lab.acme;
    let wh = &lab.warehouse;
    let custom = format!("{wh}/custom%20place");
    let (status, created) =
        acme.post("/namespaces", json!({"namespace": ["db"], "properties": {"location": custom}})).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["properties"]["location"], format!("{wh}/custom place"), "stored normalized");
    let outside = json!({"namespace": ["db", "x"], "properties": {"location": format!("{wh}/elsewhere")}});
    assert_error(&acme.post("/namespaces", outside).await, 400, "BadRequestException");
    let inside = json!({"namespace": ["db", "y"], "properties": {"location": format!("{wh}/custom place/deeper")}});
    assert_eq!(acme.post("/namespaces", inside).await.0, 200);
    let (status, table) = acme.post("/namespaces/db%1Fy/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{table}");
    let location = table["metadata"]["location"].as_str().unwrap();
    assert!(location.starts_with(&format!("{wh}/custom place/deeper/t-")), "{location}");

    // A dropped namespace releases its location for the next one.
    let spot = json!({"location": format!("{wh}/spot")});
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["first"], "properties": spot})).await.0, 200);
    let second = json!({"namespace": ["second"], "properties": spot});
    assert_error(&acme.post("/namespaces", second.clone()).await, 409, "AlreadyExistsException");
    assert_eq!(acme.delete("/namespaces/first").await.0, 204);
    assert_eq!(acme.post("/namespaces", second).await.0, 200);

    let change = json!({"updates": {"location": format!("{wh}/other")}});
    assert_error(&acme.post("/namespaces/db/properties", change).await, 400, "BadRequestException");
    let remove = json!({"removals": ["location"]});
    assert_error(&acme.post("/namespaces/db/properties", remove).await, 400, "BadRequestException");
}

/// A create refused because its name is taken keeps no claim on the location it asked
/// for (the namespace that exists is elsewhere), so another namespace may go there.
#[tokio::test(flavor = "multi_thread")]
async fn a_create_of_a_taken_name_leaves_its_location_free() {
    let lab = lab(Store::RootFiles).await;
    let acme = &lab.acme;
    let other = json!({"location": format!("{}/db/other", lab.warehouse)});
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["db", "x"]})).await.0, 200);
    let again = acme.post("/namespaces", json!({"namespace": ["db", "x"], "properties": other})).await;
    assert_error(&again, 409, "AlreadyExistsException");
    let (status, created) = acme.post("/namespaces", json!({"namespace": ["db", "y"], "properties": other})).await;
    assert_eq!(status, 200, "{created}");
}

/// A backend that fails after applying a change: the server keeps the metadata file
/// the pointer now names and answers commit-state-unknown, so the table still loads.
#[tokio::test(flavor = "multi_thread")]
async fn a_commit_whose_outcome_is_unknown_keeps_its_metadata_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&format!(
        "[mount.flaky]\nbackend = \"{}\"\ncatalog_url = \"redb://{}/flaky.redb\"\nowner = \"default\"\n",
        components_dir().join("flaky.wasm").display(),
        dir.path().display()
    ));
    assert_eq!(server.post("/namespaces", json!({"namespace": ["flaky", "db"]})).await.0, 200);
    let tables = "/namespaces/flaky%1Fdb/tables";
    assert_eq!(server.post(tables, json!({"name": "t", "schema": schema()})).await.0, 200);

    let body = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let got = server.post(&format!("{tables}/t"), body).await;
    assert_error(&got, 500, "CommitStateUnknownException");
    let (status, loaded) = server.get(&format!("{tables}/t")).await;
    assert_eq!(status, 200, "{loaded}");
    assert_eq!(loaded["metadata"]["properties"]["k"], "v", "the commit applied");
    assert_file_exists(loaded["metadata-location"].as_str().unwrap());

    let got = server.post(tables, json!({"name": "unknown-1", "schema": schema()})).await;
    assert_error(&got, 500, "CommitStateUnknownException");
    let (status, loaded) = server.get(&format!("{tables}/unknown-1")).await;
    assert_eq!(status, 200, "{loaded}");
    assert_file_exists(loaded["metadata-location"].as_str().unwrap());
}

#[track_caller]
fn assert_file_exists(location: &str) {
    let path = location.strip_prefix("file://").expect("a file warehouse");
    assert!(std::path::Path::new(path).exists(), "{location} was deleted although the pointer names it");
}

/// A catalog from before the location index: its namespaces and tables are claimed
/// when the server starts, so nothing new can be placed over them.
#[tokio::test(flavor = "multi_thread")]
async fn locations_from_before_the_index_are_claimed_at_start() {
    let lab = lab(Store::RootFiles).await;
    assert_eq!(lab.acme.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    let (status, table) =
        lab.acme.post("/namespaces/sales/tables", json!({"name": "orders", "schema": schema()})).await;
    assert_eq!(status, 200, "{table}");
    let table_location = table["metadata"]["location"].as_str().unwrap().to_string();

    // Erase the index, as a catalog written before it existed would be.
    let data = lab.server.stop();
    forget_location_index(&data.path().join("data/catalog.redb")).await;
    let server = Server::start_in(data, &lab.config);
    assert!(server.output().contains("location index built: 2 existing locations claimed"), "{}", server.output());
    let evil = server.login("evil", "evil-secret");
    for location in [format!("{}/sales", lab.warehouse), table_location] {
        let got = evil.post("/namespaces", json!({"namespace": ["evil"], "properties": {"location": location}})).await;
        assert_error(&got, 409, "AlreadyExistsException");
    }
}

/// Deletes every key of the location index from a stopped server's host key space.
async fn forget_location_index(file: &std::path::Path) {
    use rustberg::storage::kv::{prefix_end, KvStore, RedbStore, Write};
    let host = KvStore::Redb(RedbStore::open(file).unwrap().space("rustberg:host").unwrap());
    let mut writes = vec![Write { key: b"location-index/backfilled".to_vec(), value: None }];
    for prefix in [&b"loc/"[..], b"own/"] {
        for entry in host.scan(prefix, prefix_end(prefix).as_deref(), 100_000).await.unwrap() {
            writes.push(Write { key: entry.key, value: None });
        }
    }
    assert!(writes.len() > 1, "the index held claims");
    host.commit(&[], &writes).await.unwrap();
}
