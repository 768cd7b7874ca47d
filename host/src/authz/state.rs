//! The authorization state in memory: root owners, grants and read policies, indexed for a decision
//! (by grantee and root namespace) and for what a drop or rename changes (by root).
//!
//! The maps are persistent (`imbl`): cloning the state is cheap and a change copies
//! only the paths it touches, so a request keeps the state it started with while a
//! change installs a new one, at the same cost with 100 or 100,000 entries.
//!
//! The host key space holds the durable copy, one key per fact; [`State::set`] applies
//! one key as the store holds it, so the state is rebuilt from changed keys alone.

use std::sync::Arc;

use foldhash::fast::RandomState;
use imbl::shared_ptr::DefaultSharedPtr;
use imbl::{GenericHashMap, GenericHashSet};

use super::policies::{self, Policy};
use super::{Grant, Grantee};
use crate::error::Error;

/// Stored owners: `owner/<root>` holds the owner tenant's name.
pub(super) const OWNER: &str = "owner/";
/// Stored grants: `grant/<id>` holds the grant as JSON.
pub(super) const GRANT: &str = "grant/";

/// Stored read policies: `policy/<id>` holds the policy as JSON.
pub(super) const POLICY: &str = "policy/";

pub(super) fn policy_key(id: &str) -> Vec<u8> {
    format!("{POLICY}{id}").into_bytes()
}

pub(super) fn owner_key(root: &str) -> Vec<u8> {
    format!("{OWNER}{root}").into_bytes()
}

pub(super) fn grant_key(id: &str) -> Vec<u8> {
    format!("{GRANT}{id}").into_bytes()
}

// Hashed with foldhash (seeded per process) rather than SipHash: a decision looks up
// three of these maps, and a listing of the top level decides once per item.
type HashMap<K, V> = GenericHashMap<K, V, RandomState, DefaultSharedPtr>;
type Ids = GenericHashSet<String, RandomState, DefaultSharedPtr>;

#[derive(Clone, Default)]
pub(super) struct State {
    owners: HashMap<String, String>,
    grants: HashMap<String, Arc<Grant>>,
    /// Grant ids by the root namespace of their resource.
    on_root: HashMap<String, Ids>,
    /// Grant ids by grantee, then root namespace: what one decision reads.
    held_by: HashMap<Grantee, HashMap<String, Ids>>,
    policies: HashMap<String, Arc<Policy>>,
    /// Policy ids by the root namespace of their resource: what one load reads.
    policies_on_root: HashMap<String, Ids>,
}

fn root_of(grant: &Grant) -> &str {
    grant.resource.namespace().first().map_or("", String::as_str)
}

impl State {
    /// The tenant owning the root namespace `root`.
    pub fn owner(&self, root: &str) -> Option<&String> {
        self.owners.get(root)
    }

    /// Every owning tenant, once per root it owns.
    pub fn owners(&self) -> impl Iterator<Item = &String> {
        self.owners.values()
    }

    pub fn grant(&self, id: &str) -> Option<&Grant> {
        self.grants.get(id).map(Arc::as_ref)
    }

    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants.values().map(Arc::as_ref)
    }

    /// The grants on resources under the root namespace `root`.
    pub fn on_root<'a>(&'a self, root: &str) -> impl Iterator<Item = &'a Grant> + 'a {
        self.on_root.get(root).into_iter().flatten().filter_map(|id| self.grant(id))
    }

    /// The grants `grantee` holds on resources under `root`.
    pub fn held<'a>(&'a self, grantee: &Grantee, root: &str) -> impl Iterator<Item = &'a Grant> + 'a {
        let ids = self.held_by.get(grantee).and_then(|roots| roots.get(root));
        ids.into_iter().flatten().filter_map(|id| self.grant(id))
    }

    pub fn has_policies(&self) -> bool {
        !self.policies.is_empty()
    }

    pub fn policy(&self, id: &str) -> Option<&Arc<Policy>> {
        self.policies.get(id)
    }

    pub fn policies(&self) -> impl Iterator<Item = &Arc<Policy>> {
        self.policies.values()
    }

    /// The policies on resources under the root namespace `root`.
    pub fn policies_on_root<'a>(&'a self, root: &str) -> impl Iterator<Item = &'a Arc<Policy>> + 'a {
        self.policies_on_root.get(root).into_iter().flatten().filter_map(|id| self.policies.get(id))
    }

    /// Applies one key of the host key space as the store holds it (`None`: absent).
    /// Keys that are not owners, grants or policies are not authorization state.
    pub fn set(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), Error> {
        let key = String::from_utf8_lossy(key);
        if let Some(root) = key.strip_prefix(OWNER) {
            match value {
                Some(tenant) => self.owners.insert(root.to_string(), String::from_utf8_lossy(tenant).into_owned()),
                None => self.owners.remove(root),
            };
        } else if let Some(id) = key.strip_prefix(GRANT) {
            self.remove_grant(id);
            if let Some(value) = value {
                let grant: Grant = serde_json::from_slice(value)
                    .map_err(|e| Error::Internal(format!("a stored grant is corrupt: {e}")))?;
                self.insert_grant(Arc::new(grant));
            }
        } else if let Some(id) = key.strip_prefix(POLICY) {
            if let Some(old) = self.policies.remove(id) {
                let root = policies::root_of(&old);
                if let Some(ids) = self.policies_on_root.get_mut(root) {
                    ids.remove(id);
                    if ids.is_empty() {
                        self.policies_on_root.remove(root);
                    }
                }
            }
            if let Some(value) = value {
                let policy: Policy = serde_json::from_slice(value)
                    .map_err(|e| Error::Internal(format!("a stored policy is corrupt: {e}")))?;
                let root = policies::root_of(&policy).to_string();
                self.policies_on_root.entry(root).or_default().insert(policy.id.clone());
                self.policies.insert(policy.id.clone(), Arc::new(policy));
            }
        }
        Ok(())
    }

    fn insert_grant(&mut self, grant: Arc<Grant>) {
        let root = root_of(&grant).to_string();
        self.on_root.entry(root.clone()).or_default().insert(grant.id.clone());
        self.held_by.entry(grant.grantee.clone()).or_default().entry(root).or_default().insert(grant.id.clone());
        self.grants.insert(grant.id.clone(), grant);
    }

    fn remove_grant(&mut self, id: &str) {
        let Some(grant) = self.grants.remove(id) else { return };
        let root = root_of(&grant);
        if let Some(ids) = self.on_root.get_mut(root) {
            ids.remove(id);
            if ids.is_empty() {
                self.on_root.remove(root);
            }
        }
        if let Some(roots) = self.held_by.get_mut(&grant.grantee) {
            if let Some(ids) = roots.get_mut(root) {
                ids.remove(id);
                if ids.is_empty() {
                    roots.remove(root);
                }
            }
            if roots.is_empty() {
                self.held_by.remove(&grant.grantee);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{Privilege, Resource};

    fn grant(id: &str, root: &str, grantee: Grantee) -> Grant {
        Grant { id: id.into(), resource: Resource::Namespace(vec![root.into()]), privilege: Privilege::Read, grantee }
    }

    fn set_grant(state: &mut State, grant: &Grant) {
        state.set(&grant_key(&grant.id), Some(&serde_json::to_vec(grant).unwrap())).unwrap();
    }

    fn ids<'a>(grants: impl Iterator<Item = &'a Grant>) -> Vec<&'a str> {
        let mut ids: Vec<_> = grants.map(|g| g.id.as_str()).collect();
        ids.sort();
        ids
    }

    #[test]
    fn grants_are_found_by_holder_and_root_and_leave_every_index() {
        let (bob, acme) = (Grantee::Principal("bob".into()), Grantee::Tenant("acme".into()));
        let mut state = State::default();
        set_grant(&mut state, &grant("1", "sales", bob.clone()));
        set_grant(&mut state, &grant("2", "sales", acme.clone()));
        set_grant(&mut state, &grant("3", "hr", bob.clone()));
        let before = state.clone();
        assert_eq!(ids(state.held(&bob, "sales")), ["1"]);
        assert_eq!(ids(state.on_root("sales")), ["1", "2"]);

        // Rewriting a grant moves it between indexes (a rename moves its resource).
        set_grant(&mut state, &grant("1", "hr", bob.clone()));
        assert_eq!(ids(state.held(&bob, "sales")), Vec::<&str>::new());
        assert_eq!(ids(state.held(&bob, "hr")), ["1", "3"]);
        assert_eq!(ids(state.on_root("sales")), ["2"]);

        state.set(&grant_key("2"), None).unwrap();
        assert!(state.on_root.get("sales").is_none() && state.held_by.get(&acme).is_none(), "no empty index remains");
        assert_eq!(state.grants().count(), 2);
        assert_eq!(ids(before.held(&bob, "sales")), ["1"], "a clone taken before keeps its state");
    }

    #[test]
    fn owners_follow_their_keys_and_other_keys_are_ignored() {
        let mut state = State::default();
        state.set(&owner_key("sales"), Some(b"acme")).unwrap();
        state.set(b"intent/own/x", Some(b"{}")).unwrap();
        assert_eq!(state.owner("sales").map(String::as_str), Some("acme"));
        state.set(&owner_key("sales"), None).unwrap();
        assert_eq!(state.owner("sales"), None);
        assert!(state.set(&grant_key("g"), Some(b"not json")).is_err());
    }
}
