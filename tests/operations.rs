//! Operating the server: request ids through responses and logs, structured logs,
//! graceful shutdown, and a health page that tells outsiders only the status.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{components_dir, hash_secret, redb_mount, Api, Server};

fn misbehaving(extra: &str) -> Server {
    Server::start(&format!(
        "[storage]\nbackend = \"{}\"\n[plugins]\ncall_timeout_ms = 1500\n{extra}",
        components_dir().join("misbehave.wasm").display()
    ))
}

/// Sends createNamespace `name` with `X-Request-Id: id` (when given); the status and
/// the id the response carries.
async fn create(s: &Server, name: &str, id: Option<&str>) -> (u16, String) {
    let mut request = s.client.post(s.url("/namespaces")).json(&json!({"namespace": [name]}));
    if let Some(id) = id {
        request = request.header("X-Request-Id", id);
    }
    let response = request.send().await.unwrap();
    let echoed = response.headers().get("x-request-id").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (response.status().as_u16(), echoed)
}

#[tokio::test]
async fn a_request_id_is_returned_and_carried_by_the_requests_log_lines() {
    let s = misbehaving("");
    let (_, generated) = create(&s, "fine", None).await;
    let (_, next) = create(&s, "fine2", None).await;
    assert!(generated.len() > 12 && next.len() > 12 && generated != next, "generated ids: {generated:?} {next:?}");
    // An id that could forge a log line's structure, or flood it, is replaced.
    for unfit in ["a b", "x\"}{\"y", &"z".repeat(129)] {
        let (_, echoed) = create(&s, "fine3", Some(unfit)).await;
        assert!(echoed != unfit && echoed.len() > 12 && echoed.len() <= 128, "{unfit:?} came back as {echoed:?}");
    }
    // A request no route matches gets its id back too, with its error.
    let unrouted =
        s.client.get(format!("{}/v2/nowhere", s.base)).header("X-Request-Id", "lost-1").send().await.unwrap();
    assert_eq!(unrouted.status(), 404);
    assert_eq!(unrouted.headers().get("x-request-id").unwrap(), "lost-1");
    assert_eq!(unrouted.json::<Value>().await.unwrap()["error"]["type"], "NotFoundException");
    let (status, echoed) = create(&s, "trap", Some("trace-me-42")).await;
    assert_eq!((status, echoed.as_str()), (500, "trace-me-42"));
    let log = s.output_once_it_says("the backend trapped");
    let line = log.lines().find(|l| l.contains("the backend trapped")).unwrap();
    assert!(line.contains("trace-me-42"), "the log line carries the request id: {line}");
    assert!(!log.contains('\u{1b}'), "a log that goes to no terminal has no colour codes: {line:?}");
}

#[tokio::test]
async fn json_logs_carry_the_request_id_as_a_field() {
    let s = misbehaving("[log]\nformat = \"json\"\n");
    create(&s, "trap", Some("json-7")).await;
    let log = s.output_once_it_says("the backend trapped");
    let event: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["fields"]["message"] == "the backend trapped")
        .unwrap_or_else(|| panic!("no JSON line for the trap in:\n{log}"));
    assert_eq!(event["span"]["request_id"], "json-7", "{event}");
    assert_eq!(event["level"], "WARN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_requests_in_flight_finish_and_exits_0() {
    let mut s = misbehaving("");
    let in_flight = {
        let (client, url) = (s.client.clone(), s.url("/namespaces"));
        // `loop` runs until its 1.5 s budget is spent: the create's outcome is unknown
        // (504 CommitStateUnknownException).
        tokio::spawn(async move { client.post(url).json(&json!({"namespace": ["loop"]})).send().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.signal("TERM");
    let answered = in_flight.await.unwrap().expect("the request in flight is answered, not cut");
    assert_eq!(answered.status().as_u16(), 504);
    let status = s.exit_within(Duration::from_secs(10)).expect("the server exits");
    assert!(status.success(), "exit status 0: {status:?}");
    let log = s.output_once_it_says("rustberg: stopped");
    assert!(log.contains("SIGTERM: finishing the requests in flight") && log.contains("rustberg: stopped"), "{log}");
}

fn check_config(text: &str) -> (i32, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rustberg.toml");
    std::fs::write(&file, text.replace("{dir}", dir.path().to_str().unwrap())).unwrap();
    let output =
        std::process::Command::new(env!("CARGO_BIN_EXE_rustberg")).arg("check-config").arg(&file).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text, dir)
}

#[test]
fn check_config_finds_what_serve_would_refuse_without_serving() {
    let (code, out, _dir) = check_config(
        "[server]\ndata_dir = \"{dir}/data\"\n\
         [mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{dir}/prod.redb\"\nowner = \"acme\"\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(": ok"), "{out}");

    let greedy = components_dir().join("greedy.wasm");
    let (code, out, dir) = check_config(&format!(
        "[server]\ndata_dir = \"{{dir}}/data\"\n\
         [mount.grabby]\nbackend = \"{}\"\ncatalog_url = \"redb://{{dir}}/grabby.redb\"\nowner = \"acme\"\n\
         [mount.far]\nbackend = \"native\"\ncatalog_url = \"postgres://nobody@127.0.0.1:9/none\"\nowner = \"acme\"\n\
         [mount.lost]\nbackend = \"native\"\ncatalog_url = \"redb://{{dir}}/missing/lost.redb\"\nowner = \"acme\"\n\
         [mount.partner]\nbackend = \"rest\"\ncatalog_url = \"https://partner.example\"\nowner = \"acme\"\n\
         token_env = \"RUSTBERG_TEST_UNSET_TOKEN\"\n\
         [events.webhook.hook]\nurl = \"http://127.0.0.1:9/hook\"\nsecret = \"whsec_dG9vIHNob3J0\"\n",
        greedy.display()
    ));
    assert_eq!(code, 1, "{out}");
    for expected in [
        "mount `grabby`: backend: the component imports `rustberg:catalog/http@",
        "mount `far`: catalog_url: cannot connect",
        "mount `lost`: catalog_url: the folder of",
        "mount `partner`: auth: token_env RUSTBERG_TEST_UNSET_TOKEN is not set",
        "events.webhook.hook.secret: a webhook secret needs at least 24 bytes, this one has 9",
    ] {
        assert!(out.contains(expected), "{expected}:\n{out}");
    }
    assert!(!dir.path().join("grabby.redb").exists() && !dir.path().join("data").exists(), "nothing is created");
}

/// The minted admin survives restarts: shown once, kept hashed, written to a 0600 file;
/// `rustberg admin reset-credential` replaces it, and the old one stops working.
#[tokio::test]
async fn the_minted_admin_credential_survives_restarts_until_reset() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start("");
    let first = s.credential.clone().expect("minted at the first start");
    let file = s.dir.path().join("data").join("admin-credential");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), first);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let old_token = s.admin_token();

    let s = s.restart("").unwrap();
    let secret = first.split_once(':').unwrap().1;
    assert!(!s.output().contains(secret), "the secret is not printed again");
    assert_eq!(s.login("admin", secret).get("/namespaces").await.0, 200, "the same credential works");
    assert_eq!(Api::with_token(&s.base, &old_token).get("/namespaces").await.0, 200, "and its tokens");

    let dir = s.stop();
    let config = dir.path().join("rustberg.toml");
    let reset = std::process::Command::new(env!("CARGO_BIN_EXE_rustberg"))
        .args(["admin", "reset-credential", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    let printed = String::from_utf8_lossy(&reset.stdout);
    let new = printed.lines().find_map(|l| l.strip_prefix("credential ")).unwrap().to_string();
    assert_ne!(new, first);
    let s = Server::start_in(dir, "");
    assert_eq!(s.credential.as_deref(), Some(new.as_str()), "the file holds the new credential");
    assert_eq!(s.login("admin", new.split_once(':').unwrap().1).get("/namespaces").await.0, 200);
    assert_eq!(Api::with_token(&s.base, &old_token).get("/namespaces").await.0, 401, "old tokens stop working");
    let refused = reqwest::Client::new()
        .post(format!("{}/v1/oauth/tokens", s.base))
        .form(&[("grant_type", "client_credentials"), ("client_id", "admin"), ("client_secret", secret)])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401, "the old secret stops working");
}

/// One sample of a Prometheus text exposition: name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// The samples of a Prometheus text exposition. Panics on a line that is neither a
/// comment nor a well-formed sample.
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a value: {line}"));
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.strip_suffix('}').unwrap_or_else(|| panic!("labels: {line}"))),
                None => (series, ""),
            };
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "name: {line}");
            let labels = labels
                .split("\",")
                .filter(|l| !l.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("label: {line}"));
                    (k.to_string(), v.trim_end_matches('"').to_string())
                })
                .collect();
            (name.to_string(), labels, value)
        })
        .collect()
}

fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    all.iter()
        .filter(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v)))
        .map(|(_, _, v)| v)
        .sum()
}

#[tokio::test]
async fn metrics_count_requests_backend_calls_commits_pools_and_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&redb_mount("prod", dir.path(), "default"));
    assert_eq!(s.post("/namespaces", json!({"namespace": ["shop"]})).await.0, 200);
    assert_eq!(s.get("/namespaces/shop").await.0, 200);
    assert_eq!(s.get("/namespaces/missing").await.0, 404);
    assert_eq!(s.get("/namespaces/prod%1Fnothing").await.0, 404);
    // Methods a client makes up share one label: they cannot grow the series without bound.
    for method in ["FOOA", "FOOB"] {
        let made_up = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        s.client.request(made_up, format!("{}/v1/config", s.base)).send().await.unwrap();
    }
    let text = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    let all = samples(&text);
    assert!(!text.contains("FOOA") && !text.contains("FOOB"), "{text}");
    assert_eq!(value(&all, "rustberg_http_requests_total", &[("route", "/v1/config"), ("method", "other")]), 2.0);
    let route = "/v1/catalog/namespaces/{namespace}";
    let http = "rustberg_http_requests_total";
    assert_eq!(value(&all, http, &[("route", route), ("method", "GET"), ("status", "200"), ("mount", "root")]), 1.0);
    assert_eq!(value(&all, http, &[("route", route), ("status", "404"), ("mount", "root")]), 1.0, "{text}");
    assert_eq!(value(&all, http, &[("route", route), ("status", "404"), ("mount", "prod")]), 1.0, "{text}");
    assert!(value(&all, "rustberg_http_request_duration_seconds_count", &[("route", route)]) >= 3.0);
    let calls = "rustberg_backend_call_duration_seconds_count";
    assert_eq!(value(&all, calls, &[("mount", "root"), ("export", "create_namespace"), ("outcome", "ok")]), 1.0);
    assert_eq!(value(&all, calls, &[("mount", "prod"), ("export", "load_namespace"), ("outcome", "not_found")]), 1.0);
    assert!(value(&all, "rustberg_kv_commits_total", &[("store", "redb"), ("outcome", "ok")]) >= 1.0, "{text}");
    // Each durable redb transaction (one fsync) carries one commit or more.
    let transactions = value(&all, "rustberg_redb_transactions_total", &[]);
    let redb_commits = value(&all, "rustberg_kv_commits_total", &[("store", "redb")]);
    assert!(transactions >= 1.0 && transactions <= redb_commits, "{transactions} for {redb_commits}: {text}");
    assert!(value(&all, "rustberg_pool_instantiations_total", &[("mount", "root")]) >= 1.0, "{text}");
    assert!(text.contains("rustberg_pool_idle_instances{mount=\"root\"}"), "{text}");
    assert!(value(&all, "rustberg_authz_decisions_total", &[("decision", "allowed")]) >= 1.0, "{text}");
}

/// In the embedded root catalog a new root namespace is one commit: its owner's record
/// and its location's claim ride the backend's create, with no intent to settle (a
/// nested one's claim likewise). A create that commit refuses runs the one-at-a-time
/// path, which tells why.
#[tokio::test]
async fn a_namespace_is_one_commit_with_its_owner_and_claim() {
    let principal = |id: &str, tenant: &str| {
        format!(
            "[auth.principals.{id}]\ntenant = \"{tenant}\"\nrole = \"writer\"\nsecret_hash = \"{}\"\n",
            hash_secret("pw")
        )
    };
    let s = Server::start(&(principal("ann", "acme") + &principal("eve", "evil")));
    let (ann, eve) = (s.login("ann", "pw"), s.login("eve", "pw"));
    let commits = || async {
        let text = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
        value(&samples(&text), "rustberg_kv_commits_total", &[("store", "redb")])
    };
    let before = commits().await;
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    assert_eq!(commits().await - before, 1.0, "the create, its owner and its claim in one commit");
    let before = commits().await;
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["sales", "eu"]})).await.0, 200);
    assert_eq!(commits().await - before, 1.0, "a nested create and its claim in one commit");
    assert_eq!(ann.get("/namespaces/sales").await.0, 200, "acme owns it");
    assert_eq!(eve.get("/namespaces/sales").await.0, 404, "evil does not");
    let (status, table) = ann.post("/namespaces/sales/tables", json!({"name": "t", "schema": support::schema()})).await;
    assert_eq!(status, 200, "{table}");

    assert_eq!(eve.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 409);
    let sales = table["metadata"]["location"].as_str().unwrap().rsplit_once('/').unwrap().0;
    let over = json!({"namespace": ["third"], "properties": {"location": sales}});
    assert_eq!(ann.post("/namespaces", over).await.0, 409, "the location is taken");
    assert_eq!(ann.get("/namespaces/third").await.0, 404, "nothing of the refused create was written");
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["third"]})).await.0, 200, "nor did it keep the name");

    // A drop is one commit too: the namespace, its grants, its owner and its claim.
    let admin = support::Api::with_token(&s.base, &s.admin_token());
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["gone"]})).await.0, 200);
    let grant = json!({"namespace": ["gone"], "privilege": "read", "tenant": "evil"});
    let (status, granted) = admin.send(reqwest::Method::POST, "/management/v1/grants", Some(grant)).await;
    assert_eq!(status, 201, "{granted}");
    assert_eq!(eve.get("/namespaces/gone").await.0, 200, "the grant lets evil read it");
    let before = commits().await;
    assert_eq!(ann.delete("/namespaces/gone").await.0, 204);
    assert_eq!(commits().await - before, 1.0, "the drop, its grants, owner and claim in one commit");
    assert_eq!(eve.get("/namespaces/gone").await.0, 404, "the grant went with it");
    let (_, grants) = admin.send(reqwest::Method::GET, "/management/v1/grants", None).await;
    assert!(!grants.to_string().contains("\"gone\""), "no grant names it: {grants}");
    // Created again by evil, at the same location (its claim was released): evil's now.
    assert_eq!(eve.post("/namespaces", json!({"namespace": ["gone"]})).await.0, 200);
    assert_eq!(ann.get("/namespaces/gone").await.0, 404, "acme keeps nothing of it");
    assert_eq!(ann.delete("/namespaces/gone").await.0, 404);
}

/// A repeated loadTable of a native table on redb is answered without calling the
/// backend until the catalog changes, and a commit is seen by the next load. On a
/// Postgres catalog, which other hosts may change unseen, every load calls it.
#[tokio::test]
async fn repeated_loads_call_a_redb_backend_once_until_the_catalog_changes() {
    let pg = support::postgres_database().await;
    let mounts = pg.as_deref().map_or(String::new(), |pg| {
        format!("[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{pg}\"\nowner = \"default\"\n")
    });
    let s = Server::start(&mounts);
    let loads = |mount: &'static str| {
        let url = format!("{}/metrics", s.base);
        async move {
            let text = reqwest::get(url).await.unwrap().text().await.unwrap();
            let export = [("mount", mount), ("export", "load_table")];
            value(&samples(&text), "rustberg_backend_call_duration_seconds_count", &export)
        }
    };
    for (mount, ns, kept) in [("root", "db", true), ("pg", "pg%1Fdb", false)] {
        if mount == "pg" && pg.is_none() {
            continue;
        }
        let table = format!("/namespaces/{ns}/tables/t");
        let namespace: Vec<&str> = ns.split("%1F").collect();
        assert_eq!(s.post("/namespaces", json!({"namespace": namespace})).await.0, 200);
        let created =
            s.post(&format!("/namespaces/{ns}/tables"), json!({"name": "t", "schema": support::schema()})).await;
        assert_eq!(created.0, 200, "{}", created.1);
        let before = loads(mount).await;
        for _ in 0..3 {
            assert_eq!(s.get(&table).await.0, 200);
        }
        assert_eq!(loads(mount).await - before, if kept { 1.0 } else { 3.0 }, "{mount}");
        let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
        assert_eq!(s.post(&table, commit).await.0, 200);
        let after_commit = loads(mount).await;
        let (status, loaded) = s.get(&table).await;
        assert_eq!((status, &loaded["metadata"]["properties"]["k"]), (200, &json!("v")), "{mount}: {loaded}");
        assert_eq!(s.get(&table).await.0, 200);
        assert_eq!(loads(mount).await - after_commit, if kept { 1.0 } else { 2.0 }, "{mount}");
    }
}

/// A commit to a native table on Postgres reads the table's pointer once: the backend's
/// read for its compare-and-swap reuses the read that prepared the change (each read
/// is a round trip). A concurrent change in between still fails the swap, which the
/// server re-applies (`tests/shared_postgres.rs`).
#[tokio::test]
async fn a_commit_on_postgres_reads_the_tables_pointer_once() {
    let Some(pg) = support::postgres_database().await else { return };
    let s = Server::start(&format!("[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{pg}\"\nowner = \"default\"\n"));
    let reads = || {
        let url = format!("{}/metrics", s.base);
        async move {
            let text = reqwest::get(url).await.unwrap().text().await.unwrap();
            value(&samples(&text), "rustberg_kv_reads_total", &[("store", "postgres")])
        }
    };
    assert_eq!(s.post("/namespaces", json!({"namespace": ["pg", "db"]})).await.0, 200);
    let created = s.post("/namespaces/pg%1Fdb/tables", json!({"name": "t", "schema": support::schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    for n in 0..3 {
        let before = reads().await;
        let commit =
            json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"n": n.to_string()}}]});
        let (status, body) = s.post("/namespaces/pg%1Fdb/tables/t", commit).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(reads().await - before, 1.0, "commit {n}");
    }
    let (status, loaded) = s.get("/namespaces/pg%1Fdb/tables/t").await;
    assert_eq!((status, &loaded["metadata"]["properties"]["n"]), (200, &json!("2")));
}

/// Commits on one host build each version from the metadata the last one built, never
/// parsing its file; a transaction too. (Each earlier version is forgotten when the next
/// lands: kept, they filled the held budget and the new versions were evicted.)
#[tokio::test]
async fn commits_on_one_host_reuse_the_metadata_they_built() {
    let s = Server::start("");
    let parses = || {
        let url = format!("{}/metrics", s.base);
        async move {
            let text = reqwest::get(url).await.unwrap().text().await.unwrap();
            value(&samples(&text), "rustberg_table_metadata_parses_total", &[])
        }
    };
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let created = s.post("/namespaces/db/tables", json!({"name": "t", "schema": support::schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let before = parses().await;
    for n in 0..20 {
        let commit =
            json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"n": n.to_string()}}]});
        let (status, body) = s.post("/namespaces/db/tables/t", commit).await;
        assert_eq!(status, 200, "{body}");
    }
    let change = json!({"identifier": {"namespace": ["db"], "name": "t"}, "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"n": "last"}}]});
    let (status, body) = s.post("/transactions/commit", json!({"table-changes": [change]})).await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(parses().await - before, 0.0);
    let (status, loaded) = s.get("/namespaces/db/tables/t").await;
    assert_eq!((status, &loaded["metadata"]["properties"]["n"]), (200, &json!("last")));
}

/// A page of a listing the host keeps while the catalog file is unchanged is never
/// served past a change: a created table is in the next page, a dropped one is gone,
/// and the page after a token still starts after it.
#[tokio::test]
async fn a_kept_listing_page_shows_every_change_that_returned_before_it() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let names = |listed: &Value| -> Vec<String> {
        listed["identifiers"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().to_string()).collect()
    };
    let page = "/namespaces/db/tables?pageToken=&pageSize=2";
    for name in ["a", "c"] {
        let created = s.post("/namespaces/db/tables", json!({"name": name, "schema": support::schema()})).await;
        assert_eq!(created.0, 200, "{}", created.1);
        // Listed twice: the second may be the kept page, and must match the first.
        let (first, second) = (s.get(page).await, s.get(page).await);
        assert_eq!((first.0, names(&first.1)), (200, names(&second.1)));
    }
    let created = s.post("/namespaces/db/tables", json!({"name": "b", "schema": support::schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let (status, listed) = s.get(page).await;
    assert_eq!((status, names(&listed)), (200, vec!["a".to_string(), "b".to_string()]));
    let token = listed["next-page-token"].as_str().unwrap().to_string();
    let rest = format!("/namespaces/db/tables?pageToken={token}&pageSize=2");
    assert_eq!(names(&s.get(&rest).await.1), vec!["c".to_string()]);
    assert_eq!(s.delete("/namespaces/db/tables/a").await.0, 204);
    assert_eq!(names(&s.get(page).await.1), vec!["b".to_string(), "c".to_string()]);
    assert_eq!(names(&s.get(&rest).await.1), vec!["c".to_string()]);
}

/// Every line of the audit file, parsed.
fn audit_lines(file: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// The one audit line of request `id`, demanding `action`.
fn audited<'a>(lines: &'a [Value], id: &str, action: &str) -> &'a Value {
    let found: Vec<_> = lines.iter().filter(|l| l["request_id"] == id && l["action"] == action).collect();
    assert_eq!(found.len(), 1, "one {action} line for {id} in {lines:#?}");
    found[0]
}

/// The caller's principal id.
async fn whoami(api: &Api) -> String {
    api.send(reqwest::Method::GET, "/management/v1/whoami", None).await.1["id"].as_str().unwrap().to_string()
}

/// Sends `method path` (under the catalog prefix, or a `/management` path) as `api`
/// with `X-Request-Id: id`; the status.
async fn send_as(api: &Api, id: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> u16 {
    let url = match path.starts_with("/management/") {
        true => format!("{}{path}", api.base),
        false => api.url(path),
    };
    let mut request = api.client.request(method, url).header("X-Request-Id", id);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap().status().as_u16()
}

/// Each decision that changes something is one audit line naming who (principal id
/// and tenant), the request (id, method, route template), the resource and mount,
/// the decision, and the rule that decided: the owner tenant's role, a grant by id,
/// a server admin — or, for a refusal, what the caller held. Reads are not recorded.
#[tokio::test]
async fn decisions_that_change_something_are_audited_with_the_rule_that_decided() {
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("audit").join("audit.jsonl");
    let mut toml = format!("[audit]\nfile = \"{}\"\n", file.display());
    for (name, tenant, role) in [("alice", "acme", "writer"), ("rita", "acme", "reader"), ("eve", "evil", "writer")] {
        let hash = support::hash_secret(&format!("{name}-secret"));
        toml +=
            &format!("[auth.principals.{name}]\ntenant = \"{tenant}\"\nrole = \"{role}\"\nsecret_hash = \"{hash}\"\n");
    }
    let s = Server::start(&toml);
    let [alice, rita, eve] = ["alice", "rita", "eve"].map(|n| s.login(n, &format!("{n}-secret")));
    let table = "/namespaces/shop/tables/orders";
    let schema = support::schema();
    use reqwest::Method as M;
    assert_eq!(send_as(&alice, "a-1", M::POST, "/namespaces", Some(json!({"namespace": ["shop"]}))).await, 200);
    let create = json!({"name": "orders", "schema": schema});
    assert_eq!(send_as(&alice, "a-2", M::POST, "/namespaces/shop/tables", Some(create)).await, 200);
    assert_eq!(send_as(&alice, "a-3", M::GET, table, None).await, 200);
    // As PyIceberg loads: asking for vended credentials, which this server does not vend.
    let asked = alice.client.get(alice.url(table)).header("X-Request-Id", "a-4");
    let asked = asked.header("X-Iceberg-Access-Delegation", "vended-credentials").send().await.unwrap();
    assert_eq!(asked.status().as_u16(), 200);
    assert_eq!(send_as(&eve, "e-1", M::DELETE, table, None).await, 404);
    assert_eq!(send_as(&rita, "r-1", M::DELETE, table, None).await, 403);
    let grant = json!({"namespace": ["shop"], "table": "orders", "privilege": "write", "principal": "eve"});
    assert_eq!(send_as(&s, "g-1", M::POST, "/management/v1/grants", Some(grant)).await, 201);
    let (_, grants) = s.send(M::GET, "/management/v1/grants", None).await;
    let grant_id = grants["grants"][0]["id"].as_str().unwrap().to_string();
    let (_, loaded) = eve.get(table).await;
    let commit = support::append_request(&loaded["metadata"], 7);
    assert_eq!(send_as(&eve, "e-2", M::POST, table, Some(commit)).await, 200);
    assert_eq!(send_as(&eve, "e-3", M::POST, "/management/v1/tenants", Some(json!({"name": "x"}))).await, 403);

    let lines = audit_lines(&file);
    let (alice_id, eve_id) = (whoami(&alice).await, whoami(&eve).await);

    let created = audited(&lines, "a-1", "create-namespace");
    assert_eq!(created["principal"], alice_id.as_str());
    assert_eq!(created["principal_name"], "alice");
    assert_eq!(created["tenant"], "acme");
    assert_eq!(created["method"], "POST");
    assert_eq!(created["route"], "/v1/catalog/namespaces");
    assert_eq!(created["resource"], "namespace shop");
    assert_eq!(created["mount"], "root");
    assert_eq!(created["decision"], "allowed");
    assert_eq!(created["rule"], json!({"kind": "tenant-role", "tenant": "acme", "role": "writer"}));
    assert!(created["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{created}");

    let table_created = audited(&lines, "a-2", "write");
    assert_eq!(table_created["resource"], "namespace shop");
    assert_eq!(table_created["rule"], json!({"kind": "owner", "tenant": "acme", "role": "writer"}));
    assert!(lines.iter().all(|l| l["request_id"] != "a-3"), "a read is not recorded by default");
    // Vending switched off is the server's choice, not a decision about the caller: a
    // load that asks records no denied vend (every PyIceberg load asks).
    assert!(lines.iter().all(|l| l["request_id"] != "a-4"), "no vend denial with vending off: {lines:#?}");

    let intruder = audited(&lines, "e-1", "write");
    assert_eq!((&intruder["decision"], &intruder["rule"]), (&json!("denied"), &Value::Null), "{intruder}");
    assert_eq!((&intruder["tenant"], &intruder["resource"]), (&json!("evil"), &json!("table shop.orders")));
    assert_eq!(intruder["route"], "/v1/catalog/namespaces/{namespace}/tables/{table}");
    let reader = audited(&lines, "r-1", "write");
    assert_eq!(reader["decision"], "denied");
    assert_eq!(reader["rule"], json!({"kind": "owner", "tenant": "acme", "role": "reader"}), "what the reader held");

    let granted = audited(&lines, "g-1", "manage");
    assert_eq!((&granted["decision"], &granted["rule"]), (&json!("allowed"), &json!({"kind": "server-admin"})));
    let by_grant = audited(&lines, "e-2", "write");
    assert_eq!(by_grant["principal"], eve_id.as_str());
    assert_eq!(by_grant["decision"], "allowed");
    assert_eq!(by_grant["rule"], json!({"kind": "grant", "grant": grant_id}));
    let not_admin = audited(&lines, "e-3", "server-admin");
    assert_eq!((&not_admin["decision"], &not_admin["resource"]), (&json!("denied"), &json!("create tenant x")));
    assert_eq!(not_admin["mount"], Value::Null);
}
