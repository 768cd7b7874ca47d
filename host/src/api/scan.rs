//! Scan planning routes: planTableScan, fetchPlanningResult, cancelPlanning and
//! fetchScanTasks. A plan done within the budget is answered at once, and its plan id
//! and plan tasks are signed (request, offset) pairs: nothing is stored and any process
//! answers. A slower plan is answered `submitted` and held by this process
//! (`scan::plans`) until its client fetches it.

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
use crate::scan::plans::{Answer, Status};
use crate::scan::{self, Plan, PlanRequest, TASKS_PER_RESPONSE};
use crate::storage::location::Location;
use crate::tables;

/// What a plan id or a plan task carries: the request (its snapshot pinned) and
/// where in the plan the tasks start.
#[derive(Serialize, Deserialize)]
struct Signed {
    request: PlanRequest,
    offset: usize,
    /// The held plan the tasks are slices of, while this process holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    held: Option<String>,
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

/// The warehouse a mount's tables are planned over.
fn warehouse_of(mount: &Mount) -> Result<&crate::storage::warehouse::Warehouse, Error> {
    mount
        .served_files()
        .ok_or_else(|| Error::Unsupported(format!("{} does not let this server read its manifests", mount.label())))
}

/// Plans `request` again, in this request (a plan id or plan task no process holds a
/// plan for), in its turn among the plans computed.
async fn replan(
    state: &AppState,
    mount: &Mount,
    location: &Location,
    metadata: TableMetadata,
    request: &PlanRequest,
) -> Result<Plan, Error> {
    let prepared = scan::prepare(metadata, request)?;
    state.plans.in_turn(scan::run(prepared, warehouse_of(mount)?, location)).await
}

/// The scan tasks of `plan` from `signed`'s offset on, with plan tasks for whatever
/// does not fit.
fn scan_tasks(state: &AppState, plan: &Plan, signed: &Signed, task_space: &str) -> serde_json::Map<String, Value> {
    let (tasks, delete_files) = plan.slice(signed.offset, TASKS_PER_RESPONSE);
    let mut body = serde_json::Map::new();
    body.insert("file-scan-tasks".into(), json!(tasks));
    body.insert("delete-files".into(), json!(delete_files));
    // Only the first response hands out plan tasks; each task is one later slice.
    if signed.offset == 0 && plan.task_count() > TASKS_PER_RESPONSE {
        let plan_tasks: Vec<String> = (TASKS_PER_RESPONSE..plan.task_count())
            .step_by(TASKS_PER_RESPONSE)
            .map(|offset| {
                let task = Signed { request: signed.request.clone(), offset, held: signed.held.clone() };
                state.tokens.issue(task_space, &serde_json::to_string(&task).expect("serializable"))
            })
            .collect();
        body.insert("plan-tasks".into(), json!(plan_tasks));
    }
    body
}

/// One request's answers about one table's plans: where the table was resolved (and
/// the caller's access), its location, the delegation asked for, and the space of its
/// plan tasks.
struct Answering<'a, 's> {
    state: &'a AppState,
    resolved: &'a Resolved<'s>,
    location: &'a Location,
    delegation: Option<&'a str>,
    task_space: String,
}

impl<'a, 's> Answering<'a, 's> {
    /// For the table `raw`.`name` (as the route names it).
    fn new(
        state: &'a AppState,
        resolved: &'a Resolved<'s>,
        location: &'a Location,
        delegation: Option<&'a str>,
        (raw, name): (&str, &str),
    ) -> Self {
        Answering { state, resolved, location, delegation, task_space: space("plan-task", raw, name) }
    }

    /// A completed plan's answer: its first scan tasks, plan tasks for the rest, and
    /// the credentials that read them (living no longer than `at_most`).
    async fn completed(
        &self,
        plan: &Plan,
        signed: &Signed,
        at_most: Option<std::time::Duration>,
    ) -> serde_json::Map<String, Value> {
        let Answering { state, resolved, location, delegation, .. } = self;
        let mut body = scan_tasks(state, plan, signed, &self.task_space);
        body.insert("status".into(), json!("completed"));
        if credentials::wants_vended(*delegation) {
            let (mount, ns, name) = (resolved.mount, resolved.namespace(), &resolved.ident.name);
            if let Some(vended) = credentials::vend(state, &resolved.access, mount, &ns, name, location, at_most).await
            {
                body.insert("storage-credentials".into(), vended.to_value());
            }
        }
        body
    }
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
    // What the client got wrong is answered now, not when the plan is fetched.
    let prepared = scan::prepare(metadata, &request)?;
    let warehouse = warehouse_of(resolved.mount)?.clone();
    let work = {
        let location = location.clone();
        async move { scan::run(prepared, &warehouse, &location).await }
    };
    let plan_space = space("plan", &raw, &name);
    let plan = match state.plans.plan(plan_space.clone(), request.clone(), work).await? {
        Answer::Completed(plan) => plan,
        Answer::Submitted(plan_id) => return Ok(axum::Json(json!({ "status": "submitted", "plan-id": plan_id }))),
    };
    let signed = Signed { request, offset: 0, held: None };
    let answering = Answering::new(&state, &resolved, &location, delegation.as_deref(), (&raw, &name));
    let mut body = answering.completed(&plan, &signed, None).await;
    let plan_id = state.tokens.issue(&plan_space, &serde_json::to_string(&signed).expect("serializable"));
    body.insert("plan-id".into(), json!(plan_id));
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

/// fetchPlanningResult: where a held plan stands; for a plan answered at once, the
/// same plan again, from the same snapshot.
pub async fn fetch_result(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name, plan_id)): Path<(String, String, String)>,
    DelegationHeader(delegation): DelegationHeader,
) -> Result<axum::Json<Value>, Error> {
    let Opened { resolved, metadata, location } =
        open(&state, caller, Endpoint::FetchPlanningResult, &raw, &name, delegation.clone()).await?;
    let answering = Answering::new(&state, &resolved, &location, delegation.as_deref(), (&raw, &name));
    let body = match state.plans.status(&space("plan", &raw, &name), &plan_id) {
        Some(Status::Submitted) => json!({ "status": "submitted" }),
        Some(Status::Cancelled) => json!({ "status": "cancelled" }),
        Some(Status::Failed(model)) => json!({ "status": "failed", "error": model }),
        Some(Status::Completed(plan, request)) => {
            // The credentials expire with the plan, unless it is asked about again.
            let ttl = Some(state.plans.limits().ttl);
            let signed = Signed { request, offset: 0, held: Some(plan_id) };
            Value::Object(answering.completed(&plan, &signed, ttl).await)
        }
        None => {
            let signed = verify_plan_id(&state, &raw, &name, &plan_id)?;
            let plan = replan(&state, resolved.mount, &location, metadata, &signed.request).await?;
            Value::Object(answering.completed(&plan, &signed, None).await)
        }
    };
    Ok(axum::Json(body))
}

/// cancelPlanning: stops a held plan and lets its result go; a plan answered at once
/// holds nothing, so there is nothing to cancel.
pub async fn cancel(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name, plan_id)): Path<(String, String, String)>,
    DelegationHeader(delegation): DelegationHeader,
) -> Result<StatusCode, Error> {
    open(&state, caller, Endpoint::CancelPlanning, &raw, &name, delegation).await?;
    if !state.plans.cancel(&space("plan", &raw, &name), &plan_id) {
        verify_plan_id(&state, &raw, &name, &plan_id)?;
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FetchScanTasksRequest {
    plan_task: String,
}

/// fetchScanTasks: the slice of the plan one plan task names, from the held plan
/// while this process holds it, else planned again.
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
    let held = task.held.as_deref().and_then(|id| state.plans.completed(&space("plan", &raw, &name), id));
    let plan = match held {
        Some(plan) => plan,
        None => std::sync::Arc::new(replan(&state, resolved.mount, &location, metadata, &task.request).await?),
    };
    Ok(axum::Json(Value::Object(scan_tasks(&state, &plan, &task, &task_space))))
}
