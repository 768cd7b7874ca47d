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
         [auth.principals.carol]\ntenant = \"acme\"\nrole = \"writer\"\n",
        fixture("jwks.json").display()
    ));
    let good = jwt("private.pem", claims("carol", "https://idp.test", "rustberg", now() + 300));
    let carol = Api::with_token(&s.base, &good);
    let (status, body) = carol.post("/namespaces", json!({"namespace": ["carols"]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(carol.get("/namespaces").await.1["namespaces"], json!([["carols"]]));

    for (case, token) in [
        ("forged", jwt("forger.pem", claims("carol", "https://idp.test", "rustberg", now() + 300))),
        ("expired", jwt("private.pem", claims("carol", "https://idp.test", "rustberg", now() - 10))),
        ("wrong audience", jwt("private.pem", claims("carol", "https://idp.test", "someone-else", now() + 300))),
        ("wrong issuer", jwt("private.pem", claims("carol", "https://evil.test", "rustberg", now() + 300))),
        ("unknown principal", jwt("private.pem", claims("mallory", "https://idp.test", "rustberg", now() + 300))),
        ("tampered", tamper(&good)),
    ] {
        let got = Api::with_token(&s.base, &token).get("/namespaces").await;
        assert_error(&got, 401, "NotAuthorizedException");
        assert!(!got.1["error"]["message"].as_str().unwrap().is_empty(), "{case}");
    }
}
