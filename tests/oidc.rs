//! JWTs of an external OpenID Connect issuer, checked against a locally generated
//! key set (tests/fixtures/oidc): valid ones are accepted; forged, expired,
//! wrong-audience and wrong-issuer ones are refused with 401.

mod support;

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
