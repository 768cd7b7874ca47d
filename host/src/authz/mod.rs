//! Authorization: who may read, write and manage what.
//!
//! - Every root namespace has an owner tenant, recorded by the host when the
//!   namespace is created (never a namespace property, so no property update can
//!   change it). A mount's owner is declared by its configuration and is
//!   authoritative for the whole mount. Children inherit. A namespace with no
//!   recorded owner is invisible to everybody.
//! - Members of the owner tenant act by their role (reader, writer, admin);
//!   server admins manage everything that has an owner.
//! - Grants add `read`, `write` or `manage` on a namespace subtree, a table or a
//!   view, to a principal or a whole tenant.
//! - A caller that may not read something is told it does not exist (404); one that
//!   may read but not write gets 403. Listings filter; they never deny.

mod access;
mod changes;
mod grants;
mod intents;
mod policies;
mod state;
mod version_reads;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use serde::{Deserialize, Serialize};

pub use access::{Access, Entitlement};
pub use grants::{Grant, Grantee};
pub use intents::{Effect, Intent};
pub use policies::{configured_id, ColumnMask, MaskAction, Policy, Subject};
use state::State;
use version_reads::SharedReads;

use crate::audit::AuditLog;
use crate::auth::{Caller, Principal, Role};
use crate::error::Error;
use crate::storage::kv::{Durability, KvError, KvStore, Write};

/// What a caller may do. Each level includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privilege {
    Read,
    /// Create, commit and drop inside.
    Write,
    /// Grant to others.
    Manage,
}

impl crate::endpoints::Endpoint {
    /// What the caller must hold on the namespace, table or view it names: a change
    /// needs write, anything else read. (A new root namespace asks the caller's tenant
    /// role instead: it has no parent to hold anything on.) Each handler asks it of its
    /// own endpoint, a constant: handing the endpoint over as a request extension cost a
    /// loadTable 600 instructions.
    pub fn privilege(self) -> Privilege {
        if self.mutating() {
            Privilege::Write
        } else {
            Privilege::Read
        }
    }
}

/// Something a privilege applies to, by the path a client sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// A namespace and everything beneath it.
    Namespace(Vec<String>),
    Table {
        namespace: Vec<String>,
        name: String,
    },
    View {
        namespace: Vec<String>,
        name: String,
    },
}

impl Resource {
    pub fn table(namespace: &[String], name: &str) -> Self {
        Resource::Table { namespace: namespace.to_vec(), name: name.to_string() }
    }

    /// The namespace the resource is or lives in.
    pub fn namespace(&self) -> &[String] {
        match self {
            Resource::Namespace(ns) => ns,
            Resource::Table { namespace, .. } | Resource::View { namespace, .. } => namespace,
        }
    }

    /// The name of a table or view; a namespace has none.
    pub fn name(&self) -> Option<&str> {
        match self {
            Resource::Namespace(_) => None,
            Resource::Table { name, .. } | Resource::View { name, .. } => Some(name),
        }
    }

    /// The namespace and the name of a table or view (a namespace has none).
    pub fn into_parts(self) -> (Vec<String>, Option<String>) {
        match self {
            Resource::Namespace(ns) => (ns, None),
            Resource::Table { namespace, name } | Resource::View { namespace, name } => (namespace, Some(name)),
        }
    }

    /// Whether a grant on `self` applies to `other`.
    pub fn covers(&self, other: &Resource) -> bool {
        match self {
            Resource::Namespace(ns) => other.namespace().starts_with(ns),
            _ => self == other,
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Namespace(ns) => write!(f, "namespace {}", ns.join(".")),
            Resource::Table { namespace, name } => write!(f, "table {}.{name}", namespace.join(".")),
            Resource::View { namespace, name } => write!(f, "view {}.{name}", namespace.join(".")),
        }
    }
}

impl Privilege {
    /// The action demanding it, as the audit log names it.
    fn action(self) -> &'static str {
        match self {
            Privilege::Read => "read",
            Privilege::Write => "write",
            Privilege::Manage => "manage",
        }
    }
}

fn role_privilege(role: Role) -> Privilege {
    match role {
        Role::Reader => Privilege::Read,
        Role::Writer => Privilege::Write,
        Role::Admin => Privilege::Manage,
    }
}

fn store_err(e: KvError) -> Error {
    Error::Unavailable(format!("the host store: {e}"))
}

/// The authorization state this host knows, and on a shared store the number of the
/// last change it has applied.
#[derive(Clone, Default)]
struct Known {
    state: State,
    change: u64,
}

/// Ownership records and grants, kept in memory so a decision does no I/O (on a shared
/// Postgres root it reads one version key, to apply other hosts' changes at once).
pub struct Authorizer {
    /// Each mount's configured owner: authoritative for the whole mount.
    mount_owners: Arc<HashMap<String, String, foldhash::fast::RandomState>>,
    /// The host key space: the durable copy of every owner and grant.
    space: KvStore,
    known: RwLock<Arc<Known>>,
    /// Changes are applied to memory one at a time.
    applying: tokio::sync::Mutex<()>,
    /// On a shared store, the reads of the version key, shared by requests that ask at once.
    version_reads: SharedReads,
    audit: Arc<AuditLog>,
    /// The intents this process carries out, and those of other hosts it has seen.
    in_flight: intents::InFlight,
    /// The read policies the configuration file defines (`[policy.<name>]`): in memory
    /// only, never stored, so that the file stays their one source.
    configured_policies: Arc<[Arc<Policy>]>,
}

impl Authorizer {
    /// Loads every owner and grant from the host key space; `mount_owners` are the
    /// owners the mount table declares.
    pub async fn load(space: KvStore, mount_owners: HashMap<String, String>) -> Result<Self, Error> {
        let authz = Self {
            mount_owners: Arc::new(mount_owners.into_iter().collect()),
            space,
            known: RwLock::default(),
            applying: tokio::sync::Mutex::new(()),
            version_reads: SharedReads::of(changes::VERSION),
            audit: Arc::new(AuditLog::off()),
            in_flight: intents::InFlight::default(),
            configured_policies: Arc::new([]),
        };
        let loaded = authz.load_all().await?;
        authz.install(loaded);
        Ok(authz)
    }

    /// Applies the read policies the configuration file defines too.
    pub fn with_policies(self, policies: Vec<Policy>) -> Self {
        Self { configured_policies: policies.into_iter().map(Arc::new).collect(), ..self }
    }

    /// Records its decisions in `audit`.
    pub fn audited(self, audit: AuditLog) -> Self {
        Self { audit: Arc::new(audit), ..self }
    }

    /// The host key space, where owners and grants are kept.
    pub fn key_space(&self) -> &KvStore {
        &self.space
    }

    fn known(&self) -> Arc<Known> {
        self.known.read().expect("authorization state").clone()
    }

    /// Installs what a change (applied under `applying`) made known.
    fn install(&self, known: Known) -> Arc<Known> {
        let known = Arc::new(known);
        *self.known.write().expect("authorization state") = known.clone();
        known
    }

    /// The current state: on a shared store, with other hosts' changes applied.
    async fn current(&self) -> Result<Arc<Known>, Error> {
        if self.shared() {
            // Boxed: a read of the change log would size every request's future.
            Box::pin(self.catch_up()).await
        } else {
            Ok(self.known())
        }
    }

    /// Writes a change in one commit and applies it.
    async fn change(&self, writes: Vec<Write>) -> Result<(), Error> {
        self.change_if(&[], writes, Durability::Now).await.map(|_| ())
    }

    /// Records the owner of a root namespace (tests; requests go through intents).
    #[cfg(test)]
    pub async fn set_owner(&self, root: &str, tenant: &str) -> Result<(), Error> {
        self.change(vec![Write { key: state::owner_key(root), value: Some(tenant.as_bytes().to_vec()) }]).await
    }

    /// Whether `tenant` owns a root namespace or a mount.
    pub async fn owns_anything(&self, tenant: &str) -> Result<bool, Error> {
        let known = self.current().await?;
        let owns = self.mount_owners.values().chain(known.state.owners()).any(|owner| owner == tenant);
        Ok(owns)
    }

    /// Everything needed to decide for one caller during one request.
    pub async fn access(&self, caller: &Caller) -> Result<Access, Error> {
        Ok(Access {
            caller: caller.principal.clone(),
            request: caller.request.clone(),
            grantees: OnceLock::new(),
            mount_owners: self.mount_owners.clone(),
            known: self.current().await?,
            configured_policies: self.configured_policies.clone(),
            audit: self.audit.clone(),
        })
    }
}

/// Whether `caller` manages `tenant`'s principals: server admins manage every tenant,
/// a tenant's admins their own. (Filters listings as it is; a decision goes through
/// `Access::require_tenant_admin`, which records it.)
pub fn manages_tenant(caller: &Principal, tenant: &str) -> bool {
    caller.server_admin || (caller.role == Role::Admin && caller.tenant == tenant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_changes_all_reach_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::storage::kv::RedbStore::open(&dir.path().join("h.redb")).unwrap();
        let authz = Arc::new(Authorizer::load(KvStore::Redb(store.space("h").unwrap()), HashMap::new()).await.unwrap());
        let changes: Vec<_> = (0..32)
            .map(|i| {
                let authz = authz.clone();
                tokio::spawn(async move { authz.set_owner(&format!("ns{i}"), "acme").await.unwrap() })
            })
            .collect();
        for change in changes {
            change.await.unwrap();
        }
        assert_eq!(authz.current().await.unwrap().state.owners().count(), 32);
    }

    fn ns(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn namespace_grants_cover_their_subtree_only() {
        let grant = Resource::Namespace(ns(&["a", "b"]));
        assert!(grant.covers(&Resource::Namespace(ns(&["a", "b"]))));
        assert!(grant.covers(&Resource::Namespace(ns(&["a", "b", "c"]))));
        assert!(grant.covers(&Resource::table(&ns(&["a", "b", "c"]), "t")));
        assert!(!grant.covers(&Resource::Namespace(ns(&["a"]))));
        assert!(!grant.covers(&Resource::Namespace(ns(&["a", "bc"]))));
        let table = Resource::table(&ns(&["a"]), "t");
        assert!(table.covers(&Resource::table(&ns(&["a"]), "t")));
        assert!(!table.covers(&Resource::table(&ns(&["a"]), "u")));
        assert!(!table.covers(&Resource::Namespace(ns(&["a"]))));
        // What covers a namespace covers everything in it (`Access::can_read_all_in`).
        for grant in [Resource::Namespace(ns(&["a"])), Resource::Namespace(ns(&["a", "b"])), table] {
            if grant.covers(&Resource::Namespace(ns(&["a", "b"]))) {
                assert!(grant.covers(&Resource::table(&ns(&["a", "b"]), "t")), "{grant}");
                assert!(grant.covers(&Resource::View { namespace: ns(&["a", "b"]), name: "v".into() }), "{grant}");
                assert!(grant.covers(&Resource::Namespace(ns(&["a", "b", "c"]))), "{grant}");
            }
        }
    }
}
