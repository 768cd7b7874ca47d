//! The built-in `glue` backend against moto's Glue (and S3 for the warehouse): PyIceberg
//! through Rustberg and PyIceberg's own GlueCatalog on the same tables, concurrent
//! commits, refusals, and an unreachable endpoint.

use crate::support;

use serde_json::json;
use support::moto::{aws_mount, s3_storage, Moto, KEYS};
use support::python::pytest_with;
use support::{assert_error, assert_history, race_appends, schema, Api, Server};

fn config_text(glue_url: &str, s3_url: &str) -> String {
    s3_storage(s3_url, "testing", "testing")
        + &aws_mount("lake", "glue", glue_url, "s3://lake/warehouse", "glue", &[("region", "us-east-1")])
}

fn glue_server(moto: &Moto) -> Server {
    Server::try_start_with_env(&config_text(&moto.url, &moto.url), KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"))
}

#[tokio::test]
async fn pyiceberg_and_its_own_glue_catalog_share_tables_through_a_glue_mount() {
    let moto = Moto::start("lake").await;
    let server = glue_server(&moto);
    pytest_with("test_glue.py", &server, &[("MOTO_URL", &moto.url), ("RUSTBERG_MOUNT", "lake")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_committers_on_one_glue_table_lose_nothing() {
    let moto = Moto::start("lake").await;
    let server = glue_server(&moto);
    assert_eq!(server.post("/namespaces", json!({"namespace": ["lake", "db"]})).await.0, 200);
    let (status, body) = server.post("/namespaces/lake%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{body}");

    let table = "/namespaces/lake%1Fdb/tables/t";
    let (landed, refused) = race_appends(&[Api::clone(&server)], table, 8, 4).await;
    assert!(!landed.is_empty());
    let (_, table) = server.get(table).await;
    assert_history(&table["metadata"], &landed, &refused);
}

#[tokio::test]
async fn glue_refuses_rename_and_views_and_an_unreachable_glue_is_never_an_absence() {
    let moto = Moto::start("lake").await;
    let server = glue_server(&moto);
    assert_eq!(server.post("/namespaces", json!({"namespace": ["lake", "db"]})).await.0, 200);
    assert_eq!(server.post("/namespaces/lake%1Fdb/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let renamed = server
        .post(
            "/tables/rename",
            json!({"source": {"namespace": ["lake", "db"], "name": "t"},
                   "destination": {"namespace": ["lake", "db"], "name": "u"}}),
        )
        .await;
    assert_eq!(renamed.0, 501, "{}", renamed.1);
    assert!(renamed.1["error"]["message"].as_str().unwrap().contains("lake"), "names the mount: {}", renamed.1);

    // Glue out of reach: every answer is an error naming the mount, HEAD included.
    let dead = Server::try_start_with_env(&config_text("http://127.0.0.1:9", &moto.url), KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    for path in ["/namespaces/lake%1Fdb", "/namespaces/lake%1Fdb/tables/t", "/namespaces?parent=lake"] {
        let (status, body) = dead.get(path).await;
        assert_error(&(status, body.clone()), 503, "ServiceUnavailableException");
        assert!(body["error"]["message"].as_str().unwrap().contains("mount `lake`"), "{path}: {body}");
    }
    let head = dead.client.head(dead.url("/namespaces/lake%1Fdb/tables/t")).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 503);
}

/// The conformance suite against moto's Glue: the component's own compare-and-swap
/// check holds and everything Glue supports passes. The 8-way race is the exception:
/// moto does not check `VersionId` (real Glue does), so racing commits can all land,
/// and the suite says so when they do.
#[tokio::test]
async fn the_conformance_suite_against_moto_fails_only_where_moto_ignores_version_ids() {
    let moto = Moto::start("lake").await;
    let report = support::conformance_report("glue", &config_text(&moto.url, &moto.url), "lake", KEYS);
    for case in [
        "description",
        "not found versus unavailable",
        "namespaces",
        "namespace properties",
        "tables",
        "commit is compare-and-swap",
        "drops",
        "paging over 1,000 tables",
        "paging over 1,000 namespaces",
    ] {
        assert!(report.contains(&format!("pass  {case} ")), "{case} passes:\n{report}");
    }
    assert!(report.contains("skip  nested namespaces (the backend has one level of namespaces)"), "{report}");
    let race = report.lines().find(|l| l.contains("8-way contention")).unwrap();
    assert!(
        race.contains("pass")
            || race.contains("commits from the same base landed; exactly one must")
            || race.contains("some were lost"),
        "{race}"
    );
    assert!(report.contains(", 5 skipped"), "{report}");
}
