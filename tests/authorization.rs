//! Authorization against a real server: three tenants, several principals, every
//! operation on namespaces they own, were granted, or were not granted; filtered
//! listings; paging when the authorizer hides pages.

use crate::support;

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};
use support::{assert_error, hash_secret, schema, Api, Server};

const SECRET: &str = "correct horse battery staple";

/// (principal, tenant, role)
const PRINCIPALS: &[(&str, &str, &str)] = &[
    ("acme_admin", "acme", "admin"),
    ("acme_writer", "acme", "writer"),
    ("acme_reader", "acme", "reader"),
    ("globex_admin", "globex", "admin"),
    ("globex_writer", "globex", "writer"),
    ("initech_writer", "initech", "writer"),
    ("initech_reader", "initech", "reader"),
    ("bystander", "bystanders", "reader"),
    ("viewer_first", "viewers", "reader"),
    ("viewer_middle", "viewers", "reader"),
    ("viewer_last", "viewers", "reader"),
    ("viewer_none", "viewers", "reader"),
];

const TENANTS: &[&str] = &["acme", "globex", "initech"];

#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Level {
    None,
    Read,
    Write,
    Manage,
}

/// What each matrix principal holds on each tenant's namespace, after the grants
/// `setup` makes: its own tenant by role, `globex` reads acme (a tenant grant),
/// `acme_writer` writes to initech (a principal grant), nothing else.
fn level(principal: &str, tenant: &str) -> Level {
    use Level::*;
    match (principal, tenant) {
        ("acme_admin", "acme") | ("globex_admin", "globex") => Manage,
        ("acme_writer", "acme") | ("globex_writer", "globex") | ("initech_writer", "initech") => Write,
        ("acme_reader", "acme") | ("initech_reader", "initech") => Read,
        ("globex_admin" | "globex_writer", "acme") => Read,
        ("acme_writer", "initech") => Write,
        _ => None,
    }
}

fn config() -> String {
    let hash = hash_secret(SECRET);
    let mut toml = String::from("[auth.principals.root]\ntenant = \"ops\"\nrole = \"admin\"\nserver_admin = true\n");
    toml.push_str(&format!("secret_hash = \"{hash}\"\n"));
    for (name, tenant, role) in PRINCIPALS {
        toml.push_str(&format!(
            "[auth.principals.{name}]\ntenant = \"{tenant}\"\nrole = \"{role}\"\nsecret_hash = \"{hash}\"\n"
        ));
    }
    toml
}

fn ns_of(tenant: &str) -> String {
    format!("{tenant}_ns")
}

async fn ok(got: (u16, Value), want: u16) -> Value {
    assert_eq!(got.0, want, "{}", got.1);
    got.1
}

/// Each tenant's writer creates `<tenant>_ns` with tables `t1` and `t2`; acme's
/// admin grants tenant globex read on acme_ns; initech's writer cannot grant, so
/// the server admin grants acme_writer write on initech_ns.
async fn setup(s: &Server) -> std::collections::HashMap<String, Api> {
    let mut apis = std::collections::HashMap::new();
    for (name, _, _) in PRINCIPALS.iter().chain(&[("root", "ops", "admin")]) {
        apis.insert(name.to_string(), s.login(name, SECRET));
    }
    for (tenant, creator) in [("acme", "acme_writer"), ("globex", "globex_writer"), ("initech", "initech_writer")] {
        let api = &apis[creator];
        ok(api.post("/namespaces", json!({"namespace": [ns_of(tenant)]})).await, 200).await;
        for table in ["t1", "t2"] {
            let path = format!("/namespaces/{}/tables", ns_of(tenant));
            ok(api.post(&path, json!({"name": table, "schema": schema()})).await, 200).await;
        }
    }
    apis["acme_admin"].grant(json!({"namespace": ["acme_ns"], "privilege": "read", "tenant": "globex"})).await;
    let refused = apis["initech_writer"]
        .send(
            Method::POST,
            "/management/v1/grants",
            Some(json!({"namespace": ["initech_ns"], "privilege": "write", "principal": "acme_writer"})),
        )
        .await;
    assert_error(&refused, 403, "ForbiddenException");
    apis["root"].grant(json!({"namespace": ["initech_ns"], "privilege": "write", "principal": "acme_writer"})).await;
    apis
}

fn namespaces(body: &Value) -> BTreeSet<String> {
    body["namespaces"].as_array().unwrap().iter().map(|n| n[0].as_str().unwrap().to_string()).collect()
}

/// The status an operation needing `needed` should get from a caller holding `held`.
fn expect(held: Level, needed: Level, success: u16) -> u16 {
    if held >= needed {
        success
    } else if held >= Level::Read {
        403
    } else {
        404
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix() {
    let s = Server::start(&config());
    let apis = setup(&s).await;
    let matrix: Vec<&str> =
        PRINCIPALS.iter().map(|p| p.0).filter(|p| !p.starts_with("viewer") && *p != "bystander").collect();

    // Listings filter: each principal sees exactly what it may read.
    for principal in &matrix {
        let api = &apis[*principal];
        let want: BTreeSet<String> =
            TENANTS.iter().filter(|t| level(principal, t) >= Level::Read).map(|t| ns_of(t)).collect();
        assert_eq!(namespaces(&ok(api.get("/namespaces").await, 200).await), want, "{principal} lists");
        let paged = ok(api.get("/namespaces?pageToken=&pageSize=1").await, 200).await;
        assert_eq!(paged["namespaces"].as_array().unwrap().len(), want.len().min(1), "{principal} pages");
    }

    for principal in &matrix {
        let api = &apis[*principal];
        for tenant in TENANTS {
            let held = level(principal, tenant);
            let ns = ns_of(tenant);
            let case = format!("{principal} on {tenant} ({held:?})");

            assert_eq!(
                api.get(&format!("/namespaces/{ns}")).await.0,
                expect(held, Level::Read, 200),
                "load ns: {case}"
            );
            assert_eq!(api.head(&format!("/namespaces/{ns}")).await, expect(held, Level::Read, 204), "head ns: {case}");
            let listed = api.get(&format!("/namespaces/{ns}/tables")).await;
            assert_eq!(listed.0, expect(held, Level::Read, 200), "list tables: {case}");
            if listed.0 == 200 {
                let names: Vec<&str> =
                    listed.1["identifiers"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
                assert!(names.contains(&"t1") && names.contains(&"t2"), "{case}: {names:?}");
            }
            let load = api.get(&format!("/namespaces/{ns}/tables/t1")).await;
            assert_eq!(load.0, expect(held, Level::Read, 200), "load table: {case}");
            if load.0 == 404 {
                assert_eq!(load.1["error"]["type"], "NoSuchTableException", "{case}: never learns it exists");
            }

            // Create.
            let fresh = format!("new_{principal}");
            let created =
                api.post(&format!("/namespaces/{ns}/tables"), json!({"name": fresh, "schema": schema()})).await;
            assert_eq!(created.0, expect(held, Level::Write, 200), "create: {case}: {}", created.1);
            if created.0 == 403 {
                assert_eq!(created.1["error"]["type"], "ForbiddenException");
            }

            // Commit.
            let commit =
                json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"by": principal}}]});
            let committed = api.post(&format!("/namespaces/{ns}/tables/t1"), commit).await;
            assert_eq!(committed.0, expect(held, Level::Write, 200), "commit: {case}");

            // Rename and drop act on a table the tenant's owner prepared for this case.
            let owner = &apis[&format!("{tenant}_{}", if *tenant == "initech" { "writer" } else { "admin" })];
            let victim = format!("victim_{principal}");
            ok(owner.post(&format!("/namespaces/{ns}/tables"), json!({"name": victim, "schema": schema()})).await, 200)
                .await;
            let rename = json!({
                "source": {"namespace": [ns], "name": victim},
                "destination": {"namespace": [ns], "name": format!("{victim}_renamed")}
            });
            let renamed = api.send(Method::POST, "/v1/catalog/tables/rename", Some(rename)).await;
            assert_eq!(renamed.0, expect(held, Level::Write, 204), "rename: {case}");
            let current = if renamed.0 == 204 { format!("{victim}_renamed") } else { victim.clone() };
            let dropped = api.delete(&format!("/namespaces/{ns}/tables/{current}")).await;
            assert_eq!(dropped.0, expect(held, Level::Write, 204), "drop: {case}");

            // Grant.
            let granted = api
                .send(
                    Method::POST,
                    "/management/v1/grants",
                    Some(json!({"namespace": [ns], "table": "t2", "privilege": "read", "principal": "bystander"})),
                )
                .await;
            assert_eq!(granted.0, expect(held, Level::Manage, 201), "grant: {case}: {}", granted.1);

            // What may I do here?
            let perms = api.send(Method::GET, &format!("/management/v1/permissions?namespace={ns}"), None).await;
            assert_eq!(perms.0, expect(held, Level::Read, 200), "permissions: {case}");
            if perms.0 == 200 {
                assert_eq!(perms.1["write"], held >= Level::Write, "{case}");
                assert_eq!(perms.1["manage"], held >= Level::Manage, "{case}");
            }
        }
    }

    // The bystander was granted read on acme_ns.t2 and globex_ns.t2 by their admins:
    // it can load exactly those tables, and still sees no namespace.
    let bystander = &apis["bystander"];
    assert_eq!(bystander.get("/namespaces/acme_ns/tables/t2").await.0, 200);
    assert_eq!(bystander.get("/namespaces/globex_ns/tables/t2").await.0, 200);
    assert_eq!(bystander.get("/namespaces/acme_ns/tables/t1").await.0, 404);
    assert_eq!(bystander.get("/namespaces/initech_ns/tables/t2").await.0, 404);
    assert_eq!(bystander.get("/namespaces/acme_ns").await.0, 404);
    assert!(namespaces(&ok(bystander.get("/namespaces").await, 200).await).is_empty());
}

#[tokio::test]
async fn ownership_is_not_a_property_and_drops_take_grants_along() {
    let s = Server::start(&config());
    let apis = setup(&s).await;
    let acme = &apis["acme_writer"];
    // No property update changes who owns a namespace.
    ok(acme.post("/namespaces/acme_ns/properties", json!({"updates": {"owner": "globex"}})).await, 200).await;
    assert_eq!(
        apis["globex_writer"].post("/namespaces/acme_ns/properties", json!({"updates": {"x": "1"}})).await.0,
        403
    );
    assert_eq!(apis["initech_writer"].get("/namespaces/acme_ns").await.0, 404);

    // globex reads acme_ns by a grant. Once acme drops it and initech re-creates the
    // name, the grant and the old owner are gone.
    for t in ["t1", "t2"] {
        ok(acme.delete(&format!("/namespaces/acme_ns/tables/{t}")).await, 204).await;
    }
    ok(acme.delete("/namespaces/acme_ns").await, 204).await;
    ok(apis["initech_writer"].post("/namespaces", json!({"namespace": ["acme_ns"]})).await, 200).await;
    assert_eq!(apis["globex_writer"].get("/namespaces/acme_ns").await.0, 404);
    assert_eq!(apis["acme_writer"].get("/namespaces/acme_ns").await.0, 404);
    assert_eq!(apis["initech_reader"].get("/namespaces/acme_ns").await.0, 200);
    // A reader may not create root namespaces.
    assert_error(
        &apis["acme_reader"].post("/namespaces", json!({"namespace": ["mine"]})).await,
        403,
        "ForbiddenException",
    );
}

#[tokio::test]
async fn credentials_are_checked() {
    let s = Server::start(&config());
    let anonymous = s.anonymous();
    assert_error(&anonymous.get("/namespaces").await, 401, "NotAuthorizedException");
    let r = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 401, "the server minted no admin: root is configured");
    assert_error(&Api::with_token(&s.base, "garbage").get("/namespaces").await, 401, "NotAuthorizedException");
    let wrong = reqwest::Client::new()
        .post(format!("{}/v1/oauth/tokens", s.base))
        .form(&[("grant_type", "client_credentials"), ("client_id", "acme_admin"), ("client_secret", "nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(wrong.json::<Value>().await.unwrap()["error"], "invalid_client");
    assert!(s.credential.is_none());
    let me = s.login("acme_reader", SECRET);
    let who = me.send(Method::GET, "/management/v1/whoami", None).await;
    // A principal of the configuration file is identified by its name.
    let expected =
        json!({"id": "acme_reader", "name": "acme_reader", "tenant": "acme", "role": "reader", "server-admin": false});
    assert_eq!(who, (200, expected.clone()));

    // The token-exchange grant with a current token (Iceberg's Java client refreshes so)
    // gives a new token for the same principal; a token that does not verify gets none.
    let exchange = |subject: String| {
        let url = format!("{}/v1/oauth/tokens", s.base);
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .form(&[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
                    ("subject_token", subject.as_str()),
                    ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
                    ("scope", "catalog"),
                ])
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let current = support::token_for(&s.base, "acme_reader", SECRET);
    let (status, refreshed) = exchange(current).await;
    assert_eq!(status, 200, "{refreshed}");
    let token = refreshed["access_token"].as_str().unwrap();
    let again = Api::with_token(&s.base, token).send(Method::GET, "/management/v1/whoami", None).await;
    assert_eq!(again, (200, expected));
    let (status, refused) = exchange("garbage".into()).await;
    assert_eq!((status, &refused["error"]), (401, &json!("invalid_client")), "{refused}");
}

/// Walks the root listing as `api`, `size` at a time.
async fn walk(api: &Api, size: usize) -> Vec<Vec<String>> {
    let mut pages = vec![];
    let mut token = String::new();
    loop {
        let (status, page) = api.get(&format!("/namespaces?pageToken={token}&pageSize={size}")).await;
        assert_eq!(status, 200, "{page}");
        pages.push(page["namespaces"].as_array().unwrap().iter().map(|n| n[0].as_str().unwrap().to_string()).collect());
        match page["next-page-token"].as_str() {
            Some(next) => token = next.to_string(),
            None => return pages,
        }
    }
}

#[tokio::test]
async fn paging_fills_pages_with_visible_items_only() {
    let s = Server::start(&config());
    let apis = setup(&s).await;
    let acme = &apis["acme_admin"];
    let all: Vec<String> = (0..30).map(|i| format!("n{i:02}")).collect();
    for name in &all {
        ok(acme.post("/namespaces", json!({"namespace": [name]})).await, 200).await;
    }
    type Visible = fn(usize) -> bool;
    let scenarios: [(&str, Visible); 4] = [
        ("viewer_first", |i| i >= 5),
        ("viewer_middle", |i| !(10..20).contains(&i)),
        ("viewer_last", |i| i < 25),
        ("viewer_none", |_| false),
    ];
    for (viewer, visible) in &scenarios {
        for (i, name) in all.iter().enumerate() {
            if visible(i) {
                acme.grant(json!({"namespace": [name], "privilege": "read", "principal": viewer})).await;
            }
        }
        let pages = walk(&apis[*viewer], 5).await;
        let seen: Vec<String> = pages.iter().flatten().cloned().collect();
        let expected: Vec<String> =
            all.iter().enumerate().filter(|(i, _)| visible(*i)).map(|(_, n)| n.clone()).collect();
        assert_eq!(seen, expected, "{viewer}: nothing twice, nothing missing");
        for page in &pages[..pages.len() - 1] {
            assert_eq!(page.len(), 5, "{viewer}: every page but the last is full: {pages:?}");
        }
    }
}

/// A principal is its id, not its name: deleting `bob` ends his tokens and grants,
/// and a new `bob` (in another tenant) inherits neither.
#[tokio::test]
async fn a_principal_created_again_under_a_deleted_name_inherits_nothing() {
    let s = Server::start("");
    let admin: &Api = &s;
    for tenant in ["acme", "evil"] {
        let created = admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": tenant}))).await;
        assert_eq!(created.0, 201, "{}", created.1);
    }
    assert_eq!(admin.post("/namespaces", json!({"namespace": ["secret"]})).await.0, 200);
    let (first_id, first_bob) = create_bob(&s, "acme", "reader").await;
    let grant = json!({"namespace": ["secret"], "privilege": "read", "principal": "bob"});
    let (status, granted) = admin.send(Method::POST, "/management/v1/grants", Some(grant)).await;
    assert_eq!(status, 201, "{granted}");
    assert_eq!(granted["grantee"]["principal"], first_id.as_str(), "a grant names the principal's id");
    assert_eq!(first_bob.get("/namespaces/secret").await.0, 200);
    // An answer kept for the first bob's Idempotency-Key (a reader may not create namespaces).
    let create = |bob: &Api| {
        bob.client
            .post(bob.url("/namespaces"))
            .header("Idempotency-Key", "0190c0de-0000-7000-8000-00000000b0b0")
            .json(&json!({"namespace": ["bobs"]}))
            .send()
    };
    assert_eq!(create(&first_bob).await.unwrap().status(), 403);

    assert_eq!(admin.send(Method::DELETE, "/management/v1/principals/bob", None).await.0, 204);
    assert_error(&first_bob.get("/namespaces/secret").await, 401, "NotAuthorizedException");
    let (_, grants) = admin.send(Method::GET, "/management/v1/grants", None).await;
    assert_eq!(grants["grants"], json!([]), "the deleted principal's grants went with it");

    let (second_id, second_bob) = create_bob(&s, "evil", "writer").await;
    assert_ne!(second_id, first_id);
    assert_error(&second_bob.get("/namespaces/secret").await, 404, "NoSuchNamespaceException");
    // The first bob's token stays dead: it names the first bob, not whoever is bob now.
    assert_error(&first_bob.get("/namespaces/secret").await, 401, "NotAuthorizedException");
    // Nor is the new bob replayed the first one's answer for the same key: his request runs.
    assert_eq!(create(&second_bob).await.unwrap().status(), 200);
    assert_eq!(second_bob.head("/namespaces/bobs").await, 204);
    let (_, me) = second_bob.send(Method::GET, "/management/v1/whoami", None).await;
    assert_eq!((me["id"].as_str(), me["tenant"].as_str()), (Some(second_id.as_str()), Some("evil")));
}

/// A tenant is deleted only when it owns nothing, and its grants go with it: a tenant
/// created later under the same name starts with nothing.
#[tokio::test]
async fn a_tenant_created_again_under_a_deleted_name_inherits_nothing() {
    let s = Server::start("");
    let admin: &Api = &s;
    assert_eq!(admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "acme"}))).await.0, 201);
    assert_eq!(admin.post("/namespaces", json!({"namespace": ["secret"]})).await.0, 200);
    let grant = json!({"namespace": ["secret"], "privilege": "read", "tenant": "acme"});
    assert_eq!(admin.send(Method::POST, "/management/v1/grants", Some(grant)).await.0, 201);
    let (_, bob) = create_bob(&s, "acme", "writer").await;
    assert_eq!(bob.get("/namespaces/secret").await.0, 200);
    assert_eq!(bob.post("/namespaces", json!({"namespace": ["acmes"]})).await.0, 200);

    let delete = || admin.send(Method::DELETE, "/management/v1/tenants/acme", None);
    assert_error(&delete().await, 409, "ConflictException");
    assert_eq!(admin.send(Method::DELETE, "/management/v1/principals/bob", None).await.0, 204);
    let owns = delete().await;
    assert_error(&owns, 409, "ConflictException");
    assert!(owns.1["error"]["message"].as_str().unwrap().contains("owns"), "{}", owns.1);
    assert_eq!(admin.delete("/namespaces/acmes").await.0, 204);
    assert_eq!(delete().await.0, 204);
    let (_, grants) = admin.send(Method::GET, "/management/v1/grants", None).await;
    assert_eq!(grants["grants"], json!([]), "the tenant's grants went with it");

    assert_eq!(admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "acme"}))).await.0, 201);
    let (_, new_bob) = create_bob(&s, "acme", "writer").await;
    assert_error(&new_bob.get("/namespaces/secret").await, 404, "NoSuchNamespaceException");
}

/// Creates the principal `bob` in `tenant` with `role`: its id and a client logged in as it.
async fn create_bob(s: &Server, tenant: &str, role: &str) -> (String, Api) {
    let body = json!({"name": "bob", "tenant": tenant, "role": role});
    let (status, created) = s.send(Method::POST, "/management/v1/principals", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let secret = created["client-secret"].as_str().unwrap().to_string();
    (created["id"].as_str().unwrap().to_string(), s.login("bob", &secret))
}

/// A conditional load is authorized first: once a reader's grant is revoked, its
/// If-None-Match gets 404 (it sees nothing there any more), never 304; a reader given
/// write gets vended read-write in place of read, so its read-only answer's tag is no
/// match any more.
#[tokio::test]
async fn a_revoked_grant_gets_404_not_304() {
    let s = Server::start("");
    let admin: &Api = &s;
    assert_eq!(admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "acme"}))).await.0, 201);
    assert_eq!(admin.post("/namespaces", json!({"namespace": ["shared"]})).await.0, 200);
    assert_eq!(admin.post("/namespaces/shared/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let (_, bob) = create_bob(&s, "acme", "reader").await;
    let read = admin.grant(json!({"namespace": ["shared"], "privilege": "read", "principal": "bob"})).await;

    let load = |tag: Option<String>| {
        let mut request = bob.client.get(bob.url("/namespaces/shared/tables/t"));
        request = request.header("x-iceberg-access-delegation", "vended-credentials");
        if let Some(tag) = tag {
            request = request.header("if-none-match", tag);
        }
        async move {
            let r = request.send().await.unwrap();
            let tag = r.headers().get("etag").map(|t| t.to_str().unwrap().to_string());
            (r.status().as_u16(), tag)
        }
    };
    let (status, tag) = load(None).await;
    assert_eq!(status, 200);
    let tag = tag.expect("an ETag");
    assert_eq!(load(Some(tag.clone())).await, (304, Some(tag.clone())));

    // Write as well: vended read-write now, another representation.
    let write = admin.grant(json!({"namespace": ["shared"], "privilege": "write", "principal": "bob"})).await;
    let (status, writer_tag) = load(Some(tag.clone())).await;
    assert_eq!(status, 200);
    assert!(writer_tag.is_some_and(|t| t != tag));

    for grant in [read, write] {
        let path = format!("/management/v1/grants/{}", grant["id"].as_str().unwrap());
        assert_eq!(admin.send(Method::DELETE, &path, None).await.0, 204);
    }
    assert_eq!(load(Some(tag)).await.0, 404, "revoked: not 304");
}
