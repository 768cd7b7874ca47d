//! One caller's view of the authorization state for one request: what it holds on a
//! resource and by which rule, the decisions demanded of it, and their audit records.

use std::collections::HashMap;
use std::fmt::Display;
use std::sync::{Arc, OnceLock};

use super::{manages_tenant, role_privilege, Grantee, Known, Privilege, Resource};
use crate::audit::{AuditLog, Decision, Record, Rule, Sign, Vend};
use crate::auth::{Principal, Role};
use crate::error::Error;
use crate::logs::RequestContext;
use crate::telemetry;

/// One caller's view of the authorization state, fixed for the request.
pub struct Access {
    pub caller: Arc<Principal>,
    /// The request, as the audit records of its decisions name it.
    pub(super) request: RequestContext,
    /// The caller and its tenant, as grantees: made when a decision needs them (a
    /// server admin's need none).
    pub(super) grantees: OnceLock<[Grantee; 2]>,
    pub(super) mount_owners: Arc<HashMap<String, String, foldhash::fast::RandomState>>,
    pub(super) known: Arc<Known>,
    /// The read policies the configuration file defines.
    pub(super) configured_policies: Arc<[Arc<super::Policy>]>,
    pub(super) audit: Arc<AuditLog>,
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

    /// Whether the root namespace (or mount) `root` has an owner now: a dropped root has
    /// none, and nobody but a server admin holds anything in it.
    pub fn root_owned(&self, root: &str) -> bool {
        self.mount_owners.contains_key(root) || self.known.state.owner(root).is_some()
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
                &Record { action, resource, mount, decision, rule, vend: None, sign: None, restricted_by: None },
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
                restricted_by: None,
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
                restricted_by: None,
            };
            self.audit.record(&self.caller, &self.request, &record);
        }
    }

    /// Records an answer restricted by read policies (`policies`, by id): always, like
    /// a vend, so that every restricted read names the policies behind it.
    pub fn audit_restricted(&self, resource: &Resource, policies: &[String]) {
        self.audit_restriction(resource, Decision::Allowed, policies);
    }

    /// Records a route to the raw files refused to a caller restricted by `policies` on
    /// `resource` (the record's route says which).
    pub fn audit_refused_restricted(&self, resource: &Resource, policies: &[String]) {
        self.audit_restriction(resource, Decision::Denied, policies);
    }

    fn audit_restriction(&self, resource: &Resource, decision: Decision, policies: &[String]) {
        if self.audit.wants("restrict") {
            let record = Record {
                action: "restrict",
                resource: resource.to_string(),
                mount: Some(self.mount_of(resource)),
                decision,
                rule: self.held(resource).map(|h| h.rule),
                vend: None,
                sign: None,
                restricted_by: Some(policies.to_vec()),
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
