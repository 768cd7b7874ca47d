//! Request and response bodies of the REST API, as the spec names their fields.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use iceberg::spec::{Schema, SortOrder, UnboundPartitionSpec};
use iceberg::{TableRequirement, TableUpdate};
use serde::{Deserialize, Serialize};

/// `?pageToken=&pageSize=` (and `parent` for namespaces).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    pub page_token: Option<String>,
    pub page_size: Option<u32>,
    pub parent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateNamespaceRequest {
    pub namespace: Vec<String>,
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct NamespaceResponse {
    pub namespace: Vec<String>,
    pub properties: HashMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdatePropertiesRequest {
    #[serde(default)]
    pub removals: Vec<String>,
    #[serde(default)]
    pub updates: HashMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct UpdatePropertiesResponse {
    pub updated: Vec<String>,
    pub removed: Vec<String>,
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableIdentifier {
    pub namespace: Vec<String>,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CreateTableRequest {
    pub name: String,
    pub location: Option<String>,
    pub schema: Schema,
    pub partition_spec: Option<UnboundPartitionSpec>,
    pub write_order: Option<SortOrder>,
    #[serde(default)]
    pub stage_create: bool,
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

#[derive(Debug, Deserialize)]
pub struct CommitTableRequest {
    #[serde(default)]
    pub identifier: Option<TableIdentifier>,
    #[serde(default)]
    pub requirements: Vec<TableRequirement>,
    #[serde(default)]
    pub updates: Vec<TableUpdate>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CommitTransactionRequest {
    pub table_changes: Vec<CommitTableRequest>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RegisterTableRequest {
    pub name: String,
    pub metadata_location: String,
    #[serde(default)]
    pub overwrite: bool,
}

#[derive(Debug, Deserialize)]
pub struct RenameTableRequest {
    pub source: TableIdentifier,
    pub destination: TableIdentifier,
}

/// loadTable's query: which snapshots the metadata carries.
#[derive(Debug, Default, Deserialize)]
pub struct LoadTableQuery {
    #[serde(default)]
    pub snapshots: Snapshots,
}

/// `all` (the default) or `refs`: only those a branch or tag references.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Snapshots {
    #[default]
    All,
    Refs,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DropTableQuery {
    /// Clients send `true`, `True` or `1`.
    #[serde(default)]
    pub purge_requested: Option<String>,
}

impl DropTableQuery {
    pub fn purge(&self) -> bool {
        self.purge_requested.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
    }
}

/// A LoadTableResult (or CommitTableResponse without `config`), written with the
/// metadata JSON embedded as it is: no parse and re-serialize on a load, and no copy
/// (the body is sent as the parts around it and the held JSON itself).
pub struct TableResult<'a> {
    pub metadata_location: Option<&'a str>,
    pub metadata_json: Bytes,
    pub config: Option<&'a [(String, String)]>,
    /// A JSON array to pass on as `storage-credentials` (a remote's own), or empty.
    pub storage_credentials: &'a str,
    /// Whether the `config` turns remote signing on (and `remote-signing-config` is sent).
    pub remote_signing: bool,
    /// The spec's `read-restrictions` for a caller read policies restrict, as JSON.
    pub read_restrictions: Option<&'a str>,
}

impl IntoResponse for TableResult<'_> {
    fn into_response(self) -> Response {
        // The parts around the metadata share one buffer: one allocation, and one more
        // when it is split (a `Vec` whose length is not its capacity costs the same
        // when it becomes `Bytes`).
        let mut head = BytesMut::with_capacity(512);
        head.put_u8(b'{');
        if let Some(location) = self.metadata_location {
            head.extend_from_slice(b"\"metadata-location\":");
            write_json_string(&mut head, location);
            head.put_u8(b',');
        }
        head.extend_from_slice(b"\"metadata\":");
        let mut tail = head.split_off(head.len());
        if let Some(config) = self.config {
            tail.extend_from_slice(b",\"config\":");
            write_config(&mut tail, config);
        }
        if !self.storage_credentials.is_empty() {
            tail.extend_from_slice(b",\"storage-credentials\":");
            tail.extend_from_slice(self.storage_credentials.as_bytes());
        }
        if self.remote_signing {
            tail.extend_from_slice(b",\"remote-signing-config\":");
            tail.extend_from_slice(super::signing::REMOTE_SIGNING_CONFIG.as_bytes());
        }
        if let Some(restrictions) = self.read_restrictions {
            tail.extend_from_slice(b",\"read-restrictions\":");
            tail.extend_from_slice(restrictions.as_bytes());
        }
        tail.put_u8(b'}');
        let body = Parts::new([head.freeze(), self.metadata_json, tail.freeze()]);
        ([(CONTENT_TYPE, "application/json")], Body::new(body)).into_response()
    }
}

/// Writes `s` as a JSON string: as it is when nothing in it needs escaping (a
/// location, a config value), which is checked far faster than escaping goes.
pub(super) fn write_json_string(out: &mut impl BufMut, s: &str) {
    // A fold, not `all`: with no early exit the check is vectorized.
    let needs_escape = s.bytes().fold(false, |found, b| found | (b < 0x20) | (b == b'"') | (b == b'\\'));
    if !needs_escape {
        out.put_u8(b'"');
        out.put_slice(s.as_bytes());
        out.put_u8(b'"');
    } else {
        serde_json::to_writer(out.writer(), s).expect("a string serializes");
    }
}

/// Writes config pairs as a JSON object, in the order given, a key given twice
/// taking its last value (as a map built from them would).
fn write_config(out: &mut impl BufMut, pairs: &[(String, String)]) {
    out.put_u8(b'{');
    let mut first = true;
    for (i, (key, value)) in pairs.iter().enumerate() {
        if pairs[i + 1..].iter().any(|(later, _)| later == key) {
            continue;
        }
        if !first {
            out.put_u8(b',');
        }
        first = false;
        write_json_string(out, key);
        out.put_u8(b':');
        write_json_string(out, value);
    }
    out.put_u8(b'}');
}

/// A body sent as three buffers, its length known (so it goes with a Content-Length).
struct Parts {
    parts: [Bytes; 3],
    /// The first part not yet sent.
    next: usize,
}

impl Parts {
    fn new(parts: [Bytes; 3]) -> Self {
        Self { parts, next: 0 }
    }

    fn left(&self) -> &[Bytes] {
        &self.parts[self.next..]
    }
}

impl http_body::Body for Parts {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        // Empty parts are skipped: an empty frame is no data to a client.
        while self.next < self.parts.len() {
            let next = self.next;
            self.next += 1;
            let part = std::mem::take(&mut self.parts[next]);
            if !part.is_empty() {
                return Poll::Ready(Some(Ok(http_body::Frame::data(part))));
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.left().iter().all(Bytes::is_empty)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left().iter().map(|p| p.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_key_given_twice_takes_its_last_value() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut out = Vec::new();
        write_config(&mut out, &[pair("a", "1"), pair("b\"", "x\n\\"), pair("a", "2"), pair("ü", "\u{7f}")]);
        let object: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(object, serde_json::json!({"b\"": "x\n\\", "a": "2", "ü": "\u{7f}"}));
    }
}
