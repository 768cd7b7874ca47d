//! Remote signing against moto with signature checks on: moto accepts only requests
//! signed with keys it issued (the server's), so a client holding no keys reaches the
//! bucket only through what the catalog signed. Every attack a writer of one table (or
//! of another tenant) can try on the signer is refused with 403 and audited.

use crate::support;

use std::path::Path;

use serde_json::{json, Value};
use support::moto::Moto;
use support::python::{run_pytest_in, venv, venv_with};
use support::{assert_error, hash_secret, schema, Api, Server};

/// A server whose warehouse is on moto (bucket `lake`), signing unasked with `keys`;
/// the mount `side` has a store of its own that signs only when asked. Audited to
/// `audit`.
fn config(moto: &Moto, keys: &(String, String), audit: &Path, mount_dir: &Path) -> String {
    let store = |unasked: bool| {
        format!(
            "endpoint = \"{}\"\nregion = \"us-east-1\"\npath_style = true\naccess_key_id = \"{}\"\n\
             secret_access_key = \"{}\"\nremote_signing = {unasked}\n",
            moto.url, keys.0, keys.1
        )
    };
    format!(
        r#"
[storage]
warehouse_location = "s3://lake/warehouse"

[storage.s3]
{root_store}
[audit]
file = "{audit}"

[auth.principals.writer]
tenant = "lake"
role = "writer"
secret_hash = "{writer}"

[auth.principals.reader]
tenant = "lake"
role = "reader"
secret_hash = "{reader}"

[auth.principals.evil]
tenant = "evil"
role = "writer"
secret_hash = "{evil}"

[mount.side]
backend = "native"
catalog_url = "redb://{mount}/side.redb"
warehouse_location = "s3://lake/side"
owner = "lake"

[mount.side.s3]
{side_store}"#,
        root_store = store(true),
        side_store = store(false),
        audit = audit.display(),
        writer = hash_secret("writer-secret"),
        reader = hash_secret("reader-secret"),
        evil = hash_secret("evil-secret"),
        mount = mount_dir.display(),
    )
}

/// moto with the bucket `lake` and the server's IAM user; a server on it; its audit
/// file. moto checks signatures from here on.
async fn signed_lake() -> (Moto, Server, tempfile::TempDir) {
    let moto = Moto::start("lake").await;
    let keys = moto.s3_user("rustberg").await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&config(&moto, &keys, &dir.path().join("audit.jsonl"), dir.path()));
    moto.check_signatures(true).await;
    (moto, server, dir)
}

fn audit_lines(dir: &tempfile::TempDir) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Asks the server to sign `method uri` for the table at `path` (`/namespaces/…/tables/t`).
async fn sign(api: &Api, path: &str, method: &str, uri: &str, headers: Value, body: Option<&str>) -> (u16, Value) {
    let mut request = json!({ "region": "us-east-1", "uri": uri, "method": method, "headers": headers });
    if let Some(body) = body {
        request["body"] = json!(body);
    }
    api.post(&format!("{path}/sign"), request).await
}

/// Sends `method uri` to the store with the headers the server signed it with.
async fn send_signed(signed: &Value, method: &str, uri: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    let mut request = reqwest::Client::new().request(method.parse().unwrap(), uri).body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    for (name, values) in signed["headers"].as_object().unwrap() {
        request = request.header(name, values[0].as_str().unwrap());
    }
    request.send().await.unwrap().status().as_u16()
}

/// The table's folder as a path-style URL at moto.
fn object_url(moto: &Moto, location: &str, file: &str) -> String {
    format!("{}/{}/{file}", moto.url, location.strip_prefix("s3://").unwrap())
}

/// Loads come with signing where the store signs unasked, and where the client asks;
/// the signatures the server hands out work at the store and only for the request
/// signed; everything outside the table, or beyond the caller's access, is refused
/// with 403, audited, and never reaches the store.
#[tokio::test(flavor = "multi_thread")]
async fn only_the_tables_own_objects_are_signed_and_only_as_the_caller_may() {
    let (moto, server, dir) = signed_lake().await;
    let writer = server.login("writer", "writer-secret");
    let reader = server.login("reader", "reader-secret");
    let evil = server.login("evil", "evil-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for name in ["t", "other"] {
        let (status, created) = writer.post("/namespaces/db/tables", json!({"name": name, "schema": schema()})).await;
        assert_eq!(status, 200, "{created}");
    }

    // A plain load (no header): this store signs unasked.
    let (status, loaded) = writer.get("/namespaces/db/tables/t").await;
    assert_eq!(status, 200, "{loaded}");
    let config = &loaded["config"];
    assert_eq!(config["s3.remote-signing-enabled"], "true", "{loaded}");
    assert_eq!(config["signer.uri"], server.base.as_str());
    assert_eq!(config["signer.endpoint"], "v1/catalog/namespaces/db/tables/t/sign");
    assert_eq!(config["s3.signer.endpoint"], config["signer.endpoint"]);
    assert_eq!(config["s3.endpoint"], moto.url.as_str());
    assert_eq!(loaded["remote-signing-config"], json!({"properties": {}, "headers": {}}));
    assert!(config.get("s3.access-key-id").is_none() && loaded.get("storage-credentials").is_none(), "{loaded}");
    let (_, config_body) = writer.send(reqwest::Method::GET, "/v1/config", None).await;
    let sign_endpoint = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign";
    assert!(config_body["endpoints"].as_array().unwrap().contains(&json!(sign_endpoint)), "{config_body}");

    let location = loaded["metadata"]["location"].as_str().unwrap().to_string();
    let (_, other) = writer.get("/namespaces/db/tables/other").await;
    let other_location = other["metadata"]["location"].as_str().unwrap().to_string();
    let table = "/namespaces/db/tables/t";
    let file = object_url(&moto, &location, "data/f.parquet");

    // moto checks signatures: an unsigned write is refused there (it answers 500 to a
    // request with no Authorization at all).
    let unsigned = reqwest::Client::new().put(&file).body("x").send().await.unwrap().status();
    assert!(!unsigned.is_success(), "{unsigned}");

    // The writer's PUT of a file of its table, signed, lands; the same signature sent
    // for another object, or with another body hash, does not.
    let (status, signed) = sign(&writer, table, "PUT", &file, json!({}), None).await;
    assert_eq!(status, 200, "{signed}");
    assert_eq!(signed["uri"], file.as_str());
    assert!(signed["headers"]["authorization"][0].as_str().unwrap().starts_with("AWS4-HMAC-SHA256"), "{signed}");
    assert_eq!(send_signed(&signed, "PUT", &file, &[], "parquet bytes").await, 200);
    let elsewhere = object_url(&moto, &other_location, "data/f.parquet");
    assert_eq!(send_signed(&signed, "PUT", &elsewhere, &[], "overwrite").await, 403);

    // The reader's GET is signed and reads the file; its writes are refused.
    let (status, signed) = sign(&reader, table, "GET", &file, json!({}), None).await;
    assert_eq!(status, 200, "{signed}");
    let got = reqwest::Client::new().get(&file).headers(header_map(&signed)).send().await.unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.text().await.unwrap(), "parquet bytes");
    for method in ["PUT", "DELETE", "POST"] {
        let uri = if method == "POST" { format!("{file}?uploads") } else { file.clone() };
        let refused = sign(&reader, table, method, &uri, json!({}), None).await;
        assert_error(&refused, 403, "ForbiddenException");
    }

    // Listing: a prefix inside the table only.
    let bucket = format!("{}/lake", moto.url);
    let key = location.strip_prefix("s3://lake/").unwrap();
    // Encoded as the SDKs encode a query (moto checks the query as sent).
    let inside = format!("{bucket}?list-type=2&prefix={}", key.replace('/', "%2F") + "%2Fdata%2F");
    let (status, signed) = sign(&reader, table, "GET", &inside, json!({}), None).await;
    assert_eq!(status, 200, "{signed}");
    let listed = reqwest::Client::new().get(&inside).headers(header_map(&signed)).send().await.unwrap();
    let listed = (listed.status().as_u16(), listed.text().await.unwrap());
    assert_eq!(listed.0, 200, "{}", listed.1);
    assert!(listed.1.contains("f.parquet"), "{}", listed.1);

    // Everything else a writer of this table might try.
    let other_key = other_location.strip_prefix("s3://lake/").unwrap();
    let sibling = key.rsplit_once('-').unwrap().0; // `…/t`, which `…/t-<uuid>` and others share
    let attempts = [
        ("GET", object_url(&moto, &other_location, "metadata/x.json")),
        ("PUT", object_url(&moto, &location, "../other/data/f.parquet")),
        ("PUT", object_url(&moto, &location, "%2e%2e/%2E%2E/x")),
        ("GET", format!("{}/lake/{key}%2F..%2F..%2F{other_key}/f", moto.url)),
        ("GET", format!("{}/elsewhere/{key}/data/f.parquet", moto.url)),
        ("GET", format!("http://127.0.0.1:1/lake/{key}/data/f.parquet")),
        ("GET", format!("{bucket}?list-type=2")),
        ("GET", format!("{bucket}?list-type=2&prefix={sibling}")),
        ("GET", format!("{bucket}?list-type=2&prefix={other_key}/")),
        ("GET", format!("{bucket}?policy")),
        ("PUT", format!("{}/lake", moto.url)),
        ("GET", format!("{file}?acl")),
    ];
    for (method, uri) in &attempts {
        let refused = sign(&writer, table, method, uri, json!({}), None).await;
        assert_error(&refused, 403, "ForbiddenException");
    }
    // A copy reads its source with the server's keys: from this table only.
    let copy = json!({"x-amz-copy-source": [format!("/lake/{other_key}/metadata/x.json")]});
    assert_error(&sign(&writer, table, "PUT", &file, copy, None).await, 403, "ForbiddenException");
    // DeleteObjects: every key in the body, which a checksum the signature covers binds.
    let body = format!("<Delete><Object><Key>{other_key}/data/f.parquet</Key></Object></Delete>");
    let md5 = json!({"Content-MD5": [content_md5(&body)]});
    let refused = sign(&writer, table, "POST", &format!("{bucket}?delete"), md5, Some(&body)).await;
    assert_error(&refused, 403, "ForbiddenException");
    let body = format!("<Delete><Object><Key>{key}/data/f.parquet</Key></Object></Delete>");
    let refused = sign(&writer, table, "POST", &format!("{bucket}?delete"), json!({}), Some(&body)).await;
    assert_error(&refused, 403, "ForbiddenException");
    let md5 = json!({"Content-MD5": [content_md5(&body)]});
    let (status, signed) = sign(&writer, table, "POST", &format!("{bucket}?delete"), md5, Some(&body)).await;
    assert_eq!(status, 200, "{signed}");

    // Another tenant's writer cannot see the table at all.
    let refused = sign(&evil, table, "GET", &file, json!({}), None).await;
    assert_error(&refused, 404, "NoSuchTableException");

    // Each refusal is in the audit log: who, which table, what was asked and why.
    let lines = audit_lines(&dir);
    let refusals: Vec<&Value> = lines.iter().filter(|l| l["action"] == "sign" && l["decision"] == "denied").collect();
    assert_eq!(refusals.len(), 3 + attempts.len() + 3, "{refusals:#?}");
    assert!(refusals.iter().all(|l| l["resource"] == "table db.t" && l["mount"] == "root"), "{refusals:#?}");
    let by_reader: Vec<&&Value> = refusals.iter().filter(|l| l["principal_name"] == "reader").collect();
    assert_eq!(by_reader.len(), 3);
    assert!(by_reader[0]["sign"]["refused"]["reason"].as_str().unwrap().contains("may only read"), "{by_reader:#?}");
    let traversal = refusals.iter().find(|l| l["sign"]["refused"]["uri"].as_str().unwrap().contains("%2e%2e")).unwrap();
    assert!(traversal["sign"]["refused"]["reason"].as_str().unwrap().contains(".. path segment"), "{traversal}");
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(!text.contains("AWS4-HMAC-SHA256"), "a signature is in the audit log");

    // Signing is counted.
    let metrics = reqwest::get(format!("{}/metrics", server.base)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("rustberg_remote_signs_total{outcome=\"refused\"}"), "{metrics}");
}

fn header_map(signed: &Value) -> reqwest::header::HeaderMap {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, values) in signed["headers"].as_object().unwrap() {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap();
        map.insert(name, values[0].as_str().unwrap().parse().unwrap());
    }
    map
}

fn content_md5(body: &str) -> String {
    use base64::Engine as _;
    use md5::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body.as_bytes()))
}

/// A store that does not sign unasked offers signing only to a client that asks; a
/// client asking for vended credentials where none are vended gets nothing; the tag of
/// a load names what was delegated, so a 304 never hands one client's answer to a
/// load that asked for something else.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_signs_unasked_only_where_configured() {
    let (_moto, server, _dir) = signed_lake().await;
    let writer = server.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["side", "db"]})).await.0, 200);
    let created = writer.post("/namespaces/side%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    assert!(created.1["config"].get("s3.remote-signing-enabled").is_none(), "{}", created.1);

    let load = |delegation: Option<&'static str>| {
        let mut request = writer.client.get(writer.url("/namespaces/side%1Fdb/tables/t"));
        if let Some(delegation) = delegation {
            request = request.header("X-Iceberg-Access-Delegation", delegation);
        }
        async move {
            let response = request.send().await.unwrap();
            let etag = response.headers()["etag"].to_str().unwrap().to_string();
            (etag, response.json::<Value>().await.unwrap())
        }
    };
    let (plain_tag, plain) = load(None).await;
    assert!(plain["config"].get("s3.remote-signing-enabled").is_none(), "{plain}");
    let (vended_tag, vended) = load(Some("vended-credentials")).await;
    assert!(vended["config"].get("s3.remote-signing-enabled").is_none(), "{vended}");
    let (signing_tag, signing) = load(Some("vended-credentials,remote-signing")).await;
    assert_eq!(signing["config"]["s3.remote-signing-enabled"], "true", "{signing}");
    assert_eq!(signing["config"]["signer.endpoint"], "v1/catalog/namespaces/side%1Fdb/tables/t/sign");
    assert!(plain_tag != signing_tag && vended_tag != signing_tag);

    // A plain load's tag does not get the signing answer's 304, nor the other way round.
    let conditional = writer
        .client
        .get(writer.url("/namespaces/side%1Fdb/tables/t"))
        .header("If-None-Match", &plain_tag)
        .header("X-Iceberg-Access-Delegation", "remote-signing")
        .send()
        .await
        .unwrap();
    assert_eq!(conditional.status().as_u16(), 200);
}

/// A rest mount's remote whose loads turn signing on is pointed at this server's route
/// for the mount's table, never at the remote's signer (which would get this server's
/// token) nor at this server's root table of the same name. That route asks the
/// remote's own signer with the mount's credential: moto takes what it signed. What the
/// caller may do is decided here (a reader gets no write signed), what the remote's
/// storage holds by the remote (another table's object is refused, with its 403).
#[tokio::test(flavor = "multi_thread")]
async fn a_rest_mount_that_signs_asks_the_remotes_signer() {
    let (moto, remote, _dir) = signed_lake().await;
    let writer = remote.login("writer", "writer-secret");
    assert_eq!(writer.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for t in ["t", "other"] {
        assert_eq!(writer.post("/namespaces/db/tables", json!({"name": t, "schema": schema()})).await.0, 200);
    }
    let token = support::token_for(&remote.base, "writer", "writer-secret");
    let reader = format!(
        "[auth.principals.reader]\ntenant = \"default\"\nrole = \"reader\"\nsecret_hash = \"{}\"\n",
        support::hash_secret("reader-secret")
    );
    let mount = format!(
        "{reader}[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\n\
         token_env = \"PARTNER_TOKEN\"\nread_only = false\n",
        remote.base
    );
    let server =
        Server::try_start_with_env(&mount, &[("PARTNER_TOKEN", token.as_str())]).unwrap_or_else(|out| panic!("{out}"));
    let (status, loaded) = server.get("/namespaces/partner%1Fdb/tables/t").await;
    assert_eq!(status, 200, "{loaded}");
    let config = &loaded["config"];
    assert_eq!(config["s3.remote-signing-enabled"], "true", "{loaded}");
    assert_eq!(config["signer.uri"], server.base.as_str(), "{loaded}");
    assert_eq!(config["s3.signer.uri"], server.base.as_str(), "{loaded}");
    let endpoint = config["signer.endpoint"].as_str().unwrap();
    let route = endpoint.strip_prefix("v1/catalog").unwrap();
    assert!(route.starts_with("/namespaces/partner%1Fdb/tables/t/sign?remote-signer="), "{loaded}");
    let (_, config_body) = server.send(reqwest::Method::GET, "/v1/config?warehouse=partner", None).await;
    let sign_endpoint = json!("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign");
    assert!(!config_body["endpoints"].as_array().unwrap().contains(&sign_endpoint), "the host signs nothing itself");

    // Signed by the remote, for the mount: moto takes the write and the read.
    let location = loaded["metadata"]["location"].as_str().unwrap();
    let uri = object_url(&moto, location, "data/f.parquet");
    let ask = |method: &str| json!({"region": "us-east-1", "uri": uri, "method": method, "headers": {}});
    let put = server.post(route, ask("PUT")).await;
    assert_eq!(put.0, 200, "{}", put.1);
    assert_eq!(send_signed(&put.1, "PUT", &uri, &[], "data").await, 200, "moto takes the remote's signature");
    let get = server.post(route, ask("GET")).await;
    assert_eq!(send_signed(&get.1, "GET", &uri, &[], "").await, 200);
    // Without the route's token (a client that dropped the query), the table's load names the signer.
    let plain = sign(&server, "/namespaces/partner%1Fdb/tables/t", "GET", &uri, json!({}), None).await;
    assert_eq!(plain.0, 200, "{}", plain.1);

    // A reader here gets no write signed, whatever the mount's credential may do there.
    let reading = server.login("reader", "reader-secret");
    let refused = reading.post(route, ask("PUT")).await;
    assert_error(&refused, 403, "ForbiddenException");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("partner"), "{}", refused.1);
    assert_eq!(reading.post(route, ask("GET")).await.0, 200);
    // Another table's object: the remote's signer refuses it, and its refusal is kept.
    let other = loaded_location(&remote, "/namespaces/db/tables/other").await;
    let stray =
        server.post(route, json!({"uri": object_url(&moto, &other, "data/x"), "method": "PUT", "headers": {}})).await;
    assert_error(&stray, 403, "ForbiddenException");
    // A token bound to another table is no token: the route falls back to its own table's.
    let (_, other_loaded) = server.get("/namespaces/partner%1Fdb/tables/other").await;
    let other_route = other_loaded["config"]["signer.endpoint"].as_str().unwrap().strip_prefix("v1/catalog").unwrap();
    let token = other_route.split_once('?').unwrap().1;
    let swapped = format!("/namespaces/partner%1Fdb/tables/t/sign?{token}");
    let stray = server
        .post(&swapped, json!({"uri": object_url(&moto, &other, "data/x"), "method": "PUT", "headers": {}}))
        .await;
    assert_error(&stray, 403, "ForbiddenException");
}

/// The location of the table at `path` on `api`.
async fn loaded_location(api: &Api, path: &str) -> String {
    api.get(path).await.1["metadata"]["location"].as_str().unwrap().to_string()
}

/// PyIceberg (its S3 REST signer, over fsspec) and Spark (Java's S3FileIO) write and
/// read tables on moto holding no S3 keys: moto takes only what the catalog signed.
#[tokio::test(flavor = "multi_thread")]
async fn pyiceberg_and_spark_write_and_read_with_only_signatures() {
    let (moto, server, dir) = signed_lake().await;
    let base = server.base.clone();
    let env = vec![
        ("RUSTBERG_URL".to_string(), base.clone()),
        ("WRITER_CREDENTIAL".to_string(), "writer:writer-secret".to_string()),
        ("READER_CREDENTIAL".to_string(), "reader:reader-secret".to_string()),
    ];
    let python_env = env.clone();
    tokio::task::spawn_blocking(move || {
        // Its own venv: PyIceberg signs only through fsspec's s3fs, whose botocore pin
        // differs from the main venv's.
        let venv = venv_with(venv().parent().unwrap().join("s3fs-venv"), "requirements-s3fs.txt");
        let mut env: Vec<(&str, &str)> = python_env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        // PyIceberg 0.12 registers its signer on the s3fs client its FileIO made first; a
        // scan's worker threads sometimes get a client without it, whose requests go out
        // unsigned (seen: a HeadObject the signer never saw, refused by moto). One worker.
        env.push(("PYICEBERG_MAX_WORKERS", "1"));
        run_pytest_in(&venv, "test_remote_signing.py", &env, 300);
    })
    .await
    .unwrap();
    tokio::task::spawn_blocking(move || {
        let (venv, jars) = support::spark::spark();
        let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env.push(("SPARK_JARS", jars.as_str()));
        run_pytest_in(&venv, "test_spark_signing.py", &env, 900);
    })
    .await
    .unwrap();

    moto.check_signatures(false).await;
    for table in ["warehouse/lake/signed", "warehouse/sparky/events"] {
        let keys = moto.keys("lake", table).await;
        assert!(keys.iter().any(|k| k.ends_with(".parquet")), "{table}: {keys:?}");
        assert!(keys.iter().any(|k| k.ends_with(".metadata.json")), "{table}: {keys:?}");
    }
    let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    let signed: f64 = metrics
        .lines()
        .find(|l| l.starts_with("rustberg_remote_signs_total{outcome=\"signed\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_default();
    assert!(signed >= 10.0, "{metrics}");
    // The reader's refused write is in the audit log.
    let refused: Vec<Value> = audit_lines(&dir)
        .into_iter()
        .filter(|l| l["action"] == "sign" && l["decision"] == "denied" && l["principal_name"] == "reader")
        .collect();
    assert!(!refused.is_empty() && refused.iter().all(|l| l["sign"]["refused"]["method"] != "GET"), "{refused:#?}");
}
