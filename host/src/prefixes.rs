//! The REST prefixes (`/v1/{prefix}/…`) the catalog keeps for itself. The API routes
//! by them, and the configuration refuses a mount named like one, since a mount's name
//! is a prefix too.

/// The whole tree: what `/v1/config` advertises as `overrides.prefix`.
pub const CATALOG: &str = "catalog";

/// The root catalog alone, without the mounts: where a Java engine writes to it while
/// a read-only mount leaves the whole tree's `/v1/config` with no writes.
pub const ROOT: &str = "root";

/// Not a prefix but a path segment in its place: `/v1/oauth/tokens`.
pub const OAUTH: &str = "oauth";

/// Every name a mount may not take.
pub const RESERVED: [&str; 3] = [CATALOG, ROOT, OAUTH];
