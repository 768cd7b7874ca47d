//! Request ids: every request has one, the client's `X-Request-Id` when it is fit for
//! a log line and one of ours otherwise, and every response returns it. It is read
//! and set here, as a step of `observed`, rather than by a layer of its own around the
//! router: such a layer stores the id in the request's and the response's extensions
//! (a map allocated per message) and costs a boxed future per request.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::header::HeaderName;
use axum::http::{HeaderMap, HeaderValue};

use crate::logs::plain_request_id;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id a client may choose.
const REQUEST_ID_MAX: usize = 128;

/// Request ids for requests that bring none (or an unfit one): this process's random
/// prefix and a counter — unique like a UUID across hosts, without asking the OS for
/// randomness on every request.
pub struct RequestIds {
    prefix: [u8; PREFIX_LEN],
    next: AtomicU64,
}

/// The random prefix's length, in hex digits.
const PREFIX_LEN: usize = 12;

impl RequestIds {
    pub fn new() -> Self {
        let mut prefix = [0u8; PREFIX_LEN];
        prefix.copy_from_slice(&uuid::Uuid::new_v4().simple().to_string().as_bytes()[..PREFIX_LEN]);
        Self { prefix, next: AtomicU64::new(0) }
    }

    /// The id of the request with `headers`: the client's when it is fit, else a new one.
    pub fn of(&self, headers: &HeaderMap) -> HeaderValue {
        match headers.get(X_REQUEST_ID) {
            Some(id) if fit(id) => id.clone(),
            _ => self.make(),
        }
    }

    /// The next id, written on the stack: the header value is its one allocation.
    fn make(&self) -> HeaderValue {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut id = [0u8; PREFIX_LEN + 17];
        id[..PREFIX_LEN].copy_from_slice(&self.prefix);
        id[PREFIX_LEN] = b'-';
        let digits = (64 - (n | 1).leading_zeros()).div_ceil(4) as usize;
        for (d, byte) in id[PREFIX_LEN + 1..][..digits].iter_mut().rev().enumerate() {
            *byte = HEX[(n >> (d * 4)) as usize & 0xf];
        }
        HeaderValue::from_bytes(&id[..PREFIX_LEN + 1 + digits]).expect("letters, digits and '-' make a header value")
    }
}

impl Default for RequestIds {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a client's id may be used: not too long, and plain ([`plain_request_id`]).
/// It goes into every log and audit line of the request, where a forged structure or a
/// megabyte of it has no place; an unfit one is replaced by ours.
fn fit(id: &HeaderValue) -> bool {
    let id = id.as_bytes();
    !id.is_empty() && id.len() <= REQUEST_ID_MAX && plain_request_id(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(ids: &RequestIds, sent: Option<&str>) -> String {
        let mut headers = HeaderMap::new();
        if let Some(sent) = sent {
            headers.insert(X_REQUEST_ID, HeaderValue::from_str(sent).unwrap());
        }
        ids.of(&headers).to_str().unwrap().to_string()
    }

    #[test]
    fn a_fit_id_is_kept_and_any_other_replaced_by_a_new_one() {
        let ids = RequestIds::new();
        assert_eq!(id_of(&ids, Some("trace-me.42:x_y")), "trace-me.42:x_y");
        let made: Vec<String> = (0..20).map(|_| id_of(&ids, None)).collect();
        let prefix = std::str::from_utf8(&ids.prefix).unwrap();
        assert_eq!(made[0], format!("{prefix}-0"));
        assert_eq!(made[17], format!("{prefix}-11"), "the counter is written in hex");
        for unfit in ["a b", "x\"}{\"y", &"z".repeat(129)] {
            let replaced = id_of(&ids, Some(unfit));
            assert!(replaced.starts_with(prefix) && replaced != unfit, "{unfit:?} came back as {replaced:?}");
        }
        let mut all = made.clone();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), made.len(), "every made id is new");
    }
}
