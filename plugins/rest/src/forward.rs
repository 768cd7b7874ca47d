//! Requests forwarded to the remote (`forwarding`): the endpoint the host names is filled
//! in with the remote's prefix and the backend's own names, and sent with the client's
//! body. The remote's answer goes back as it is, whatever its status: the host maps it.
//!
//! signRequest goes to the signer the remote names in the table's own load (its
//! `s3.signer.uri` and `s3.signer.endpoint`), with the mount's credential: the client's
//! token for this server never reaches the remote, and the remote signs only for its
//! own storage.

use rustberg_remote::path::segment;

use crate::exports::rustberg::catalog::forwarding::{Answer, Forwarded, Guest};
use crate::remote::{with_query, Remote};
use crate::rustberg::catalog::types::{Error, Ident};
use crate::Rest;

/// Headers a forwarded write may carry to the remote; anything else the host named is
/// dropped (the mount's credential is added by the host, never passed through).
/// `Idempotency-Key` only to a remote that advertised it.
const PASSED_HEADERS: &[&str] = &[IDEMPOTENCY_KEY, "x-iceberg-access-delegation"];
const IDEMPOTENCY_KEY: &str = "idempotency-key";

impl Guest for Rest {
    fn forward(request: Forwarded) -> Result<Answer, Error> {
        let remote = Remote::open()?;
        let (method, path) = match request.endpoint.as_str() {
            SIGN => ("POST".to_string(), signer_path(&request)?),
            _ => remote_path(remote, &request)?,
        };
        let mut headers: Vec<(String, String)> = request
            .headers
            .into_iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                PASSED_HEADERS.contains(&name.as_str()) && (name != IDEMPOTENCY_KEY || remote.idempotency_keys)
            })
            .collect();
        if !request.body.is_empty() {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        let response = remote.send(&method, path, headers, request.body)?;
        Ok(Answer { status: response.status, body: response.body })
    }
}

/// The spec's signRequest.
const SIGN: &str = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign";

/// Where the remote signs for a table: the signer the host passes (`signer`: what the
/// remote named where the client was told to sign, a load or a create), or else the one
/// the table's load (asking for remote signing) names. A remote that names none signs
/// nothing: the client should not have asked.
fn signer_path(request: &Forwarded) -> Result<String, Error> {
    let passed = request.query.iter().find(|(k, _)| k == "signer").map(|(_, v)| v.clone());
    let signer = match passed {
        Some(signer) => signer,
        None => loaded_signer(request)?,
    };
    match signer.contains("://") {
        true => Ok(signer),
        // Relative to the catalog, as the remote's clients resolve it.
        false => Ok(format!("{}/{}", Remote::open()?.base(), signer.trim_start_matches('/'))),
    }
}

/// The signer a table's load names: `s3.signer.uri` joined with `s3.signer.endpoint`.
fn loaded_signer(request: &Forwarded) -> Result<String, Error> {
    let bad = || Error::BadRequest("a sign request names a table".into());
    let table =
        Ident { namespace: request.namespace.clone().ok_or_else(bad)?, name: request.name.clone().ok_or_else(bad)? };
    let loaded = crate::load_member("tables", table, Some("remote-signing".into()))?;
    let setting = |keys: &[&str]| {
        keys.iter().find_map(|key| loaded.config.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
    };
    if setting(&["s3.remote-signing-enabled"]).as_deref() != Some("true") {
        return Err(Error::Unsupported("the remote does not sign requests for this table".into()));
    }
    let endpoint = setting(&["s3.signer.endpoint", "signer.endpoint"]).unwrap_or_else(|| DEFAULT_SIGNER.into());
    match setting(&["s3.signer.uri", "signer.uri"]) {
        Some(uri) if !endpoint.contains("://") => {
            Ok(format!("{}/{}", uri.trim_end_matches('/'), endpoint.trim_start_matches('/')))
        }
        _ => Ok(endpoint),
    }
}

/// Iceberg's default signer endpoint, relative to the signer's URI.
const DEFAULT_SIGNER: &str = "v1/aws/s3/sign";

/// The method and the remote path of an endpoint such as
/// `POST /v1/{prefix}/namespaces/{namespace}/tables/{table}`.
fn remote_path(remote: &Remote, request: &Forwarded) -> Result<(String, String), Error> {
    let bad = || Error::BadRequest(format!("not an Iceberg REST endpoint: {:?}", request.endpoint));
    let (method, template) = request.endpoint.split_once(' ').ok_or_else(bad)?;
    let rest = template.strip_prefix("/v1/{prefix}").ok_or_else(bad)?;
    let mut path = remote.root();
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        path.push('/');
        match part {
            "{namespace}" => path.push_str(&remote.namespace_segment(request.namespace.as_ref().ok_or_else(bad)?)),
            "{table}" | "{view}" => path.push_str(&segment(request.name.as_deref().ok_or_else(bad)?)),
            literal if !literal.contains('{') => path.push_str(literal),
            _ => return Err(bad()),
        }
    }
    Ok((method.to_string(), with_query(path, &request.query)))
}
