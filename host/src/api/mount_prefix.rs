//! A prefix per mount, so that a client can target one mount as a catalog of its own.
//!
//! `GET /v1/config?warehouse=<mount>` answers `overrides.prefix = "<mount>"` and that
//! mount's own endpoints. Requests under `/v1/<mount>/…` then see the mount's tree as a
//! whole catalog: namespaces without the mount's name. They are served by the one tree
//! under `/v1/catalog`, so routing, authorization and paging stay in one place: the
//! request is rewritten onto it (`/v1/catalog/namespaces/<mount>␟…`, and the namespaces
//! a body names), and the names in the answer are given back without the mount's name.
//! Requests under `/v1/catalog` pass through untouched, at the cost of one comparison.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::Value;

use super::State;
use crate::error::Error;
use crate::prefixes::{CATALOG as PREFIX, OAUTH, ROOT as ROOT_PREFIX};

/// The largest body rewritten (axum's own JSON limit).
const BODY_LIMIT: usize = 2 << 20;

/// Where a request's body names namespaces, as JSON pointers (`*`: every element).
const REQUEST_NAMESPACES: &[&str] = &[
    "/namespace",
    "/source/namespace",
    "/destination/namespace",
    "/identifier/namespace",
    "/table-changes/*/identifier/namespace",
];

/// Where an answer names namespaces.
const ANSWER_NAMESPACES: &[&str] = &["/namespace", "/namespaces/*", "/identifiers/*/namespace"];

/// What a prefix other than the whole tree's targets.
enum Scope {
    /// One mount, as a catalog of its own.
    Mount(String),
    /// The root catalog without the mounts (the mounts' names are hidden and refused).
    Root(Vec<String>),
}

/// The layer around the whole router (it must run before routing: it changes the path).
pub async fn scope(axum::extract::State(state): State, request: Request, next: Next) -> Response {
    let Some(scope) = scope_of(&state, request.uri().path()) else {
        return next.run(request).await;
    };
    match rewrite_request(&scope, request).await {
        Ok((request, answer_names)) => {
            let response = next.run(request).await;
            match (response.status(), &scope) {
                (StatusCode::OK, _) if answer_names => rewrite_answer(&scope, response).await,
                (status, Scope::Mount(mount)) if status.is_client_error() => rewrite_error(mount, response).await,
                _ => response,
            }
        }
        Err(e) => e.into_response(),
    }
}

/// What a `/v1/<prefix>/…` path targets; `None` for the whole tree and every other path.
fn scope_of(state: &super::AppState, path: &str) -> Option<Scope> {
    let (prefix, _) = path.strip_prefix("/v1/")?.split_once('/')?;
    if prefix == PREFIX || prefix == OAUTH {
        return None;
    }
    if prefix == ROOT_PREFIX {
        return Some(Scope::Root(state.mounts.named().map(|(name, _)| name.clone()).collect()));
    }
    let name = percent_decode_str(prefix).decode_utf8().ok()?;
    state.mounts.named().any(|(m, _)| *m == name).then(|| Scope::Mount(name.into_owned()))
}

/// The request onto the one tree, and whether its answer names namespaces.
async fn rewrite_request(scope: &Scope, request: Request) -> Result<(Request, bool), Error> {
    let (mut parts, body) = request.into_parts();
    // What follows `/v1/<prefix>`, e.g. `/namespaces/a/tables`.
    let rest = match parts.uri.path().strip_prefix("/v1/").and_then(|p| p.split_once('/')) {
        Some((_, rest)) => format!("/{rest}"),
        None => String::new(),
    };
    let mut query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes()).into_owned().collect();
    let (new_path, answer_names) = if rest == "/namespaces" {
        let parent = query.iter_mut().find(|(k, _)| k == "parent").map(|(_, v)| v);
        match (scope, parent) {
            // A mount's top level is its root's children.
            (Scope::Mount(mount), Some(parent)) if !parent.is_empty() => *parent = format!("{mount}\u{1f}{parent}"),
            (Scope::Mount(mount), Some(parent)) => *parent = mount.clone(),
            (Scope::Mount(mount), None) if parts.method == Method::GET => query.push(("parent".into(), mount.clone())),
            (Scope::Root(mounts), Some(parent)) => refuse_mounts(mounts, parent.split('\u{1f}'))?,
            _ => {}
        }
        (format!("/v1/{PREFIX}/namespaces"), true)
    } else if let Some(under) = rest.strip_prefix("/namespaces/") {
        let names_members = parts.method == Method::GET
            && (under.ends_with("/tables") || under.ends_with("/views") || !under.contains('/'));
        let path = match scope {
            Scope::Mount(mount) => {
                let encoded = utf8_percent_encode(mount, NON_ALPHANUMERIC);
                format!("/v1/{PREFIX}/namespaces/{encoded}%1F{under}")
            }
            Scope::Root(mounts) => {
                let namespace = percent_decode_str(under.split('/').next().unwrap_or_default()).decode_utf8_lossy();
                refuse_mounts(mounts, namespace.split('\u{1f}'))?;
                format!("/v1/{PREFIX}/namespaces/{under}")
            }
        };
        (path, names_members)
    } else {
        (format!("/v1/{PREFIX}{rest}"), false)
    };
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{}", url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&query).finish())
    };
    parts.uri = Uri::try_from(format!("{new_path}{query}"))
        .map_err(|e| Error::BadRequest(format!("invalid path under a catalog prefix: {e}")))?;
    let body = if parts.method == Method::POST {
        let bytes = to_bytes(body, BODY_LIMIT)
            .await
            .map_err(|e| Error::BadRequest(format!("reading the request body: {e}")))?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut json) => {
                let mut refused = Ok(());
                for pointer in REQUEST_NAMESPACES {
                    for_each_at(&mut json, pointer, &mut |names| match scope {
                        Scope::Mount(mount) => names.insert(0, Value::String(mount.clone())),
                        Scope::Root(mounts) => {
                            if refused.is_ok() {
                                refused = refuse_mounts(mounts, names.iter().filter_map(Value::as_str));
                            }
                        }
                    });
                }
                refused?;
                let bytes = serde_json::to_vec(&json).expect("a JSON value serializes");
                parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
                Body::from(bytes)
            }
            // Not JSON: the handler answers it as it answers any bad body.
            Err(_) => Body::from(bytes),
        }
    } else {
        body
    };
    // The namespace POST answers a created namespace.
    let answer_names = answer_names || (rest == "/namespaces" && parts.method == Method::POST);
    Ok((Request::from_parts(parts, body), answer_names))
}

/// Under the root's prefix a mount's name names nothing: its namespaces are not there.
fn refuse_mounts<'a>(mounts: &[String], mut levels: impl Iterator<Item = &'a str>) -> Result<(), Error> {
    match levels.next() {
        Some(first) if mounts.iter().any(|m| m == first) => Err(Error::no_such_namespace(first)),
        _ => Ok(()),
    }
}

/// The answer's namespaces as the prefix shows them: without the mount's name, or
/// without the mounts (the root's top level lists them beside its own namespaces).
async fn rewrite_answer(scope: &Scope, response: Response) -> Response {
    rewrite_json(response, |json| match scope {
        Scope::Mount(mount) => {
            for pointer in ANSWER_NAMESPACES {
                for_each_at(json, pointer, &mut |names| {
                    if names.first().and_then(Value::as_str) == Some(mount) {
                        names.remove(0);
                    }
                });
            }
        }
        Scope::Root(mounts) => {
            if let Some(Value::Array(listed)) = json.get_mut("namespaces") {
                listed.retain(|names| {
                    !names.get(0).and_then(Value::as_str).is_some_and(|n| mounts.iter().any(|m| m == n))
                });
            }
        }
    })
    .await
}

/// An error's message in the client's names: `Namespace does not exist: ns`, not
/// `…: <mount>.ns` (the messages name members after a colon or a space).
async fn rewrite_error(mount: &str, response: Response) -> Response {
    rewrite_json(response, |json| {
        if let Some(Value::String(message)) = json.pointer_mut("/error/message") {
            *message = message.replace(&format!(": {mount}."), ": ").replace(&format!(" {mount}."), " ");
        }
    })
    .await
}

/// A JSON answer changed by `change`; any other answer as it is.
async fn rewrite_json(response: Response, change: impl FnOnce(&mut Value)) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, usize::MAX).await else {
        return Error::Internal("reading an answer to rewrite".into()).into_response();
    };
    let Ok(mut json) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    change(&mut json);
    let bytes = serde_json::to_vec(&json).expect("a JSON value serializes");
    parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Response::from_parts(parts, Body::from(bytes))
}

/// Calls `f` on every array of names at `pointer` (`*` stands for every element).
fn for_each_at(json: &mut Value, pointer: &str, f: &mut dyn FnMut(&mut Vec<Value>)) {
    fn walk(json: &mut Value, steps: &[&str], f: &mut dyn FnMut(&mut Vec<Value>)) {
        match steps.split_first() {
            None => {
                if let Value::Array(names) = json {
                    if names.iter().all(Value::is_string) {
                        f(names);
                    }
                }
            }
            Some((&"*", rest)) => {
                if let Value::Array(items) = json {
                    items.iter_mut().for_each(|item| walk(item, rest, f));
                }
            }
            Some((key, rest)) => {
                if let Some(inner) = json.get_mut(*key) {
                    walk(inner, rest, f);
                }
            }
        }
    }
    let steps: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    walk(json, &steps, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_found_where_the_pointers_say() {
        let mut body = json!({
            "table-changes": [{"identifier": {"namespace": ["a"], "name": "t"}}, {"requirements": []}],
            "properties": {"namespace": "not names"},
        });
        for pointer in REQUEST_NAMESPACES {
            for_each_at(&mut body, pointer, &mut |names| names.insert(0, json!("m")));
        }
        assert_eq!(body["table-changes"][0]["identifier"]["namespace"], json!(["m", "a"]));
        assert_eq!(body["properties"]["namespace"], json!("not names"));
    }
}
