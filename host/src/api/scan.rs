//! Scan planning routes: planTableScan, fetchPlanningResult, cancelPlanning and
//! fetchScanTasks. Plans complete synchronously; plan ids and plan tasks are
//! signed (request, offset) pairs, so no plan is stored and any process answers.

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::Extension;
use iceberg::spec::TableMetadata;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::credentials::{self, DelegationHeader};
use super::members::{self, Kind, Resolved};
use super::{AppState, Endpoint, Json, State};
use crate::auth::Caller;
use crate::error::Error;
use crate::mounts::Mount;
use crate::scan::{self, PlanRequest, TASKS_PER_RESPONSE};
use crate::storage::location::Location;
use crate::tables;

/// What a plan id or a plan task carries: the request (its snapshot pinned) and
/// where in the plan the tasks start.
#[derive(Serialize, Deserialize)]
struct Signed {
    request: PlanRequest,
    offset: usize,
}

/// The cursor spaces of plan ids and plan tasks: one table's, so a token from one
/// table (or of one kind) is unknown to every other.
fn space(kind: &str, raw: &str, name: &str) -> String {
    format!("{kind}:{raw}\u{1f}{name}")
}

/// A table opened for planning: where it was resolved (and the caller's access),
/// its metadata and its checked location.
struct Opened<'s> {
    resolved: Resolved<'s>,
    metadata: TableMetadata,
    location: Location,
}

/// Resolves a table the caller may read under a mount that can plan, with its metadata.
async fn open<'s>(
    state: &'s AppState,
    caller: Caller,
    endpoint: Endpoint,
    raw: &str,
    name: &str,
    delegation: Option<String>,
) -> Result<Opened<'s>, Error> {
    let resolved = members::resolve(state, caller, raw, name.to_string(), endpoint, Kind::Table).await?;
    let Resolved { mount, ident, .. } = &resolved;
    mount.require_endpoint(
        Endpoint::PlanTableScan,
        Some("its manifests are not in storage this server manages, so it cannot plan scans"),
    )?;
    let pointer = tables::load(mount, ident, delegation).await?;
    let metadata = tables::current_metadata(mount, &pointer).await?;
    let location = tables::table_location(mount, &metadata)?;
    Ok(Opened { resolved, metadata, location })
}

/// A completed plan's body from `offset` on, with plan tasks for whatever does not fit.
async fn completed(
    state: &AppState,
    mount: &Mount,
    location: &Location,
    metadata: TableMetadata,
    signed: &Signed,
    task_space: &str,
) -> Result<serde_json::Map<String, Value>, Error> {
    let warehouse = mount
        .served_files()
        .ok_or_else(|| Error::Unsupported(format!("{} does not let this server read its manifests", mount.label())))?;
    let plan = scan::plan(warehouse, location, metadata, &signed.request).await?;
    let (tasks, delete_files) = plan.slice(signed.offset, TASKS_PER_RESPONSE);
    let mut body = serde_json::Map::new();
    body.insert("status".into(), json!("completed"));
    body.insert("file-scan-tasks".into(), json!(tasks));
    body.insert("delete-files".into(), json!(delete_files));
    // Only the first response hands out plan tasks; each task is one later slice.
    if signed.offset == 0 && plan.task_count() > TASKS_PER_RESPONSE {
        let plan_tasks: Vec<String> = (TASKS_PER_RESPONSE..plan.task_count())
            .step_by(TASKS_PER_RESPONSE)
            .map(|offset| {
                let task = Signed { request: signed.request.clone(), offset };
                state.tokens.issue(task_space, &serde_json::to_string(&task).expect("serializable"))
            })
            .collect();
        body.insert("plan-tasks".into(), json!(plan_tasks));
    }
    Ok(body)
}

/// planTableScan
pub async fn plan(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    DelegationHeader(delegation): DelegationHeader,
    Json(mut request): Json<PlanRequest>,
) -> Result<axum::Json<Value>, Error> {
    let table = open(&state, caller, Endpoint::PlanTableScan, &raw, &name, delegation.clone()).await?;
    // The plan id must name this plan even after the table moves on (an incremental
    // range names its end already).
    if request.snapshot_id.is_none() && request.end_snapshot_id.is_none() && request.start_snapshot_id.is_none() {
        request.snapshot_id = table.metadata.current_snapshot().map(|s| s.snapshot_id());
    }
    let Opened { resolved, metadata, location } = table;
    let signed = Signed { request, offset: 0 };
    let task_space = space("plan-task", &raw, &name);
    let mut body = completed(&state, resolved.mount, &location, metadata, &signed, &task_space).await?;
    let plan_id =
        state.tokens.issue(&space("plan", &raw, &name), &serde_json::to_string(&signed).expect("serializable"));
    body.insert("plan-id".into(), json!(plan_id));
    if credentials::wants_vended(delegation.as_deref()) {
        let (mount, ns) = (resolved.mount, resolved.namespace());
        if let Some(vended) = credentials::vend(&state, &resolved.access, mount, &ns, &name, &location).await {
            body.insert("storage-credentials".into(), vended.to_value());
        }
    }
    Ok(axum::Json(Value::Object(body)))
}

/// What a plan id or plan task this server issued in `space` carries.
fn signed(state: &AppState, space: &str, token: &str) -> Option<Signed> {
    state.tokens.verify(space, token).and_then(|payload| serde_json::from_str(&payload).ok())
}

/// The request behind a plan id this server issued for this table.
fn verify_plan_id(state: &AppState, raw: &str, name: &str, plan_id: &str) -> Result<Signed, Error> {
    signed(state, &space("plan", raw, name), plan_id)
        .ok_or_else(|| Error::NoSuchPlanId(format!("no plan {plan_id:?} for this table")))
}

/// fetchPlanningResult: plans complete synchronously, so this plans again, from
/// the same snapshot, and answers the same result.
pub async fn fetch_result(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name, plan_id)): Path<(String, String, String)>,
    DelegationHeader(delegation): DelegationHeader,
) -> Result<axum::Json<Value>, Error> {
    let Opened { resolved, metadata, location } =
        open(&state, caller, Endpoint::FetchPlanningResult, &raw, &name, delegation).await?;
    let signed = verify_plan_id(&state, &raw, &name, &plan_id)?;
    let task_space = space("plan-task", &raw, &name);
    let body = completed(&state, resolved.mount, &location, metadata, &signed, &task_space).await?;
    Ok(axum::Json(Value::Object(body)))
}

/// cancelPlanning: nothing is running or held, so there is nothing to cancel.
pub async fn cancel(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name, plan_id)): Path<(String, String, String)>,
    DelegationHeader(delegation): DelegationHeader,
) -> Result<StatusCode, Error> {
    open(&state, caller, Endpoint::CancelPlanning, &raw, &name, delegation).await?;
    verify_plan_id(&state, &raw, &name, &plan_id)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FetchScanTasksRequest {
    plan_task: String,
}

/// fetchScanTasks: the slice of the plan one plan task names.
pub async fn fetch_tasks(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    DelegationHeader(delegation): DelegationHeader,
    Json(request): Json<FetchScanTasksRequest>,
) -> Result<axum::Json<Value>, Error> {
    let Opened { resolved, metadata, location } =
        open(&state, caller, Endpoint::FetchScanTasks, &raw, &name, delegation).await?;
    let task_space = space("plan-task", &raw, &name);
    let task = signed(&state, &task_space, &request.plan_task)
        .ok_or_else(|| Error::NoSuchPlanTask(format!("no plan task {:?} for this table", request.plan_task)))?;
    let mut body = completed(&state, resolved.mount, &location, metadata, &task, &task_space).await?;
    body.remove("status");
    Ok(axum::Json(Value::Object(body)))
}
