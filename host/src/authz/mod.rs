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

mod changes;
mod grants;
mod intents;
mod state;
mod version_reads;

use std::collections::HashMap;
use std::fmt::Display;
use std::sync::{Arc, OnceLock, RwLock};

use serde::{Deserialize, Serialize};

pub use grants::{Grant, Grantee};
pub use intents::{Effect, Intent};
use state::State;
use version_reads::SharedReads;

use crate::audit::{AuditLog, Decision, Record, Rule, Sign, Vend};
use crate::auth::{Caller, Principal, Role};
use crate::error::Error;
use crate::logs::RequestContext;
use crate::storage::kv::{Durability, KvError, KvStore, Write};
use crate::telemetry;

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
        };
        let loaded = authz.load_all().await?;
        authz.install(loaded);
        Ok(authz)
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

/// One caller's view of the authorization state, fixed for the request.
pub struct Access {
    pub caller: Arc<Principal>,
    /// The request, as the audit records of its decisions name it.
    request: RequestContext,
    /// The caller and its tenant, as grantees: made when a decision needs them (a
    /// server admin's need none).
    grantees: OnceLock<[Grantee; 2]>,
    mount_owners: Arc<HashMap<String, String, foldhash::fast::RandomState>>,
    known: Arc<Known>,
    audit: Arc<AuditLog>,
}

/// What the caller holds on a resource, and the rule that gives it.
#[derive(Debug, Clone, Copy)]
pub struct Entitlement<'a> {
    pub privilege: Privilege,
    pub rule: Rule<'a>,
}

impl Access {
    /// The highest privilege the caller holds on `resource`, if any.
    pub fn privilege(&self, resource: &Resource) -> Result<Option<Privilege>, Error> {
        Ok(self.held(resource).map(|held| held.privilege))
    }

    /// The highest privilege the caller holds on `resource` and the rule that gives it
    /// (the owner's role before a grant that gives no more).
    pub fn held(&self, resource: &Resource) -> Option<Entitlement<'_>> {
        let root = resource.namespace().first()?;
        // A mount's declared owner decides for the whole mount; nothing its backend
        // stores can change that.
        let owner = self.mount_owners.get(root).or_else(|| self.known.state.owner(root))?;
        if self.caller.server_admin {
            return Some(Entitlement { privilege: Privilege::Manage, rule: Rule::ServerAdmin });
        }
        let role = self.caller.role;
        let mut best = (self.caller.tenant == *owner)
            .then(|| Entitlement { privilege: role_privilege(role), rule: Rule::Owner { tenant: owner, role } });
        let grantees = self.grantees.get_or_init(|| {
            [Grantee::Principal(self.caller.id().to_string()), Grantee::Tenant(self.caller.tenant.clone())]
        });
        for grant in grantees.iter().flat_map(|g| self.known.state.held(g, root)) {
            if grant.resource.covers(resource) && best.is_none_or(|b| grant.privilege > b.privilege) {
                best = Some(Entitlement { privilege: grant.privilege, rule: Rule::Grant { grant: &grant.id } });
            }
        }
        best
    }

    /// The mount `resource` is in, as the audit log names it.
    fn mount_of<'a>(&self, resource: &'a Resource) -> &'a str {
        match resource.namespace().first() {
            Some(root) if self.mount_owners.contains_key(root) => root,
            _ => "root",
        }
    }

    /// Records a decision, when the audit log wants it (formatting nothing otherwise:
    /// reads are decided on every load).
    fn audit(
        &self,
        action: &str,
        resource: impl Display,
        mount: Option<&str>,
        held: Option<Entitlement>,
        allowed: bool,
    ) {
        if self.audit.wants(action) {
            let decision = if allowed { Decision::Allowed } else { Decision::Denied };
            let (resource, rule) = (resource.to_string(), held.map(|h| h.rule));
            self.audit.record(
                &self.caller,
                &self.request,
                &Record { action, resource, mount, decision, rule, vend: None, sign: None },
            );
        }
    }

    /// Records a vend for `resource`: what was issued or why nothing was, and the rule
    /// that gave the caller the access it was vended for.
    pub fn audit_vend(&self, resource: &Resource, held: Option<Entitlement>, vend: Vend) {
        if self.audit.wants("vend") {
            let decision = if matches!(vend, Vend::Issued { .. }) { Decision::Allowed } else { Decision::Denied };
            let record = Record {
                action: "vend",
                resource: resource.to_string(),
                mount: Some(self.mount_of(resource)),
                decision,
                rule: held.map(|h| h.rule),
                vend: Some(vend),
                sign: None,
            };
            self.audit.record(&self.caller, &self.request, &record);
        }
    }

    /// Records a remote signing decision for `resource`: every refusal, and the requests
    /// signed when `[audit] reads` asks for data access too (one per object request).
    pub fn audit_sign(&self, resource: &Resource, held: Option<Entitlement>, sign: Sign) {
        let signed = matches!(sign, Sign::Signed { .. });
        if self.audit.wants(if signed { "read" } else { "sign" }) {
            let record = Record {
                action: "sign",
                resource: resource.to_string(),
                mount: Some(self.mount_of(resource)),
                decision: if signed { Decision::Allowed } else { Decision::Denied },
                rule: held.map(|h| h.rule),
                vend: None,
                sign: Some(sign),
            };
            self.audit.record(&self.caller, &self.request, &record);
        }
    }

    /// The audit log decisions are recorded in (for reading it back).
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit
    }

    /// Whether the caller may see `resource` (filters listings).
    pub fn can_read(&self, resource: &Resource) -> Result<bool, Error> {
        let visible = self.privilege(resource)?.is_some();
        if !visible {
            telemetry::authz_decision("filtered");
        }
        Ok(visible)
    }

    /// Whether the caller may see everything inside namespace `ns` (its tables, views
    /// and namespaces at any depth): exactly when it may read `ns`, since ownership
    /// goes by root namespace, whatever grant covers `ns` covers all beneath it, and
    /// nothing is denied. A listing inside such a namespace has nothing to filter.
    pub fn can_read_all_in(&self, ns: &[String]) -> bool {
        self.held(&Resource::Namespace(ns.to_vec())).is_some()
    }

    /// Demands `needed` on `resource`: a caller that cannot read it is told it does
    /// not exist (`absent`), one that can read but not do this gets 403.
    pub fn require(&self, resource: &Resource, needed: Privilege, absent: impl FnOnce() -> Error) -> Result<(), Error> {
        let held = self.held(resource);
        let allowed = held.is_some_and(|held| held.privilege >= needed);
        telemetry::authz_decision(if allowed { "allowed" } else { "denied" });
        self.audit(needed.action(), resource, Some(self.mount_of(resource)), held, allowed);
        match held.map(|held| held.privilege) {
            None => Err(absent()),
            Some(held) if held < needed => Err(Error::Forbidden(format!(
                "{} may not {} {resource}",
                self.caller.name,
                match needed {
                    Privilege::Read => "read",
                    Privilege::Write => "write to",
                    Privilege::Manage => "manage",
                }
            ))),
            Some(_) => Ok(()),
        }
    }

    /// Demands the right to create the root namespace `root` (owned by the caller's
    /// tenant).
    pub fn require_create_root(&self, root: &str) -> Result<(), Error> {
        let caller = &self.caller;
        let rule = if caller.server_admin {
            Rule::ServerAdmin
        } else {
            Rule::TenantRole { tenant: &caller.tenant, role: caller.role }
        };
        let allowed = caller.server_admin || caller.role >= Role::Writer;
        telemetry::authz_decision(if allowed { "allowed" } else { "denied" });
        let held = Entitlement { privilege: role_privilege(caller.role), rule };
        self.audit("create-namespace", format_args!("namespace {root}"), Some("root"), Some(held), allowed);
        if allowed {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{} is a reader in tenant {} and may not create namespaces",
                caller.name, caller.tenant
            )))
        }
    }

    /// Demands a server admin, to do `what` (`create tenant acme`).
    pub fn require_server_admin(&self, what: &str) -> Result<(), Error> {
        let allowed = self.caller.server_admin;
        telemetry::authz_decision(if allowed { "allowed" } else { "denied" });
        let held = allowed.then_some(Entitlement { privilege: Privilege::Manage, rule: Rule::ServerAdmin });
        self.audit("server-admin", what, None, held, allowed);
        if allowed {
            Ok(())
        } else {
            Err(Error::Forbidden(format!("{} is not a server admin", self.caller.name)))
        }
    }

    /// Demands an admin of `tenant` (or a server admin), to do `what`.
    pub fn require_tenant_admin(&self, tenant: &str, what: &str) -> Result<(), Error> {
        let caller = &self.caller;
        let held = if caller.server_admin {
            Some(Entitlement { privilege: Privilege::Manage, rule: Rule::ServerAdmin })
        } else if caller.tenant == tenant {
            let rule = Rule::TenantRole { tenant: &caller.tenant, role: caller.role };
            Some(Entitlement { privilege: role_privilege(caller.role), rule })
        } else {
            None
        };
        let allowed = manages_tenant(caller, tenant);
        telemetry::authz_decision(if allowed { "allowed" } else { "denied" });
        self.audit("tenant-admin", what, None, held, allowed);
        if allowed {
            Ok(())
        } else {
            Err(Error::Forbidden(format!("{} may not manage tenant {tenant}", caller.name)))
        }
    }
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
