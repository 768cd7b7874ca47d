//! Webhook signatures as Standard Webhooks specifies them: the receiver checks
//! `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`
//! under the endpoint's secret) against `webhook-id` and `webhook-timestamp`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// An endpoint's signing secret: `whsec_` and its bytes in base64, as the receiver
/// was given it.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    pub fn parse(secret: &str) -> Result<Self, String> {
        let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
        let bytes = STANDARD.decode(encoded).map_err(|_| "a webhook secret is whsec_ and base64".to_string())?;
        if bytes.len() < 24 {
            return Err(format!("a webhook secret needs at least 24 bytes, this one has {}", bytes.len()));
        }
        Ok(Self(bytes))
    }

    /// The `webhook-signature` of one delivery.
    pub fn sign(&self, id: &str, timestamp_s: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(format!("{id}.{timestamp_s}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    /// The three headers of one delivery.
    pub fn headers(&self, id: &str, timestamp_s: i64, body: &[u8]) -> [(&'static str, String); 3] {
        [
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", timestamp_s.to_string()),
            ("webhook-signature", self.sign(id, timestamp_s, body)),
        ]
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's own test vector.
    #[test]
    fn signs_as_the_specification_does() {
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let headers = secret.headers("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
        assert_eq!(headers[1], ("webhook-timestamp", "1614265330".to_string()));
        assert_eq!(headers[2].1, signature);
        assert_ne!(secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, br#"{"test": 2432232314}"#), signature);
    }

    #[test]
    fn a_secret_that_is_not_one_is_refused() {
        assert!(WebhookSecret::parse("whsec_not base64!").is_err());
        assert!(WebhookSecret::parse("whsec_c2hvcnQ=").unwrap_err().contains("24 bytes"));
        assert_eq!(
            format!("{:?}", WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap()),
            "WebhookSecret(…)"
        );
    }
}
