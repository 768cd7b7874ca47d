//! Entity tags for table and view answers, and `If-None-Match`.
//!
//! A tag names one representation: the metadata file, `snapshots=all` or `refs`, the
//! `config` and `storage-credentials` a backend handed over, and, when the host delegates
//! access to the files, what the client asked for and may get (read or read-write, under
//! which vending and signing policy, signed where). Vended credentials
//! expire: their tag carries the expiry after the digest, and a tag whose credentials
//! have expired (or are about to) never matches, so the client gets fresh ones.
//!
//! A conditional request is authorized like any other before its tag is compared: a
//! caller who lost access gets 403 or 404, never 304. Every tagged answer is
//! `Cache-Control: private` and `Vary: Authorization`: a shared cache must never hand
//! one caller's credentials to another.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::FromRequestParts;
use axum::http::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH, VARY};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::model::Snapshots;
use crate::storage::vending::DataAccess;

/// Credentials that expire within this are as good as expired: a client answered 304
/// would go on with credentials it can barely use.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// What a table or view answer holds, as far as its tag is concerned.
pub struct Representation<'a> {
    pub kind: &'static str,
    pub metadata_location: &'a str,
    pub snapshots: Snapshots,
    pub config: &'a [(String, String)],
    pub storage_credentials: &'a str,
    /// What the host delegates into it (`None`: nothing, for this mount or this client).
    pub delegation: Option<Delegation<'a>>,
    /// The fingerprint of the read policies restricting the caller (see
    /// `scan::restrictions::fingerprint`), if any do.
    pub restricted: Option<&'a str>,
}

/// Access to a table's files the host may hand out with an answer: vended credentials or
/// remote signing, whichever the request and the store's policy give.
#[derive(Clone, Copy)]
pub struct Delegation<'a> {
    /// What the caller's credentials or signatures may do.
    pub access: DataAccess,
    /// Fingerprints the vending and signing configuration.
    pub policy: u64,
    /// The mechanisms the client asked for (`X-Iceberg-Access-Delegation`), as sent.
    pub asked: &'a str,
    /// Where the client is told to send signing requests.
    pub signer: &'a str,
}

impl<'a> Representation<'a> {
    /// A table answer whose `config` and `storage-credentials` came from its backend.
    pub fn table(
        metadata_location: &'a str,
        snapshots: Snapshots,
        config: &'a [(String, String)],
        credentials: &'a str,
    ) -> Self {
        Self {
            kind: "table",
            metadata_location,
            snapshots,
            config,
            storage_credentials: credentials,
            delegation: None,
            restricted: None,
        }
    }

    /// A view answer (only the metadata).
    pub fn view(metadata_location: &'a str) -> Self {
        Self { kind: "view", ..Self::table(metadata_location, Snapshots::All, &[], "") }
    }

    pub fn delegating(self, delegation: Option<Delegation<'a>>) -> Self {
        Self { delegation, ..self }
    }

    /// For a caller restricted by the read policies `fingerprint` names.
    pub fn restricted(self, fingerprint: &'a str) -> Self {
        Self { restricted: Some(fingerprint), ..self }
    }

    /// The digest naming this representation (128 bits of SHA-256, as hex).
    pub fn digest(&self) -> Digest128 {
        let mut h = Sha256::new();
        // Every field is length-prefixed: no two representations hash alike by shifting
        // bytes from one field into the next.
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(self.kind.as_bytes());
        field(self.metadata_location.as_bytes());
        field(match self.snapshots {
            Snapshots::All => "all".as_bytes(),
            Snapshots::Refs => "refs".as_bytes(),
        });
        for (key, value) in self.config {
            field(key.as_bytes());
            field(value.as_bytes());
        }
        field(b"credentials");
        field(self.storage_credentials.as_bytes());
        match self.delegation {
            None => field(b"not delegated"),
            Some(Delegation { access, policy, asked, signer }) => {
                field(match access {
                    DataAccess::Read => "delegated read".as_bytes(),
                    DataAccess::ReadWrite => "delegated read-write".as_bytes(),
                });
                field(&policy.to_le_bytes());
                field(asked.as_bytes());
                field(signer.as_bytes());
            }
        }
        if let Some(fingerprint) = self.restricted {
            field(b"restricted");
            field(fingerprint.as_bytes());
        }
        let digest = h.finalize();
        let mut hex = [0u8; 32];
        for (i, b) in digest[..16].iter().enumerate() {
            hex[2 * i] = HEX[usize::from(b >> 4)];
            hex[2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        Digest128(hex)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A representation's digest, as the hex its tag starts with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest128([u8; 32]);

impl Digest128 {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex is ASCII")
    }
}

/// An answer's entity tag: its digest, and when the credentials in it expire.
pub struct Tag {
    digest: Digest128,
    expires_at_ms: Option<u64>,
}

impl Tag {
    pub fn new(digest: Digest128, expires_at_ms: Option<u64>) -> Self {
        Self { digest, expires_at_ms }
    }

    fn header(&self) -> HeaderValue {
        let value = match self.expires_at_ms {
            None => format!("\"{}\"", self.digest.as_str()),
            Some(ms) => format!("\"{}-{ms}\"", self.digest.as_str()),
        };
        HeaderValue::from_str(&value).expect("hex and digits")
    }

    /// 304 Not Modified: no body, the tag the client holds.
    pub fn not_modified(self) -> Response {
        tagged(StatusCode::NOT_MODIFIED.into_response(), Some(self))
    }
}

/// `response` with its tag (none: the answer may not be reused) and the headers that
/// keep it out of shared caches.
pub fn tagged(mut response: Response, tag: Option<Tag>) -> Response {
    let headers = response.headers_mut();
    if let Some(tag) = tag {
        headers.insert(ETAG, tag.header());
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private"));
    headers.insert(VARY, HeaderValue::from_static("Authorization"));
    response
}

/// The request's `If-None-Match`, as sent (an extractor: the header alone).
pub struct IfNoneMatch(Option<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for IfNoneMatch {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.headers.get(IF_NONE_MATCH).cloned()))
    }
}

impl IfNoneMatch {
    /// The tag the client holds for the representation `digest` names, if it holds one
    /// whose credentials are still good. `*` matches nothing here: a client that asks
    /// for any representation may hold one with expired credentials.
    pub fn fresh(&self, digest: Digest128) -> Option<Tag> {
        let listed = self.0.as_ref()?.to_str().ok()?;
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        listed.split(',').find_map(|tag| {
            // If-None-Match compares weakly: `W/"x"` matches `"x"`.
            let tag = tag.trim();
            let opaque = tag.strip_prefix("W/").unwrap_or(tag).strip_prefix('"')?.strip_suffix('"')?;
            let (hex, expiry) = match opaque.split_once('-') {
                Some((hex, ms)) => (hex, Some(ms.parse::<u64>().ok()?)),
                None => (opaque, None),
            };
            if hex.as_bytes() != digest.0 {
                return None;
            }
            if expiry.is_some_and(|ms| ms <= now_ms + EXPIRY_MARGIN.as_millis() as u64) {
                return None;
            }
            Some(Tag::new(digest, expiry))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inm(value: &str) -> IfNoneMatch {
        IfNoneMatch(Some(HeaderValue::from_str(value).unwrap()))
    }

    fn digest(snapshots: Snapshots, delegated: Option<(DataAccess, u64, &str)>) -> Digest128 {
        let delegation =
            delegated.map(|(access, policy, asked)| Delegation { access, policy, asked, signer: "http://h:1" });
        Representation::table("s3://b/t/metadata/1.json", snapshots, &[], "").delegating(delegation).digest()
    }

    #[test]
    fn each_representation_has_its_own_digest() {
        let all = [
            digest(Snapshots::All, None),
            digest(Snapshots::Refs, None),
            digest(Snapshots::All, Some((DataAccess::Read, 1, "vended-credentials"))),
            digest(Snapshots::All, Some((DataAccess::ReadWrite, 1, "vended-credentials"))),
            digest(Snapshots::All, Some((DataAccess::Read, 2, "vended-credentials"))),
            digest(Snapshots::All, Some((DataAccess::Read, 1, "remote-signing"))),
            Representation::view("s3://b/t/metadata/1.json").digest(),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a != b, "{} twice", a.as_str());
            }
        }
    }

    #[test]
    fn a_tag_matches_weakly_and_in_a_list_until_its_credentials_expire() {
        let d = digest(Snapshots::All, None);
        let tag = Tag::new(d, None).header();
        let tag = tag.to_str().unwrap();
        assert!(inm(tag).fresh(d).is_some());
        assert!(inm(&format!("\"other\", W/{tag}")).fresh(d).is_some());
        assert!(inm("*").fresh(d).is_none());
        assert!(inm(tag).fresh(digest(Snapshots::Refs, None)).is_none());

        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let later = Tag::new(d, Some(now_ms + 3_600_000)).header();
        assert!(inm(later.to_str().unwrap()).fresh(d).is_some());
        for expiry in [now_ms - 1, now_ms + 30_000] {
            let soon = Tag::new(d, Some(expiry)).header();
            assert!(inm(soon.to_str().unwrap()).fresh(d).is_none(), "expires at {expiry}, now {now_ms}");
        }
    }
}
