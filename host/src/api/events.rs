//! `POST /v1/{prefix}/events`: the log, read as the REST spec's events proposal asks
//! (`QueryEventsRequest`), filtered by what the caller may read, as a listing is.
//!
//! A page reads the log from the continuation token onwards until it holds `page-size`
//! events the caller may see, or has read `SCAN_LIMIT` events: a caller that may see
//! little is answered a page with few events (even none) and a token past all it read,
//! so no query costs more than that however much is hidden from it.

use axum::extract::State as AxState;
use axum::Extension;

use super::{Json, State};
use crate::auth::Caller;
use crate::authz::{Access, Resource};
use crate::error::Error;
use crate::events::event::{ObjectType, Subject};
use crate::events::query::{token, QueryEventsRequest, QueryEventsResponse};
use crate::events::Event;

/// The most events one query reads from the log.
const SCAN_LIMIT: usize = 10_000;
/// How many it reads at a time.
const READ_BATCH: usize = 500;

pub async fn query(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(request): Json<QueryEventsRequest>,
) -> Result<axum::Json<QueryEventsResponse<Event>>, Error> {
    let outbox = state
        .events
        .outbox()
        .ok_or_else(|| Error::Unsupported("events are off on this server ([events] enabled = false)".into()))?;
    let unsupported = request.unsupported_custom_filters();
    if !unsupported.is_empty() {
        return Err(Error::BadRequest(format!("unsupported custom filters: {}", unsupported.join(", "))));
    }
    let mut position = request.position().map_err(Error::BadRequest)?;
    let page = request.page_size() as usize;
    let access = state.authz.access(&caller).await?;
    let store = |e: crate::storage::kv::KvError| Error::Internal(format!("reading the event log: {e}"));
    let (mut events, mut scanned, mut highest) = (Vec::with_capacity(page.min(64)), 0, 0);
    'read: while scanned < SCAN_LIMIT {
        let batch = outbox.read(position, READ_BATCH.min(SCAN_LIMIT - scanned)).await.map_err(store)?;
        if batch.is_empty() {
            break;
        }
        for logged in batch {
            scanned += 1;
            position = logged.sequence;
            let event: Event = serde_json::from_slice(&logged.event)
                .map_err(|e| Error::Internal(format!("event {} of the log is unreadable: {e}", logged.sequence)))?;
            highest = highest.max(event.timestamp_ms);
            if request.matches(&event) && visible(&access, &caller, &event)? {
                events.push(event);
                if events.len() == page {
                    break 'read;
                }
            }
        }
    }
    Ok(axum::Json(QueryEventsResponse {
        next_page_token: token(position),
        highest_processed_timestamp_ms: highest,
        events,
    }))
}

/// `GET /management/v1/events/dead-letters`: the events sinks gave up on, for server admins.
pub async fn dead_letters(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
) -> Result<axum::Json<serde_json::Value>, Error> {
    let access = state.authz.access(&caller).await?;
    access.require_server_admin("read the events no sink could deliver")?;
    let outbox = state.events.outbox().ok_or_else(|| Error::Unsupported("events are off on this server".into()))?;
    let letters = crate::events::sinks::dead_letters(outbox, 1000)
        .await
        .map_err(|e| Error::Internal(format!("reading the dead letters: {e}")))?;
    Ok(axum::Json(serde_json::json!({ "dead-letters": letters })))
}

/// Whether the caller may read what the event is about: the namespace, or the table or
/// view (a rename's at either end). A server admin reads every event. Under a root
/// namespace that is gone (dropped since), where nobody holds anything, the tenant that
/// made a change reads its event. Events the host knows no object of are for server
/// admins.
fn visible(access: &Access, caller: &Caller, event: &Event) -> Result<bool, Error> {
    if caller.server_admin {
        return Ok(true);
    }
    if event.operation.namespace().first().is_some_and(|root| !access.root_owned(root)) {
        return Ok(event.actor.tenant == caller.tenant);
    }
    match event.operation.subject() {
        Subject::Namespace(namespace) => access.can_read(&Resource::Namespace(namespace.to_vec())),
        Subject::Object(kind, ends, _) => {
            for id in ends {
                let (namespace, name) = (id.namespace.clone(), id.name.clone());
                let resource = match kind {
                    ObjectType::View => Resource::View { namespace, name },
                    _ => Resource::Table { namespace, name },
                };
                if access.can_read(&resource)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Subject::Other => Ok(caller.server_admin),
    }
}
