//! Table routes.
//!
//! (Over 400 lines: one short handler per table route, each turning its request into a
//! call to `tables`; they share their extractors and answers, which a split by route
//! would import back into every file.)

use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::credentials::{self, Delegated, DelegationHeader};
use super::etag::{self, Digest128, IfNoneMatch, Representation, Tag};
use super::forwarded::{self, Request};
use super::idempotency::{Revend, Secrets};
use super::members::{self, Kind, Resolved};
use super::model::{
    CommitTableRequest, CommitTransactionRequest, CreateTableRequest, DropTableQuery, ListQuery, LoadTableQuery,
    RegisterTableRequest, RenameTableRequest, Snapshots, TableResult,
};
use super::signing::{self, SignerBase};
use super::told;
use super::{parse_namespace, AppState, Endpoint, Json, JsonBody, Query, State};
use crate::auth::Caller;
use crate::authz::{Effect, Resource};
use crate::error::Error;
use crate::events::event::TableChange;
use crate::events::Operation;
use crate::hooks::Proposed;
use crate::recovery;
use crate::sandbox::bindings::Ident;
use crate::storage::location::Location;
use crate::tables::telling::table_change;
use crate::tables::{self, NewTable};

pub async fn list(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    Query(q): Query<ListQuery>,
) -> Result<impl IntoResponse, Error> {
    members::list(&state, caller, Endpoint::ListTables, &raw, q, Kind::Table).await
}

pub async fn create(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    DelegationHeader(delegation): DelegationHeader,
    signer: SignerBase,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<CreateTableRequest>,
) -> Result<Response, Error> {
    if req.name.is_empty() {
        return Err(Error::BadRequest("the table name must not be empty".into()));
    }
    let ns = parse_namespace(&raw)?;
    let teller = state.teller(&caller);
    let (mount, local, access) = members::resolve_namespace(&state, caller, &ns).await?;
    let proposed = Proposed::of("create-table", &local, &req.name).with_properties(&req.properties);
    state.admit(&teller, mount, proposed.with_request(&raw_body)).await?;
    if mount.backend.forwards() {
        if let Some(location) = &req.location {
            forwarded::check_location(&state.mounts, mount, location, "the table location")?;
        }
        let write = Request::new(Endpoint::CreateTable, raw_body).in_namespace(&local);
        let answer = forwarded::send(mount, &headers, write).await?;
        if !req.stage_create {
            let ident = Ident { namespace: local.clone(), name: req.name.clone() };
            teller.tell(vec![Operation::CreateTable(told::forwarded_table(mount, &ident, &answer, vec![]))]).await;
        }
        if restricted_on(&access, &ns, &req.name) {
            return Ok(forwarded::json(forwarded::without_delegation(answer)));
        }
        return Ok(forwarded::json(forwarded::confine_signer(answer, || signer.url(), &state.tokens, &ns, &req.name)?));
    }
    let ident = Ident { namespace: local, name: req.name.clone() };
    let stage = req.stage_create;
    if stage && mount.backend.places_tables() {
        // Its store assigns the location at the create, which a staged table would hold
        // reserved until a commit that may never come.
        return Err(Error::Unsupported(format!("{} cannot stage a create: create the table directly", mount.label())));
    }
    let new = NewTable {
        name: req.name,
        location: req.location,
        schema: req.schema,
        partition_spec: req.partition_spec,
        write_order: req.write_order,
        properties: req.properties,
    };
    let (metadata, placement) = tables::build_new(mount, &ident, new).await?;
    // A writer creating a table gets what it needs to write its first files, unless
    // read policies will restrict its reads of it: credentials would outlive the create.
    let delegating =
        credentials::may_delegate(&state, mount, delegation.as_deref()) && !restricted_on(&access, &ns, &ident.name);
    let signer_url = if delegating { signer.url() } else { String::new() };
    let delegate = || async {
        if !delegating {
            return Delegated::Nothing;
        }
        let asked = delegation.as_deref();
        credentials::delegate(&state, &access, mount, &ns, &ident.name, &placement.location, asked, &signer_url).await
    };
    if stage {
        // Nothing is recorded: the client commits the staged table with `assert-create`.
        let delegated = delegate().await;
        let secrets = revend(&ns, &ident.name, &placement.location, &delegated);
        let (config, storage_credentials, signing) = with_delegated(&[], delegated);
        let metadata_json = tables::metadata_json(&metadata, 0)?;
        let response = TableResult {
            metadata_location: None,
            metadata_json: metadata_json.into(),
            config: Some(&config),
            storage_credentials: &storage_credentials,
            remote_signing: signing,
            read_restrictions: None,
        };
        return Ok(with_secrets(response.into_response(), secrets));
    }
    let committed = tables::create(mount, &ident, &metadata, &placement, &teller, vec![]).await?;
    let delegated = delegate().await;
    let secrets = revend(&ns, &ident.name, &placement.location, &delegated);
    let tag = match delegating {
        false => committed_tag(&committed.metadata_location),
        true => {
            let delegation = etag::Delegation {
                access: credentials::data_access(&access, mount, &Resource::table(&ns, &ident.name)),
                policy: state.vendor.fingerprint(),
                asked: delegation.as_deref().unwrap_or_default(),
                signer: &signer_url,
            };
            let representation = Representation::table(&committed.metadata_location, Snapshots::All, &[], "")
                .delegating(Some(delegation));
            delegated_tag(&state, representation.digest(), &delegated, delegation.asked)
        }
    };
    let (config, storage_credentials, signing) = with_delegated(&[], delegated);
    let response = TableResult {
        metadata_location: Some(&committed.metadata_location),
        metadata_json: committed.metadata_json,
        config: Some(&config),
        storage_credentials: &storage_credentials,
        remote_signing: signing,
        read_restrictions: None,
    };
    Ok(with_secrets(etag::tagged(response.into_response(), tag), secrets))
}

/// Whether read policies restrict the caller (`access`) on the table `namespace`.`name`:
/// then nothing it is answered reaches the table's files.
fn restricted_on(access: &crate::authz::Access, namespace: &[String], name: &str) -> bool {
    access.any_policies() && !access.policies_on(&Resource::table(namespace, name)).is_empty()
}

/// What an idempotent replay of a response carrying vended credentials vends anew
/// (the credentials themselves are never kept).
fn revend(namespace: &[String], table: &str, location: &Location, delegated: &Delegated) -> Option<Secrets> {
    let Delegated::Vended(vended) = delegated else { return None };
    Some(Secrets::Vended(Revend {
        namespace: namespace.to_vec(),
        table: table.to_string(),
        location: location.to_string(),
        config_keys: vended.config.iter().map(|(k, _)| k.clone()).collect(),
    }))
}

fn with_secrets(mut response: Response, secrets: Option<Secrets>) -> Response {
    if let Some(secrets) = secrets {
        response.extensions_mut().insert(secrets);
    }
    response
}

/// The `config` and `storage-credentials` of a response carrying `delegated`, and
/// whether it turns remote signing on. A vended credential goes in both lists: older
/// clients read only `config`.
fn with_delegated(config: &[(String, String)], delegated: Delegated) -> (Vec<(String, String)>, String, bool) {
    let mut config = config.to_vec();
    match delegated {
        Delegated::Nothing => (config, String::new(), false),
        Delegated::Vended(vended) => {
            let list = vended.to_value().to_string();
            config.extend(vended.config);
            (config, list, false)
        }
        Delegated::Signing(signing) => {
            config.extend(signing);
            (config, String::new(), true)
        }
    }
}

/// loadTable. With `If-None-Match` naming the representation this request would get
/// (see `etag`), 304 and no body, the metadata unread and nothing vended.
pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    Query(q): Query<LoadTableQuery>,
    DelegationHeader(delegation): DelegationHeader,
    signer: SignerBase,
    if_none_match: IfNoneMatch,
) -> Result<Response, Error> {
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::LoadTable, Kind::Table).await?;
    let Resolved { mount, ident, access } = &resolved;
    if access.any_policies() {
        let policies = access.policies_on(&resolved.resource(Kind::Table));
        if !policies.is_empty() {
            return super::restricted::load(&resolved, &policies, q.snapshots, if_none_match).await;
        }
    }
    // A mount of a remote catalog forwards the header; the remote delegates for its storage.
    let delegating = credentials::may_delegate(&state, mount, delegation.as_deref());
    let asked = if delegating { delegation.clone() } else { None };
    let signer_url = if delegating { signer.url() } else { String::new() };
    let pointer = match tables::load(mount, ident, delegation).await {
        Ok(pointer) => pointer,
        Err(e) => {
            let read = Request::new(Endpoint::LoadTable, Default::default()).in_namespace(&ident.namespace);
            return Err(forwarded::exact(mount, read.named(&ident.name), e).await);
        }
    };
    let confined = match mount.served_files() {
        None => signing::confined(&pointer.config, || signer.url(), &state.tokens, &resolved.namespace(), &ident.name),
        Some(_) => None,
    };
    let backend_config = confined.as_deref().unwrap_or(&pointer.config);
    let delegation = delegating.then(|| etag::Delegation {
        access: credentials::data_access(access, mount, &resolved.resource(Kind::Table)),
        policy: state.vendor.fingerprint(),
        asked: asked.as_deref().unwrap_or_default(),
        signer: &signer_url,
    });
    let digest =
        Representation::table(&pointer.metadata_location, q.snapshots, backend_config, &pointer.storage_credentials)
            .delegating(delegation)
            .digest();
    if let Some(held) = if_none_match.fresh(digest) {
        return Ok(held.not_modified());
    }
    let loaded = tables::servable(mount, pointer.clone()).await?;
    let pointer = &loaded.pointer;
    let metadata_json = metadata_json(mount, &loaded, q.snapshots)?;
    let Some(delegation) = delegation else {
        let response = TableResult {
            metadata_location: Some(&pointer.metadata_location),
            metadata_json,
            config: Some(backend_config),
            storage_credentials: &pointer.storage_credentials,
            remote_signing: false,
            read_restrictions: None,
        };
        return Ok(etag::tagged(response.into_response(), Some(Tag::new(digest, None))));
    };
    let location = tables::location(mount, &loaded.held)?;
    // Boxed: delegating's future would size every load's, and most loads delegate nothing.
    let delegated = Box::pin(credentials::delegate(
        &state,
        access,
        mount,
        &resolved.namespace(),
        &ident.name,
        &location,
        asked.as_deref(),
        &signer_url,
    ))
    .await;
    let tag = delegated_tag(&state, digest, &delegated, delegation.asked);
    let (config, storage_credentials, signing) = with_delegated(backend_config, delegated);
    let response = TableResult {
        metadata_location: Some(&pointer.metadata_location),
        metadata_json,
        config: Some(&config),
        storage_credentials: &storage_credentials,
        remote_signing: signing,
        read_restrictions: None,
    };
    Ok(etag::tagged(response.into_response(), tag))
}

/// The metadata a load answers with: all of it, or only the snapshots refs reference.
pub(super) fn metadata_json(
    mount: &crate::mounts::Mount,
    loaded: &tables::Loaded,
    snapshots: Snapshots,
) -> Result<bytes::Bytes, Error> {
    match snapshots {
        Snapshots::All => Ok(loaded.held.json.clone()),
        Snapshots::Refs => loaded.held.refs_json().map_err(|e| Error::Internal(format!("{}: {e}", mount.label()))),
    }
}

/// The tag of an answer that may delegate access: vended credentials put their expiry
/// in it. A vend asked for that may have failed in passing (STS did not answer) leaves
/// the answer untagged, so that the next load vends again.
fn delegated_tag(state: &AppState, digest: Digest128, delegated: &Delegated, asked: &str) -> Option<Tag> {
    match delegated {
        Delegated::Vended(vended) => Some(Tag::new(digest, vended.expires_at_ms)),
        _ if credentials::wants_vended(Some(asked)) && state.vendor.expires() => None,
        _ => Some(Tag::new(digest, None)),
    }
}

/// The tag of a commit's or a registration's answer: the metadata as a plain loadTable
/// of a table whose backend adds no config would have it.
fn committed_tag(metadata_location: &str) -> Option<Tag> {
    Some(Tag::new(Representation::table(metadata_location, Snapshots::All, &[], "").digest(), None))
}

pub async fn exists(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
) -> Result<StatusCode, Error> {
    let Resolved { mount, ident, .. } =
        members::resolve(&state, caller, &raw, name, Endpoint::TableExists, Kind::Table).await?;
    tables::load(mount, &ident, None).await.map(|_| StatusCode::NO_CONTENT)
}

pub async fn commit(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<CommitTableRequest>,
) -> Result<Response, Error> {
    let ns = parse_namespace(&raw)?;
    if req.identifier.as_ref().is_some_and(|id| id.name != name || id.namespace != ns) {
        return Err(Error::BadRequest("the identifier in the body does not match the path".into()));
    }
    let teller = state.teller(&caller);
    let Resolved { mount, ident, .. } =
        members::resolve_parsed(&state, caller, ns, name, Endpoint::UpdateTable, Kind::Table).await?;
    let proposed = Proposed::of("update-table", &ident.namespace, &ident.name).with_request(&raw_body);
    state.admit(&teller, mount, proposed).await?;
    if mount.backend.forwards() {
        check_new_locations(&state, mount, &req.updates)?;
        let mut body = forwarded::parse(&raw_body)?;
        forwarded::strip_identifiers(mount, &mut body, &["/identifier"])?;
        let write = Request::new(Endpoint::UpdateTable, forwarded::body(&body)).in_namespace(&ident.namespace);
        let answer = forwarded::send(mount, &headers, write.named(&ident.name)).await?;
        let updates = tables::updates_json(&req.updates);
        teller.tell(vec![Operation::UpdateTable(told::forwarded_table(mount, &ident, &answer, updates))]).await;
        return Ok(forwarded::json(answer));
    }
    let committed = tables::commit(mount, &ident, &req.requirements, &req.updates, &teller).await?;
    let tag = committed_tag(&committed.metadata_location);
    let response = TableResult {
        metadata_location: Some(&committed.metadata_location),
        metadata_json: committed.metadata_json,
        config: None,
        storage_credentials: "",
        remote_signing: false,
        read_restrictions: None,
    };
    Ok(etag::tagged(response.into_response(), tag))
}

pub async fn drop(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    Query(q): Query<DropTableQuery>,
    headers: HeaderMap,
) -> Result<StatusCode, Error> {
    let teller = state.teller(&caller);
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::DropTable, Kind::Table).await?;
    let resource = resolved.resource(Kind::Table);
    let (mount, ident) = (resolved.mount, &resolved.ident);
    let proposed = Proposed::of("drop-table", &ident.namespace, &ident.name).purging(q.purge());
    state.admit(&teller, mount, proposed).await?;
    if mount.backend.forwards() {
        // The remote purges its own files, if asked to.
        let mut write = Request::new(Endpoint::DropTable, Default::default()).in_namespace(&ident.namespace);
        write.query = vec![("purgeRequested".into(), q.purge().to_string())];
        forwarded::drop(&state, mount, &headers, write.named(&ident.name), resource).await?;
        let dropped =
            TableChange { purge: Some(q.purge()), ..table_change(mount, ident, String::new(), None, None, vec![]) };
        teller.tell(vec![Operation::DropTable(dropped)]).await;
        return Ok(StatusCode::NO_CONTENT);
    }
    let dropped = tables::drop_table(mount, ident, q.purge());
    let dropped = recovery::with_intent(&state.authz, &state.mounts, Effect::Forget { resource }, dropped).await?;
    teller.tell(vec![dropped_table(mount, ident, &dropped.pointer.metadata_location, dropped.uuid, q.purge())]).await;
    Ok(StatusCode::NO_CONTENT)
}

/// A dropped table's event (an unregister is a drop that keeps the files).
fn dropped_table(mount: &crate::mounts::Mount, ident: &Ident, before: &str, uuid: String, purge: bool) -> Operation {
    let change = table_change(mount, ident, uuid, Some(before), None, vec![]);
    Operation::DropTable(TableChange { purge: Some(purge), ..change })
}

/// Refuses a commit that moves a table of a forwarding mount somewhere the mount may
/// not place it (`set-location`).
fn check_new_locations(
    state: &AppState,
    mount: &crate::mounts::Mount,
    updates: &[iceberg::TableUpdate],
) -> Result<(), Error> {
    for update in updates {
        if let iceberg::TableUpdate::SetLocation { location } = update {
            forwarded::check_location(&state.mounts, mount, location, "the table location")?;
        }
    }
    Ok(())
}

pub async fn unregister(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    let teller = state.teller(&caller);
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::UnregisterTable, Kind::Table).await?;
    let mount = resolved.mount;
    mount.require_endpoint(Endpoint::UnregisterTable, Some("its store deletes a table's files with the table"))?;
    let proposed = Proposed::of("drop-table", &resolved.ident.namespace, &resolved.ident.name).purging(false);
    state.admit(&teller, mount, proposed).await?;
    if mount.backend.forwards() {
        let ident = &resolved.ident;
        let write = Request::new(Endpoint::UnregisterTable, Default::default()).in_namespace(&ident.namespace);
        let unregistered = async { forwarded::send(mount, &headers, write.named(&ident.name)).await };
        let effect = Effect::Forget { resource: resolved.resource(Kind::Table) };
        let answer = recovery::with_intent(&state.authz, &state.mounts, effect, unregistered).await?;
        let last = told::forwarded_table(mount, ident, &answer, vec![]);
        let before = last.metadata.metadata_location.clone().unwrap_or_default();
        teller.tell(vec![dropped_table(mount, ident, &before, last.table_uuid, false)]).await;
        return Ok(forwarded::json(answer));
    }
    let unregistered = tables::unregister(mount, &resolved.ident);
    // Nothing registered later under this name may inherit its grants.
    let effect = Effect::Forget { resource: resolved.resource(Kind::Table) };
    let last = recovery::with_intent(&state.authz, &state.mounts, effect, unregistered).await?;
    let ident = &resolved.ident;
    teller.tell(vec![dropped_table(mount, ident, &last.metadata_location, last.uuid.clone(), false)]).await;
    Ok(TableResult {
        metadata_location: Some(&last.metadata_location),
        metadata_json: last.metadata_json,
        config: None,
        storage_credentials: "",
        remote_signing: false,
        read_restrictions: None,
    }
    .into_response())
}

pub async fn register(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    signer: SignerBase,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<RegisterTableRequest>,
) -> Result<Response, Error> {
    let ns = parse_namespace(&raw)?;
    let teller = state.teller(&caller);
    let (mount, local, access) = members::resolve_namespace(&state, caller, &ns).await?;
    state.admit(&teller, mount, Proposed::of("register-table", &local, &req.name).with_request(&raw_body)).await?;
    if mount.backend.forwards() {
        forwarded::check_location(&state.mounts, mount, &req.metadata_location, "the metadata location")?;
        let write = Request::new(Endpoint::RegisterTable, raw_body).in_namespace(&local);
        let answer = forwarded::send(mount, &headers, write).await?;
        let ident = Ident { namespace: local.clone(), name: req.name.clone() };
        teller.tell(vec![Operation::RegisterTable(told::forwarded_table(mount, &ident, &answer, vec![]))]).await;
        if restricted_on(&access, &ns, &req.name) {
            return Ok(forwarded::json(forwarded::without_delegation(answer)));
        }
        return Ok(forwarded::json(forwarded::confine_signer(answer, || signer.url(), &state.tokens, &ns, &req.name)?));
    }
    let ident = Ident { namespace: local, name: req.name };
    let committed = tables::register(mount, &ident, &req.metadata_location, req.overwrite, &teller).await?;
    let tag = committed_tag(&committed.metadata_location);
    let response = TableResult {
        metadata_location: Some(&committed.metadata_location),
        metadata_json: committed.metadata_json,
        config: Some(&[]),
        storage_credentials: "",
        remote_signing: false,
        read_restrictions: None,
    };
    Ok(etag::tagged(response.into_response(), tag))
}

pub async fn rename(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Json(req): Json<RenameTableRequest>,
) -> Result<StatusCode, Error> {
    members::rename(&state, caller, Endpoint::RenameTable, &headers, req, Kind::Table).await
}

/// reportMetrics: accepted and logged.
pub async fn report_metrics(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    Json(report): Json<serde_json::Value>,
) -> Result<StatusCode, Error> {
    let Resolved { mount, ident, .. } =
        members::resolve(&state, caller, &raw, name.clone(), Endpoint::ReportMetrics, Kind::Table).await?;
    tables::load(mount, &ident, None).await?;
    let kind = match report.get("report-type").and_then(|v| v.as_str()) {
        Some(kind @ ("scan-report" | "commit-report")) => kind,
        Some(other) => return Err(Error::BadRequest(format!("unknown report-type {other:?}"))),
        None => return Err(Error::BadRequest("a metrics report needs its report-type".into())),
    };
    tracing::info!(namespace = %raw.replace('\u{1f}', "."), table = %name, kind, %report, "metrics report");
    crate::telemetry::metrics_report(kind);
    Ok(StatusCode::NO_CONTENT)
}

/// commitTransaction: changes to several tables of one backend, applied atomically.
/// A transaction spanning two mounts (or a mount and the root catalog) is refused
/// with 501 naming both sides: there is no protocol between two backends.
pub async fn commit_transaction(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<CommitTransactionRequest>,
) -> Result<StatusCode, Error> {
    if req.table_changes.is_empty() {
        return Err(Error::BadRequest("a transaction needs at least one table change".into()));
    }
    let access = state.authz.access(&caller).await?;
    let teller = state.teller(&caller);
    let mut mount: Option<&crate::mounts::Mount> = None;
    let mut changes = Vec::with_capacity(req.table_changes.len());
    let mut seen = std::collections::HashSet::new();
    let mut pointers = Vec::with_capacity(req.table_changes.len());
    for (i, change) in req.table_changes.into_iter().enumerate() {
        let id = change
            .identifier
            .ok_or_else(|| Error::BadRequest("every table change in a transaction needs its identifier".into()))?;
        if !seen.insert((id.namespace.clone(), id.name.clone())) {
            return Err(Error::BadRequest(format!("table {}.{} appears twice", id.namespace.join("."), id.name)));
        }
        let (this, ident) = members::resolve_with(
            &state,
            &access,
            id.namespace,
            id.name,
            Endpoint::CommitTransaction.privilege(),
            Kind::Table,
        )?;
        if let Some(first) = mount.filter(|m| !std::ptr::eq(*m, this)) {
            return Err(Error::Unsupported(format!(
                "a transaction cannot span {} and {}",
                first.label(),
                this.label()
            )));
        }
        mount = Some(this);
        pointers.push(format!("/table-changes/{i}/identifier"));
        changes.push(tables::TableChange { ident, requirements: change.requirements, updates: change.updates });
    }
    let mount = mount.expect("at least one change");
    // Each table's change is proposed apart, with its own part of the request.
    if !state.gates.is_empty() {
        let bodies = forwarded::parse(&raw_body)?;
        for (i, change) in changes.iter().enumerate() {
            let body = bodies.pointer(&format!("/table-changes/{i}")).map(|b| b.to_string()).unwrap_or_default();
            let proposed = Proposed::of("update-table", &change.ident.namespace, &change.ident.name);
            state.admit(&teller, mount, proposed.with_request(body.as_bytes())).await?;
        }
    }
    if mount.backend.forwards() {
        for change in &changes {
            check_new_locations(&state, mount, &change.updates)?;
        }
        let mut body = forwarded::parse(&raw_body)?;
        let pointers: Vec<&str> = pointers.iter().map(String::as_str).collect();
        forwarded::strip_identifiers(mount, &mut body, &pointers)?;
        forwarded::send(mount, &headers, Request::new(Endpoint::CommitTransaction, forwarded::body(&body))).await?;
        let operations = changes.iter().map(|change| {
            let updates = tables::updates_json(&change.updates);
            Operation::UpdateTable(table_change(mount, &change.ident, String::new(), None, None, updates))
        });
        teller.tell(operations.collect()).await;
        return Ok(StatusCode::NO_CONTENT);
    }
    tables::commit_transaction(mount, &changes, &teller).await?;
    Ok(StatusCode::NO_CONTENT)
}
