//! Read policies through the management API: saved only when they name columns the
//! table has, inherited from a namespace, served as `read-restrictions` to the callers
//! they restrict and to nobody else, kept across a rename, failing closed when the
//! schema drops a policy's column, refusing every route to raw files, and named by the
//! audit log. (The S3 side, with per-file credentials, is `storage::a_restricted_…`.)

use crate::support;

use reqwest::Method as M;
use serde_json::{json, Value};
use support::{assert_error, Server};

fn audit_lines(file: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn policies_restrict_their_subjects_and_fail_closed() {
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("audit.jsonl");
    let mut toml = format!("[audit]\nfile = \"{}\"\n", file.display());
    for (name, role) in [("alice", "writer"), ("rita", "reader")] {
        let hash = support::hash_secret(&format!("{name}-secret"));
        toml += &format!("[auth.principals.{name}]\ntenant = \"acme\"\nrole = \"{role}\"\nsecret_hash = \"{hash}\"\n");
    }
    let s = Server::start(&toml);
    let [alice, rita] = ["alice", "rita"].map(|n| s.login(n, &format!("{n}-secret")));
    assert_eq!(alice.post("/namespaces", json!({"namespace": ["shop"]})).await.0, 200);
    let create = json!({"name": "orders", "schema": support::schema()});
    assert_eq!(alice.post("/namespaces/shop/tables", create).await.0, 200);
    let table = "/namespaces/shop/tables/orders";

    // Refused: a column the table lacks, an action its type does not take, a writer.
    let policy = |body: Value| async { s.send(M::POST, "/management/v1/policies", Some(body)).await };
    let missing = json!({"name": "p", "namespace": ["shop"], "table": "orders", "principal": "rita",
        "row-filter": {"type": "eq", "term": "country", "value": "de"}});
    let refused = policy(missing).await;
    assert_error(&refused, 400, "BadRequestException");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("no column named \"country\""), "{}", refused.1);
    let misfit = json!({"name": "p", "namespace": ["shop"], "table": "orders", "role": "reader",
        "masks": [{"column": "id", "action": "show-first-4"}]});
    assert_error(&policy(misfit).await, 400, "BadRequestException");
    let by_writer = json!({"name": "p", "namespace": ["shop"], "role": "reader", "masks": []});
    assert_eq!(
        alice.send(M::POST, "/management/v1/policies", Some(by_writer)).await.0,
        403,
        "a writer does not manage"
    );

    // One on the table for rita, one on the namespace for every reader.
    let on_table = json!({"name": "big orders only", "namespace": ["shop"], "table": "orders", "principal": "rita",
        "row-filter": {"type": "gt", "term": "id", "value": 100}});
    let (status, on_table) = policy(on_table).await;
    assert_eq!(status, 201, "{on_table}");
    let on_ns = json!({"name": "no categories", "namespace": ["shop"], "role": "reader",
        "masks": [{"column": "category", "action": "replace-with-null"}]});
    let (status, on_ns) = policy(on_ns).await;
    assert_eq!(status, 201, "{on_ns}");

    let (status, loaded) = rita.get(table).await;
    assert_eq!(status, 200, "{loaded}");
    assert_eq!(
        loaded["read-restrictions"],
        json!({
            "required-column-projections": [{"field-id": 2, "action": "replace-with-null"}],
            "required-row-filter": {"type": "gt", "term": {"type": "reference", "field-id": 1}, "value": 100}
        })
    );
    let (_, unrestricted) = alice.get(table).await;
    assert!(unrestricted.get("read-restrictions").is_none(), "{unrestricted}");
    // The tag differs: rita's cached answer is not alice's, nor the reverse.
    let tag = |api: &support::Api| {
        let api = api.clone();
        async move {
            let r = api.client.get(api.url(table)).send().await.unwrap();
            r.headers()["etag"].to_str().unwrap().to_string()
        }
    };
    assert_ne!(tag(&rita).await, tag(&alice).await);

    // No route to the raw files: loadCredentials and the signer refuse, naming the policies.
    let (status, error) = rita.get(&format!("{table}/credentials")).await;
    assert_eq!(status, 403, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains(on_table["id"].as_str().unwrap()), "{error}");
    let sign = json!({"region": "us-east-1", "uri": "http://127.0.0.1:1/b/x.parquet", "method": "GET", "headers": {}});
    assert_eq!(rita.post(&format!("{table}/sign"), sign).await.0, 403);

    // The audit log names the policies behind the restricted answer and the refusals.
    let lines = audit_lines(&file);
    let restricted: Vec<&Value> =
        lines.iter().filter(|l| l["action"] == "restrict" && l["decision"] == "allowed").collect();
    assert!(!restricted.is_empty(), "{lines:?}");
    let ids: std::collections::BTreeSet<&str> =
        [&on_table["id"], &on_ns["id"]].iter().map(|v| v.as_str().unwrap()).collect();
    let named: std::collections::BTreeSet<&str> =
        restricted[0]["restricted_by"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(named, ids);
    let refusals: Vec<&Value> =
        lines.iter().filter(|l| l["action"] == "restrict" && l["decision"] == "denied").collect();
    assert!(refusals.iter().any(|l| l["route"].as_str().unwrap().ends_with("/sign")), "{refusals:?}");
    assert!(refusals.iter().any(|l| l["route"].as_str().unwrap().ends_with("/credentials")), "{refusals:?}");

    // A rename keeps the table's policy.
    let rename = json!({"source": {"namespace": ["shop"], "name": "orders"}, "destination": {"namespace": ["shop"], "name": "sales"}});
    assert_eq!(alice.post("/tables/rename", rename).await.0, 204);
    let (_, moved) = rita.get("/namespaces/shop/tables/sales").await;
    assert_eq!(moved["read-restrictions"]["required-row-filter"]["value"], 100, "{moved}");

    // The schema drops `id`, which the table policy's filter names: nothing is readable.
    let (_, current) = alice.get("/namespaces/shop/tables/sales").await;
    let narrower = json!({"type": "struct", "schema-id": 1, "fields": [
        {"id": 2, "name": "category", "type": "string", "required": false}]});
    let commit = json!({"requirements": [{"type": "assert-current-schema-id", "current-schema-id": current["metadata"]["current-schema-id"]}],
        "updates": [{"action": "add-schema", "schema": narrower}, {"action": "set-current-schema", "schema-id": -1}]});
    let (status, body) = alice.post("/namespaces/shop/tables/sales", commit).await;
    assert_eq!(status, 200, "{body}");
    let (_, closed) = rita.get("/namespaces/shop/tables/sales").await;
    assert_eq!(closed["read-restrictions"]["required-row-filter"], json!(false), "{closed}");
    let (status, plan) = rita.post("/namespaces/shop/tables/sales/plan", json!({})).await;
    assert_eq!((status, &plan["file-scan-tasks"]), (200, &json!([])), "{plan}");

    // Deleting a policy lifts it; each change is listed for whoever manages it.
    let (_, listed) = s.send(M::GET, "/management/v1/policies", None).await;
    assert_eq!(listed["policies"].as_array().unwrap().len(), 2, "{listed}");
    let (_, mine) = rita.send(M::GET, "/management/v1/policies", None).await;
    assert_eq!(mine["policies"].as_array().unwrap().len(), 2, "a restricted caller sees what restricts it");
    for p in [&on_table, &on_ns] {
        let path = format!("/management/v1/policies/{}", p["id"].as_str().unwrap());
        assert_eq!(s.send(M::DELETE, &path, None).await.0, 204);
    }
    let (_, free) = rita.get("/namespaces/shop/tables/sales").await;
    assert!(free.get("read-restrictions").is_none(), "{free}");
}

/// `[policy.<name>]` in the configuration file: applied like one made through the API,
/// listed as `config:<name>`, not deletable through the API, and a malformed one refuses
/// the start, naming it.
#[tokio::test]
async fn configured_policies_apply_and_stay_in_the_file() {
    let hash = support::hash_secret("rita-secret");
    let rita_toml = format!("[auth.principals.rita]\ntenant = \"acme\"\nrole = \"reader\"\nsecret_hash = \"{hash}\"\n");
    let policy = "[policy.no_categories]\nnamespace = [\"shop\"]\nprincipal = \"rita\"\nrow_filter = '{\"type\": \"lt\", \"term\": \"id\", \"value\": 10}'\nmasks = [{ column = \"category\", action = \"mask-to-fixed-value\", value = \"?\" }]\n";
    let s = Server::start(&format!("{rita_toml}{policy}"));
    let rita = s.login("rita", "rita-secret");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["shop"]})).await.0, 200);
    let grant = json!({"namespace": ["shop"], "privilege": "read", "tenant": "acme"});
    s.grant(grant).await;
    assert_eq!(s.post("/namespaces/shop/tables", json!({"name": "orders", "schema": support::schema()})).await.0, 200);
    let (status, loaded) = rita.get("/namespaces/shop/tables/orders").await;
    assert_eq!(status, 200, "{loaded}");
    assert_eq!(
        loaded["read-restrictions"]["required-column-projections"],
        json!([{"field-id": 2, "action": "mask-to-fixed-value", "value": "?"}])
    );
    assert_eq!(loaded["read-restrictions"]["required-row-filter"]["value"], 10);
    let (_, listed) = s.send(M::GET, "/management/v1/policies", None).await;
    assert_eq!(listed["policies"][0]["id"], "config:no_categories", "{listed}");
    let deleted = s.send(M::DELETE, "/management/v1/policies/config:no_categories", None).await;
    assert_error(&deleted, 409, "ConflictException");

    let bad = policy.replace("principal = \"rita\"", "role = \"boss\"");
    let refused = Server::try_start(&format!("{rita_toml}{bad}")).err().expect("a bad policy refuses the start");
    assert!(refused.contains("policy.no_categories") && refused.contains("boss"), "{refused}");
    let bad_action = policy.replace("mask-to-fixed-value", "scramble");
    let refused =
        Server::try_start(&format!("{rita_toml}{bad_action}")).err().expect("an unknown action refuses the start");
    assert!(refused.contains("policy.no_categories") && refused.contains("scramble"), "{refused}");
}

/// A real client restricted by a policy: PyIceberg 0.12, planning on the server, reads
/// the rows of the files the policy's filter matches, and no other.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_planning_on_the_server_reads_only_what_its_policy_lets_it() {
    let mut toml = String::new();
    for (name, role) in [("writer", "writer"), ("reader", "reader")] {
        let hash = support::hash_secret(&format!("{name}-secret"));
        toml += &format!("[auth.principals.{name}]\ntenant = \"gov\"\nrole = \"{role}\"\nsecret_hash = \"{hash}\"\n");
    }
    let s = Server::start(&toml);
    let writer = s.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["gov"]})).await.0, 200);
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true},
        {"id": 2, "name": "region", "type": "string", "required": false}]});
    assert_eq!(writer.post("/namespaces/gov/tables", json!({"name": "people", "schema": schema})).await.0, 200);
    let policy = json!({"name": "eu", "namespace": ["gov"], "table": "people", "principal": "reader",
        "row-filter": {"type": "eq", "term": "region", "value": "eu"}});
    assert_eq!(s.send(M::POST, "/management/v1/policies", Some(policy)).await.0, 201);
    let base = s.base.clone();
    tokio::task::spawn_blocking(move || {
        let env = [
            ("RUSTBERG_URL", base.as_str()),
            ("WRITER_CREDENTIAL", "writer:writer-secret"),
            ("READER_CREDENTIAL", "reader:reader-secret"),
        ];
        support::python::run_pytest("test_read_policies_planned.py", &env);
    })
    .await
    .unwrap();
}

/// A writer a namespace's read policy restricts cannot rename a table out of that
/// namespace (and so out from under the policy); an unrestricted one can.
#[tokio::test]
async fn a_restricted_writer_cannot_move_a_table_out_from_under_its_policy() {
    let mut toml = String::new();
    for name in ["wendy", "walt"] {
        let hash = support::hash_secret(&format!("{name}-secret"));
        toml += &format!("[auth.principals.{name}]\ntenant = \"acme\"\nrole = \"writer\"\nsecret_hash = \"{hash}\"\n");
    }
    toml += "[policy.wendy_eu]\nnamespace = [\"shop\"]\nprincipal = \"wendy\"\nrow_filter = '{\"type\": \"eq\", \"term\": \"category\", \"value\": \"eu\"}'\n";
    let s = Server::start(&toml);
    let [wendy, walt] = ["wendy", "walt"].map(|n| s.login(n, &format!("{n}-secret")));
    for ns in ["shop", "open"] {
        assert_eq!(walt.post("/namespaces", json!({"namespace": [ns]})).await.0, 200);
    }
    assert_eq!(walt.post("/namespaces/shop/tables", json!({"name": "t", "schema": support::schema()})).await.0, 200);
    let rename =
        json!({"source": {"namespace": ["shop"], "name": "t"}, "destination": {"namespace": ["open"], "name": "t"}});
    let (status, error) = wendy.post("/tables/rename", rename.clone()).await;
    assert_eq!(status, 403, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("config:wendy_eu"), "{error}");
    let (_, still) = wendy.get("/namespaces/shop/tables/t").await;
    assert!(still["read-restrictions"].is_object(), "{still}");
    assert_eq!(walt.post("/tables/rename", rename).await.0, 204, "an unrestricted writer renames");
}
