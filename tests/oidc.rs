//! JWTs of an external OpenID Connect issuer, checked against a locally generated
//! key set (tests/fixtures/oidc): valid ones are accepted; forged, expired,
//! wrong-audience and wrong-issuer ones are refused with 401.

use crate::support;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;
use support::{assert_error, Api, Server};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/oidc").join(name)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn jwt(key: &str, claims: serde_json::Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("test-key-1".into());
    let pem = std::fs::read(fixture(key)).unwrap();
    encode(&header, &claims, &EncodingKey::from_ec_pem(&pem).unwrap()).unwrap()
}

fn claims(sub: &str, iss: &str, aud: &str, exp: u64) -> serde_json::Value {
    json!({"sub": sub, "iss": iss, "aud": aud, "iat": now(), "exp": exp})
}

/// The good token's header and signature around another payload.
fn tamper(good: &str) -> String {
    let other = jwt("private.pem", claims("root", "https://idp.test", "rustberg", now() + 300));
    let g: Vec<&str> = good.split('.').collect();
    let o: Vec<&str> = other.split('.').collect();
    format!("{}.{}.{}", g[0], o[1], g[2])
}

#[tokio::test]
async fn oidc_tokens_are_validated() {
    let s = Server::start(&format!(
        "[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"rustberg\"\njwks = \"{}\"\n\
         [auth.principals.carol]\ntenant = \"acme\"\nrole = \"writer\"\noidc_subject = \"u-1234\"\n",
        fixture("jwks.json").display()
    ));
    let good = jwt("private.pem", claims("u-1234", "https://idp.test", "rustberg", now() + 300));
    let carol = Api::with_token(&s.base, &good);
    let (status, body) = carol.post("/namespaces", json!({"namespace": ["carols"]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(carol.get("/namespaces").await.1["namespaces"], json!([["carols"]]));

    for (case, token) in [
        ("forged", jwt("forger.pem", claims("u-1234", "https://idp.test", "rustberg", now() + 300))),
        ("expired", jwt("private.pem", claims("u-1234", "https://idp.test", "rustberg", now() - 10))),
        ("wrong audience", jwt("private.pem", claims("u-1234", "https://idp.test", "someone-else", now() + 300))),
        ("wrong issuer", jwt("private.pem", claims("u-1234", "https://evil.test", "rustberg", now() + 300))),
        ("unknown principal", jwt("private.pem", claims("mallory", "https://idp.test", "rustberg", now() + 300))),
        // A subject is never read as a principal's name: not a configured one's, not
        // the minted admin's.
        ("named like a principal", jwt("private.pem", claims("carol", "https://idp.test", "rustberg", now() + 300))),
        ("named like the admin", jwt("private.pem", claims("admin", "https://idp.test", "rustberg", now() + 300))),
        ("tampered", tamper(&good)),
    ] {
        let got = Api::with_token(&s.base, &token).get("/namespaces").await;
        assert_error(&got, 401, "NotAuthorizedException");
        assert!(!got.1["error"]["message"].as_str().unwrap().is_empty(), "{case}");
    }
}

/// A principal created through the management API with an OIDC subject: that user
/// acts as it (and it gets no client secret); deleted, the user is nobody again.
#[tokio::test]
async fn oidc_users_map_to_principals_made_for_them() {
    let s = Server::start(&format!(
        "[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"rustberg\"\njwks = \"{}\"\n",
        fixture("jwks.json").display()
    ));
    let admin: &Api = &s;
    let dave = jwt("private.pem", claims("u-77", "https://idp.test", "rustberg", now() + 300));
    let dave_api = Api::with_token(&s.base, &dave);
    assert_error(&dave_api.get("/namespaces").await, 401, "NotAuthorizedException");
    assert_eq!(admin.send(reqwest::Method::POST, "/management/v1/tenants", Some(json!({"name": "acme"}))).await.0, 201);
    let body = json!({"name": "dave", "tenant": "acme", "role": "writer", "oidc-subject": "u-77"});
    let (status, created) = admin.send(reqwest::Method::POST, "/management/v1/principals", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["oidc-subject"], "u-77");
    assert!(created.get("client-secret").is_none(), "an OIDC principal gets no secret: {created}");
    let (status, me) = dave_api.send(reqwest::Method::GET, "/management/v1/whoami", None).await;
    assert_eq!((status, me["name"].as_str(), me["tenant"].as_str()), (200, Some("dave"), Some("acme")));
    // One identity, one principal.
    let again = json!({"name": "dave2", "tenant": "acme", "role": "admin", "oidc-subject": "u-77"});
    assert_error(
        &admin.send(reqwest::Method::POST, "/management/v1/principals", Some(again)).await,
        409,
        "AlreadyExistsException",
    );
    assert_eq!(admin.send(reqwest::Method::DELETE, "/management/v1/principals/dave", None).await.0, 204);
    assert_error(&dave_api.get("/namespaces").await, 401, "NotAuthorizedException");

    // A tenant admin cannot bind an identity of the issuer: only a server admin can.
    let body = json!({"name": "boss", "tenant": "acme", "role": "admin"});
    let (status, boss) = admin.send(reqwest::Method::POST, "/management/v1/principals", Some(body)).await;
    assert_eq!(status, 201, "{boss}");
    let boss = s.login("boss", boss["client-secret"].as_str().unwrap());
    let squat = json!({"name": "erin", "tenant": "acme", "role": "reader", "oidc-subject": "u-99"});
    assert_error(
        &boss.send(reqwest::Method::POST, "/management/v1/principals", Some(squat)).await,
        403,
        "ForbiddenException",
    );
    let erin =
        Api::with_token(&s.base, &jwt("private.pem", claims("u-99", "https://idp.test", "rustberg", now() + 300)));
    assert_error(&erin.get("/namespaces").await, 401, "NotAuthorizedException");
}

#[test]
fn an_oidc_subject_without_an_issuer_is_refused_at_start_up() {
    let refused = Server::try_start(
        "[auth.principals.carol]\ntenant = \"acme\"\nrole = \"admin\"\nserver_admin = true\noidc_subject = \"u-1\"\n",
    );
    let output = refused.err().expect("refused");
    assert!(output.contains("oidc_subject is set, but there is no [auth.oidc]"), "{output}");
}

/// The key set is read from an http(s) URL with a timeout, and read again when a token
/// names a key it does not hold (the issuer rotated its keys) — at most every 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_issuer_keys_are_fetched_when_a_token_names_one() {
    let original = std::fs::read_to_string(fixture("jwks.json")).unwrap();
    let served = std::sync::Arc::new(std::sync::Mutex::new(original.clone()));
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (body, count) = (served.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = body.lock().unwrap().clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let jwks_url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let s = Server::start(&format!(
        "[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"rustberg\"\njwks = \"{jwks_url}\"\n\
         [auth.principals.carol]\ntenant = \"acme\"\nrole = \"admin\"\noidc_subject = \"u-carol\"\n"
    ));
    assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 1, "read once at start-up");
    let signed_as = |kid: &str| {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        let pem = std::fs::read(fixture("private.pem")).unwrap();
        let claims = claims("u-carol", "https://idp.test", "rustberg", now() + 300);
        encode(&header, &claims, &EncodingKey::from_ec_pem(&pem).unwrap()).unwrap()
    };
    let carol = Api::with_token(&s.base, &signed_as("test-key-1"));
    assert_eq!(carol.get("/namespaces").await.0, 200);

    // The issuer rotates: the same key under a new id. A token naming it is accepted once
    // the key set is read again.
    *served.lock().unwrap() = original.replace("test-key-1", "test-key-2");
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let rotated = Api::with_token(&s.base, &signed_as("test-key-2"));
    assert_eq!(rotated.get("/namespaces").await.0, 200, "the rotated key is fetched");
    assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 2);
    // Made-up key ids do not make the server ask the issuer again and again.
    for i in 0..5 {
        let made_up = Api::with_token(&s.base, &signed_as(&format!("nonsense-{i}")));
        assert_error(&made_up.get("/namespaces").await, 401, "NotAuthorizedException");
    }
    assert!(fetches.load(std::sync::atomic::Ordering::SeqCst) <= 3, "at most one more read within 2 s");
}
