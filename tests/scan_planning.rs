//! Server-side scan planning: equal to PyIceberg's own planning, kept under a
//! read-only native mount, refused (501, naming the mount) under a rest mount, and
//! plan ids and plan tasks that only this server's own tokens open.

use crate::support;

use serde_json::{json, Value};
use support::python::pytest;
use support::{assert_error, schema, Server};

const PLAN: &str = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan";

#[test]
fn server_plans_equal_pyiceberg_plan_files() {
    let server = Server::start("");
    pytest("test_scan_planning.py", &server);
}

async fn advertised(s: &Server) -> Vec<String> {
    let response = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap();
    let config: Value = response.json().await.unwrap();
    config["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn planning_under_mounts() {
    // A remote catalog with one table, mounted as `partner`.
    let remote = Server::start("");
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    assert_eq!(remote.post("/namespaces/sales/tables", json!({"name": "orders", "schema": schema()})).await.0, 200);

    let dir = tempfile::tempdir().unwrap();
    let archive = format!(
        "[mount.archive]\nbackend = \"native\"\ncatalog_url = \"redb://{}/archive.redb\"\nowner = \"default\"\n",
        dir.path().display()
    );
    let s = Server::start(&archive);
    assert!(advertised(&s).await.contains(&PLAN.to_string()), "every mount can plan");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["archive", "old"]})).await.0, 200);
    assert_eq!(s.post("/namespaces/archive%1Fold/tables", json!({"name": "t", "schema": schema()})).await.0, 200);

    // The archive turns read-only and the partner catalog is mounted beside it.
    let token = remote.admin_token();
    let toml = format!(
        "{archive}read_only = true\n[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\ntoken_env = \"PARTNER_TOKEN\"\n",
        remote.base
    );
    let s = s.restart_with_env(&toml, &[("PARTNER_TOKEN", &token)]).unwrap_or_else(|out| panic!("{out}"));

    // A read-only native mount still plans (a table without snapshots: an empty plan).
    let (status, plan) = s.post("/namespaces/archive%1Fold/tables/t/plan", json!({})).await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["status"], "completed");
    assert_eq!(plan["file-scan-tasks"], json!([]));

    // Under the rest mount: 501 naming the mount; /v1/config promises no planning.
    let refused = s.post("/namespaces/partner%1Fsales/tables/orders/plan", json!({})).await;
    assert_error(&refused, 501, "UnsupportedOperationException");
    let message = refused.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("partner"), "{message}");
    let refused = s.get("/namespaces/partner%1Fsales/tables/orders/credentials").await;
    assert_error(&refused, 501, "UnsupportedOperationException");
    assert!(!advertised(&s).await.iter().any(|e| e.ends_with("/plan") || e.ends_with("/tasks")));
    // The remote's table itself still loads through the mount.
    assert_eq!(s.get("/namespaces/partner%1Fsales/tables/orders").await.0, 200);
}

#[tokio::test]
async fn plan_ids_and_plan_tasks_are_this_servers_own() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for name in ["t", "u"] {
        assert_eq!(s.post("/namespaces/db/tables", json!({"name": name, "schema": schema()})).await.0, 200);
    }
    let (status, plan) = s.post("/namespaces/db/tables/t/plan", json!({})).await;
    assert_eq!(status, 200, "{plan}");
    let id = plan["plan-id"].as_str().unwrap();
    let quoted: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();

    let (status, fetched) = s.get(&format!("/namespaces/db/tables/t/plan/{quoted}")).await;
    assert_eq!((status, &fetched["status"]), (200, &json!("completed")), "{fetched}");
    assert_eq!(s.delete(&format!("/namespaces/db/tables/t/plan/{quoted}")).await.0, 204);
    // Another table's plan id, or a made-up one, names no plan.
    assert_error(&s.get(&format!("/namespaces/db/tables/u/plan/{quoted}")).await, 404, "NoSuchPlanIdException");
    assert_error(&s.get("/namespaces/db/tables/t/plan/made-up").await, 404, "NoSuchPlanIdException");
    assert_error(&s.delete("/namespaces/db/tables/t/plan/made-up").await, 404, "NoSuchPlanIdException");
    let forged = s.post("/namespaces/db/tables/t/tasks", json!({"plan-task": id})).await;
    assert_error(&forged, 404, "NoSuchPlanTaskException");

    // Bad requests say what is wrong.
    for (body, says) in [
        (json!({"filter": {"type": "eq", "term": "nope", "value": 1}}), "no column"),
        (json!({"filter": {"type": "eq", "term": "id", "value": "x"}}), "not a long"),
        (json!({"snapshot-id": 42}), "no snapshot 42"),
        (json!({"select": ["nope"]}), "nope"),
    ] {
        let got = s.post("/namespaces/db/tables/t/plan", body.clone()).await;
        assert_error(&got, 400, "BadRequestException");
        let message = got.1["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(says), "{body}: {message}");
    }
    for (body, says) in [
        (json!({"start-snapshot-id": 1, "end-snapshot-id": 2}), "no snapshot"),
        (json!({"start-snapshot-id": 1}), "end-snapshot-id is required"),
        (json!({"snapshot-id": 1, "end-snapshot-id": 2}), "exclude each other"),
    ] {
        let got = s.post("/namespaces/db/tables/t/plan", body.clone()).await;
        assert_error(&got, 400, "BadRequestException");
        assert!(got.1["error"]["message"].as_str().unwrap().contains(says), "{body}: {}", got.1);
    }
    assert_error(&s.post("/namespaces/db/tables/nope/plan", json!({})).await, 404, "NoSuchTableException");
}
