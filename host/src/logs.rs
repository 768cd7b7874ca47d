//! Log lines: to stderr, filtered by `RUST_LOG` (default `info`), as text or JSON.
//! Every line a request causes carries its id, from the request's span
//! (`api::observed`).
//!
//! A span's fields are formatted when the span is made, for every request whether
//! or not it logs anything, and the formatter's general field writer was most of a
//! request's logging cost. The request span's one field, an id already known to need
//! no escaping, is therefore written here, in the form the formatter would give it;
//! the formatter keeps fields it finds already written.

use std::marker::PhantomData;

use axum::extract::MatchedPath;
use axum::http::HeaderValue;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::fmt::format::{DefaultFields, JsonFields};
use tracing_subscriber::fmt::FormattedFields;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::LogFormat;

/// What a request is, as its log and audit lines name it: its method, its route
/// template and its id. Cheap to clone: an `Arc`'d template and a shared header value.
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub method: &'static str,
    pub route: Option<MatchedPath>,
    pub request_id: HeaderValue,
}

/// The name of every request's span, and of its one field.
pub const REQUEST_SPAN: &str = "request";
pub const REQUEST_ID: &str = "request_id";

/// Installs the process's logger.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only for a terminal: a log file or collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logger = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => logger
            .with(RequestFields::<DefaultFields>::new())
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi))
            .init(),
        LogFormat::Json => logger
            .with(RequestFields::<JsonFields>::new())
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(ansi)
                    .json()
                    .with_current_span(true)
                    .with_span_list(false),
            )
            .init(),
    }
}

/// Writes the request span's fields as the formatter of `N` would.
struct RequestFields<N> {
    fields: PhantomData<fn(N)>,
}

impl<N> RequestFields<N> {
    fn new() -> Self {
        Self { fields: PhantomData }
    }
}

/// How each formatter writes the request id.
trait RequestIdField {
    fn write(id: &str) -> String;
}

impl RequestIdField for DefaultFields {
    fn write(id: &str) -> String {
        [REQUEST_ID, "=", id].concat()
    }
}

impl RequestIdField for JsonFields {
    fn write(id: &str) -> String {
        ["{\"", REQUEST_ID, "\":\"", id, "\"}"].concat()
    }
}

impl<S, N> Layer<S> for RequestFields<N>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: RequestIdField + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != REQUEST_SPAN {
            return;
        }
        let mut request_id = RequestIdOf::<N>(None, PhantomData);
        attrs.record(&mut request_id);
        if let (Some(written), Some(span)) = (request_id.0, ctx.span(id)) {
            span.extensions_mut().insert(FormattedFields::<N>::new(written));
        }
    }
}

/// Only letters, digits and `-_.:`: written as it is, a request id needs no escaping in
/// a text or JSON log line. A client's id that is not plain is replaced by one of ours.
pub fn plain_request_id(id: &[u8]) -> bool {
    id.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
}

/// The request id, written for `N`, when it is recorded as a string that needs no
/// escaping in either format ([`plain_request_id`], as `RequestIds::of` makes sure).
struct RequestIdOf<N>(Option<String>, PhantomData<fn(N)>);

impl<N: RequestIdField> Visit for RequestIdOf<N> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == REQUEST_ID && plain_request_id(value.as_bytes()) {
            self.0 = Some(N::write(value));
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// The line a request's warning gives: with the request span's field written here
    /// (`fast`), or by the formatter itself, the id displayed.
    fn line(json: bool, fast: bool) -> String {
        let out = Captured::default();
        let log = || {
            let span = match fast {
                true => tracing::error_span!("request", request_id = "host-1a2b.c:3_x"),
                false => tracing::error_span!("request", request_id = %"host-1a2b.c:3_x"),
            };
            span.in_scope(|| tracing::warn!(n = 1, "something happened"));
        };
        let lines = || tracing_subscriber::fmt::layer().with_writer(out.clone()).with_ansi(false).without_time();
        match json {
            false => {
                let fields = fast.then(RequestFields::<DefaultFields>::new);
                tracing::subscriber::with_default(tracing_subscriber::registry().with(fields).with(lines()), log)
            }
            true => {
                let fields = fast.then(RequestFields::<JsonFields>::new);
                let lines = tracing_subscriber::fmt::layer().with_writer(out.clone()).with_ansi(false).without_time();
                let lines = lines.json().with_current_span(true).with_span_list(false);
                tracing::subscriber::with_default(tracing_subscriber::registry().with(fields).with(lines), log)
            }
        }
        let written = out.0.lock().unwrap().clone();
        String::from_utf8(written).unwrap()
    }

    #[test]
    fn the_request_span_is_written_as_the_formatter_writes_it() {
        for json in [false, true] {
            let (fast, formatted) = (line(json, true), line(json, false));
            assert!(formatted.contains("host-1a2b.c:3_x"), "{formatted}");
            assert_eq!(fast, formatted);
        }
    }
}
