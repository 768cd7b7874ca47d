//! The rest Rustberg backend: a proxy to somebody else's Iceberg REST catalog, reached
//! only through the host's `http` capability (which adds the mount's credential and
//! enforces timeouts; this component never sees the secret). Reads are the backend's
//! own functions; writes are forwarded to the remote as the client asked for them
//! (`forwarding`), the remote doing the compare-and-set, where the mount is
//! read-write (`read_only = false`; the host's default for a forwarding backend is
//! read-only).
//!
//! Paging: a cursor is `<offset>:<remote token>`, "the page this token fetched, from
//! this offset". The last item of a remote page carries the remote's next token
//! (offset 0) instead, so an unfiltered walk costs one remote request per page.
//!
//! Reachability: only a remote 404 means "not there". Transport failures, timeouts,
//! 5xx and a rejected credential are `unavailable`, each with its own message.

mod remote;

wit_bindgen::generate!({
    world: "forwarding-http-backend",
    path: "../../wit",
});

mod forward;

use exports::rustberg::catalog::backend::Guest;
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    Properties, PropertiesUpdate, TableCommit,
};
use rustberg_remote::pages::parse_cursor;
use serde::Deserialize;
use serde_json::value::RawValue;

use remote::Remote;

/// What each remote endpoint, as its `/v1/config` lists it, lets the mount do.
const OFFERED_FEATURES: &[(&str, Features)] = &[
    ("GET /v1/{prefix}/namespaces/{namespace}/views/{view}", Features::VIEWS),
    ("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}", Features::WRITES),
    ("POST /v1/{prefix}/namespaces/{namespace}/properties", Features::NAMESPACE_PROPERTIES),
    ("POST /v1/{prefix}/tables/rename", Features::RENAME),
    ("POST /v1/{prefix}/transactions/commit", Features::MULTI_TABLE_COMMIT),
];

/// What a remote that lists no endpoints serves: the Java client's default set (every
/// table and namespace operation, no views).
const DEFAULT_FEATURES: Features =
    Features::WRITES.union(Features::NAMESPACE_PROPERTIES).union(Features::RENAME).union(Features::MULTI_TABLE_COMMIT);

/// The remote page size: fixed, so a (token, offset) cursor finds the same rows again.
const REMOTE_PAGE: u32 = 100;

/// The backend's own write functions: the host forwards writes instead.
fn forwarded_instead() -> Error {
    Error::Unsupported("writes to a remote catalog are forwarded to it (`forwarding`), not made here".into())
}

#[derive(Deserialize)]
struct RemoteConfig {
    #[serde(default)]
    overrides: std::collections::HashMap<String, serde_json::Value>,
    #[serde(default)]
    defaults: std::collections::HashMap<String, serde_json::Value>,
    endpoints: Option<Vec<String>>,
    /// Present when the remote honours `Idempotency-Key` (the spec's advertisement).
    #[serde(rename = "idempotency-key-lifetime")]
    idempotency_key_lifetime: Option<String>,
}

#[derive(Deserialize)]
struct NamespaceList {
    #[serde(default)]
    namespaces: Vec<Vec<String>>,
    #[serde(rename = "next-page-token")]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct Identifier {
    name: String,
}

#[derive(Deserialize)]
struct IdentifierList {
    #[serde(default)]
    identifiers: Vec<Identifier>,
    #[serde(rename = "next-page-token")]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct NamespaceBody {
    #[serde(default)]
    properties: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct LoadResult<'a> {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<String>,
    #[serde(borrow)]
    metadata: &'a RawValue,
    #[serde(default)]
    config: Option<std::collections::BTreeMap<String, String>>,
    #[serde(rename = "storage-credentials", borrow, default)]
    storage_credentials: Option<&'a RawValue>,
}

/// What the remote's listed endpoints let the mount do. (Planning is never offered:
/// the remote's manifests are not in storage this server manages.)
fn features(offered: Option<&[String]>) -> Features {
    let Some(offered) = offered else { return DEFAULT_FEATURES };
    OFFERED_FEATURES
        .iter()
        .filter(|(endpoint, _)| offered.iter().any(|o| o == endpoint))
        .fold(Features::empty(), |all, (_, feature)| all | *feature)
}

/// Serves one page: the rows of the remote page `token` fetched, from `offset`,
/// at most `limit`, each with the cursor for the position after it.
fn page_of<T>(
    rows: Vec<T>,
    next: Option<String>,
    token: Option<String>,
    offset: usize,
    limit: u32,
) -> (Vec<(T, String)>, bool) {
    let total = rows.len();
    let token = token.unwrap_or_default();
    let next = next.filter(|n| !n.is_empty());
    let mut out = Vec::new();
    for (i, row) in rows.into_iter().enumerate().skip(offset).take(limit.max(1) as usize) {
        let cursor = if i + 1 == total {
            // The page's last row: the next page starts at the remote's next token.
            format!("0:{}", next.clone().unwrap_or_default())
        } else {
            format!("{}:{token}", i + 1)
        };
        out.push((row, cursor));
    }
    let reached_end = offset + out.len() >= total;
    (out, reached_end && next.is_none())
}

struct Rest;

impl Guest for Rest {
    fn describe() -> Result<Description, Error> {
        let remote = Remote::discover()?;
        let config: RemoteConfig = remote.get_json(&remote.config_path())?;
        let setting = |key: &str| {
            config.overrides.get(key).or_else(|| config.defaults.get(key)).and_then(|v| v.as_str()).map(str::to_string)
        };
        let prefix = setting("prefix").or_else(|| remote.warehouse.clone()).unwrap_or_default();
        let separator = setting("namespace-separator").unwrap_or_else(|| remote::DEFAULT_SEPARATOR.to_string());
        let features = features(config.endpoints.as_deref());
        let idempotency = config.idempotency_key_lifetime.is_some().to_string();
        let remember = vec![
            ("prefix".into(), prefix),
            ("namespace_separator".into(), separator),
            ("idempotency_keys".into(), idempotency),
        ];
        Ok(Description { features, remember })
    }

    fn list_namespaces(parent: Option<Vec<String>>, page: PageRequest) -> Result<NamespacePage, Error> {
        let remote = Remote::open()?;
        let (token, offset) = parse_cursor(page.after.as_deref());
        let mut query = vec![("pageSize".to_string(), REMOTE_PAGE.to_string())];
        if let Some(parent) = &parent {
            query.push(("parent".into(), remote.namespace_query(parent)));
        }
        if let Some(token) = &token {
            query.push(("pageToken".into(), token.clone()));
        }
        let list: NamespaceList = remote.get_json(&remote.path(None, &["namespaces"], &query))?;
        let (rows, done) = page_of(list.namespaces, list.next_page_token, token, offset, page.limit);
        let items = rows.into_iter().map(|(namespace, cursor)| NamespaceEntry { namespace, cursor }).collect();
        Ok(NamespacePage { items, done })
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        let remote = Remote::open()?;
        let body: NamespaceBody = remote.get_json(&remote.path(Some(&ns), &[], &[]))?;
        Ok(body.properties.unwrap_or_default().into_iter().collect())
    }

    fn create_namespace(_: Vec<String>, _: Properties) -> Result<Properties, Error> {
        Err(forwarded_instead())
    }

    fn drop_namespace(_: Vec<String>) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn update_namespace_properties(_: Vec<String>, _: Vec<String>, _: Properties) -> Result<PropertiesUpdate, Error> {
        Err(forwarded_instead())
    }

    fn list_tables(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list_members("tables", ns, page)
    }

    fn load_table(table: Ident, access_delegation: Option<String>) -> Result<Pointer, Error> {
        load_member("tables", table, access_delegation)
    }

    fn create_table(_: Ident, _: Pointer) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn commit_table(_: Ident, _: String, _: Pointer) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn drop_table(_: Ident) -> Result<Pointer, Error> {
        Err(forwarded_instead())
    }

    fn rename_table(_: Ident, _: Ident) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn list_views(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list_members("views", ns, page)
    }

    fn load_view(view: Ident) -> Result<Pointer, Error> {
        load_member("views", view, None)
    }

    fn create_view(_: Ident, _: Pointer) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn commit_view(_: Ident, _: String, _: Pointer) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn drop_view(_: Ident) -> Result<Pointer, Error> {
        Err(forwarded_instead())
    }

    fn rename_view(_: Ident, _: Ident) -> Result<(), Error> {
        Err(forwarded_instead())
    }

    fn commit_transaction(_: Vec<TableCommit>) -> Result<(), Error> {
        Err(forwarded_instead())
    }
}

fn list_members(kind: &str, ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
    let remote = Remote::open()?;
    let (token, offset) = parse_cursor(page.after.as_deref());
    let mut query = vec![("pageSize".to_string(), REMOTE_PAGE.to_string())];
    if let Some(token) = &token {
        query.push(("pageToken".into(), token.clone()));
    }
    let list: IdentifierList = remote.get_json(&remote.path(Some(&ns), &[kind], &query))?;
    let names = list.identifiers.into_iter().map(|i| i.name).collect();
    let (rows, done) = page_of(names, list.next_page_token, token, offset, page.limit);
    Ok(NamePage { items: rows.into_iter().map(|(name, cursor)| NameEntry { name, cursor }).collect(), done })
}

pub(crate) fn load_member(kind: &str, id: Ident, access_delegation: Option<String>) -> Result<Pointer, Error> {
    let remote = Remote::open()?;
    let path = remote.path(Some(&id.namespace), &[kind, &id.name], &[]);
    let headers: Vec<(String, String)> =
        access_delegation.into_iter().map(|v| ("X-Iceberg-Access-Delegation".to_string(), v)).collect();
    let body = remote.get(&path, headers)?;
    let loaded: LoadResult = serde_json::from_slice(&body)
        .map_err(|e| Error::Unavailable(format!("the remote's load result is not valid: {e}")))?;
    // Lenient with peers: `storage-credentials: null` is the same as none.
    let storage_credentials = loaded
        .storage_credentials
        .map(|raw| raw.get())
        .filter(|raw| raw.trim() != "null")
        .unwrap_or_default()
        .to_string();
    Ok(Pointer {
        metadata_location: loaded.metadata_location.unwrap_or_default(),
        metadata_json: loaded.metadata.get().to_string(),
        config: loaded.config.unwrap_or_default().into_iter().collect(),
        storage_credentials,
    })
}

export!(Rest);
