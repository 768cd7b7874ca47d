//! Remote signing: the host signs a client's S3 request with its store's own keys, so
//! that a client holding no key at all reads and writes a table's files. It signs only
//! requests for objects under the table's own location (a listing only with a prefix
//! inside it), at the store and in the bucket the table lives in, and for a caller who
//! may only read, only GET and HEAD.
//!
//! Paths are judged as S3 reads them: the URI decoded once, then compared literally.
//! An empty, `.` or `..` segment, written plainly or percent-encoded, is refused, so a
//! store that normalizes paths cannot be walked out of the table either. A body the
//! signature does not cover (S3 takes `UNSIGNED-PAYLOAD`) is only signed where it
//! cannot reach another table: a DeleteObjects body must be bound by a checksum header
//! the signature covers, and every key it names is checked.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use http::{HeaderName, HeaderValue, Method, Uri};
use percent_encoding::percent_decode_str;
use reqsign_aws_v4::{Credential, RequestSigner};
use reqsign_core::{Context, SignRequest as _};
use serde::Deserialize;

use super::location::Location;
use super::vending::DataAccess;

/// A request a client asks the host to sign (the spec's `RemoteSignRequest`).
pub struct S3Request<'a> {
    pub method: &'a str,
    pub uri: &'a str,
    pub headers: &'a BTreeMap<String, Vec<String>>,
    pub body: Option<&'a str>,
}

/// What the signature adds to the client's request: the headers it did not send.
pub struct Signed {
    pub uri: String,
    pub headers: BTreeMap<String, Vec<String>>,
}

/// Why a request was not signed (answered 403 and recorded in the audit log).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{0} is not a URI with a scheme and a host")]
    Uri(String),
    #[error("{0} is not in this table's bucket at its store")]
    OtherStore(String),
    #[error("{0} holds an empty, . or .. path segment (written or percent-encoded)")]
    Traversal(String),
    #[error("{object} is outside the table's location {table}")]
    Outside { object: String, table: String },
    #[error("{0} is not an operation on a table's files")]
    Operation(String),
    #[error("{0}: the caller may only read this table (GET and HEAD)")]
    ReadOnly(String),
    #[error("DeleteObjects is signed only with its body and a Content-MD5, x-amz-checksum-crc32 or x-amz-content-sha256 header that binds it: {0}")]
    UnboundBody(String),
    #[error("the signature failed: {0}")]
    Sign(String),
}

impl Refusal {
    /// Whether the client asked for something no table allows (403), rather than the
    /// host failing to sign (500).
    pub fn is_forbidden(&self) -> bool {
        !matches!(self, Refusal::Sign(_))
    }
}

/// The keys and address of one store, for signing requests to it.
pub struct StoreSigner {
    credential: Credential,
    region: String,
    /// `http` or `https`.
    scheme: String,
    /// The hosts (with their ports) requests to the store name: path-style as they
    /// are, virtual-hosted with the bucket in front.
    hosts: Vec<String>,
    /// Whether loads offer signing to clients that did not ask for it (a store
    /// without STS).
    pub unasked: bool,
}

impl StoreSigner {
    /// A signer with `keys` for the store at `endpoint` (`None`: AWS in `region`).
    pub fn new(
        endpoint: Option<&str>,
        region: &str,
        keys: (String, String),
        unasked: bool,
    ) -> Result<StoreSigner, String> {
        let (scheme, hosts) = match endpoint {
            Some(endpoint) => {
                let uri: Uri = endpoint.parse().map_err(|e| format!("endpoint {endpoint:?}: {e}"))?;
                let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
                    return Err(format!("endpoint {endpoint:?} needs a scheme and a host"));
                };
                (scheme.to_ascii_lowercase(), vec![authority.as_str().to_ascii_lowercase()])
            }
            None => ("https".into(), vec!["s3.amazonaws.com".into(), format!("s3.{region}.amazonaws.com")]),
        };
        let (access_key_id, secret_access_key) = keys;
        let credential = Credential { access_key_id, secret_access_key, session_token: None, expires_in: None };
        Ok(StoreSigner { credential, region: region.to_string(), scheme, hosts, unasked })
    }

    /// Signs `request` for the table at `table`, for a caller with `access`, or says
    /// why not.
    pub async fn sign(&self, table: &Location, access: DataAccess, request: &S3Request<'_>) -> Result<Signed, Refusal> {
        let method: Method = request.method.parse().map_err(|_| Refusal::Operation(request.method.to_string()))?;
        let uri: Uri = request.uri.parse().map_err(|_| Refusal::Uri(request.uri.to_string()))?;
        if uri.authority().is_none() {
            return Err(Refusal::Uri(request.uri.to_string()));
        }
        let headers = lowercase(request.headers);
        let needs = self.judge(table, &method, &uri, &headers, request.body)?;
        if needs == DataAccess::ReadWrite && access == DataAccess::Read {
            return Err(Refusal::ReadOnly(format!("{method} {uri}")));
        }
        self.signed(method, uri, &headers).await
    }

    /// What the request needs the caller to hold, if it is one this table allows.
    fn judge(
        &self,
        table: &Location,
        method: &Method,
        uri: &Uri,
        headers: &BTreeMap<String, String>,
        body: Option<&str>,
    ) -> Result<DataAccess, Refusal> {
        let raw_key = self.key_path(uri, table.bucket()).ok_or_else(|| Refusal::OtherStore(uri.to_string()))?;
        let key = percent_decode_str(raw_key).decode_utf8().map_err(|_| Refusal::Uri(uri.to_string()))?;
        let query: Vec<(String, String)> =
            url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()).into_owned().collect();
        let has = |name: &str| query.iter().any(|(k, _)| k == name);
        let only = |allowed: &[&str]| {
            query.iter().all(|(k, _)| allowed.contains(&k.as_str()) || k.starts_with("response-") || k == "x-id")
        };
        let operation = || Refusal::Operation(format!("{method} {uri}"));
        if let Some(source) = headers.get("x-amz-copy-source") {
            // CopyObject and UploadPartCopy read their source with the signer's keys.
            let source = percent_decode_str(source).decode_utf8().map_err(|_| Refusal::Uri(source.clone()))?;
            let source = source.trim_start_matches('/');
            let source = source.split_once("?versionId=").map_or(source, |(path, _)| path);
            let (bucket, key) = source.split_once('/').ok_or_else(|| Refusal::OtherStore(source.to_string()))?;
            if bucket != table.bucket() {
                return Err(Refusal::OtherStore(format!("copy source {source}")));
            }
            object_within(table, key)?;
        }
        if !key.is_empty() {
            object_within(table, &key)?;
            return match *method {
                Method::GET | Method::HEAD if only(&["versionId", "partNumber"]) => Ok(DataAccess::Read),
                // ListParts.
                Method::GET if only(&["uploadId", "max-parts", "part-number-marker"]) => Ok(DataAccess::ReadWrite),
                // PutObject, UploadPart (and their copies).
                Method::PUT if only(&["partNumber", "uploadId"]) => Ok(DataAccess::ReadWrite),
                // CreateMultipartUpload, CompleteMultipartUpload.
                Method::POST if (has("uploads") || has("uploadId")) && only(&["uploads", "uploadId"]) => {
                    Ok(DataAccess::ReadWrite)
                }
                // DeleteObject, AbortMultipartUpload.
                Method::DELETE if only(&["uploadId", "versionId"]) => Ok(DataAccess::ReadWrite),
                _ => Err(operation()),
            };
        }
        match *method {
            // ListObjectsV2 (and V1) for a reader; ListMultipartUploads for a writer:
            // with a prefix inside the table either way.
            Method::GET => {
                let (parameters, needs) = match has("uploads") {
                    false => (LIST_OBJECTS, DataAccess::Read),
                    true => (LIST_UPLOADS, DataAccess::ReadWrite),
                };
                if !only(parameters) {
                    return Err(operation());
                }
                prefix_within(table, &query)?;
                Ok(needs)
            }
            // DeleteObjects.
            Method::POST if has("delete") && only(&["delete"]) => {
                let body = body.ok_or_else(|| Refusal::UnboundBody("the request has no body".into()))?;
                bound(body, headers)?;
                let delete: Delete = quick_xml::de::from_str(body)
                    .map_err(|e| Refusal::UnboundBody(format!("the body is not a Delete request: {e}")))?;
                for object in &delete.objects {
                    object_within(table, &object.key)?;
                }
                Ok(DataAccess::ReadWrite)
            }
            _ => Err(operation()),
        }
    }

    /// The object key path (still percent-encoded, no leading slash) `uri` names in
    /// `bucket` at this store, path-style or virtual-hosted; `None` for any other
    /// store, scheme or bucket.
    fn key_path<'u>(&self, uri: &'u Uri, bucket: &str) -> Option<&'u str> {
        if !uri.scheme_str().is_some_and(|s| s.eq_ignore_ascii_case(&self.scheme)) {
            return None;
        }
        let authority = uri.authority()?.as_str().to_ascii_lowercase();
        let path = uri.path();
        self.hosts.iter().find_map(|host| {
            if authority == *host {
                let rest = path.strip_prefix('/')?.strip_prefix(bucket)?;
                return if rest.is_empty() { Some("") } else { rest.strip_prefix('/') };
            }
            let named = authority.strip_suffix(host.as_str())?.strip_suffix('.')?;
            (named == bucket).then(|| path.strip_prefix('/').unwrap_or(path))
        })
    }

    /// Signs with the store's keys: the client's `x-amz-*` and `Content-MD5` headers
    /// as it will send them, the host from the URI.
    async fn signed(&self, method: Method, uri: Uri, headers: &BTreeMap<String, String>) -> Result<Signed, Refusal> {
        let (mut parts, ()) = http::Request::builder()
            .method(method)
            .uri(uri.clone())
            .body(())
            .map_err(|e| Refusal::Sign(e.to_string()))?
            .into_parts();
        for (name, value) in headers {
            let signed = (name.starts_with("x-amz-") && !UNSIGNED.contains(&name.as_str())) || name == "content-md5";
            if signed {
                let name = HeaderName::try_from(name.as_str()).map_err(|e| Refusal::Sign(e.to_string()))?;
                let value = HeaderValue::try_from(value.as_str()).map_err(|e| Refusal::Sign(e.to_string()))?;
                parts.headers.insert(name, value);
            }
        }
        RequestSigner::new("s3", &self.region)
            .sign_request(&Context::new(), &mut parts, Some(&self.credential), None)
            .await
            .map_err(|e| Refusal::Sign(e.to_string()))?;
        let sent: BTreeSet<&str> = headers.keys().map(String::as_str).collect();
        let added = parts
            .headers
            .iter()
            .filter(|(name, _)| !sent.contains(name.as_str()))
            .map(|(name, value)| (name.to_string(), vec![value.to_str().unwrap_or_default().to_string()]))
            .collect();
        Ok(Signed { uri: uri.to_string(), headers: added })
    }
}

/// The query parameters a listing of objects (V2 or V1) may carry.
const LIST_OBJECTS: &[&str] = &[
    "list-type",
    "prefix",
    "continuation-token",
    "max-keys",
    "start-after",
    "delimiter",
    "fetch-owner",
    "encoding-type",
    "marker",
];

/// The query parameters a listing of multipart uploads may carry.
const LIST_UPLOADS: &[&str] =
    &["uploads", "prefix", "key-marker", "upload-id-marker", "max-uploads", "delimiter", "encoding-type"];

/// Headers the host sets itself: a client's are dropped, never signed.
const UNSIGNED: &[&str] = &["x-amz-date", "x-amz-security-token"];

/// The headers by lowercase name, each one's values joined as HTTP joins them.
fn lowercase(headers: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, String> {
    headers.iter().map(|(name, values)| (name.to_ascii_lowercase(), values.join(", "))).collect()
}

/// Whether the object `key` (decoded, literal) lies under the table's location.
fn object_within(table: &Location, key: &str) -> Result<(), Refusal> {
    if key.split('/').any(|segment| matches!(segment, "" | "." | "..")) || key.chars().any(char::is_control) {
        return Err(Refusal::Traversal(key.to_string()));
    }
    let table_key = table.key();
    if table_key.is_empty() || key.strip_prefix(&table_key).is_some_and(|rest| rest.starts_with('/')) {
        Ok(())
    } else {
        Err(Refusal::Outside { object: format!("s3://{}/{key}", table.bucket()), table: table.to_string() })
    }
}

/// Whether a listing's `prefix` keeps it inside the table: it must name the table's
/// folder (`<location>/`) or something in it, never a sibling that shares its name's
/// start.
fn prefix_within(table: &Location, query: &[(String, String)]) -> Result<(), Refusal> {
    let table_key = table.key();
    let Some((_, prefix)) = query.iter().find(|(k, _)| k == "prefix") else {
        return match table_key.is_empty() {
            true => Ok(()),
            false => Err(Refusal::Outside { object: format!("s3://{}/*", table.bucket()), table: table.to_string() }),
        };
    };
    let segments: Vec<&str> = prefix.split('/').collect();
    let (last, whole) = segments.split_last().expect("split gives at least one piece");
    if whole.iter().any(|s| matches!(*s, "" | "." | "..")) || matches!(*last, "." | "..") {
        return Err(Refusal::Traversal(prefix.clone()));
    }
    if table_key.is_empty() || prefix.strip_prefix(&table_key).is_some_and(|rest| rest.starts_with('/')) {
        Ok(())
    } else {
        Err(Refusal::Outside { object: format!("s3://{}/{prefix}*", table.bucket()), table: table.to_string() })
    }
}

/// Whether a header the signature covers binds `body`: S3 checks the body against it.
fn bound(body: &str, headers: &BTreeMap<String, String>) -> Result<(), Refusal> {
    use md5::Digest as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let md5 = || b64(&md5::Md5::digest(body.as_bytes()));
    let crc32 = || b64(&crc32fast::hash(body.as_bytes()).to_be_bytes());
    let sha256 = || reqsign_core::hash::hex_sha256(body.as_bytes());
    let checks: [(&str, &dyn Fn() -> String); 3] =
        [("content-md5", &md5), ("x-amz-checksum-crc32", &crc32), ("x-amz-content-sha256", &sha256)];
    for (name, expected) in checks {
        if let Some(sent) = headers.get(name) {
            if *sent == expected() {
                return Ok(());
            }
            return Err(Refusal::UnboundBody(format!("{name} does not match the body")));
        }
    }
    Err(Refusal::UnboundBody("no such header".into()))
}

/// The keys of a DeleteObjects body.
#[derive(Deserialize)]
struct Delete {
    #[serde(rename = "Object", default)]
    objects: Vec<DeleteObject>,
}

#[derive(Deserialize)]
struct DeleteObject {
    #[serde(rename = "Key")]
    key: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> StoreSigner {
        StoreSigner::new(Some("http://127.0.0.1:9000"), "us-east-1", ("id".into(), "secret".into()), false).unwrap()
    }

    fn judge(method: &str, uri: &str) -> Result<DataAccess, Refusal> {
        let table = Location::parse("s3://b/wh/db/t").unwrap();
        signer().judge(&table, &method.parse().unwrap(), &uri.parse().unwrap(), &BTreeMap::new(), None)
    }

    #[test]
    fn objects_under_the_table_only() {
        assert_eq!(judge("GET", "http://127.0.0.1:9000/b/wh/db/t/data/f.parquet").unwrap(), DataAccess::Read);
        assert_eq!(judge("HEAD", "http://b.127.0.0.1:9000/wh/db/t/metadata/m.json").unwrap(), DataAccess::Read);
        assert_eq!(judge("PUT", "http://127.0.0.1:9000/b/wh/db/t/data/f").unwrap(), DataAccess::ReadWrite);
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/b/wh/db/t2/f"), Err(Refusal::Outside { .. })));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/b/wh/db/t"), Err(Refusal::Outside { .. })));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/c/wh/db/t/f"), Err(Refusal::OtherStore(_))));
        assert!(matches!(judge("GET", "http://127.0.0.1:9001/b/wh/db/t/f"), Err(Refusal::OtherStore(_))));
        assert!(matches!(judge("GET", "https://127.0.0.1:9000/b/wh/db/t/f"), Err(Refusal::OtherStore(_))));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/bb/wh/db/t/f"), Err(Refusal::OtherStore(_))));
    }

    #[test]
    fn traversal_is_refused_written_or_encoded() {
        for uri in [
            "http://127.0.0.1:9000/b/wh/db/t/../t2/f",
            "http://127.0.0.1:9000/b/wh/db/t/%2e%2e/t2/f",
            "http://127.0.0.1:9000/b/wh/db/t/%2E%2E%2Ft2/f",
            "http://127.0.0.1:9000/b/wh/db/t//f",
            "http://127.0.0.1:9000/b/wh/db/t/./f",
        ] {
            assert!(matches!(judge("GET", uri), Err(Refusal::Traversal(_))), "{uri}");
        }
    }

    #[test]
    fn listings_need_a_prefix_inside_the_table() {
        let list = "http://127.0.0.1:9000/b?list-type=2&prefix=";
        assert_eq!(judge("GET", &format!("{list}wh/db/t/")).unwrap(), DataAccess::Read);
        assert_eq!(judge("GET", &format!("{list}wh%2Fdb%2Ft%2Fdata%2F0")).unwrap(), DataAccess::Read);
        assert!(matches!(judge("GET", &format!("{list}wh/db/t")), Err(Refusal::Outside { .. })));
        assert!(matches!(judge("GET", &format!("{list}wh/db/")), Err(Refusal::Outside { .. })));
        assert!(matches!(judge("GET", &format!("{list}wh/db/t/../")), Err(Refusal::Traversal(_))));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/b?list-type=2"), Err(Refusal::Outside { .. })));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/b?policy"), Err(Refusal::Operation(_))));
        assert!(matches!(judge("PUT", "http://127.0.0.1:9000/b"), Err(Refusal::Operation(_))));
        assert!(matches!(judge("GET", "http://127.0.0.1:9000/b/wh/db/t/f?acl"), Err(Refusal::Operation(_))));
    }

    #[test]
    fn multipart_uploads_are_writes() {
        let object = "http://127.0.0.1:9000/b/wh/db/t/data/f";
        assert_eq!(judge("POST", &format!("{object}?uploads")).unwrap(), DataAccess::ReadWrite);
        assert_eq!(judge("PUT", &format!("{object}?partNumber=1&uploadId=u")).unwrap(), DataAccess::ReadWrite);
        assert_eq!(judge("POST", &format!("{object}?uploadId=u")).unwrap(), DataAccess::ReadWrite);
        assert_eq!(judge("DELETE", &format!("{object}?uploadId=u")).unwrap(), DataAccess::ReadWrite);
        assert!(matches!(judge("POST", object), Err(Refusal::Operation(_))));
    }

    #[test]
    fn a_delete_objects_body_is_bound_and_checked() {
        let table = Location::parse("s3://b/wh/db/t").unwrap();
        let uri: Uri = "http://127.0.0.1:9000/b?delete".parse().unwrap();
        let body = |key: &str| format!("<Delete><Object><Key>{key}</Key></Object></Delete>");
        let md5 = |body: &str| {
            use md5::Digest as _;
            base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body.as_bytes()))
        };
        let judge = |body: &str, headers: &[(&str, String)]| {
            let headers = headers.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            signer().judge(&table, &Method::POST, &uri, &headers, Some(body))
        };
        let inside = body("wh/db/t/data/f");
        assert_eq!(judge(&inside, &[("content-md5", md5(&inside))]).unwrap(), DataAccess::ReadWrite);
        assert!(matches!(judge(&inside, &[]), Err(Refusal::UnboundBody(_))));
        assert!(matches!(judge(&inside, &[("content-md5", md5("other"))]), Err(Refusal::UnboundBody(_))));
        let outside = body("wh/db/t2/data/f");
        assert!(matches!(judge(&outside, &[("content-md5", md5(&outside))]), Err(Refusal::Outside { .. })));
    }

    #[tokio::test]
    async fn a_reader_gets_reads_signed_only_and_a_copy_reads_only_its_table() {
        let table = Location::parse("s3://b/wh/db/t").unwrap();
        let none = BTreeMap::new();
        let request = |method, uri, headers| S3Request { method, uri, headers, body: None };
        let get = request("GET", "http://127.0.0.1:9000/b/wh/db/t/f", &none);
        let signed = signer().sign(&table, DataAccess::Read, &get).await.unwrap();
        assert!(signed.headers["authorization"][0].starts_with("AWS4-HMAC-SHA256 Credential=id/"));
        assert!(signed.headers.contains_key("x-amz-date"));
        let put = request("PUT", "http://127.0.0.1:9000/b/wh/db/t/f", &none);
        assert!(matches!(signer().sign(&table, DataAccess::Read, &put).await, Err(Refusal::ReadOnly(_))));
        let copy: BTreeMap<String, Vec<String>> =
            [("X-Amz-Copy-Source".to_string(), vec!["/b/wh/db/t2/f".to_string()])].into();
        let put = request("PUT", "http://127.0.0.1:9000/b/wh/db/t/f", &copy);
        assert!(matches!(signer().sign(&table, DataAccess::ReadWrite, &put).await, Err(Refusal::Outside { .. })));
    }
}
