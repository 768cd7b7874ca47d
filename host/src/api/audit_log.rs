//! `GET /management/v1/audit`: the newest audit records, filtered by principal,
//! resource, decision, mount, action and time. A server admin reads every record; a
//! tenant admin those of its tenant's principals; anyone else, none (403). Served when
//! `[audit] file` is set (records on stdout are for the log collector): 501 otherwise.

use axum::extract::State as AxState;
use axum::response::IntoResponse;
use axum::Extension;
use serde_json::json;

use super::{Query, State};
use crate::audit::AuditQuery;
use crate::auth::{Caller, Role};
use crate::error::Error;

pub async fn query(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Query(query): Query<AuditQuery>,
) -> Result<impl IntoResponse, Error> {
    if !caller.server_admin && caller.role != Role::Admin {
        return Err(Error::Forbidden(format!("{} may not read the audit log: it is for admins", caller.name)));
    }
    let access = state.authz.access(&caller).await?;
    let visible = |record: &serde_json::Value| caller.server_admin || record["tenant"] == caller.tenant.as_str();
    let log = access.audit_log();
    let records = tokio::task::block_in_place(|| log.read(&query, visible))
        .map_err(|e| Error::Internal(format!("reading the audit log: {e}")))?
        .ok_or_else(|| Error::Unsupported("the audit log is not kept in a file ([audit] file)".into()))?;
    Ok(axum::Json(json!({ "records": records })))
}
