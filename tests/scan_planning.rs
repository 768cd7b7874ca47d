//! Server-side scan planning: equal to PyIceberg's own planning, kept under a
//! read-only native mount, refused (501, naming the mount) under a rest mount, plan
//! ids and plan tasks that only this server's own tokens open, and plans that outrun
//! the budget: submitted, polled, failed, cancelled, expired, and forgotten by a restart.

use crate::support;

use serde_json::{json, Value};
use support::python::pytest;
use support::{assert_error, child_of_main_request, schema, Server};

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

/// Every plan outruns a budget of 0 ms.
const POLLED: &str = "[planning]\nbudget_ms = 0\nplan_ttl_secs = 2\n";

#[test]
fn submitted_plans_are_polled_for_by_real_clients() {
    let server = Server::start("[planning]\nbudget_ms = 0\n");
    pytest("test_async_planning.py", &server);
}

/// Polls the plan at `path` until it is no longer submitted.
async fn poll(s: &Server, path: &str) -> (u16, Value) {
    for _ in 0..200 {
        let got = s.get(path).await;
        if got.0 != 200 || got.1["status"] != "submitted" {
            return got;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{path} stayed submitted");
}

#[tokio::test]
async fn plans_that_outrun_the_budget_are_held_until_fetched_cancelled_or_expired() {
    let s = Server::start(POLLED);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let (status, created) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{created}");
    // A snapshot whose manifest list (inside the table) was never written: planning it
    // reads storage, and fails.
    let location = created["metadata"]["location"].as_str().unwrap();
    let commit = child_of_main_request(None, 1, 1, &format!("{location}/metadata/snap-1-missing.avro"));
    assert_eq!(s.post("/namespaces/db/tables/t", commit).await.0, 200);
    assert_eq!(s.post("/namespaces/db/tables", json!({"name": "u", "schema": schema()})).await.0, 200);

    // What the client got wrong is answered at once, whatever the budget.
    assert_error(
        &s.post("/namespaces/db/tables/t/plan", json!({"select": ["nope"]})).await,
        400,
        "BadRequestException",
    );

    let submit = || async {
        let (status, submitted) = s.post("/namespaces/db/tables/t/plan", json!({})).await;
        assert_eq!((status, &submitted["status"]), (200, &json!("submitted")), "{submitted}");
        let id = submitted["plan-id"].as_str().unwrap().to_string();
        format!("/namespaces/db/tables/t/plan/{id}")
    };

    // A plan that fails says why, in Iceberg's error model.
    let failing = submit().await;
    let (status, failed) = poll(&s, &failing).await;
    assert_eq!((status, &failed["status"]), (200, &json!("failed")), "{failed}");
    assert_eq!(failed["error"]["code"], 500, "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("snap-1-missing"), "{failed}");
    // The id is good for its own table only.
    let elsewhere = failing.replace("/tables/t/", "/tables/u/");
    assert_error(&s.get(&elsewhere).await, 404, "NoSuchPlanIdException");
    assert_error(&s.delete(&elsewhere).await, 404, "NoSuchPlanIdException");

    // Cancelled: said so until it expires.
    let cancelled = submit().await;
    assert_eq!(s.delete(&cancelled).await.0, 204);
    assert_eq!(s.get(&cancelled).await, (200, json!({"status": "cancelled"})));

    // Nobody asks for longer than its time to live (2 s): dropped, 404.
    let forgotten = submit().await;
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    for path in [&forgotten, &cancelled, &failing] {
        assert_error(&s.get(path).await, 404, "NoSuchPlanIdException");
    }

    // Plans survive no restart: the client is told the id is unknown, and plans again.
    let held = submit().await;
    let metrics = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("rustberg_scan_plans_total{answer=\"submitted\"} 4"), "{metrics}");
    assert!(metrics.contains("rustberg_scan_plans_held 1"), "{metrics}");
    assert_eq!(s.get(&held).await.0, 200);
    let s = s.restart(POLLED).unwrap_or_else(|out| panic!("{out}"));
    assert_error(&s.get(&held).await, 404, "NoSuchPlanIdException");
    assert_eq!(s.post("/namespaces/db/tables/t/plan", json!({})).await.0, 200);
}
