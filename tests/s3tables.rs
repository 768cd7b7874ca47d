//! The built-in `s3tables` backend against moto's S3 Tables (and S3 for the tables'
//! buckets): PyIceberg through Rustberg, concurrent commits, the locations S3 Tables
//! assigns (written there, vended for, never chosen by a client), refusals, and an
//! unreachable endpoint.

use crate::support;

use serde_json::{json, Value};
use support::moto::{aws_mount, s3_storage, sts_vending, Moto, KEYS, VEND_ROLE};
use support::python::pytest_with;
use support::{assert_error, assert_history, race_appends, schema, Api, Server};

fn config_text(s3tables_url: &str, moto: &str, arn: &str) -> String {
    let mount =
        aws_mount("tables", "s3tables", s3tables_url, "s3://*--table-s3", "s3tables", &[("table_bucket_arn", arn)]);
    s3_storage(moto, "testing", "testing") + &sts_vending(VEND_ROLE, None) + &mount
}

/// moto with a table bucket, and a server mounting it as `tables`.
async fn s3tables_server() -> (Moto, String, Server) {
    let moto = Moto::start("lake").await;
    let arn = moto.table_bucket("lakehouse").await;
    let server = Server::try_start_with_env(&config_text(&moto.url, &moto.url, &arn), KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    (moto, arn, server)
}

const TABLE: &str = "/namespaces/tables%1Fdb/tables/t";

async fn table_in_db(server: &Server) -> Value {
    assert_eq!(server.post("/namespaces", json!({"namespace": ["tables", "db"]})).await.0, 200);
    let (status, body) = server.post("/namespaces/tables%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn pyiceberg_creates_appends_and_scans_through_an_s3tables_mount() {
    let (moto, arn, server) = s3tables_server().await;
    pytest_with(
        "test_s3tables.py",
        &server,
        &[("MOTO_URL", &moto.url), ("RUSTBERG_MOUNT", "tables"), ("TABLE_BUCKET_ARN", &arn)],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_committers_on_one_s3tables_table_lose_nothing() {
    let (_moto, _arn, server) = s3tables_server().await;
    table_in_db(&server).await;
    let (landed, refused) = race_appends(&[Api::clone(&server)], TABLE, 8, 4).await;
    assert!(!landed.is_empty());
    let (_, table) = server.get(TABLE).await;
    assert_history(&table["metadata"], &landed, &refused);

    // A commit from a stale base is a 409, and S3 Tables still points at the winner.
    let stale = support::append_request(&table["metadata"], 9_001);
    assert_eq!(server.post(TABLE, stale.clone()).await.0, 200);
    let (status, body) = server.post(TABLE, stale).await;
    assert_error(&(status, body), 409, "CommitFailedException");
}

/// The table's location is the bucket S3 Tables assigned: the metadata is written
/// there, credentials are vended for exactly that bucket, and a client can neither
/// choose a location nor move the table.
#[tokio::test]
async fn the_location_is_the_bucket_s3_tables_assigned_and_nobody_chooses_another() {
    let (moto, _arn, server) = s3tables_server().await;
    let created = table_in_db(&server).await;
    let location = created["metadata"]["location"].as_str().unwrap().to_string();
    let bucket = location.strip_prefix("s3://").unwrap();
    assert!(bucket.ends_with("--table-s3") && !bucket.contains('/'), "{location}");
    let file = created["metadata-location"].as_str().unwrap();
    assert!(file.starts_with(&format!("{location}/metadata/")), "{file}");
    // (A table's bucket answers signed requests only; moto checks no signature.)
    let scope = "Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";
    let written = reqwest::Client::new()
        .get(format!("{}/{}", moto.url, file.strip_prefix("s3://").unwrap()))
        .header("Authorization", format!("AWS4-HMAC-SHA256 {scope}"))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), 200, "the metadata file is in the table's bucket");

    let (status, vended) = server.get(&format!("{TABLE}/credentials")).await;
    assert_eq!(status, 200, "{vended}");
    assert_eq!(vended["storage-credentials"][0]["prefix"], location.as_str(), "{vended}");

    let chosen = json!({"name": "u", "schema": schema(), "location": "s3://lake/warehouse/u"});
    let (status, body) = server.post("/namespaces/tables%1Fdb/tables", chosen).await;
    assert_error(&(status, body.clone()), 400, "BadRequestException");
    assert!(body["error"]["message"].as_str().unwrap().contains("assigns every table its location"), "{body}");
    let (_, table) = server.get(TABLE).await;
    let moved = json!({
        "requirements": [{"type": "assert-table-uuid", "uuid": table["metadata"]["table-uuid"]}],
        "updates": [{"action": "set-location", "location": "s3://lake/warehouse/t"}]
    });
    let (status, body) = server.post(TABLE, moved).await;
    assert_error(&(status, body), 400, "BadRequestException");
    let (_, after) = server.get(TABLE).await;
    assert_eq!(after["metadata"]["location"], location.as_str(), "the table did not move");

    // What S3 Tables cannot hold is refused, naming the mount: nested namespaces,
    // staged creates, views.
    let (status, body) = server.post("/namespaces", json!({"namespace": ["tables", "db", "inner"]})).await;
    assert_error(&(status, body), 400, "BadRequestException");
    let staged = json!({"name": "s", "schema": schema(), "stage-create": true});
    let (status, body) = server.post("/namespaces/tables%1Fdb/tables", staged).await;
    assert_eq!(status, 501, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("mount `tables`"), "{body}");
    let (status, _) = server.get("/namespaces/tables%1Fdb/tables/s").await;
    assert_eq!(status, 404, "a refused staged create reserves nothing");
}

#[tokio::test]
async fn an_unreachable_s3tables_endpoint_is_never_an_absence() {
    let moto = Moto::start("lake").await;
    let arn = moto.table_bucket("lakehouse").await;
    let dead = Server::try_start_with_env(&config_text("http://127.0.0.1:9", &moto.url, &arn), KEYS)
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"));
    for path in ["/namespaces/tables%1Fdb", TABLE, "/namespaces?parent=tables"] {
        let (status, body) = dead.get(path).await;
        assert_error(&(status, body.clone()), 503, "ServiceUnavailableException");
        assert!(body["error"]["message"].as_str().unwrap().contains("mount `tables`"), "{path}: {body}");
    }
    let (status, body) = dead.post("/namespaces/tables%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_error(&(status, body), 503, "ServiceUnavailableException");
}

/// The conformance suite against moto's S3 Tables: tables are reserved first, as the
/// host does, and every case S3 Tables supports passes — but one: moto lists
/// namespaces in the order they were made, so a listing across its pages is not
/// sorted (paging itself holds: every namespace once).
#[tokio::test]
async fn the_conformance_suite_passes_against_moto() {
    let moto = Moto::start("lake").await;
    let arn = moto.table_bucket("conformance").await;
    let report = support::conformance_report("s3tables", &config_text(&moto.url, &moto.url, &arn), "tables", KEYS);
    for case in [
        "description",
        "not found versus unavailable",
        "namespaces",
        "tables",
        "commit is compare-and-swap",
        "8-way contention loses nothing",
        "drops",
        "rename tables",
        "paging over 1,000 tables",
    ] {
        assert!(report.contains(&format!("pass  {case} ")), "{case} passes:\n{report}");
    }
    let namespaces = report.lines().find(|l| l.contains("paging over 1,000 namespaces")).unwrap();
    assert!(namespaces.contains("pass") || namespaces.contains("not listed in order"), "{namespaces}");
    assert!(report.contains(", 5 skipped"), "{report}");
}

/// A backend whose store "assigns" what it may not — a location in the root
/// catalog's warehouse, a whole ordinary bucket — gets a 502 naming its mount: the
/// host writes nothing there, vends nothing for it, and releases the reservation.
#[tokio::test]
async fn a_location_assigned_outside_the_mounts_pattern_is_refused_before_anything_is_written() {
    let moto = Moto::start("lake").await;
    for assigned in ["s3://lake/warehouse/db/victim", "s3://lake", "s3://lake--table-s3x/t"] {
        let config = format!(
            r#"
[storage]
warehouse_location = "s3://lake/warehouse"
{storage}{vending}
[mount.rogue]
backend = "{wasm}"
grants = ["http"]
catalog_url = "http://127.0.0.1:9"
warehouse_location = "s3://*--table-s3"
owner = "default"
[mount.rogue.config]
assign = "{assigned}"
"#,
            storage = s3_storage(&moto.url, "testing", "testing"),
            vending = sts_vending(VEND_ROLE, None),
            wasm = support::components_dir().join("rogue-placer.wasm").display(),
        );
        let server = Server::start(&config);
        assert_eq!(server.post("/namespaces", json!({"namespace": ["rogue", "db"]})).await.0, 200);
        let request = server
            .client
            .post(server.url("/namespaces/rogue%1Fdb/tables"))
            .header("X-Iceberg-Access-Delegation", "vended-credentials")
            .json(&json!({"name": "t", "schema": schema()}))
            .send()
            .await
            .unwrap();
        let (status, body): (u16, Value) = (request.status().as_u16(), request.json().await.unwrap());
        assert_error(&(status, body.clone()), 502, "BadGatewayException");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("mount `rogue`") && message.contains(assigned), "{assigned}: {body}");
        assert_eq!(moto.keys("lake", "").await, Vec::<String>::new(), "{assigned}: nothing was written");
        let log = server.output_once_it_says("released the reservation of t");
        assert!(!log.contains("create-table reached"), "{log}");
    }
}
