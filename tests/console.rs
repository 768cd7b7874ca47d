//! The web console in a real browser: Debian's chromium driven by Playwright
//! (`tests/console/scenario.mjs`), signing in at a real OpenID provider (panva's
//! oidc-provider, `tests/console/idp.mjs`) and with client credentials, against a
//! server holding a mount with a table of many snapshots and 10,000 namespaces.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::python::repo_root;
use support::{Api, Server};

/// Snapshots of the table the scenario charts.
const SNAPSHOTS: i64 = 12;
/// Snapshot ids above 2^53, as writers make them: a JavaScript Number would round each
/// to an id that does not exist (…001 shows as …000).
const FIRST_SNAPSHOT_ID: i64 = 1_047_911_926_829_541_001;
/// Root namespaces beside it: the tree must show its first page without loading them all.
const NAMESPACES: usize = 10_000;

/// Installs the scenario's npm packages (pinned by its package-lock.json) once.
fn npm_ci(dir: &Path) {
    let lock = std::fs::read_to_string(dir.join("package-lock.json")).unwrap();
    let stamp = dir.join("node_modules/.installed-lock");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .expect("npm is needed for the console test");
    assert!(status.success(), "npm ci in {}", dir.display());
    std::fs::write(stamp, lock).unwrap();
}

struct Idp(Child);

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The OpenID provider on a free port, with the console as a public client that may
/// return to any loopback port (RFC 8252); its issuer URL.
async fn idp(dir: &Path) -> (Idp, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let idp = Idp(Command::new("node")
        .args(["idp.mjs", &port.to_string(), "http://127.0.0.1/ui/", "rustberg-console"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the OpenID provider"));
    let issuer = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if reqwest::get(format!("{issuer}/.well-known/openid-configuration")).await.is_ok_and(|r| r.status() == 200) {
            return (idp, issuer);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the OpenID provider did not start");
}

fn config(issuer: &str, mount_dir: &Path) -> String {
    format!(
        r#"
[auth.principals.setup]
tenant = "acme"
role = "admin"
server_admin = true
secret_hash = "{setup}"

[auth.oidc]
issuer = "{issuer}"
audience = "rustberg-console"
jwks = "{issuer}/jwks"
console_client_id = "rustberg-console"

[auth.principals.olivia]
tenant = "acme"
role = "admin"
server_admin = true
oidc_subject = "olivia"

[mount.prod]
backend = "native"
catalog_url = "redb://{dir}/prod.redb"
owner = "acme"

[audit]
file = "{dir}/audit.jsonl"
"#,
        dir = mount_dir.display(),
        setup = support::hash_secret("setup-secret"),
    )
}

/// A schema with nested types: a struct and a list.
fn nested_schema() -> Value {
    json!({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true},
        {"id": 2, "name": "ts", "type": "timestamptz", "required": false},
        {"id": 3, "name": "nested", "required": false, "type": {"type": "struct", "fields": [
            {"id": 4, "name": "inner", "type": "string", "required": false}]}},
        {"id": 5, "name": "tags", "required": false, "type":
            {"type": "list", "element-id": 6, "element": "long", "element-required": false}}
    ]})
}

/// `prod.analytics.events` (partitioned by day, sorted by id) with `SNAPSHOTS` appends
/// and a tag, and the view `prod.analytics.recent`. Answers main's snapshot id as the
/// REST API gives it.
async fn catalog(admin: &Api) -> i64 {
    assert_eq!(admin.post("/namespaces", json!({"namespace": ["prod", "analytics"]})).await.0, 200);
    let table = json!({
        "name": "events",
        "schema": nested_schema(),
        "partition-spec": {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "ts_day", "transform": "day"}]},
        "write-order": {"order-id": 1, "fields": [{"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}
    });
    let (status, created) = admin.post("/namespaces/prod%1Fanalytics/tables", table).await;
    assert_eq!(status, 200, "{created}");
    let path = "/namespaces/prod%1Fanalytics/tables/events";
    let mut metadata = created["metadata"].clone();
    for id in 1..=SNAPSHOTS {
        let mut append = support::append_request(&metadata, FIRST_SNAPSHOT_ID + id - 1);
        let summary = json!({"operation": "append", "added-records": (id * 1000).to_string(), "added-data-files": id.to_string()});
        append["updates"][0]["snapshot"]["summary"] = summary;
        let (status, body) = admin.post(path, append).await;
        assert_eq!(status, 200, "{body}");
        metadata = body["metadata"].clone();
    }
    let tag = json!({"requirements": [], "updates": [
        {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": FIRST_SNAPSHOT_ID}]});
    assert_eq!(admin.post(path, tag).await.0, 200);
    let view = json!({
        "name": "recent",
        "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": true}]},
        "view-version": {"version-id": 1, "timestamp-ms": 1_700_000_000_000i64, "schema-id": 0,
            "summary": {"engine-name": "spark"}, "default-namespace": ["prod", "analytics"],
            "representations": [{"type": "sql", "sql": "SELECT id FROM prod.analytics.events", "dialect": "spark"}]},
        "properties": {}
    });
    let (status, body) = admin.post("/namespaces/prod%1Fanalytics/views", view).await;
    assert_eq!(status, 200, "{body}");
    let main = metadata["current-snapshot-id"].as_i64().unwrap();
    assert!(main > 1 << 53, "{main}");
    main
}

/// `prod.analytics.written`, made and appended to by PyIceberg (its snapshot ids are
/// random 63-bit numbers) until main's id lies above 2^53; that id as the REST API gives it.
async fn written_by_pyiceberg(server: &Server, setup: &Api) -> i64 {
    let script = r#"
import sys
import pyarrow as pa
from pyiceberg.catalog import load_catalog
catalog = load_catalog("rustberg", type="rest", uri=sys.argv[1], credential="setup:setup-secret")
table = catalog.create_table(("prod", "analytics", "written"), schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
for _ in range(8):
    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    if table.current_snapshot().snapshot_id > 2**53:
        break
"#;
    let venv = support::python::venv();
    let output = Command::new(venv.join("bin/python")).args(["-c", script, &server.base]).output().unwrap();
    assert!(output.status.success(), "PyIceberg: {}", String::from_utf8_lossy(&output.stderr));
    let (status, loaded) = setup.get("/namespaces/prod%1Fanalytics/tables/written").await;
    assert_eq!(status, 200, "{loaded}");
    let id = loaded["metadata"]["current-snapshot-id"].as_i64().unwrap();
    assert!(id > 1 << 53, "PyIceberg's snapshot id {id}");
    id
}

async fn audit(api: &Api, query: &str) -> (u16, Value) {
    api.send(reqwest::Method::GET, query, None).await
}

/// `NAMESPACES` root namespaces, several requests at a time.
async fn many_namespaces(admin: &Api) {
    let names: Vec<String> = (0..NAMESPACES).map(|i| format!("ns{i:05}")).collect();
    for chunk in names.chunks(16) {
        let creates = chunk.iter().map(|name| admin.post("/namespaces", json!({"namespace": [name]})));
        for (status, body) in futures::future::join_all(creates).await {
            assert_eq!(status, 200, "{body}");
        }
    }
}

fn screenshots() -> PathBuf {
    let target = Path::new(env!("CARGO_BIN_EXE_rustberg")).parent().unwrap().parent().unwrap();
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_signs_in_browses_manages_and_shows_a_reader_only_its_grant() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(Path::new(&chromium).exists(), "Debian's chromium is needed ({chromium}); .ci/run installs it");
    let dir = repo_root().join("tests/console");
    npm_ci(&dir);
    let (_idp, issuer) = idp(&dir).await;
    let mount_dir = tempfile::tempdir().unwrap();
    let server = Server::start(&config(&issuer, mount_dir.path()));
    let setup = server.login("setup", "setup-secret");
    let main_snapshot = catalog(&setup).await;
    let written_snapshot = written_by_pyiceberg(&server, &setup).await;
    many_namespaces(&setup).await;

    let shots = screenshots();
    let output = tokio::task::spawn_blocking({
        let (base, dir, shots) = (server.base.clone(), dir.clone(), shots.clone());
        move || {
            Command::new("timeout")
                .args(["300", "node", "scenario.mjs"])
                .current_dir(dir)
                .env("RUSTBERG_URL", base)
                .env("OIDC_LOGIN", "olivia")
                .env("SNAPSHOTS", SNAPSHOTS.to_string())
                .env("MAIN_SNAPSHOT_ID", main_snapshot.to_string())
                .env("PYICEBERG_SNAPSHOT_ID", written_snapshot.to_string())
                .env("TAG_SNAPSHOT_ID", FIRST_SNAPSHOT_ID.to_string())
                .env("SCREENSHOTS", shots)
                .env("CHROMIUM", chromium)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}{stderr}");
    assert!(output.status.success() && stdout.contains("SCENARIO PASSED"), "the console scenario failed");
    for line in stdout.lines().filter(|l| l.starts_with("MEASURE")) {
        eprintln!("{line}");
    }
    let pages = [
        "1-sign-in",
        "1b-browse",
        "1c-opened",
        "2-table",
        "2b-view",
        "3-mounts",
        "4-manage",
        "5-audit",
        "6-reader",
        "7-refused",
    ];
    for shot in pages.iter().flat_map(|page| [page.to_string(), format!("{page}-phone")]) {
        assert!(shots.join(format!("console-{shot}.png")).exists(), "no screenshot {shot}");
    }
}

/// What the console reads besides the catalog: the mounts a caller's tenant owns (all for
/// a server admin) and the audit log (admins, a tenant admin only its tenant's records;
/// 501 without an audit file); and its own files, embedded, under a policy that loads
/// nothing from elsewhere.
#[tokio::test(flavor = "multi_thread")]
async fn the_consoles_routes_show_each_caller_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let principal = |name: &str, tenant: &str, role: &str, admin: bool| {
        format!(
            "[auth.principals.{name}]\ntenant = \"{tenant}\"\nrole = \"{role}\"\nserver_admin = {admin}\nsecret_hash = \"{}\"\n",
            support::hash_secret(&format!("{name}-secret"))
        )
    };
    let mount = |name: &str, owner: &str| {
        format!(
            "[mount.{name}]\nbackend = \"native\"\ncatalog_url = \"redb://{}/{name}.redb\"\nowner = \"{owner}\"\n",
            dir.path().display()
        )
    };
    // A remote catalog mounted as `gone`, stopped once the server has started.
    let remote = Server::start("");
    let token = remote.admin_token();
    let config = [
        principal("root", "acme", "admin", true),
        principal("ann", "acme", "writer", false),
        principal("olga", "other", "admin", false),
        mount("acme_lake", "acme"),
        mount("other_lake", "other"),
        format!(
            "[mount.gone]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"acme\"\ntoken_env = \"REMOTE_TOKEN\"\n",
            remote.base
        ),
        format!("[audit]\nfile = \"{}/audit.jsonl\"\n", dir.path().display()),
    ]
    .concat();
    let server =
        Server::try_start_with_env(&config, &[("REMOTE_TOKEN", token.as_str())]).unwrap_or_else(|o| panic!("{o}"));
    drop(remote.stop());
    let (root, ann, olga) =
        (server.login("root", "root-secret"), server.login("ann", "ann-secret"), server.login("olga", "olga-secret"));

    let names = |body: &Value| -> Vec<String> {
        body["mounts"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_string()).collect()
    };
    let (status, all) = root.send(reqwest::Method::GET, "/management/v1/mounts", None).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(names(&all), ["root", "acme_lake", "gone", "other_lake"]);
    let lake = &all["mounts"][1];
    assert_eq!((&lake["backend"], &lake["owner"], &lake["grants"]), (&json!("native"), &json!("acme"), &json!(["kv"])));
    assert!(lake["component"]["contract"].as_str().unwrap().starts_with("0.2."), "{lake}");
    assert!(
        lake["component"]["bytes"].as_u64().unwrap() > 10_000
            && lake["component"]["sha256"].as_str().unwrap().len() == 64
    );
    assert_eq!(lake["health"], json!({"state": "ok"}));
    assert_eq!(
        names(&ann.send(reqwest::Method::GET, "/management/v1/mounts", None).await.1),
        ["root", "acme_lake", "gone"]
    );
    // A mount whose remote does not answer says so, with the error naming it.
    assert_eq!(ann.get("/namespaces?parent=gone").await.0, 503);
    let (_, after) = ann.send(reqwest::Method::GET, "/management/v1/mounts", None).await;
    let gone = &after["mounts"][2];
    assert_eq!(gone["health"]["state"], "unreachable", "{gone}");
    assert!(gone["health"]["error"].as_str().unwrap().contains("gone"), "{gone}");
    assert_eq!(after["mounts"][1]["health"], json!({"state": "ok"}));
    assert_eq!(names(&olga.send(reqwest::Method::GET, "/management/v1/mounts", None).await.1), ["root", "other_lake"]);

    // Decisions to read back: ann's write in acme, ann refused in other's mount, olga's write.
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["acme_lake", "db"]})).await.0, 200);
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["other_lake", "x"]})).await.0, 404);
    assert_eq!(olga.post("/namespaces", json!({"namespace": ["other_lake", "db"]})).await.0, 200);
    let (status, everything) = audit(&root, "/management/v1/audit").await;
    assert_eq!(status, 200, "{everything}");
    let records = everything["records"].as_array().unwrap();
    assert!(records.len() >= 3, "{everything}");
    let (_, denied) = audit(&root, "/management/v1/audit?decision=denied&principal=ann").await;
    let denied = denied["records"].as_array().unwrap();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!((&denied[0]["resource"], &denied[0]["mount"]), (&json!("namespace other_lake"), &json!("other_lake")));
    let (_, mine) = audit(&olga, "/management/v1/audit").await;
    let mine = mine["records"].as_array().unwrap();
    assert!(!mine.is_empty() && mine.iter().all(|r| r["tenant"] == "other"), "{mine:?}");
    let (_, resource) = audit(&root, "/management/v1/audit?resource=acme_lake&limit=1").await;
    let resource = resource["records"].as_array().unwrap();
    assert_eq!(resource.len(), 1);
    assert!(resource[0]["resource"].as_str().unwrap().contains("acme_lake"), "{resource:?}");
    // By mount and action, and by time: everything before now, nothing from tomorrow.
    let (_, in_mount) = audit(&root, "/management/v1/audit?mount=other_lake&action=write").await;
    let in_mount = in_mount["records"].as_array().unwrap();
    let expected = records.iter().filter(|r| r["mount"] == "other_lake" && r["action"] == "write").count();
    assert!(expected >= 2, "ann's refusal and olga's create: {records:?}");
    assert_eq!(in_mount.len(), expected, "{in_mount:?}");
    assert!(in_mount.iter().all(|r| r["mount"] == "other_lake" && r["action"] == "write"), "{in_mount:?}");
    let now = jiff::Timestamp::now();
    let tomorrow = now + jiff::SignedDuration::from_hours(24);
    let (_, until_now) = audit(&root, &format!("/management/v1/audit?until={now}")).await;
    assert_eq!(until_now["records"].as_array().unwrap().len(), records.len(), "{until_now}");
    let (_, later) = audit(&root, &format!("/management/v1/audit?since={tomorrow}")).await;
    assert_eq!(later["records"], json!([]));
    let (_, window) =
        audit(&root, &format!("/management/v1/audit?since={}&until={now}", records[0]["time"].as_str().unwrap())).await;
    assert_eq!(window["records"].as_array().unwrap().len(), 1, "the newest record alone: {window}");
    support::assert_error(&audit(&root, "/management/v1/audit?since=yesterday").await, 400, "BadRequestException");
    support::assert_error(&audit(&ann, "/management/v1/audit").await, 403, "ForbiddenException");
    let plain = Server::start(&principal("root", "acme", "admin", true));
    let plain_root = plain.login("root", "root-secret");
    support::assert_error(&audit(&plain_root, "/management/v1/audit").await, 501, "UnsupportedOperationException");

    // The console's files, without a token, and nothing else under /ui.
    let page = reqwest::get(format!("{}/ui/", server.base)).await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(page.text().await.unwrap().contains("<script type=\"module\" src=\"app.js\">"));
    let script = reqwest::get(format!("{}/ui/app.js", server.base)).await.unwrap();
    assert_eq!(script.headers()["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(reqwest::get(format!("{}/ui/nothing.js", server.base)).await.unwrap().status(), 404);
    let config: Value = reqwest::get(format!("{}/ui/config.json", server.base)).await.unwrap().json().await.unwrap();
    assert_eq!(config, json!({"oidc": null}));
}
