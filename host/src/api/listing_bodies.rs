//! The bodies of listNamespaces, listTables and listViews, written straight into one
//! buffer of about the right size: a page of 100 names built as values and handed to
//! serde cost more in allocations (the shared namespace copied per identifier, the
//! buffer regrown) and byte-by-byte escaping than the listing itself.

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::model::write_json_string;
use crate::paging::Name;

/// A page of namespaces, all children of `parent`.
#[derive(Debug)]
pub struct ListNamespacesResponse {
    pub parent: Vec<String>,
    pub names: Vec<Name>,
    pub next_page_token: Option<String>,
}

/// A page of tables or views, all in `namespace`.
#[derive(Debug)]
pub struct ListTablesResponse {
    pub namespace: Vec<String>,
    pub names: Vec<Name>,
    pub next_page_token: Option<String>,
}

/// Writes `[` then each item with `write`, separated by commas, then `]`.
fn write_array<T>(out: &mut Vec<u8>, items: &[T], mut write: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// Writes `["a","b"]`.
fn write_string_array(out: &mut Vec<u8>, items: &[String]) {
    write_array(out, items, |out, item| write_json_string(out, item));
}

/// Closes a listing's body: the token if there is one, then `}`.
fn finish(mut out: Vec<u8>, next_page_token: Option<&str>) -> Response {
    if let Some(token) = next_page_token {
        out.extend_from_slice(b",\"next-page-token\":");
        write_json_string(&mut out, token);
    }
    out.push(b'}');
    ([(CONTENT_TYPE, "application/json")], out).into_response()
}

/// What the items' text and punctuation take, with room for escapes and the token.
fn capacity(names: &[Name], per_item: usize, token: Option<&str>) -> usize {
    names.iter().map(|name| name.len() + per_item).sum::<usize>() + token.map_or(0, str::len) * 2 + 64
}

/// The levels every item shares, written once: `["a","b",` (or `[` at the top level).
fn shared_levels(parent: &[String]) -> Vec<u8> {
    let mut levels = Vec::new();
    write_string_array(&mut levels, parent);
    levels.pop();
    if !parent.is_empty() {
        levels.push(b',');
    }
    levels
}

impl IntoResponse for ListNamespacesResponse {
    fn into_response(self) -> Response {
        let head = shared_levels(&self.parent);
        let token = self.next_page_token.as_deref();
        let mut out = Vec::with_capacity(capacity(&self.names, head.len() + 8, token));
        out.extend_from_slice(b"{\"namespaces\":");
        write_array(&mut out, &self.names, |out, name| {
            out.extend_from_slice(&head);
            write_json_string(out, name);
            out.push(b']');
        });
        finish(out, token)
    }
}

impl IntoResponse for ListTablesResponse {
    fn into_response(self) -> Response {
        // Every identifier carries the same namespace: written once, copied per item.
        let mut namespace = Vec::new();
        write_string_array(&mut namespace, &self.namespace);
        let token = self.next_page_token.as_deref();
        let mut out = Vec::with_capacity(capacity(&self.names, namespace.len() + 32, token));
        out.extend_from_slice(b"{\"identifiers\":");
        write_array(&mut out, &self.names, |out, name| {
            out.extend_from_slice(b"{\"namespace\":");
            out.extend_from_slice(&namespace);
            out.extend_from_slice(b",\"name\":");
            write_json_string(out, name);
            out.push(b'}');
        });
        finish(out, token)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    async fn body_of(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn names(items: &[&str]) -> Vec<Name> {
        items.iter().map(|s| Name::from(*s)).collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn listings_are_the_json_the_spec_shows_escaped_where_needed() {
        let odd = "quote \" backslash \\ tab \t é";
        let top = ListNamespacesResponse { parent: vec![], names: names(&["a", odd]), next_page_token: None };
        assert_eq!(body_of(top.into_response()).await, json!({"namespaces": [["a"], [odd]]}));
        let children = ListNamespacesResponse {
            parent: strings(&["a", odd]),
            names: names(&["b", odd]),
            next_page_token: Some("tok\"en".into()),
        };
        assert_eq!(
            body_of(children.into_response()).await,
            json!({"namespaces": [["a", odd, "b"], ["a", odd, odd]], "next-page-token": "tok\"en"})
        );
        let empty = ListNamespacesResponse { parent: strings(&["a"]), names: vec![], next_page_token: None };
        assert_eq!(body_of(empty.into_response()).await, json!({"namespaces": []}));

        let tables =
            ListTablesResponse { namespace: strings(&["db", odd]), names: names(&["t1", odd]), next_page_token: None };
        assert_eq!(
            body_of(tables.into_response()).await,
            json!({"identifiers": [{"namespace": ["db", odd], "name": "t1"}, {"namespace": ["db", odd], "name": odd}]})
        );
        let empty =
            ListTablesResponse { namespace: strings(&["db"]), names: vec![], next_page_token: Some("t".into()) };
        assert_eq!(body_of(empty.into_response()).await, json!({"identifiers": [], "next-page-token": "t"}));
    }
}
