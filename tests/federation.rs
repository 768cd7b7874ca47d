//! Federation with native mounts: a test for each rule of the mount table. (The
//! behaviour every kind of mount shares is `tests/behaviour.rs`.)

use crate::support;

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};
use support::{assert_error, components_dir, hash_secret, namespace_names, postgres_database, schema, Server};

fn lake_config(dir: &std::path::Path, pg: Option<&str>) -> String {
    let mut toml = format!(
        "[mount.lake]\nbackend = \"native\"\ncatalog_url = \"redb://{}/lake.redb\"\nowner = \"default\"\n",
        dir.display()
    );
    if let Some(url) = pg {
        toml.push_str(&format!("[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{url}\"\nowner = \"default\"\n"));
    }
    toml
}

#[tokio::test]
async fn postgres_mount_keeps_its_state_across_restarts() {
    let Some(pg) = postgres_database().await else { return };
    let toml = format!("[mount.pg]\nbackend = \"native\"\ncatalog_url = \"{pg}\"\nowner = \"default\"\n");
    let s = Server::start(&toml);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["pg", "kept"]})).await.0, 200);
    let s = s.restart(&toml).unwrap();
    assert_eq!(s.get("/namespaces?parent=pg").await.1["namespaces"], json!([["pg", "kept"]]));
}

#[tokio::test]
async fn mount_roots_are_synthetic_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&lake_config(dir.path(), None));
    assert_eq!(s.get("/namespaces/lake").await, (200, json!({"namespace": ["lake"], "properties": {}})));
    assert_eq!(s.head("/namespaces/lake").await, 204);
    assert_eq!(s.get("/namespaces/lake/tables").await, (200, json!({"identifiers": []})));
    assert_error(&s.post("/namespaces", json!({"namespace": ["lake"]})).await, 409, "AlreadyExistsException");
    let direct = s.post("/namespaces/lake/tables", json!({"name": "orders", "schema": schema()})).await;
    assert_error(&direct, 400, "BadRequestException");
    assert!(direct.1["error"]["message"].as_str().unwrap().contains("holds namespaces, not tables"), "{}", direct.1);
    assert_error(&s.get("/namespaces/lake/tables/orders").await, 400, "BadRequestException");
    assert_error(&s.delete("/namespaces/lake").await, 400, "BadRequestException");
    assert_error(
        &s.post("/namespaces/lake/properties", json!({"updates": {"a": "b"}})).await,
        400,
        "BadRequestException",
    );
    assert_eq!(s.get("/namespaces/lake").await.0, 200, "still there");
}

#[tokio::test]
async fn the_top_level_is_mounts_then_root_namespaces_paged_across_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::new();
    for m in ["m1", "m2", "m3"] {
        toml.push_str(&format!(
            "[mount.{m}]\nbackend = \"native\"\ncatalog_url = \"redb://{}/{m}.redb\"\nowner = \"default\"\n",
            dir.path().display()
        ));
    }
    let s = Server::start(&toml);
    for r in ["r1", "r2", "r3", "r4"] {
        assert_eq!(s.post("/namespaces", json!({"namespace": [r]})).await.0, 200);
    }
    let all: Vec<&str> = vec!["m1", "m2", "m3", "r1", "r2", "r3", "r4"];
    let flat = |b: &Value| namespace_names(b).into_iter().map(|n| n[0].clone()).collect::<Vec<_>>();
    assert_eq!(flat(&s.get("/namespaces").await.1), all);
    for size in [1, 2, 3, 4, 7, 10] {
        let (mut seen, mut token) = (vec![], String::new());
        loop {
            let page = s.get(&format!("/namespaces?pageToken={token}&pageSize={size}")).await.1;
            assert!(namespace_names(&page).len() <= size);
            seen.extend(flat(&page));
            match page["next-page-token"].as_str() {
                Some(next) => token = next.to_string(),
                None => break,
            }
        }
        assert_eq!(seen, all, "page size {size}: nothing twice, nothing missing");
    }
    // A token from elsewhere restarts rather than seeks.
    assert_eq!(flat(&s.get("/namespaces?pageToken=Zm9v.YmFy&pageSize=2").await.1), ["m1", "m2"]);
}

#[tokio::test]
async fn the_mount_owner_decides_for_the_whole_mount() {
    let dir = tempfile::tempdir().unwrap();
    let hash = hash_secret("pw");
    let toml = format!(
        "[mount.acme_lake]\nbackend = \"native\"\ncatalog_url = \"redb://{}/a.redb\"\nowner = \"acme\"\n\
         [auth.principals.root]\ntenant = \"ops\"\nrole = \"admin\"\nserver_admin = true\nsecret_hash = \"{hash}\"\n\
         [auth.principals.ann]\ntenant = \"acme\"\nrole = \"writer\"\nsecret_hash = \"{hash}\"\n\
         [auth.principals.bob]\ntenant = \"globex\"\nrole = \"admin\"\nsecret_hash = \"{hash}\"\n",
        dir.path().display()
    );
    let s = Server::start(&toml);
    let (ann, bob) = (s.login("ann", "pw"), s.login("bob", "pw"));
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["acme_lake", "raw"]})).await.0, 200);
    assert_eq!(ann.get("/namespaces").await.1["namespaces"], json!([["acme_lake"]]));
    assert_eq!(bob.get("/namespaces").await.1["namespaces"], json!([]));
    assert_eq!(bob.get("/namespaces/acme_lake").await.0, 404);
    assert_eq!(bob.get("/namespaces/acme_lake%1Fraw").await.0, 404);
    assert_eq!(bob.post("/namespaces", json!({"namespace": ["acme_lake", "mine"]})).await.0, 404);
}

#[tokio::test]
async fn read_only_mounts_and_capability_intersection() {
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("redb://{}/lake.redb", dir.path().display());
    let writable = format!("[mount.lake]\nbackend = \"native\"\ncatalog_url = \"{lake}\"\nowner = \"default\"\n");
    let s = Server::start(&writable);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["lake", "db"]})).await.0, 200);
    let config = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json::<Value>().await.unwrap();
    let endpoints: BTreeSet<String> = serde_json::from_value(config["endpoints"].clone()).unwrap();
    assert!(endpoints.contains("POST /v1/{prefix}/namespaces/{namespace}/tables"));

    let s = s.restart(&format!("{writable}read_only = true\n")).unwrap();
    let config = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json::<Value>().await.unwrap();
    let endpoints: BTreeSet<String> = serde_json::from_value(config["endpoints"].clone()).unwrap();
    assert!(!endpoints.is_empty());
    // Reads, reports, scan planning, signing and the events query (GET and HEAD only,
    // for a read-only mount) change nothing in a catalog.
    let reads = ["/metrics", "/plan", "/plan/{plan-id}", "/tasks", "/sign", "/events"];
    for e in &endpoints {
        let read = e.starts_with("GET ") || e.starts_with("HEAD ") || reads.iter().any(|r| e.ends_with(r));
        assert!(read, "mutating endpoint {e}");
    }
    assert!(endpoints.contains("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"));
    // A read-only native mount keeps planning.
    assert!(endpoints.contains("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"));
    // Writes under the read-only mount: 501 naming the mount. Reads work. The root still writes.
    let refused = s.post("/namespaces", json!({"namespace": ["lake", "new"]})).await;
    assert_error(&refused, 501, "UnsupportedOperationException");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("mount `lake`"));
    assert_error(&s.delete("/namespaces/lake%1Fdb").await, 501, "UnsupportedOperationException");
    assert_error(
        &s.post("/namespaces/lake%1Fdb/tables", json!({"name": "t", "schema": schema()})).await,
        501,
        "UnsupportedOperationException",
    );
    assert_eq!(s.get("/namespaces/lake%1Fdb").await.0, 200);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["rooted"]})).await.0, 200);
}

#[tokio::test]
async fn renames_never_cross_a_mount() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&lake_config(dir.path(), None));
    for ns in [json!(["lake", "db"]), json!(["home"])] {
        assert_eq!(s.post("/namespaces", json!({"namespace": ns})).await.0, 200);
    }
    assert_eq!(s.post("/namespaces/lake%1Fdb/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let across = json!({"source": {"namespace": ["lake", "db"], "name": "t"}, "destination": {"namespace": ["home"], "name": "t"}});
    let got = s.send(Method::POST, "/v1/catalog/tables/rename", Some(across)).await;
    assert_error(&got, 501, "UnsupportedOperationException");
    let message = got.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("mount `lake`") && message.contains("root catalog"), "names both sides: {message}");
    assert_eq!(s.head("/namespaces/lake%1Fdb/tables/t").await, 204, "nothing moved");
}

#[tokio::test]
async fn each_mount_governs_its_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let wh = format!("file://{}/lake-warehouse", dir.path().display());
    let s = Server::start(&format!("{}warehouse_location = \"{wh}\"\n", lake_config(dir.path(), None)));
    assert_eq!(s.post("/namespaces", json!({"namespace": ["lake", "db"]})).await.0, 200);
    let created = s.post("/namespaces/lake%1Fdb/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(created.0, 200);
    assert!(created.1["metadata"]["location"].as_str().unwrap().starts_with(&format!("{wh}/")), "{}", created.1);
    let inside = s
        .post(
            "/namespaces/lake%1Fdb/tables",
            json!({"name": "u", "schema": schema(), "location": format!("{wh}/db/custom/u")}),
        )
        .await;
    assert_eq!(inside.0, 200, "{}", inside.1);
    // Inside the mount's warehouse but outside the namespace's location.
    let beside = json!({"name": "w", "schema": schema(), "location": format!("{wh}/custom/w")});
    assert_error(&s.post("/namespaces/lake%1Fdb/tables", beside).await, 400, "BadRequestException");
    // The root's warehouse is not this mount's.
    let root_wh = format!("file://{}/data/warehouse/x", s.dir.path().display());
    let outside =
        s.post("/namespaces/lake%1Fdb/tables", json!({"name": "v", "schema": schema(), "location": root_wh})).await;
    assert_error(&outside, 400, "BadRequestException");
}

#[test]
fn start_up_refuses_what_it_cannot_mount() {
    let dir = tempfile::tempdir().unwrap();
    let mount = |name: &str, backend: &str, url: &str| {
        format!("[mount.{name}]\nbackend = \"{backend}\"\ncatalog_url = \"{url}\"\nowner = \"default\"\n")
    };
    let redb = format!("redb://{}/x.redb", dir.path().display());
    let greedy = components_dir().join("greedy.wasm").display().to_string();
    for (case, toml, expect) in [
        ("bad url", mount("bad", "native", "mysql://x"), "mount `bad`"),
        ("unreachable database", mount("gone", "native", "postgres://postgres@127.0.0.1:1/x"), "mount `gone`"),
        ("missing component", mount("ghost", "/no/such/file.wasm", &redb), "/no/such/file.wasm"),
        ("component importing http", mount("greedy", &greedy, &redb), "rustberg:catalog/http"),
        ("duplicate names", format!("{}{}", mount("twice", "native", &redb), mount("twice", "native", &redb)), "twice"),
        ("no owner", "[mount.orphan]\nbackend = \"native\"\ncatalog_url = \"redb:///tmp/o.redb\"\n".into(), "owner"),
        (
            "two mounts on one store",
            format!("{}{}", mount("one", "native", &redb), mount("two", "native", &redb)),
            "same catalog_url",
        ),
        (
            "a rest timeout above the call timeout",
            mount("far", "rest", "http://127.0.0.1:9") + "request_timeout_ms = 9000\n",
            "mount.far.request_timeout_ms (9000) is above plugins.call_timeout_ms (5000)",
        ),
        ("no instance slots", "[plugins]\npool_size = 0\n".into(), "plugins.pool_size is 0"),
        (
            "a mount named as the whole tree's prefix",
            mount("catalog", "native", &redb),
            "a REST prefix of the catalog's own",
        ),
        ("a mount named as the root's prefix", mount("root", "native", &redb), "a REST prefix of the catalog's own"),
        (
            "a mount named as the token endpoint's segment",
            mount("oauth", "native", &redb),
            "a REST prefix of the catalog's own",
        ),
    ] {
        let output = match Server::try_start(&toml) {
            Ok(_) => panic!("{case}: the server started"),
            Err(output) => output,
        };
        assert!(output.contains(expect), "{case}: names {expect}: {output}");
    }
}

/// `?warehouse=<mount>` gives a client the mount's own prefix, under which the mount is a
/// catalog of its own: names without the mount's, in paths, bodies, answers and errors.
#[tokio::test]
async fn a_client_targets_one_mount_by_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&lake_config(dir.path(), None));
    let (status, config) = s.send(Method::GET, "/v1/config?warehouse=lake", None).await;
    assert_eq!((status, &config["overrides"]["prefix"]), (200, &json!("lake")), "{config}");
    assert!(config["endpoints"].as_array().unwrap().contains(&json!("POST /v1/{prefix}/namespaces")));
    // Any other warehouse is the whole tree.
    let (_, whole) = s.send(Method::GET, "/v1/config?warehouse=rck_warehouse", None).await;
    assert_eq!(whole["overrides"]["prefix"], "catalog");

    let lake = |path: &str| format!("/v1/lake{path}");
    let (status, created) = s
        .send(Method::POST, &lake("/namespaces"), Some(json!({"namespace": ["sales"], "properties": {"a": "1"}})))
        .await;
    assert_eq!((status, &created["namespace"]), (200, &json!(["sales"])), "{created}");
    let (_, listed) = s.send(Method::GET, &lake("/namespaces"), None).await;
    assert_eq!(listed["namespaces"], json!([["sales"]]));
    let table = json!({"name": "orders", "schema": schema()});
    assert_eq!(s.send(Method::POST, &lake("/namespaces/sales/tables"), Some(table)).await.0, 200);
    let (_, tables) = s.send(Method::GET, &lake("/namespaces/sales/tables"), None).await;
    assert_eq!(tables["identifiers"], json!([{"namespace": ["sales"], "name": "orders"}]));
    let rename = json!({"source": {"namespace": ["sales"], "name": "orders"},
                        "destination": {"namespace": ["sales"], "name": "sold"}});
    assert_eq!(s.send(Method::POST, &lake("/tables/rename"), Some(rename)).await.0, 204);
    // The same table through the whole tree, under the mount's name.
    assert_eq!(s.get("/namespaces/lake%1Fsales/tables/sold").await.0, 200);
    let missing = s.send(Method::GET, &lake("/namespaces/nowhere/tables/t"), None).await;
    assert_error(&missing, 404, "NoSuchTableException");
    assert_eq!(missing.1["error"]["message"], "Table does not exist: nowhere.t");
    // A prefix that names no mount is no route.
    assert_eq!(s.send(Method::GET, "/v1/nomount/namespaces", None).await.0, 404);

    // `root`: the root catalog alone, the mounts neither listed nor reachable.
    assert_eq!(s.post("/namespaces", json!({"namespace": ["web"]})).await.0, 200);
    let (_, config) = s.send(Method::GET, "/v1/config?warehouse=root", None).await;
    assert_eq!(config["overrides"]["prefix"], "root");
    let (_, listed) = s.send(Method::GET, "/v1/root/namespaces", None).await;
    assert_eq!(listed["namespaces"], json!([["web"]]), "the mount is not listed");
    let (_, whole) = s.send(Method::GET, "/v1/catalog/namespaces", None).await;
    assert_eq!(whole["namespaces"], json!([["lake"], ["web"]]));
    let into_mount = s.send(Method::GET, "/v1/root/namespaces/lake%1Fsales/tables", None).await;
    assert_error(&into_mount, 404, "NoSuchNamespaceException");
    let create_in_mount = json!({"namespace": ["lake", "x"]});
    assert_error(
        &s.send(Method::POST, "/v1/root/namespaces", Some(create_in_mount)).await,
        404,
        "NoSuchNamespaceException",
    );
    assert_eq!(
        s.send(Method::POST, "/v1/root/namespaces/web/tables", Some(json!({"name": "t", "schema": schema()}))).await.0,
        200
    );
}

/// The seed's shape (`owner = "acme"`, a tenant no principal belongs to) starts: a
/// mount's owner declares its tenant. The start-up lines name it, so a typo shows.
#[tokio::test]
async fn a_mount_declares_its_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{}/prod.redb\"\nowner = \"acme\"\n",
        dir.path().display()
    );
    let s = Server::start(&toml);
    let output = s.output_once_it_says("listening");
    assert!(output.contains("tenant \"acme\" is declared only by mount `prod`"), "{output}");
    let (status, tenants) = s.send(Method::GET, "/management/v1/tenants", None).await;
    assert_eq!(status, 200, "{tenants}");
    assert!(tenants.to_string().contains("\"acme\""), "the declared tenant is listed: {tenants}");
    // A principal of that tenant owns the mount; one of another tenant sees nothing in it.
    let body = json!({"name": "ann", "tenant": "acme", "role": "writer"});
    let (status, created) = s.send(Method::POST, "/management/v1/principals", Some(body)).await;
    assert_eq!(status, 201, "a principal joins the declared tenant: {created}");
    let ann = s.login("ann", created["client-secret"].as_str().unwrap());
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["prod", "analytics"]})).await.0, 200);
    let (status, listed) = ann.get("/namespaces?parent=prod").await;
    assert_eq!((status, namespace_names(&listed)), (200, vec![vec!["prod".to_string(), "analytics".to_string()]]));
}

#[tokio::test]
async fn a_mount_may_not_shadow_a_namespace() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["prod"]})).await.0, 200);
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{}/p.redb\"\nowner = \"default\"\n",
        dir.path().display()
    );
    let output = match s.restart(&toml) {
        Ok(_) => panic!("started with a mount hiding a namespace"),
        Err(output) => output,
    };
    assert!(output.contains("mount `prod` would hide the root catalog's namespace `prod`"), "{output}");
}
