//! Request and response bodies of the REST API, as the spec names their fields.

use std::collections::HashMap;

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
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

#[derive(Debug, Serialize)]
pub struct ListNamespacesResponse {
    pub namespaces: Vec<Vec<String>>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
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

#[derive(Debug, Serialize)]
pub struct ListTablesResponse {
    pub identifiers: Vec<TableIdentifier>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
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
/// stored metadata JSON embedded as it is: no parse and re-serialize on a load.
pub struct TableResult<'a> {
    pub metadata_location: Option<&'a str>,
    pub metadata_json: &'a str,
    pub config: Option<&'a [(String, String)]>,
    /// A JSON array to pass on as `storage-credentials` (a remote's own), or empty.
    pub storage_credentials: &'a str,
}

impl IntoResponse for TableResult<'_> {
    fn into_response(self) -> Response {
        let mut body = String::with_capacity(self.metadata_json.len() + 256);
        body.push('{');
        if let Some(location) = self.metadata_location {
            body.push_str("\"metadata-location\":");
            body.push_str(&serde_json::to_string(location).expect("a string serializes"));
            body.push(',');
        }
        body.push_str("\"metadata\":");
        body.push_str(self.metadata_json);
        if let Some(config) = self.config {
            let config: HashMap<&str, &str> = config.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            body.push_str(",\"config\":");
            body.push_str(&serde_json::to_string(&config).expect("a map of strings serializes"));
        }
        if !self.storage_credentials.is_empty() {
            body.push_str(",\"storage-credentials\":");
            body.push_str(self.storage_credentials);
        }
        body.push('}');
        ([(CONTENT_TYPE, "application/json")], body).into_response()
    }
}
