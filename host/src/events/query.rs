//! What a consumer asks of the log (the spec proposal's `QueryEventsRequest`) and which
//! events it matches; the continuation token, a position in the log.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::event::{Event, ObjectType, Subject};

/// The largest page served, whatever is asked; and the page when none is asked.
pub const MAX_PAGE: u32 = 1000;
pub const DEFAULT_PAGE: u32 = 100;

/// `POST /v1/{prefix}/events`'s body. Every filter given must hold; within one, any
/// item may match.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct QueryEventsRequest {
    pub continuation_token: Option<String>,
    pub page_size: Option<u32>,
    /// Only events at or after this time.
    pub after_timestamp_ms: Option<i64>,
    #[serde(default)]
    pub operation_types: Vec<String>,
    /// Namespaces (and everything in them, at any depth), tables and views, by name.
    #[serde(default)]
    pub catalog_objects_by_name: Vec<Vec<String>>,
    #[serde(default)]
    pub catalog_objects_by_id: Vec<CatalogObjectUuid>,
    #[serde(default)]
    pub object_types: Vec<ObjectType>,
    /// None are known: any given is refused (`unsupported_custom_filters`).
    #[serde(default)]
    pub custom_filters: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CatalogObjectUuid {
    pub uuid: String,
    #[serde(rename = "type")]
    pub kind: ObjectType,
}

/// One page of the answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct QueryEventsResponse<E> {
    /// Where the next query resumes: after the last event this one read, shown or not.
    pub next_page_token: String,
    pub highest_processed_timestamp_ms: i64,
    pub events: Vec<E>,
}

impl QueryEventsRequest {
    /// The log position to read after (0: from the start).
    pub fn position(&self) -> Result<u64, String> {
        match self.continuation_token.as_deref() {
            None | Some("") => Ok(0),
            Some(token) => token.parse().map_err(|_| format!("not a continuation token of this catalog: {token:?}")),
        }
    }

    pub fn page_size(&self) -> u32 {
        self.page_size.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
    }

    /// The custom filters given, which this catalog has none of.
    pub fn unsupported_custom_filters(&self) -> Vec<&str> {
        self.custom_filters.keys().map(String::as_str).collect()
    }

    /// Whether `event` passes every filter.
    pub fn matches(&self, event: &Event) -> bool {
        let subject = event.operation.subject();
        self.after_timestamp_ms.is_none_or(|after| event.timestamp_ms >= after)
            && (self.operation_types.is_empty() || self.operation_types.iter().any(|t| t == event.operation.kind()))
            && (self.object_types.is_empty() || object_type(subject).is_some_and(|t| self.object_types.contains(&t)))
            && (self.catalog_objects_by_name.is_empty()
                || self.catalog_objects_by_name.iter().any(|name| names(subject, name)))
            && (self.catalog_objects_by_id.is_empty()
                || self.catalog_objects_by_id.iter().any(|id| uuid_of(subject) == Some((id.kind, id.uuid.as_str()))))
    }
}

/// The token that resumes after log position `sequence`.
pub fn token(sequence: u64) -> String {
    sequence.to_string()
}

fn object_type(subject: Subject<'_>) -> Option<ObjectType> {
    match subject {
        Subject::Namespace(_) => Some(ObjectType::Namespace),
        Subject::Object(kind, _, _) => Some(kind),
        Subject::Other => None,
    }
}

fn uuid_of(subject: Subject<'_>) -> Option<(ObjectType, &str)> {
    match subject {
        Subject::Object(kind, _, uuid) => Some((kind, uuid)),
        _ => None,
    }
}

/// Whether `name` names the subject or a namespace it is in (a rename's: at either end).
fn names(subject: Subject<'_>, name: &[String]) -> bool {
    match subject {
        Subject::Namespace(namespace) => !name.is_empty() && namespace.starts_with(name),
        Subject::Object(_, ends, _) => ends.iter().any(|id| {
            id.namespace.starts_with(name)
                || name.split_last().is_some_and(|(last, ns)| ns == id.namespace && *last == id.name)
        }),
        Subject::Other => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::event::{Actor, Identifier, Operation, Renamed, TableChange};

    fn event(at: i64, operation: Operation) -> Event {
        Event {
            event_id: format!("e{at}"),
            request_id: "r".into(),
            request_event_count: 1,
            timestamp_ms: at,
            actor: Actor { principal: "p".into(), tenant: "t".into() },
            operation,
        }
    }

    fn id(namespace: &[&str], name: &str) -> Identifier {
        Identifier { namespace: namespace.iter().map(|s| s.to_string()).collect(), name: name.into() }
    }

    fn table(namespace: &[&str], name: &str, uuid: &str) -> TableChange {
        TableChange { identifier: id(namespace, name), table_uuid: uuid.into(), ..Default::default() }
    }

    fn ask(json: Value) -> QueryEventsRequest {
        serde_json::from_value(json).unwrap()
    }

    fn kept(request: &QueryEventsRequest, events: &[Event]) -> Vec<String> {
        events.iter().filter(|e| request.matches(e)).map(|e| e.event_id.clone()).collect()
    }

    #[test]
    fn filters_pick_by_type_name_id_and_time() {
        let events = [
            event(1, Operation::CreateNamespace { namespace: vec!["prod".into()], properties: Default::default() }),
            event(2, Operation::CreateTable(table(&["prod", "sales"], "orders", "u-1"))),
            event(3, Operation::UpdateTable(table(&["prod", "sales"], "orders", "u-1"))),
            event(4, Operation::UpdateTable(table(&["dev"], "orders", "u-2"))),
            event(
                5,
                Operation::RenameTable(Renamed {
                    source: id(&["dev"], "orders"),
                    destination: id(&["prod", "sales"], "old_orders"),
                    uuid: "u-2".into(),
                }),
            ),
            event(6, Operation::DropNamespace { namespace: vec!["prodx".into()] }),
        ];
        let all = ["e1", "e2", "e3", "e4", "e5", "e6"];
        assert_eq!(kept(&QueryEventsRequest::default(), &events), all);
        assert_eq!(kept(&ask(serde_json::json!({"operation-types": ["update-table"]})), &events), ["e3", "e4"]);
        assert_eq!(kept(&ask(serde_json::json!({"object-types": ["namespace"]})), &events), ["e1", "e6"]);
        // A namespace names everything in it, at any depth, and not a sibling that shares
        // a prefix of its name; a rename into it is in it.
        assert_eq!(
            kept(&ask(serde_json::json!({"catalog-objects-by-name": [["prod"]]})), &events),
            ["e1", "e2", "e3", "e5"]
        );
        assert_eq!(
            kept(&ask(serde_json::json!({"catalog-objects-by-name": [["dev", "orders"]]})), &events),
            ["e4", "e5"]
        );
        assert_eq!(
            kept(&ask(serde_json::json!({"catalog-objects-by-id": [{"uuid": "u-2", "type": "table"}]})), &events),
            ["e4", "e5"]
        );
        assert!(kept(&ask(serde_json::json!({"catalog-objects-by-id": [{"uuid": "u-2", "type": "view"}]})), &events)
            .is_empty());
        assert_eq!(kept(&ask(serde_json::json!({"after-timestamp-ms": 5})), &events), ["e5", "e6"]);
        let both = ask(serde_json::json!({"operation-types": ["update-table"], "catalog-objects-by-name": [["prod"]]}));
        assert_eq!(kept(&both, &events), ["e3"], "every filter must hold");
    }

    #[test]
    fn the_token_is_a_position_and_pages_are_bounded() {
        let request = QueryEventsRequest::default();
        assert_eq!(request.position(), Ok(0));
        assert_eq!(request.page_size(), DEFAULT_PAGE);
        let resumed = ask(serde_json::json!({"continuation-token": token(41), "page-size": 1_000_000}));
        assert_eq!(resumed.position(), Ok(41));
        assert_eq!(resumed.page_size(), MAX_PAGE);
        assert!(ask(serde_json::json!({"continuation-token": "abc"})).position().unwrap_err().contains("abc"));
        assert_eq!(ask(serde_json::json!({"custom-filters": {"x": 1}})).unsupported_custom_filters(), ["x"]);
        assert!(
            serde_json::from_value::<QueryEventsRequest>(serde_json::json!({"page-sise": 3})).is_err(),
            "a misspelled filter is refused, not ignored"
        );
    }
}
