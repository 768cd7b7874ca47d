//! Warehouses on S3 (a moto server) and credential vending through STS AssumeRole.
//!
//! moto serves S3 and STS on one port, in memory. Between Rustberg and moto's STS
//! sits a recorder that forwards every request and keeps its form body, so the
//! tests can read the session policy Rustberg asked for.

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::moto::{s3_storage, sts_vending, Moto};
use support::python::run_pytest;
use support::{assert_error, hash_secret, schema, Api, Server};

const ROLE: &str = "arn:aws:iam::123456789012:role/rustberg-vend";

/// One STS request's form parameters.
type Form = Vec<(String, String)>;

/// Forwards every request to `target` and keeps the decoded form bodies.
struct StsRecorder {
    url: String,
    requests: Arc<Mutex<Vec<Form>>>,
}

impl StsRecorder {
    async fn start(target: String) -> StsRecorder {
        let requests: Arc<Mutex<Vec<Form>>> = Arc::default();
        let kept = requests.clone();
        let client = reqwest::Client::new();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: String| {
            let (client, target, kept) = (client.clone(), target.clone(), kept.clone());
            async move {
                kept.lock().unwrap().push(url::form_urlencoded::parse(body.as_bytes()).into_owned().collect());
                let mut forwarded = client.post(format!("{target}/")).body(body);
                for (name, value) in headers.iter().filter(|(n, _)| *n != "host" && *n != "content-length") {
                    forwarded = forwarded.header(name.as_str(), value.as_bytes());
                }
                let response = forwarded.send().await.unwrap();
                let status = response.status().as_u16();
                (axum::http::StatusCode::from_u16(status).unwrap(), response.text().await.unwrap())
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        StsRecorder { url, requests }
    }

    /// The AssumeRole requests made for `caller` (its session name), in order.
    fn assume_role_for(&self, caller: &str) -> Vec<Form> {
        let session = format!("rustberg-{caller}");
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.iter().any(|(k, v)| k == "RoleSessionName" && *v == session))
            .cloned()
            .collect()
    }

    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

fn param<'a>(request: &'a [(String, String)], name: &str) -> &'a str {
    request.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default()
}

/// A request asking for vended credentials, as `api`; the status and the JSON body.
async fn vended(api: &Api, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request =
        api.client.request(method, api.url(path)).header("X-Iceberg-Access-Delegation", "vended-credentials");
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The config of a server whose warehouses are on moto and which vends through `sts`.
fn s3_config(moto: &Moto, sts_endpoint: &str, mount_dir: &std::path::Path) -> String {
    format!(
        r#"
[storage]
warehouse_location = "s3://lake/warehouse"

{storage}{vending}
[auth.principals.writer]
tenant = "lake"
role = "writer"
secret_hash = "{writer}"

[auth.principals.reader]
tenant = "lake"
role = "reader"
secret_hash = "{reader}"

[mount.side]
backend = "native"
catalog_url = "redb://{mount}/side.redb"
warehouse_location = "s3://lake/side-warehouse"
owner = "lake"
"#,
        storage = s3_storage(&moto.url, "AKIAIOSFODNN7EXAMPLE", "server-secret"),
        vending = sts_vending(ROLE, Some(sts_endpoint)),
        writer = hash_secret("writer-secret"),
        reader = hash_secret("reader-secret"),
        mount = mount_dir.display(),
    )
}

/// moto with the bucket `lake`, the STS recorder in front of it, and a server on both
/// whose configuration `edit` may change.
async fn lake(edit: impl FnOnce(String) -> String) -> (Moto, StsRecorder, Server, tempfile::TempDir) {
    let moto = Moto::start("lake").await;
    let sts = StsRecorder::start(moto.url.clone()).await;
    let mount_dir = tempfile::tempdir().unwrap();
    let server = Server::start(&edit(s3_config(&moto, &sts.url, mount_dir.path())));
    (moto, sts, server, mount_dir)
}

/// PyIceberg, holding no storage keys of its own, writes and reads an S3 table with
/// vended credentials; the reader's session policy allows no writes.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_writes_and_reads_s3_with_only_vended_credentials() {
    let (moto, sts, server, _mount_dir) = lake(|c| c).await;

    let base = server.base.clone();
    let ran = tokio::task::spawn_blocking(move || {
        let env = [
            ("RUSTBERG_URL", base.as_str()),
            ("WRITER_CREDENTIAL", "writer:writer-secret"),
            ("READER_CREDENTIAL", "reader:reader-secret"),
        ];
        run_pytest("test_s3_vending.py", &env);
    });
    ran.await.unwrap();

    // The table's metadata and data files are in the bucket, under the table's location.
    let keys = moto.keys("lake", "warehouse/lake/events").await;
    assert!(keys.iter().any(|k| k.ends_with(".metadata.json")), "{keys:?}");
    assert!(keys.iter().any(|k| k.ends_with(".parquet")), "{keys:?}");

    // Each caller got credentials through AssumeRole of the configured role, with a
    // session policy confined to the table's location; the reader's allows no writes.
    let writer = sts.assume_role_for("writer");
    let reader = sts.assume_role_for("reader");
    assert!(!writer.is_empty() && !reader.is_empty(), "writer {writer:?} reader {reader:?}");
    for request in writer.iter().chain(&reader) {
        assert_eq!(param(request, "Action"), "AssumeRole");
        assert_eq!(param(request, "RoleArn"), ROLE);
        let policy: Value = serde_json::from_str(param(request, "Policy")).unwrap();
        let text = policy.to_string();
        assert!(text.contains("arn:aws:s3:::lake/warehouse/lake/events"), "{text}");
        assert!(!text.contains("\"s3:*\"") && !text.contains("\"*\""), "{text}");
    }
    assert!(writer.iter().any(|r| param(r, "Policy").contains("s3:PutObject")), "{writer:?}");
    for request in &reader {
        let policy = param(request, "Policy");
        assert!(policy.contains("s3:GetObject"), "{policy}");
        for write in ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"] {
            assert!(!policy.contains(write), "the reader's policy allows {write}: {policy}");
        }
    }
}

/// A read policy on an S3 table: the restricted reader gets `read-restrictions` and no
/// credentials, signer or loadCredentials; its plan holds only the file its filter
/// matches, with a credential whose session policy reads that one object and nothing
/// else (moto enforces no session policy, so the policy is checked as sent).
#[tokio::test(flavor = "multi_thread")]
async fn a_restricted_reader_reaches_only_its_planned_files() {
    let (_moto, sts, server, _mount_dir) = lake(|c| c).await;
    let (base, admin) = (server.base.clone(), server.admin_token());
    let ran = tokio::task::spawn_blocking(move || {
        let env = [
            ("RUSTBERG_URL", base.as_str()),
            ("WRITER_CREDENTIAL", "writer:writer-secret"),
            ("READER_CREDENTIAL", "reader:reader-secret"),
            ("ADMIN_TOKEN", admin.as_str()),
        ];
        run_pytest("test_read_policies.py", &env);
    });
    ran.await.unwrap();
    let per_file: Vec<Value> = sts
        .assume_role_for("reader")
        .iter()
        .map(|r| serde_json::from_str(param(r, "Policy")).unwrap())
        .filter(|p: &Value| p.to_string().contains(".parquet"))
        .collect();
    assert!(!per_file.is_empty(), "the restricted reader's file was vended for");
    for policy in &per_file {
        let statements = policy["Statement"].as_array().unwrap();
        assert_eq!(statements.len(), 1, "{policy}");
        assert_eq!(statements[0]["Action"], json!(["s3:GetObject"]), "{policy}");
        let resources = statements[0]["Resource"].as_array().unwrap();
        assert_eq!(resources.len(), 1, "{policy}");
        let object = resources[0].as_str().unwrap();
        assert!(
            object.starts_with("arn:aws:s3:::lake/warehouse/gov/people") && object.ends_with(".parquet"),
            "{policy}"
        );
        assert!(!object.contains('*'), "one object, no wildcard: {policy}");
    }
}

/// Asserts that an AssumeRole request's session policy names exactly the table's
/// prefix (its objects, and listing of it), with write actions only for a writer.
#[track_caller]
fn assert_policy_names_exactly(request: &[(String, String)], location: &str, writer: bool) {
    let policy: Value = serde_json::from_str(param(request, "Policy")).unwrap();
    let (bucket, key) = location.strip_prefix("s3://").unwrap().split_once('/').unwrap();
    let mut actions = vec!["s3:GetObject", "s3:GetObjectVersion"];
    if writer {
        actions.extend(["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]);
    }
    let expected = json!({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": actions, "Resource": [format!("arn:aws:s3:::{bucket}/{key}/*")]},
            {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [format!("arn:aws:s3:::{bucket}")],
             "Condition": {"StringLike": {"s3:prefix": [key, format!("{key}/*")]}}},
            {"Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": [format!("arn:aws:s3:::{bucket}")]}
        ]
    });
    assert_eq!(policy, expected);
}

/// Vending over the REST API: the header asks, loadCredentials answers the same,
/// a mount's own warehouse is covered, and nothing is vended unasked.
#[tokio::test(flavor = "multi_thread")]
async fn vended_credentials_cover_every_managed_warehouse() {
    let (moto, sts, server, _mount_dir) = lake(|c| c).await;
    let writer = server.login("writer", "writer-secret");
    let reader = server.login("reader", "reader-secret");
    let tables = "/namespaces/db/tables";
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let (status, created) = writer.post(tables, json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{created}");
    let location = created["metadata"]["location"].as_str().unwrap().to_string();
    assert!(location.starts_with("s3://lake/warehouse/db/t"), "{location}");

    // Without the header: no credentials, and STS is not asked.
    let before = sts.count();
    let (status, plain) = reader.get(&format!("{tables}/t")).await;
    assert_eq!(status, 200);
    assert!(plain.get("storage-credentials").is_none(), "{plain}");
    assert_eq!(sts.count(), before);

    // A mechanism the spec does not name is a 400 naming it (never a silent no), on
    // every route that reads the header; the spec's two together are fine.
    for path in [format!("{tables}/t"), format!("{tables}/t/credentials")] {
        let asked = |value: &'static str| {
            let request = reader.client.get(reader.url(&path)).header("X-Iceberg-Access-Delegation", value);
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap())
            }
        };
        let got = asked("vended-credentials, sts-please").await;
        assert_error(&got, 400, "BadRequestException");
        assert!(got.1["error"]["message"].as_str().unwrap().contains("\"sts-please\""), "{}", got.1);
        assert_eq!(asked("vended-credentials,remote-signing").await.0, 200, "{path}");
    }

    // With it: one credential for exactly the table's location, also in `config`.
    let (status, loaded) = vended(&reader, reqwest::Method::GET, &format!("{tables}/t"), None).await;
    assert_eq!(status, 200, "{loaded}");
    let credentials = loaded["storage-credentials"].as_array().expect("a list");
    assert_eq!(credentials.len(), 1, "{loaded}");
    assert_eq!(credentials[0]["prefix"], location.as_str());
    let config = &credentials[0]["config"];
    for key in ["s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.endpoint"] {
        assert!(config[key].is_string(), "{key} missing: {config}");
    }
    assert_eq!(loaded["config"]["s3.session-token"], config["s3.session-token"]);
    assert_eq!(config["s3.endpoint"], moto.url.as_str());

    // loadCredentials vends the same way (read-only for this reader).
    let (status, body) = reader.get(&format!("{tables}/t/credentials")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["storage-credentials"][0]["prefix"], location.as_str());
    let last = sts.assume_role_for("reader").pop().unwrap();
    assert_policy_names_exactly(&last, &location, false);

    // A table in a mount with its own warehouse gets credentials for that warehouse.
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["side", "ns"]})).await.0, 200);
    let side = "/namespaces/side%1Fns/tables";
    let (status, created) =
        vended(&writer, reqwest::Method::POST, side, Some(json!({"name": "t", "schema": schema()}))).await;
    assert_eq!(status, 200, "{created}");
    let prefix = created["storage-credentials"][0]["prefix"].as_str().expect("credentials for a mount's table");
    assert!(prefix.starts_with("s3://lake/side-warehouse/ns/t"), "{prefix}");
    let last = sts.assume_role_for("writer").pop().unwrap();
    assert_policy_names_exactly(&last, prefix, true);
    let keys = moto.keys("lake", "side-warehouse/ns/t").await;
    assert!(keys.iter().any(|k| k.ends_with(".metadata.json")), "{keys:?}");
}

/// Vended credentials say when they expire and where to refresh them (the table's
/// loadCredentials route); a conditional load gets 304 while they are good for more
/// than a minute, and the same table anew, with new credentials, once they are not.
#[tokio::test(flavor = "multi_thread")]
async fn vended_credentials_expire_and_a_304_never_outlives_them() {
    let lifetime_s = 64;
    let short = |c: String| c.replace("mode = \"sts\"", &format!("mode = \"sts\"\nduration_secs = {lifetime_s}"));
    let (_moto, sts, server, _mount_dir) = lake(short).await;
    let writer = server.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let now_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let load = |tag: Option<String>| {
        let mut request = writer.client.get(writer.url("/namespaces/db/tables/t"));
        request = request.header("X-Iceberg-Access-Delegation", "vended-credentials");
        if let Some(tag) = tag {
            request = request.header("if-none-match", tag);
        }
        async move {
            let r = request.send().await.unwrap();
            let tag = r.headers().get("etag").map(|t| t.to_str().unwrap().to_string());
            (r.status().as_u16(), tag, r.bytes().await.unwrap())
        }
    };

    let (status, tag, body) = load(None).await;
    assert_eq!(status, 200);
    let loaded: Value = serde_json::from_slice(&body).unwrap();
    let config = &loaded["storage-credentials"][0]["config"];
    let expires: i64 = config["s3.session-token-expires-at-ms"].as_str().expect("an expiry").parse().unwrap();
    let left = expires - now_ms();
    assert!((lifetime_s - 10) * 1000 < left && left <= lifetime_s * 1000, "expires in {left} ms");
    let refresh = loaded["config"]["client.refresh-credentials-endpoint"].as_str().expect("a refresh endpoint");
    assert_eq!(refresh, "v1/catalog/namespaces/db/tables/t/credentials");
    let refreshed = writer.send(reqwest::Method::GET, &format!("/{refresh}"), None).await;
    assert_eq!(refreshed.0, 200, "{}", refreshed.1);
    assert!(refreshed.1["storage-credentials"][0]["config"]["s3.session-token"].is_string(), "{}", refreshed.1);
    let tag = tag.expect("an ETag");
    assert!(tag.ends_with(&format!("-{expires}\"")), "the tag carries the expiry: {tag}");

    let vends = sts.count();
    let (status, again, body) = load(Some(tag.clone())).await;
    assert_eq!((status, again.as_deref(), body.len()), (304, Some(tag.as_str()), 0));
    assert_eq!(sts.count(), vends, "a 304 vends nothing");

    // Within a minute of the expiry the tag is no match: the table comes with new credentials.
    let wait = expires - 60_000 - now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(wait.max(0) as u64 + 500)).await;
    let (status, new_tag, body) = load(Some(tag.clone())).await;
    assert_eq!(status, 200);
    assert!(new_tag.is_some_and(|t| t != tag));
    let loaded: Value = serde_json::from_slice(&body).unwrap();
    let renewed = loaded["storage-credentials"][0]["config"]["s3.session-token-expires-at-ms"].as_str().unwrap();
    assert!(renewed.parse::<i64>().unwrap() > expires);
}

/// The credentials that come with a plan held for its client live no longer than the
/// plan (`[planning] plan_ttl_secs`), whatever the vending duration.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_plans_credentials_expire_with_the_plan() {
    let ttl_s = 30;
    let (_moto, _sts, server, _mount_dir) =
        lake(|c| format!("{c}\n[planning]\nbudget_ms = 0\nplan_ttl_secs = {ttl_s}\n")).await;
    let writer = server.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let (status, submitted) =
        vended(&writer, reqwest::Method::POST, "/namespaces/db/tables/t/plan", Some(json!({}))).await;
    assert_eq!((status, &submitted["status"]), (200, &json!("submitted")), "{submitted}");
    let path = format!("/namespaces/db/tables/t/plan/{}", submitted["plan-id"].as_str().unwrap());
    let completed = loop {
        let (status, fetched) = vended(&writer, reqwest::Method::GET, &path, None).await;
        assert_eq!(status, 200, "{fetched}");
        if fetched["status"] != "submitted" {
            break fetched;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(completed["status"], "completed", "{completed}");
    let config = &completed["storage-credentials"][0]["config"];
    let expires: i64 = config["s3.session-token-expires-at-ms"].as_str().expect("an expiry").parse().unwrap();
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let left = expires - now_ms;
    assert!((ttl_s - 10) * 1000 < left && left <= ttl_s * 1000, "the plan's credentials expire in {left} ms");
}

/// A vend that fails is not an error: the table loads without credentials, the
/// response never carries `null`, and the log says why.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_vend_still_loads_the_table_and_logs_why() {
    // Port 1: nothing listens there (a port freed by the test could be taken by moto).
    let closed = "127.0.0.1:1";
    let unreachable = |config: String| {
        let line = |l: &str| {
            if l.starts_with("sts_endpoint") {
                format!("sts_endpoint = \"http://{closed}\"")
            } else {
                l.into()
            }
        };
        config.lines().map(line).collect::<Vec<_>>().join("\n")
    };
    let (_moto, _sts, server, _mount_dir) = lake(unreachable).await;
    let writer = server.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);

    let request = writer.client.get(writer.url("/namespaces/db/tables/t"));
    let response = request.header("X-Iceberg-Access-Delegation", "vended-credentials").send().await.unwrap();
    assert_eq!(response.status(), 200);
    // STS may answer next time: an answer without the credentials asked for is not one to keep.
    assert!(response.headers().get("etag").is_none(), "{:?}", response.headers());
    let loaded: Value = response.json().await.unwrap();
    assert!(loaded.get("storage-credentials").is_none(), "{loaded}");
    assert!(loaded["metadata"]["location"].is_string());
    let (status, body) = writer.get("/namespaces/db/tables/t/credentials").await;
    assert_eq!((status, &body["storage-credentials"]), (200, &json!([])), "{body}");
    // The audit line (stdout) names the reason too, and may come before the log's.
    let log = server.output_once_it_says("no credentials vended");
    assert!(
        log.contains("no credentials vended") && log.contains("cannot reach STS"),
        "the log does not say why:\n{log}"
    );
}

/// Static vending (a store without STS): keys are handed out only for the prefix the
/// configuration says they are confined to — writers the write keys, readers the read
/// keys — and never for another table; nothing asks STS.
#[tokio::test(flavor = "multi_thread")]
async fn static_keys_are_vended_only_for_their_own_prefix() {
    let scoped = "\n[[storage.vending.static_keys]]\nprefix = \"s3://lake/warehouse/db/t\"\n\
                  access_key_id = \"WRITEKEY\"\nsecret_access_key = \"w\"\n\
                  read_access_key_id = \"READKEY\"\nread_secret_access_key = \"r\"\n";
    let (_moto, sts, server, _mount_dir) = lake(|c| c.replace("mode = \"sts\"", "mode = \"static\"") + scoped).await;
    let writer = server.login("writer", "writer-secret");
    let reader = server.login("reader", "reader-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let table = json!({"name": "t", "schema": schema(), "location": "s3://lake/warehouse/db/t"});
    assert_eq!(writer.post("/namespaces/db/tables", table).await.0, 200);
    for (api, key) in [(&writer, "WRITEKEY"), (&reader, "READKEY")] {
        let (status, body) = api.get("/namespaces/db/tables/t/credentials").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["storage-credentials"][0]["config"]["s3.access-key-id"], key, "{body}");
        assert_eq!(body["storage-credentials"][0]["prefix"], "s3://lake/warehouse/db/t");
        assert!(body["storage-credentials"][0]["config"].get("s3.session-token").is_none());
    }
    // Another table gets none of them: the keys reach only their own prefix.
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "u", "schema": schema()})).await.0, 200);
    let (status, body) = writer.get("/namespaces/db/tables/u/credentials").await;
    assert_eq!((status, &body["storage-credentials"]), (200, &json!([])), "{body}");
    let log = server.output_once_it_says("no static keys are configured");
    assert!(log.contains("no static keys are configured for exactly"), "{log}");
    assert_eq!(sts.count(), 0, "static vending asks no STS");
}

/// A rest mount is somebody else's catalog: this server mints nothing for it, even
/// with vending on; the remote's own answer passes through.
#[tokio::test(flavor = "multi_thread")]
async fn a_rest_mount_gets_no_credentials_from_this_server() {
    let remote = Server::start("[auth]\nanonymous = true\n");
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    assert_eq!(remote.post("/namespaces/sales/tables", json!({"name": "orders", "schema": schema()})).await.0, 200);
    let mount = format!("\n[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"lake\"\n", remote.base);
    let (_moto, sts, server, _mount_dir) = lake(|c| c + &mount).await;
    let writer = server.login("writer", "writer-secret");
    let (status, loaded) =
        vended(&writer, reqwest::Method::GET, "/namespaces/partner%1Fsales/tables/orders", None).await;
    assert_eq!(status, 200, "{loaded}");
    assert!(loaded.get("storage-credentials").is_none(), "{loaded}");
    assert!(loaded["config"].get("s3.session-token").is_none(), "{loaded}");
    assert_eq!(sts.count(), 0, "nothing was vended for a remote's table");
}

/// Configured prefixes replace the default (every managed warehouse): a table in a
/// warehouse outside them gets no credentials, and the log says so.
#[tokio::test(flavor = "multi_thread")]
async fn prefixes_bound_what_is_vended() {
    let only_root = |c: String| c.replace("mode = \"sts\"", "mode = \"sts\"\nprefixes = [\"s3://lake/warehouse\"]");
    let (_moto, sts, server, _mount_dir) = lake(only_root).await;
    let writer = server.login("writer", "writer-secret");
    for ns in [json!(["db"]), json!(["side", "ns"])] {
        assert_eq!(writer.post("/namespaces", json!({"namespace": ns})).await.0, 200);
    }
    let table = Some(json!({"name": "t", "schema": schema()}));
    let (status, inside) = vended(&writer, reqwest::Method::POST, "/namespaces/db/tables", table.clone()).await;
    assert_eq!(status, 200, "{inside}");
    assert!(inside["storage-credentials"][0]["prefix"].is_string(), "{inside}");
    let (status, outside) = vended(&writer, reqwest::Method::POST, "/namespaces/side%1Fns/tables", table).await;
    assert_eq!(status, 200, "{outside}");
    assert!(outside.get("storage-credentials").is_none(), "{outside}");
    assert_eq!(sts.assume_role_for("writer").len(), 1, "only the table inside the prefixes was vended");
    let log = server.output_once_it_says("outside every prefix");
    assert!(log.contains("outside every prefix"), "{log}");
}

/// A mount whose warehouse lives in another S3-compatible store (`[mount.<name>.s3]`):
/// its files go there, not to `[storage.s3]`, and clients are told that store's endpoint
/// with the credentials vended for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_mount_with_its_own_store_writes_and_vends_there() {
    let other = Moto::start("lake").await;
    let dir = tempfile::tempdir().unwrap();
    let mount = format!(
        "\n[mount.own]\nbackend = \"native\"\ncatalog_url = \"redb://{}/own.redb\"\n\
         warehouse_location = \"s3://lake/own-warehouse\"\nowner = \"lake\"\n\
         [mount.own.s3]\nendpoint = \"{}\"\nregion = \"eu-west-1\"\npath_style = true\n\
         access_key_id = \"AKIAOTHERSTORE\"\nsecret_access_key = \"other-secret\"\n",
        dir.path().display(),
        other.url
    );
    let (moto, _sts, server, _mount_dir) = lake(|c| c + &mount).await;
    let writer = server.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["own", "db"]})).await.0, 200);
    let (status, body) = writer.post("/namespaces/own%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{body}");
    assert!(!other.keys("lake", "own-warehouse/").await.is_empty(), "the metadata is in the mount's store");
    assert!(moto.keys("lake", "own-warehouse/").await.is_empty(), "and not in [storage.s3]'s");

    let (status, body) = writer.get("/namespaces/own%1Fdb/tables/t/credentials").await;
    assert_eq!(status, 200, "{body}");
    let config = &body["storage-credentials"][0]["config"];
    assert_eq!(config["s3.endpoint"], other.url.as_str(), "{body}");
    assert_eq!(config["s3.region"], "eu-west-1", "{body}");
    assert!(config["s3.session-token"].as_str().is_some_and(|t| !t.is_empty()), "STS of that store: {body}");

    // A table of the root catalog is still told the server's store.
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let (_, body) = writer.get("/namespaces/db/tables/t/credentials").await;
    assert_ne!(body["storage-credentials"][0]["config"]["s3.endpoint"], other.url.as_str(), "{body}");
}

/// A vend is audited by default: who, which table, the scope issued (prefix and
/// access) and the rule that gave that access — never a key or token; a refused vend
/// says why.
#[tokio::test(flavor = "multi_thread")]
async fn vends_are_audited_with_their_scope_and_never_a_secret() {
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("audit.jsonl");
    let audit = format!("\n[audit]\nfile = \"{}\"\n", file.display());
    let edit = |c: String| {
        c.replace("[storage.vending]", &format!("{audit}[storage.vending]"))
            .replace("mode = \"sts\"", "mode = \"sts\"\nprefixes = [\"s3://lake/warehouse\"]")
    };
    let (_moto, _sts, server, _mount_dir) = lake(edit).await;
    let writer = server.login("writer", "writer-secret");
    let reader = server.login("reader", "reader-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(writer.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let (status, loaded) = vended(&writer, reqwest::Method::GET, "/namespaces/db/tables/t", None).await;
    assert_eq!(status, 200, "{loaded}");
    let (status, credentials) = reader.get("/namespaces/db/tables/t/credentials").await;
    assert_eq!(status, 200, "{credentials}");
    let secrets: Vec<String> =
        [&loaded["storage-credentials"][0]["config"], &credentials["storage-credentials"][0]["config"]]
            .iter()
            .flat_map(|c| ["s3.secret-access-key", "s3.session-token"].map(|k| c[k].as_str().unwrap().to_string()))
            .collect();

    let text = std::fs::read_to_string(&file).unwrap();
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "a vended secret is in the audit log:\n{text}");
    }
    let vends: Vec<Value> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["action"] == "vend").collect();
    assert_eq!(vends.len(), 2, "{text}");
    let location = loaded["metadata"]["location"].as_str().unwrap();
    assert!(location.starts_with("s3://lake/warehouse/db/t-"), "{location}");
    assert_eq!(vends[0]["principal_name"], "writer");
    assert_eq!(vends[0]["resource"], "table db.t");
    assert_eq!(vends[0]["route"], "/v1/catalog/namespaces/{namespace}/tables/{table}");
    assert_eq!(vends[0]["decision"], "allowed");
    assert_eq!(vends[0]["vend"], json!({"issued": {"prefix": location, "access": "read-write"}}));
    assert_eq!(vends[0]["rule"], json!({"kind": "owner", "tenant": "lake", "role": "writer"}));
    assert_eq!(vends[1]["principal_name"], "reader");
    assert_eq!(vends[1]["route"], "/v1/catalog/namespaces/{namespace}/tables/{table}/credentials");
    assert_eq!(vends[1]["vend"], json!({"issued": {"prefix": location, "access": "read"}}));
    assert!(vends[1]["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{}", vends[1]);

    // Outside every vending prefix: refused, and the line says why.
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["side", "ns"]})).await.0, 200);
    let table = Some(json!({"name": "t", "schema": schema()}));
    let (status, outside) = vended(&writer, reqwest::Method::POST, "/namespaces/side%1Fns/tables", table).await;
    assert_eq!(status, 200, "{outside}");
    let text = std::fs::read_to_string(&file).unwrap();
    let refused: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!((&refused["action"], &refused["decision"]), (&json!("vend"), &json!("denied")), "{refused}");
    assert_eq!((&refused["mount"], &refused["resource"]), (&json!("side"), &json!("table side.ns.t")));
    let reason = refused["vend"]["refused"]["reason"].as_str().unwrap();
    assert!(reason.contains("outside every prefix"), "{refused}");
}
