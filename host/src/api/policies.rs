//! `/management/v1/policies`: read policies (a row filter and column masks for a
//! principal, a role or a tenant, on a table or on every table under a namespace).
//! Managing one takes `manage` on what it restricts; a policy on a table is checked
//! against the table's schema when it is saved (see `scan::restrictions::check`).

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};

use super::management::{not_found, tell, Target};
use super::members::{self, Kind};
use super::{Endpoint, Json, State};
use crate::auth::{Caller, Role};
use crate::authz::{ColumnMask, Policy, Privilege, Resource, Subject};
use crate::error::Error;
use crate::scan::restrictions;
use crate::tables;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NewPolicy {
    name: String,
    namespace: Vec<String>,
    table: Option<String>,
    principal: Option<String>,
    role: Option<Role>,
    tenant: Option<String>,
    row_filter: Option<Value>,
    #[serde(default)]
    masks: Vec<ColumnMask>,
}

pub async fn create(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(req): Json<NewPolicy>,
) -> Result<impl IntoResponse, Error> {
    if req.name.trim().is_empty() {
        return Err(Error::BadRequest("a policy needs a name".into()));
    }
    let resource = Target { namespace: req.namespace, table: req.table, view: None }.resource()?;
    state.authz.access(&caller).await?.require(&resource, Privilege::Manage, not_found(&resource))?;
    let directory = &state.auth.directory;
    let subject = match (req.principal, req.role, req.tenant) {
        (Some(p), None, None) => match directory.principal(&p).await? {
            Some(principal) => Subject::Principal(principal.id().to_string()),
            None => return Err(Error::BadRequest(format!("principal {p} does not exist"))),
        },
        (None, Some(role), None) => Subject::Role(role),
        (None, None, Some(t)) if directory.tenant_exists(&t).await? => Subject::Tenant(t),
        (None, None, Some(t)) => return Err(Error::BadRequest(format!("tenant {t} does not exist"))),
        _ => return Err(Error::BadRequest("restrict exactly one of principal, role or tenant".into())),
    };
    let mut policy = Policy {
        id: String::new(),
        name: req.name,
        resource,
        subject,
        row_filter: req.row_filter,
        masks: req.masks,
        field_ids: Default::default(),
    };
    // A policy on a table is checked against its current schema; one on a namespace,
    // whose tables differ, for its form (each table's load fails closed on what it lacks).
    let schema = match &policy.resource {
        Resource::Table { namespace, name } => {
            let resolved = members::resolve_parsed(
                &state,
                caller.clone(),
                namespace.clone(),
                name.clone(),
                Endpoint::LoadTable,
                Kind::Table,
            )
            .await?;
            let pointer = tables::load(resolved.mount, &resolved.ident, None).await?;
            let metadata = tables::current_metadata(resolved.mount, &pointer).await?;
            Some(metadata.current_schema().clone())
        }
        _ => None,
    };
    restrictions::check(&mut policy, schema.as_deref())?;
    let policy = state.authz.add_policy(policy).await?;
    tell(&state, &caller, "x-policy-created", json!({ "policy": policy })).await;
    Ok((StatusCode::CREATED, axum::Json(policy)))
}

/// The policies on what the caller manages, and those restricting the caller itself.
pub async fn list(AxState(state): State, Extension(caller): Extension<Caller>) -> Result<impl IntoResponse, Error> {
    let access = state.authz.access(&caller).await?;
    let mut visible = vec![];
    for policy in state.authz.all_policies().await? {
        let mine = access.policies_on(&policy.resource).iter().any(|p| p.id == policy.id);
        if mine || access.privilege(&policy.resource)? == Some(Privilege::Manage) {
            visible.push(policy);
        }
    }
    visible.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(axum::Json(json!({ "policies": visible })))
}

pub async fn delete(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    let missing = || Error::NotFound(format!("policy {id} does not exist"));
    let policy = state.authz.policy(&id).await?.ok_or_else(missing)?;
    state.authz.access(&caller).await?.require(&policy.resource, Privilege::Manage, missing)?;
    state.authz.remove_policy(&id).await?;
    tell(&state, &caller, "x-policy-deleted", json!({ "policy": policy })).await;
    Ok(StatusCode::NO_CONTENT)
}

/// The policies `[policy.<name>]` defines (id `config:<name>`), each checked for its
/// form: the file is read before any table is, so a table's columns are checked at each
/// load instead, failing closed. A principal is still named by its name here; the
/// server finds its id. Every problem names its policy.
pub fn configured(config: &crate::config::Config) -> Result<Vec<Policy>, Vec<String>> {
    let mut policies = Vec::new();
    let mut problems = Vec::new();
    for (name, written) in &config.policies {
        let mut problem = |m: String| problems.push(format!("policy.{name}: {m}"));
        let subject = match (&written.principal, &written.role, &written.tenant) {
            (Some(p), None, None) => Subject::Principal(p.clone()),
            (None, Some(role), None) => match role.parse::<Role>() {
                Ok(role) => Subject::Role(role),
                Err(e) => {
                    problem(e);
                    continue;
                }
            },
            (None, None, Some(t)) => Subject::Tenant(t.clone()),
            _ => continue, // the config's own check says so
        };
        let row_filter = match written.row_filter.as_deref().map(serde_json::from_str::<Value>).transpose() {
            Ok(row_filter) => row_filter,
            Err(_) => continue, // likewise
        };
        let masks = match written.masks.iter().map(|m| ColumnMask::deserialize(m.clone())).collect() {
            Ok(masks) => masks,
            Err(e) => {
                problem(format!("masks: {e}"));
                continue;
            }
        };
        let resource = match &written.table {
            Some(table) => Resource::table(&written.namespace, table),
            None => Resource::Namespace(written.namespace.clone()),
        };
        let mut policy = Policy {
            id: crate::authz::configured_id(name),
            name: name.clone(),
            resource,
            subject,
            row_filter,
            masks,
            field_ids: Default::default(),
        };
        match restrictions::check(&mut policy, None) {
            Ok(()) => policies.push(policy),
            Err(e) => problem(e.to_string()),
        }
    }
    if problems.is_empty() {
        Ok(policies)
    } else {
        Err(problems)
    }
}
