//! Every endpoint of the Iceberg REST API the host serves, named once: its method and
//! path as the spec writes them, its operation's name, whether it changes a catalog,
//! and what a backend must declare for a mount of it to serve the endpoint.
//! The router (`api::router`, which gives each its handler), the list `/v1/config`
//! advertises, what the pipeline detaches and makes idempotent, the privilege a handler
//! demands (`authz` derives it from `mutating`), and the route template metrics and
//! audit records carry all come from this one list.

use axum::http::Method;

use crate::sandbox::bindings::Features;

/// Whether an endpoint changes a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadsOrWrites {
    /// Reads, or asks the host something (planning, credentials, metrics reports):
    /// served by a read-only mount too.
    Reads,
    /// Changes a catalog: a read-only mount leaves it out of `/v1/config`, and a request
    /// runs to completion when its client goes, once per Idempotency-Key.
    Writes,
}

/// Declares [`Endpoint`] with everything each variant knows.
macro_rules! endpoints {
    ($( $(#[doc = $doc:literal])* $name:ident = $method:ident $path:literal, $operation:literal, $effect:ident, [$($needs:ident),*]; )*) => {
        /// An endpoint the host serves.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Endpoint {
            $( $(#[doc = $doc])* $name, )*
        }

        impl Endpoint {
            /// Every endpoint the host serves.
            pub const ALL: &'static [Endpoint] = &[$(Endpoint::$name),*];

            pub fn method(self) -> Method {
                match self {
                    $(Endpoint::$name => Method::$method,)*
                }
            }

            /// Its path under `/v1/{prefix}`, as the spec writes it.
            pub fn path(self) -> &'static str {
                match self {
                    $(Endpoint::$name => $path,)*
                }
            }

            /// As `/v1/config`'s `endpoints` names it: `GET /v1/{prefix}/namespaces`.
            pub fn spec(self) -> &'static str {
                match self {
                    $(Endpoint::$name => concat!(stringify!($method), " /v1/{prefix}", $path),)*
                }
            }

            /// The spec's operationId: how an error names what was refused.
            pub fn operation(self) -> &'static str {
                match self {
                    $(Endpoint::$name => $operation,)*
                }
            }

            /// Whether it changes a catalog.
            pub fn mutating(self) -> bool {
                match self {
                    $(Endpoint::$name => matches!(ReadsOrWrites::$effect, ReadsOrWrites::Writes),)*
                }
            }

            /// The features a backend must declare for a mount of it to serve it (beyond
            /// `writes`, which every mutating endpoint needs).
            fn needs(self) -> Features {
                match self {
                    $(Endpoint::$name => Features::empty() $(| Features::$needs)*,)*
                }
            }
        }
    };
}

endpoints! {
    ListNamespaces = GET "/namespaces", "listNamespaces", Reads, [];
    CreateNamespace = POST "/namespaces", "createNamespace", Writes, [];
    LoadNamespace = GET "/namespaces/{namespace}", "loadNamespaceMetadata", Reads, [];
    NamespaceExists = HEAD "/namespaces/{namespace}", "namespaceExists", Reads, [];
    DropNamespace = DELETE "/namespaces/{namespace}", "dropNamespace", Writes, [];
    UpdateNamespaceProperties = POST "/namespaces/{namespace}/properties", "updateProperties", Writes, [NAMESPACE_PROPERTIES];
    ListTables = GET "/namespaces/{namespace}/tables", "listTables", Reads, [];
    CreateTable = POST "/namespaces/{namespace}/tables", "createTable", Writes, [];
    LoadTable = GET "/namespaces/{namespace}/tables/{table}", "loadTable", Reads, [];
    TableExists = HEAD "/namespaces/{namespace}/tables/{table}", "tableExists", Reads, [];
    UpdateTable = POST "/namespaces/{namespace}/tables/{table}", "updateTable", Writes, [];
    DropTable = DELETE "/namespaces/{namespace}/tables/{table}", "dropTable", Writes, [];
    RegisterTable = POST "/namespaces/{namespace}/register", "registerTable", Writes, [];
    UnregisterTable = POST "/namespaces/{namespace}/tables/{table}/unregister", "unregisterTable", Writes, [];
    ReportMetrics = POST "/namespaces/{namespace}/tables/{table}/metrics", "reportMetrics", Reads, [];
    RenameTable = POST "/tables/rename", "renameTable", Writes, [RENAME];
    CommitTransaction = POST "/transactions/commit", "commitTransaction", Writes, [MULTI_TABLE_COMMIT];
    ListViews = GET "/namespaces/{namespace}/views", "listViews", Reads, [VIEWS];
    CreateView = POST "/namespaces/{namespace}/views", "createView", Writes, [VIEWS];
    LoadView = GET "/namespaces/{namespace}/views/{view}", "loadView", Reads, [VIEWS];
    ViewExists = HEAD "/namespaces/{namespace}/views/{view}", "viewExists", Reads, [VIEWS];
    ReplaceView = POST "/namespaces/{namespace}/views/{view}", "replaceView", Writes, [VIEWS];
    DropView = DELETE "/namespaces/{namespace}/views/{view}", "dropView", Writes, [VIEWS];
    RenameView = POST "/views/rename", "renameView", Writes, [VIEWS, RENAME];
    RegisterView = POST "/namespaces/{namespace}/register-view", "registerView", Writes, [VIEWS];
    LoadCredentials = GET "/namespaces/{namespace}/tables/{table}/credentials", "loadCredentials", Reads, [HOST_READABLE_MANIFESTS];
    SignRequest = POST "/namespaces/{namespace}/tables/{table}/sign", "signRequest", Reads, [HOST_READABLE_MANIFESTS];
    PlanTableScan = POST "/namespaces/{namespace}/tables/{table}/plan", "planTableScan", Reads, [HOST_READABLE_MANIFESTS];
    FetchPlanningResult = GET "/namespaces/{namespace}/tables/{table}/plan/{plan-id}", "fetchPlanningResult", Reads, [HOST_READABLE_MANIFESTS];
    CancelPlanning = DELETE "/namespaces/{namespace}/tables/{table}/plan/{plan-id}", "cancelPlanning", Reads, [HOST_READABLE_MANIFESTS];
    FetchScanTasks = POST "/namespaces/{namespace}/tables/{table}/tasks", "fetchScanTasks", Reads, [HOST_READABLE_MANIFESTS];
    /// The log of changes, the whole tree's (served by the host, whatever the mounts).
    QueryEvents = POST "/events", "queryEvents", Reads, [];
}

impl Endpoint {
    /// Whether a mount whose backend declares `features` serves it; `places_tables`: the
    /// backend's store assigns table locations (it exports `placement`), so it cannot
    /// register a table at a location of the caller's, nor unregister one (its drop
    /// deletes the files).
    pub fn served_with(self, features: Features, places_tables: bool) -> bool {
        features.contains(self.needs())
            && (!self.mutating() || features.contains(Features::WRITES))
            // A store that assigns locations holds its tables' files itself: it neither
            // takes a table at a caller's location nor keeps the files of one it drops.
            && !(places_tables && matches!(self, Endpoint::RegisterTable | Endpoint::UnregisterTable))
    }

    /// Whether it is a compare-and-set of one table, several, or a view (a 409 to it is
    /// a CommitFailedException).
    pub fn commits(self) -> bool {
        matches!(self, Endpoint::UpdateTable | Endpoint::CommitTransaction | Endpoint::ReplaceView)
    }

    /// Its route in this server's router: under the prefix the server advertises, with
    /// each path parameter a name axum takes (`{plan-id}` as `{plan_id}`).
    pub fn route(self) -> String {
        format!("/v1/{}{}", crate::prefixes::CATALOG, self.path().replace("{plan-id}", "{plan_id}"))
    }
}

/// Parts of spec paths the host does not implement yet: they answer 501 (which
/// real clients read as "unsupported") and are absent from `endpoints`.
const NOT_YET: &[&str] = &["/functions"];

/// Whether `path`, which no route matched, is one of the spec's that the host does not
/// implement yet.
pub fn not_yet(path: &str) -> bool {
    path.starts_with("/v1/") && NOT_YET.iter().any(|part| path.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each endpoint is one method on one path, and the spec's strings are what the
    /// method and path say.
    #[test]
    fn every_endpoint_is_one_method_on_one_path() {
        let mut seen = std::collections::HashSet::new();
        for endpoint in Endpoint::ALL {
            assert!(seen.insert((endpoint.method(), endpoint.path())), "{endpoint:?} twice");
            assert_eq!(endpoint.spec(), format!("{} /v1/{{prefix}}{}", endpoint.method(), endpoint.path()));
            // Reads never need a write: the methods that cannot change anything do not.
            if matches!(endpoint.method(), Method::GET | Method::HEAD) {
                assert!(!endpoint.mutating(), "{endpoint:?}");
            }
        }
    }
}
