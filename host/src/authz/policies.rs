//! Read policies: a row filter and column masks restricting what a principal, every
//! caller of a role, or a whole tenant reads of a table, or of every table under a
//! namespace (inherited downwards, like grants). Stored in the host key space (one key
//! per policy), decided from memory. What a policy asks of one table's schema is
//! `scan::restrictions`; this room only stores them and finds those that apply.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::access::Access;
use super::state::policy_key;
use super::{Authorizer, Resource};
use crate::auth::Role;
use crate::error::Error;
use crate::storage::kv::Write;

/// Who a policy restricts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subject {
    /// One principal, by id.
    Principal(String),
    /// Every caller of this role, in whichever tenant.
    Role(Role),
    /// Every member of a tenant.
    Tenant(String),
}

/// How a masked column's values reach a restricted reader: the actions of the REST
/// spec's read restrictions, by the names it gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MaskAction {
    /// Every value null.
    ReplaceWithNull,
    /// The value's SHA-256, the same for every reader.
    #[serde(rename = "sha-256-global")]
    Sha256Global,
    /// The first four characters shown, the rest masked.
    #[serde(rename = "show-first-4")]
    ShowFirst4,
    /// The last four characters shown, the rest masked.
    #[serde(rename = "show-last-4")]
    ShowLast4,
    /// Letters and digits masked, punctuation kept.
    MaskAlphanum,
    /// Every value replaced by one constant of the column's type.
    MaskToFixedValue { value: Value },
    /// A date or timestamp cut to its year.
    TruncateToYear,
    /// A date or timestamp cut to its month.
    TruncateToMonth,
}

/// One column masked, by name; a policy on a table also keeps the column's field id,
/// so that a later schema that drops the column (or adds another of that name) is seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ColumnMask {
    pub column: String,
    #[serde(flatten)]
    pub action: MaskAction,
}

/// A row filter and column masks on a table or a namespace, for one subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Policy {
    pub id: String,
    /// A name for people (the console, the audit log's readers).
    pub name: String,
    pub resource: Resource,
    pub subject: Subject,
    /// An Iceberg expression (the REST spec's JSON) over column names: the rows the
    /// subject may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_filter: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<ColumnMask>,
    /// For a policy on a table: the field id of every column it names, as the table's
    /// schema had them when the policy was saved.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub field_ids: BTreeMap<String, i32>,
}

impl Policy {
    /// Whether it restricts `access`'s caller.
    fn restricts(&self, access: &Access) -> bool {
        let caller = &access.caller;
        match &self.subject {
            Subject::Principal(id) => id == caller.id(),
            Subject::Role(role) => *role == caller.role,
            Subject::Tenant(tenant) => *tenant == caller.tenant,
        }
    }
}

/// The id of the policy `[policy.<name>]` defines.
pub fn configured_id(name: &str) -> String {
    format!("config:{name}")
}

/// The write that stores `policy`.
pub(super) fn write(policy: &Policy) -> Result<Write, Error> {
    let value = serde_json::to_vec(policy).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Write { key: policy_key(&policy.id), value: Some(value) })
}

pub(super) fn root_of(policy: &Policy) -> &str {
    policy.resource.namespace().first().map_or("", String::as_str)
}

impl Access {
    /// Whether any read policy exists at all (when none does, a load builds nothing to
    /// look one up with).
    pub fn any_policies(&self) -> bool {
        self.known.state.has_policies() || !self.configured_policies.is_empty()
    }

    /// The policies restricting the caller's reads of `resource`, in id order. Nothing
    /// is looked up while no policy exists at all: an unrestricted catalog pays nothing.
    pub fn policies_on(&self, resource: &Resource) -> Vec<Arc<Policy>> {
        if !self.any_policies() {
            return Vec::new();
        }
        let Some(root) = resource.namespace().first() else { return Vec::new() };
        let configured = self.configured_policies.iter().filter(|p| root_of(p) == root.as_str());
        let mut found: Vec<Arc<Policy>> = (self.known.state.policies_on_root(root).chain(configured))
            .filter(|p| p.resource.covers(resource) && p.restricts(self))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }
}

impl Authorizer {
    /// Every policy, those of the configuration file first.
    pub async fn all_policies(&self) -> Result<Vec<Arc<Policy>>, Error> {
        let stored = self.current().await?.state.policies().cloned().collect::<Vec<_>>();
        Ok(self.configured_policies.iter().cloned().chain(stored).collect())
    }

    /// Looks a policy up by id.
    pub async fn policy(&self, id: &str) -> Result<Option<Arc<Policy>>, Error> {
        if let Some(configured) = self.configured_policy(id) {
            return Ok(Some(configured));
        }
        Ok(self.current().await?.state.policy(id).cloned())
    }

    /// The policy `id` if the configuration file defines it.
    pub fn configured_policy(&self, id: &str) -> Option<Arc<Policy>> {
        self.configured_policies.iter().find(|p| p.id == id).cloned()
    }

    /// Records a policy, checked by the caller; its id is made here.
    pub async fn add_policy(&self, mut policy: Policy) -> Result<Policy, Error> {
        policy.id = uuid::Uuid::now_v7().simple().to_string();
        self.change(vec![write(&policy)?]).await?;
        Ok(policy)
    }

    /// Removes a policy; false if there was none. One of the configuration file's is
    /// changed there, not here (409).
    pub async fn remove_policy(&self, id: &str) -> Result<bool, Error> {
        if self.configured_policy(id).is_some() {
            return Err(Error::Conflict(format!("policy {id} is defined in the configuration file")));
        }
        if self.policy(id).await?.is_none() {
            return Ok(false);
        }
        self.change(vec![Write { key: policy_key(id), value: None }]).await?;
        Ok(true)
    }
}
