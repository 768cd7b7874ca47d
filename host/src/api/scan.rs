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
use crate::scan::restrictions::{self, Restrictions};
use crate::scan::{self, Plan, PlanRequest, TASKS_PER_RESPONSE};
use crate::storage::location::Location;
use crate::tables;

/// At most this many file scan tasks go in one response to a restricted caller: each
/// file gets credentials of its own (an STS call).
const RESTRICTED_TASKS_PER_RESPONSE: usize = 100;

/// How long a restricted caller's per-file credentials live (a plan held longer
/// bounds them by its own expiry instead).
const RESTRICTED_CREDENTIALS: std::time::Duration = std::time::Duration::from_secs(15 * 60);

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

/// A table opened for planning: where it was resolved (and the caller's access),
/// its metadata and its checked location, and the read restrictions on the caller.
struct Opened<'s> {
    resolved: Resolved<'s>,
    metadata: TableMetadata,
    location: Location,
    restricted: Option<Restrictions>,
    /// The cursor space of its plan ids and plan tasks (see [`Opened::space`]).
    scope: String,
}

impl Opened<'_> {
    /// The cursor space of plan ids (`plan`) or plan tasks (`plan-task`): one table's,
    /// by its uuid (a table created again under the name knows none of the old one's),
    /// under one set of read policies (a token made for a caller who may read every row
    /// gives a restricted caller nothing).
    fn space(&self, kind: &str) -> String {
        format!("{kind}:{}", self.scope)
    }
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
    let policies = resolved.access.policies_on(&resolved.resource(Kind::Table));
    let restricted = (!policies.is_empty()).then(|| {
        let restricted = restrictions::resolve(&policies, metadata.current_schema());
        resolved.access.audit_restricted(&resolved.resource(Kind::Table), &restricted.policies);
        restricted
    });
    let scope = format!("{raw}\u{1f}{name}\u{1f}{}\u{1f}{}", metadata.uuid(), restrictions::fingerprint(&policies));
    Ok(Opened { resolved, metadata, location, restricted, scope })
}

/// The warehouse a mount's tables are planned over.
fn warehouse_of(mount: &Mount) -> Result<&crate::storage::warehouse::Warehouse, Error> {
    mount
        .served_files()
        .ok_or_else(|| Error::Unsupported(format!("{} does not let this server read its manifests", mount.label())))
}

/// Plans `request` again, in this request (a plan id or plan task no process holds a
/// plan for), in its turn among the plans computed.
async fn replan(state: &AppState, table: &Opened<'_>, request: &PlanRequest) -> Result<Plan, Error> {
    let prepared = scan::prepare(table.metadata.clone(), request, table.restricted.as_ref())?;
    state.plans.in_turn(scan::run(prepared, warehouse_of(table.resolved.mount)?, &table.location)).await
}

/// How many file scan tasks one response holds: a restricted caller's each come with
/// credentials of their own, so fewer.
fn per_response(restricted: bool) -> usize {
    if restricted {
        RESTRICTED_TASKS_PER_RESPONSE
    } else {
        TASKS_PER_RESPONSE
    }
}

/// The scan tasks of `plan` from `signed`'s offset on, with plan tasks for whatever
/// does not fit.
fn scan_tasks(
    state: &AppState,
    plan: &Plan,
    signed: &Signed,
    task_space: &str,
    per_response: usize,
) -> serde_json::Map<String, Value> {
    let (tasks, delete_files) = plan.slice(signed.offset, per_response);
    let mut body = serde_json::Map::new();
    body.insert("file-scan-tasks".into(), json!(tasks));
    body.insert("delete-files".into(), json!(delete_files));
    // Only the first response hands out plan tasks; each task is one later slice.
    if signed.offset == 0 && plan.task_count() > per_response {
        let plan_tasks: Vec<String> = (per_response..plan.task_count())
            .step_by(per_response)
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
    table: &'a Opened<'s>,
    delegation: Option<&'a str>,
    task_space: String,
}

impl<'a, 's> Answering<'a, 's> {
    fn new(state: &'a AppState, table: &'a Opened<'s>, delegation: Option<&'a str>) -> Self {
        Answering { state, table, delegation, task_space: table.space("plan-task") }
    }

    /// A completed plan's answer: its first scan tasks, plan tasks for the rest, and
    /// the credentials that read them (living no longer than `at_most`).
    async fn completed(
        &self,
        plan: &Plan,
        signed: &Signed,
        at_most: Option<std::time::Duration>,
    ) -> serde_json::Map<String, Value> {
        let Answering { state, table, delegation, .. } = self;
        let (resolved, location) = (&table.resolved, &table.location);
        let restricted = table.restricted.is_some();
        let mut body = scan_tasks(state, plan, signed, &self.task_space, per_response(restricted));
        body.insert("status".into(), json!("completed"));
        if !credentials::wants_vended(*delegation) {
            return body;
        }
        let (mount, ns, name) = (resolved.mount, resolved.namespace(), &resolved.ident.name);
        if restricted {
            // Never the table's prefix: one short-lived credential per planned file.
            let ttl = at_most.unwrap_or(RESTRICTED_CREDENTIALS);
            let files = credentials::vend_files(state, &resolved.access, mount, &ns, name, &body, ttl).await;
            body.insert("storage-credentials".into(), Value::Array(files));
        } else if let Some(vended) =
            credentials::vend(state, &resolved.access, mount, &ns, name, location, at_most).await
        {
            body.insert("storage-credentials".into(), vended.to_value());
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
    // What the client got wrong is answered now, not when the plan is fetched.
    let prepared = scan::prepare(table.metadata.clone(), &request, table.restricted.as_ref())?;
    let warehouse = warehouse_of(table.resolved.mount)?.clone();
    let work = {
        let location = table.location.clone();
        async move { scan::run(prepared, &warehouse, &location).await }
    };
    let plan_space = table.space("plan");
    let plan = match state.plans.plan(plan_space.clone(), request.clone(), work).await? {
        Answer::Completed(plan) => plan,
        Answer::Submitted(plan_id) => return Ok(axum::Json(json!({ "status": "submitted", "plan-id": plan_id }))),
    };
    let signed = Signed { request, offset: 0, held: None };
    let answering = Answering::new(&state, &table, delegation.as_deref());
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
fn verify_plan_id(state: &AppState, table: &Opened<'_>, plan_id: &str) -> Result<Signed, Error> {
    signed(state, &table.space("plan"), plan_id)
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
    let table = open(&state, caller, Endpoint::FetchPlanningResult, &raw, &name, delegation.clone()).await?;
    let answering = Answering::new(&state, &table, delegation.as_deref());
    let body = match state.plans.status(&table.space("plan"), &plan_id) {
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
            let signed = verify_plan_id(&state, &table, &plan_id)?;
            let plan = replan(&state, &table, &signed.request).await?;
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
    let table = open(&state, caller, Endpoint::CancelPlanning, &raw, &name, delegation).await?;
    if !state.plans.cancel(&table.space("plan"), &plan_id) {
        verify_plan_id(&state, &table, &plan_id)?;
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
    let table = open(&state, caller, Endpoint::FetchScanTasks, &raw, &name, delegation.clone()).await?;
    let task_space = table.space("plan-task");
    let task = signed(&state, &task_space, &request.plan_task)
        .ok_or_else(|| Error::NoSuchPlanTask(format!("no plan task {:?} for this table", request.plan_task)))?;
    let held = task.held.as_deref().and_then(|id| state.plans.completed(&table.space("plan"), id));
    let plan = match held {
        Some(plan) => plan,
        None => std::sync::Arc::new(replan(&state, &table, &task.request).await?),
    };
    let restricted = table.restricted.is_some();
    let mut body = scan_tasks(&state, &plan, &task, &task_space, per_response(restricted));
    if restricted && credentials::wants_vended(delegation.as_deref()) {
        let (resolved, ttl) = (&table.resolved, RESTRICTED_CREDENTIALS);
        let (mount, ns, name) = (resolved.mount, resolved.namespace(), &resolved.ident.name);
        let files = credentials::vend_files(&state, &resolved.access, mount, &ns, name, &body, ttl).await;
        body.insert("storage-credentials".into(), Value::Array(files));
    }
    Ok(axum::Json(Value::Object(body)))
}
