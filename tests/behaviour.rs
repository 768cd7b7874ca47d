//! One behaviour suite over every kind of mount, each a case: the root catalog (redb),
//! a native mount on redb, a native mount on Postgres, a rest mount of a second
//! Rustberg, glue and s3tables mounts on moto, and an hms mount of a real Hive Metastore.
//!
//! What the suite asks of a mount follows from what `/v1/config?warehouse=<mount>`
//! advertises for it: an advertised endpoint must work, one left out must answer 501
//! naming the mount. A read-only mount (rest) is written through the catalog it
//! mounts and read through the mount: what the remote holds, the mount shows.

use crate::support;

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};
use support::hive::{hms_mount, Metastore};
use support::moto::{aws_mount, s3_storage, sts_vending, Moto, KEYS, VEND_ROLE};
use support::{assert_error, postgres_database, redb_mount, schema, Api, Server};

/// Where the suite writes and where it reads: the same catalog, unless the mount is
/// read-only and its remote is written instead.
struct Case<'a> {
    /// The mount as `/v1/config?warehouse=` names it (`root` for the root catalog).
    name: &'a str,
    /// Reads (and writes, for a writable mount) go here, under `base`.
    reader: &'a Api,
    base: Vec<String>,
    /// The catalog a read-only mount shows, and where it is in it.
    remote: Option<(&'a Api, Vec<String>)>,
    /// Whether namespaces nest (Glue, S3 Tables and the Hive Metastore have one level).
    nests: bool,
}

impl Case<'_> {
    fn writer(&self) -> (&Api, &[String]) {
        match &self.remote {
            Some((api, base)) => (api, base),
            None => (self.reader, &self.base),
        }
    }

    /// `levels` under the writer's base (`w`) or the reader's, as a path segment.
    fn path(base: &[String], levels: &[&str]) -> String {
        base.iter().map(String::as_str).chain(levels.iter().copied()).collect::<Vec<_>>().join("%1F")
    }

    fn names(base: &[String], levels: &[&str]) -> Vec<String> {
        base.iter().cloned().chain(levels.iter().map(|l| l.to_string())).collect()
    }

    /// The endpoints the server advertises for this mount.
    async fn advertised(&self) -> BTreeSet<String> {
        let (status, config) =
            self.reader.send(Method::GET, &format!("/v1/config?warehouse={}", self.name), None).await;
        assert_eq!(status, 200, "{config}");
        config["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect()
    }
}

/// Asserts a refusal of what a mount does not serve: 501 naming the mount.
fn assert_unsupported(got: &(u16, Value), mount: &str) {
    assert_error(got, 501, "UnsupportedOperationException");
    let message = got.1["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(mount), "a refusal names the mount {mount}: {message}");
}

async fn behaviour_suite(case: Case<'_>) {
    let served = case.advertised().await;
    let serves = |endpoint: &str| served.contains(endpoint);
    let (w, wbase) = case.writer();
    let r = case.reader;
    let rbase = &case.base;
    let at = |levels: &[&str]| Case::path(rbase, levels);
    let wat = |levels: &[&str]| Case::path(wbase, levels);

    // Namespaces.
    let sales = Case::names(rbase, &["sales"]);
    let has_properties = serves("POST /v1/{prefix}/namespaces/{namespace}/properties") || case.remote.is_some();
    let properties = if has_properties { json!({"a": "1"}) } else { json!({}) };
    let created =
        w.post("/namespaces", json!({"namespace": Case::names(wbase, &["sales"]), "properties": properties})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let again = w.post("/namespaces", json!({"namespace": Case::names(wbase, &["sales"])})).await;
    assert_error(&again, 409, "AlreadyExistsException");
    let loaded = r.get(&format!("/namespaces/{}", at(&["sales"]))).await;
    assert_eq!(loaded.0, 200, "{}", loaded.1);
    assert_eq!(loaded.1["namespace"], json!(sales));
    if has_properties {
        assert_eq!(loaded.1["properties"]["a"], "1", "{}", loaded.1);
    }
    assert_eq!(r.head(&format!("/namespaces/{}", at(&["sales"]))).await, 204);
    let listed = r.get(&format!("/namespaces?parent={}", Case::path(rbase, &[]))).await;
    assert_eq!(listed.0, 200, "{}", listed.1);
    assert!(listed.1["namespaces"].as_array().unwrap().contains(&json!(sales)), "{}", listed.1);
    let missing = r.get(&format!("/namespaces/{}", at(&["nope"]))).await;
    assert_error(&missing, 404, "NoSuchNamespaceException");
    let message = missing.1["error"]["message"].as_str().unwrap();
    assert!(message.contains(&Case::names(rbase, &["nope"]).join(".")), "errors carry the client's names: {message}");
    let removal = json!({"removals": ["a", "zz"]});
    let props = w.post(&format!("/namespaces/{}/properties", wat(&["sales"])), removal.clone()).await;
    if has_properties {
        assert_eq!(props, (200, json!({"updated": [], "removed": ["a"], "missing": ["zz"]})));
    } else {
        assert_unsupported(&props, case.name);
    }
    if case.nests {
        let eu = Case::names(wbase, &["sales", "eu"]);
        assert_eq!(w.post("/namespaces", json!({"namespace": eu})).await.0, 200);
        let children = r.get(&format!("/namespaces?parent={}", at(&["sales"]))).await.1;
        assert_eq!(children["namespaces"], json!([Case::names(rbase, &["sales", "eu"])]));
        assert_eq!(w.delete(&format!("/namespaces/{}", wat(&["sales", "eu"]))).await.0, 204);
        // Paging inside: 12 children, 5 at a time, each once.
        let mut expected = vec![];
        for i in 0..12 {
            let child = format!("c{i:02}");
            assert_eq!(
                w.post("/namespaces", json!({"namespace": Case::names(wbase, &["sales", &child])})).await.0,
                200
            );
            expected.push(Case::names(rbase, &["sales", &child]));
        }
        let (mut seen, mut token, mut sizes) = (vec![], String::new(), vec![]);
        loop {
            let page = r.get(&format!("/namespaces?parent={}&pageToken={token}&pageSize=5", at(&["sales"]))).await.1;
            let names = support::namespace_names(&page);
            sizes.push(names.len());
            seen.extend(names);
            match page["next-page-token"].as_str() {
                Some(next) => token = next.to_string(),
                None => break,
            }
        }
        assert_eq!((seen, &sizes[..2]), (expected, &[5, 5][..]));
        for i in 0..12 {
            assert_eq!(w.delete(&format!("/namespaces/{}", wat(&["sales", &format!("c{i:02}")]))).await.0, 204);
        }
    }

    // Tables: create, load, commit, a stale commit, listing.
    let wtables = format!("/namespaces/{}/tables", wat(&["sales"]));
    let rtables = format!("/namespaces/{}/tables", at(&["sales"]));
    let created = w.post(&wtables, json!({"name": "orders", "schema": schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let uuid = created.1["metadata"]["table-uuid"].clone();
    let set = |k: &str| {
        json!({"requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
               "updates": [{"action": "set-properties", "updates": {k: "v"}}]})
    };
    let committed = w.post(&format!("{wtables}/orders"), set("k1")).await;
    assert_eq!(committed.0, 200, "{}", committed.1);
    assert_ne!(committed.1["metadata-location"], created.1["metadata-location"]);
    let stale =
        json!({"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}], "updates": []});
    assert_error(&w.post(&format!("{wtables}/orders"), stale).await, 409, "CommitFailedException");
    let loaded = r.get(&format!("{rtables}/orders")).await;
    assert_eq!(loaded.0, 200, "{}", loaded.1);
    assert_eq!(loaded.1["metadata-location"], committed.1["metadata-location"], "the same table, read where it lives");
    assert_eq!(loaded.1["metadata"]["properties"]["k1"], "v");
    assert_eq!(r.head(&format!("{rtables}/orders")).await, 204);
    assert_eq!(r.head(&format!("{rtables}/nope")).await, 404);
    let listed = r.get(&rtables).await.1;
    assert_eq!(listed["identifiers"], json!([{"namespace": sales, "name": "orders"}]));
    if let Some((_, _)) = &case.remote {
        // Read-only: a write through the mount is refused, naming it.
        assert_unsupported(&r.post(&format!("{rtables}/orders"), set("k2")).await, case.name);
        assert_unsupported(&r.post(&rtables, json!({"name": "other", "schema": schema()})).await, case.name);
    }

    // Paging: 7 tables, 3 at a time, each once.
    let mut expected = vec!["orders".to_string()];
    for i in 0..6 {
        let name = format!("t{i}");
        assert_eq!(w.post(&wtables, json!({"name": name, "schema": schema()})).await.0, 200);
        expected.push(name);
    }
    let (mut seen, mut token) = (vec![], String::new());
    loop {
        let page = r.get(&format!("{rtables}?pageToken={token}&pageSize=3")).await;
        assert_eq!(page.0, 200, "{}", page.1);
        let names = page.1["identifiers"].as_array().unwrap();
        assert!(names.len() <= 3, "{}", page.1);
        seen.extend(names.iter().map(|i| i["name"].as_str().unwrap().to_string()));
        match page.1["next-page-token"].as_str() {
            Some(next) => token = next.to_string(),
            None => break,
        }
    }
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "every table once");

    // Unregistered, a table is gone and its files stay: they register again.
    let unregistered = w.post(&format!("{wtables}/t5/unregister"), json!({})).await;
    if serves("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister") || case.remote.is_some() {
        assert_eq!(unregistered.0, 200, "{}", unregistered.1);
        assert_eq!(r.head(&format!("{rtables}/t5")).await, 404);
        let again = json!({"name": "t5", "metadata-location": unregistered.1["metadata-location"]});
        let registered = w.post(&format!("/namespaces/{}/register", wat(&["sales"])), again).await;
        assert_eq!(registered.0, 200, "{}", registered.1);
        assert_eq!(r.head(&format!("{rtables}/t5")).await, 204);
    } else {
        assert_unsupported(&unregistered, case.name);
    }

    // Rename within the namespace.
    let rename = json!({"source": {"namespace": Case::names(wbase, &["sales"]), "name": "t0"},
                        "destination": {"namespace": Case::names(wbase, &["sales"]), "name": "t0_renamed"}});
    let renamed = w.send(Method::POST, "/v1/catalog/tables/rename", Some(rename)).await;
    if serves("POST /v1/{prefix}/tables/rename") || case.remote.is_some() {
        assert_eq!(renamed.0, 204, "{}", renamed.1);
        assert_eq!(r.head(&format!("{rtables}/t0")).await, 404);
        assert_eq!(r.head(&format!("{rtables}/t0_renamed")).await, 204);
    } else {
        assert_unsupported(&renamed, case.name);
    }

    // A transaction over two tables.
    let both = json!({"table-changes": [
        {"identifier": {"namespace": Case::names(wbase, &["sales"]), "name": "t1"},
         "requirements": [], "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]},
        {"identifier": {"namespace": Case::names(wbase, &["sales"]), "name": "t2"},
         "requirements": [], "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]}]});
    let transaction = w.send(Method::POST, "/v1/catalog/transactions/commit", Some(both)).await;
    if serves("POST /v1/{prefix}/transactions/commit") || case.remote.is_some() {
        assert_eq!(transaction.0, 204, "{}", transaction.1);
        for t in ["t1", "t2"] {
            assert_eq!(r.get(&format!("{rtables}/{t}")).await.1["metadata"]["properties"]["tx"], "1");
        }
    } else {
        assert_unsupported(&transaction, case.name);
    }

    // Views.
    let view = json!({"name": "v", "schema": schema(), "view-version": {
        "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {},
        "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
        "default-namespace": Case::names(wbase, &["sales"])}, "properties": {}});
    let wviews = format!("/namespaces/{}/views", wat(&["sales"]));
    let rviews = format!("/namespaces/{}/views", at(&["sales"]));
    let made = w.post(&wviews, view).await;
    if serves("POST /v1/{prefix}/namespaces/{namespace}/views") || case.remote.is_some() {
        assert_eq!(made.0, 200, "{}", made.1);
        if serves("GET /v1/{prefix}/namespaces/{namespace}/views/{view}") {
            let loaded = r.get(&format!("{rviews}/v")).await;
            assert_eq!(loaded.0, 200, "{}", loaded.1);
            assert_eq!(loaded.1["metadata-location"], made.1["metadata-location"]);
            assert_eq!(r.get(&rviews).await.1["identifiers"], json!([{"namespace": sales, "name": "v"}]));
        }
        assert_eq!(w.delete(&format!("{wviews}/v")).await.0, 204);
    } else {
        assert_unsupported(&made, case.name);
    }

    // Drops: a namespace with tables is not empty; emptied, it goes.
    assert_error(&w.delete(&format!("/namespaces/{}", wat(&["sales"]))).await, 409, "NamespaceNotEmptyException");
    for table in r.get(&rtables).await.1["identifiers"].as_array().unwrap() {
        let name = table["name"].as_str().unwrap();
        assert_eq!(w.delete(&format!("{wtables}/{name}?purgeRequested=true")).await.0, 204);
        assert_error(&r.get(&format!("{rtables}/{name}")).await, 404, "NoSuchTableException");
    }
    assert_eq!(w.delete(&format!("/namespaces/{}", wat(&["sales"]))).await.0, 204);
    assert_error(&r.get(&format!("/namespaces/{}", at(&["sales"]))).await, 404, "NoSuchNamespaceException");
}

fn names(levels: &[&str]) -> Vec<String> {
    levels.iter().map(|l| l.to_string()).collect()
}

#[tokio::test]
async fn the_root_catalog() {
    let s = Server::start("");
    behaviour_suite(Case { name: "root", reader: &s, base: vec![], remote: None, nests: true }).await;
}

#[tokio::test]
async fn a_native_mount_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&redb_mount("lake", dir.path(), "default"));
    behaviour_suite(Case { name: "lake", reader: &s, base: names(&["lake"]), remote: None, nests: true }).await;
}

#[tokio::test]
async fn a_native_mount_on_postgres() {
    let Some(pg) = postgres_database().await else { return };
    let s = Server::start(&format!("[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{pg}\"\nowner = \"default\"\n"));
    behaviour_suite(Case { name: "pg", reader: &s, base: names(&["pg"]), remote: None, nests: true }).await;
}

#[tokio::test]
async fn a_rest_mount_of_another_rustberg() {
    let remote = Server::start("");
    let s = Server::try_start_with_env(
        &format!(
            "[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\ntoken_env = \"PARTNER_TOKEN\"\n",
            remote.base
        ),
        &[("PARTNER_TOKEN", &remote.admin_token())],
    )
    .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    let remote_api: &Api = &remote;
    let case = Case {
        name: "partner",
        reader: &s,
        base: names(&["partner"]),
        remote: Some((remote_api, vec![])),
        nests: true,
    };
    behaviour_suite(case).await;
}

#[tokio::test]
async fn a_glue_mount_on_moto() {
    let moto = Moto::start("lake").await;
    let config = s3_storage(&moto.url, "testing", "testing")
        + &aws_mount("glue", "glue", &moto.url, "s3://lake/warehouse", "glue", &[("region", "us-east-1")]);
    let s = Server::try_start_with_env(&config, KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    behaviour_suite(Case { name: "glue", reader: &s, base: names(&["glue"]), remote: None, nests: false }).await;
}

#[tokio::test]
async fn an_s3tables_mount_on_moto() {
    let moto = Moto::start("lake").await;
    let arn = moto.table_bucket("lakehouse").await;
    let mount =
        aws_mount("tables", "s3tables", &moto.url, "s3://*--table-s3", "s3tables", &[("table_bucket_arn", &arn)]);
    let config = s3_storage(&moto.url, "testing", "testing") + &sts_vending(VEND_ROLE, None) + &mount;
    let s = Server::try_start_with_env(&config, KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    behaviour_suite(Case { name: "tables", reader: &s, base: names(&["tables"]), remote: None, nests: false }).await;
}

#[tokio::test]
async fn an_hms_mount_of_a_real_hive_metastore() {
    let metastore = Metastore::start();
    let s = Server::try_start(&hms_mount("hive", &metastore, "acme"))
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    behaviour_suite(Case { name: "hive", reader: &s, base: names(&["hive"]), remote: None, nests: false }).await;
}
