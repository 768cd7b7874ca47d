//! Access delegation at the edge: what loadTable and createTable hand a client for a
//! table's files (vended credentials, or remote signing; see `signing`), and
//! loadCredentials.
//!
//! A refused vend is logged and the request still succeeds without credentials (or
//! with signing, where the client also takes that).

use axum::extract::{FromRequestParts, Path, State as AxState};
use axum::http::request::Parts;
use axum::http::HeaderName;
use axum::Extension;

use super::members::{self, Kind, Resolved};
use super::{Endpoint, State};
use crate::audit::Vend;
use crate::auth::Caller;
use crate::authz::{Access, Entitlement, Privilege, Resource};
use crate::error::Error;
use crate::mounts::Mount;
use crate::storage::location::Location;
use crate::storage::vending::{DataAccess, Refusal, Vended};
use crate::tables;

/// The header a client sends to ask for vended credentials or remote signing.
pub const ACCESS_DELEGATION: HeaderName = HeaderName::from_static("x-iceberg-access-delegation");

/// The access delegation mechanisms the spec names. A client lists those it supports;
/// the server supplies any or none of them.
const MECHANISMS: [&str; 2] = ["vended-credentials", "remote-signing"];

/// The access delegation the client asked for, as sent (an extractor: the header
/// alone, not a copy of every header). A mechanism the spec does not name is a 400
/// naming it: a client that misspells one would otherwise get no credentials and fail
/// later, at its storage, for no reason it can see.
pub struct DelegationHeader(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for DelegationHeader {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Error> {
        let Some(value) = parts.headers.get(ACCESS_DELEGATION) else { return Ok(Self(None)) };
        let value = value.to_str().map_err(|_| Error::BadRequest("X-Iceberg-Access-Delegation is not ASCII".into()))?;
        if let Some(unknown) = value.split(',').map(str::trim).find(|m| !MECHANISMS.contains(m)) {
            return Err(Error::BadRequest(format!(
                "X-Iceberg-Access-Delegation: unknown mechanism {unknown:?} (the spec names {})",
                MECHANISMS.join(" and ")
            )));
        }
        Ok(Self(Some(value.to_string())))
    }
}

/// Whether the client asked for vended credentials (the header is a list).
pub fn wants_vended(delegation: Option<&str>) -> bool {
    asks(delegation, "vended-credentials")
}

fn asks(delegation: Option<&str>, mechanism: &str) -> bool {
    delegation.is_some_and(|d| d.split(',').any(|m| m.trim() == mechanism))
}

/// Whether a load of a table in `mount` may come with delegated access, so that its
/// entity tag must name what was asked: the host manages the mount's files, and the
/// client asked, or some store signs unasked.
pub fn may_delegate(state: &super::AppState, mount: &Mount, delegation: Option<&str>) -> bool {
    mount.served_files().is_some() && (delegation.is_some() || state.vendor.signs_unasked())
}

/// What a load hands a client for the table's files.
pub enum Delegated {
    Nothing,
    Vended(Vended),
    /// The `config` that turns remote signing on.
    Signing(Vec<(String, String)>),
}

/// Delegates access to the files of the table `namespace`.`name` at `location` in
/// `mount`, as the client asked (`delegation`) and the policy allows: vended
/// credentials first when asked for, else remote signing when asked for or when the
/// table's store signs unasked (signing at `signer`).
#[allow(clippy::too_many_arguments)]
pub async fn delegate(
    state: &super::AppState,
    authz: &Access,
    mount: &Mount,
    namespace: &[String],
    name: &str,
    location: &Location,
    delegation: Option<&str>,
    signer: &str,
) -> Delegated {
    if wants_vended(delegation) {
        if let Some(vended) = vend(state, authz, mount, namespace, name, location, None).await {
            return Delegated::Vended(vended);
        }
    }
    match state.vendor.signer(location) {
        Ok(store) if asks(delegation, "remote-signing") || store.unasked => {
            Delegated::Signing(super::signing::config(signer, namespace, name, state.vendor.client_config(location)))
        }
        Ok(_) => Delegated::Nothing,
        Err(reason) => {
            if asks(delegation, "remote-signing") {
                tracing::info!(table = %format!("{}.{name}", namespace.join(".")), %reason, "no remote signing");
            }
            Delegated::Nothing
        }
    }
}

/// What the credentials vended to the caller (`authz`, its access as the request read
/// it) for `resource` in `mount` may do: read-write when it may write the table and the
/// mount is writable, read-only otherwise.
pub fn data_access(authz: &Access, mount: &Mount, resource: &Resource) -> DataAccess {
    access_of(authz.held(resource).as_ref(), mount)
}

/// [`data_access`] from what the caller holds, read once by the caller of this.
pub fn access_of(held: Option<&Entitlement<'_>>, mount: &Mount) -> DataAccess {
    if held.is_some_and(|h| h.privilege >= Privilege::Write) && !mount.read_only {
        DataAccess::ReadWrite
    } else {
        DataAccess::Read
    }
}

/// Vends credentials for the table at `location` in `mount`, as [`data_access`] says. A
/// mount without a warehouse here (a remote catalog) gets nothing from this server.
/// Credentials that expire name the loadCredentials route a client refreshes them at;
/// with `at_most`, they expire no later than that from now.
pub async fn vend(
    state: &super::AppState,
    authz: &Access,
    mount: &Mount,
    namespace: &[String],
    name: &str,
    location: &Location,
    at_most: Option<std::time::Duration>,
) -> Option<Vended> {
    mount.served_files()?;
    let resource = Resource::table(namespace, name);
    let caller = &authz.caller;
    let held = authz.held(&resource);
    let access = access_of(held.as_ref(), mount);
    let vended = state.vendor.vend(location, access, &caller.name, at_most).await;
    let audited = match &vended {
        Ok(vended) => {
            tracing::info!(table = %resource, caller = %caller.name, ?access, prefix = %vended.prefix, "credentials vended");
            let access = match access {
                DataAccess::Read => "read",
                DataAccess::ReadWrite => "read-write",
            };
            Some(Vend::Issued { prefix: vended.prefix.clone(), access })
        }
        // Vending switched off is the server's choice, not a decision about this caller:
        // said once per request, quietly, and not audited (clients such as PyIceberg ask
        // on every load, and the denials would drown the real ones).
        Err(reason @ Refusal::Off) => {
            tracing::info!(table = %resource, caller = %caller.name, %reason, "no credentials vended");
            None
        }
        Err(reason) => {
            tracing::warn!(table = %resource, caller = %caller.name, %reason, "no credentials vended");
            Some(Vend::Refused { reason: reason.to_string() })
        }
    };
    if let Some(audited) = audited {
        authz.audit_vend(&resource, held, audited);
    }
    let mut vended = vended.ok()?;
    if vended.expires_at_ms.is_some() {
        let refresh = table_route(Endpoint::LoadCredentials, namespace, name);
        vended.config.push(("client.refresh-credentials-endpoint".into(), refresh));
    }
    Some(vended)
}

/// One read-only credential per file a restricted caller's planned tasks name (in
/// `body`, the response's `file-scan-tasks` and `delete-files`), each reaching that
/// object alone and living no longer than `ttl`: the spec's storage credentials, whose
/// prefix is the file's whole path. Nothing for a store that cannot scope so narrowly
/// (each refusal audited): the caller then reads nothing, rather than too much.
pub async fn vend_files(
    state: &super::AppState,
    authz: &Access,
    mount: &Mount,
    namespace: &[String],
    name: &str,
    body: &serde_json::Map<String, serde_json::Value>,
    ttl: std::time::Duration,
) -> Vec<serde_json::Value> {
    use futures::StreamExt;
    if mount.served_files().is_none() {
        return Vec::new();
    }
    let path = |v: &serde_json::Value| v.get("file-path").and_then(serde_json::Value::as_str).map(str::to_string);
    let tasks = body.get("file-scan-tasks").and_then(serde_json::Value::as_array).into_iter().flatten();
    let deletes = body.get("delete-files").and_then(serde_json::Value::as_array).into_iter().flatten();
    let files: Vec<String> =
        tasks.filter_map(|t| t.get("data-file").and_then(path)).chain(deletes.filter_map(path)).collect();
    let resource = Resource::table(namespace, name);
    let held = authz.held(&resource);
    let session = &authz.caller.name;
    let vends = futures::stream::iter(files)
        .map(|file| async move {
            let vended = match Location::parse(&file) {
                Ok(object) => state.vendor.vend_object(&object, session, ttl).await,
                Err(e) => Err(Refusal::NotS3(format!("{file}: {e}"))),
            };
            (file, vended)
        })
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
    let mut credentials = Vec::new();
    for (file, vended) in vends {
        match vended {
            Ok(vended) => {
                authz.audit_vend(&resource, held, Vend::Issued { prefix: file, access: "read" });
                credentials.push(vended.to_value()[0].take());
            }
            Err(reason) => {
                tracing::warn!(table = %resource, %file, %reason, "no credentials for a restricted reader's file");
                authz.audit_vend(&resource, held, Vend::Refused { reason: format!("{file}: {reason}") });
            }
        }
    }
    credentials
}

/// A table's route of `endpoint`, relative to the catalog's URI as clients resolve it
/// (under the prefix that serves the whole tree).
pub fn table_route(endpoint: Endpoint, namespace: &[String], name: &str) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let levels: Vec<String> = namespace.iter().map(|l| utf8_percent_encode(l, NON_ALPHANUMERIC).to_string()).collect();
    let path = endpoint
        .path()
        .replace("{namespace}", &levels.join("%1F"))
        .replace("{table}", &utf8_percent_encode(name, NON_ALPHANUMERIC).to_string());
    format!("v1/{}{path}", crate::prefixes::CATALOG)
}

/// Refuses `what` to a caller whose reads of `resource` read policies restrict: it
/// gets no credentials or signatures that reach the table's raw files (403, audited
/// with the policies).
pub fn refuse_restricted(access: &Access, resource: &Resource, what: &str) -> Result<(), Error> {
    if !access.any_policies() {
        return Ok(());
    }
    let policies = access.policies_on(resource);
    if policies.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = policies.iter().map(|p| p.id.clone()).collect();
    access.audit_refused_restricted(resource, &ids);
    Err(Error::Forbidden(format!(
        "{what}: read policies ({}) restrict {} on {resource}; its files are read through server-side planning",
        ids.join(", "),
        access.caller.name
    )))
}

/// loadCredentials: the credentials loadTable would vend, as a list (empty when
/// none can be vended).
pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    DelegationHeader(delegation): DelegationHeader,
) -> Result<axum::Json<serde_json::Value>, Error> {
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::LoadCredentials, Kind::Table).await?;
    let Resolved { mount, ident, access } = &resolved;
    refuse_restricted(access, &resolved.resource(Kind::Table), "loadCredentials")?;
    mount.require_endpoint(Endpoint::LoadCredentials, None)?;
    let loaded = tables::servable(mount, tables::load(mount, ident, delegation).await?).await?;
    let location = tables::location(mount, &loaded.held)?;
    let list = match vend(&state, access, mount, &resolved.namespace(), &ident.name, &location, None).await {
        Some(vended) => vended.to_value(),
        None => serde_json::json!([]),
    };
    Ok(axum::Json(serde_json::json!({ "storage-credentials": list })))
}
