//! What a backend change does to the authorization state: a new root namespace gets
//! its owner, a dropped resource loses its grants (and its owner), a renamed one keeps
//! its grants under the new name.
//!
//! The backend's store and the host's key space cannot share one transaction, so the
//! host records an intent first, makes the backend change, then applies the effect
//! and removes the intent in one commit. (Except where they can: a new root's owner
//! rides the embedded root catalog's own commit, `ownership`, with no intent.) An
//! intent left behind by a crash is settled at start-up (`crate::recovery`) by asking
//! the backend whether its change happened.
//!
//! So settling an intent need not be on disk when the request is answered: a crash
//! that loses it leaves the intent, and start-up settles it the same way. Nor need
//! the intent to own a new root: its backend change is a commit to the same store,
//! made after it, and a store never keeps a commit without those before it.
//!
//! Only an intent no request is carrying out any more may be settled by another:
//! settled while its change is under way, it would be abandoned just before the
//! change lands. Each process knows the intents it is carrying out ([`InFlight`]); one
//! another host sharing the store recorded is taken as under way until this host has
//! seen it waiting for [`SHARED_GRACE`], by its own clock, so a host whose clock is
//! wrong settles nothing early; only one recorded a day ago by the recorder's clock
//! (a host that stopped long ago) is settled at once.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::state::owner_key;
use super::{grants, policies, store_err, Authorizer, Resource};
use crate::error::Error;
use crate::storage::kv::{prefix_end, Check, Commit, Durability, Entry, KvError, Write};

/// What the authorization state must do once a backend change has happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum Effect {
    /// A root namespace of the root catalog is being created for `tenant`.
    Own { root: String, tenant: String },
    /// A namespace, table or view is being dropped.
    Forget { resource: Resource },
    /// A table or view is being renamed.
    Move { from: Resource, to: Resource },
}

/// An effect waiting for its backend change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Intent {
    /// Its key in the host key space.
    #[serde(skip)]
    key: Vec<u8>,
    /// When it was recorded (seconds since the epoch, by the recording host's clock:
    /// for people reading it, not for deciding anything).
    pub at: u64,
    /// The process that recorded it ([`InFlight`]); empty in intents recorded before
    /// processes named themselves.
    #[serde(default)]
    by: String,
    #[serde(flatten)]
    pub effect: Effect,
}

const INTENT: &str = "intent/";

impl Intent {
    /// The intent an entry of the host key space holds.
    fn stored(entry: Entry) -> Result<Intent, Error> {
        let mut intent: Intent = serde_json::from_slice(&entry.value)
            .map_err(|e| Error::Internal(format!("a stored intent is corrupt: {e}")))?;
        intent.key = entry.key;
        Ok(intent)
    }
}

/// On a store several hosts share, an intent another host recorded is taken as under
/// way until this host has seen it waiting this long: no request runs for so long.
const SHARED_GRACE: Duration = Duration::from_secs(600);

/// An intent recorded this long ago (by the recording host's clock, read by this
/// one's) was left by a host that stopped, unless the two clocks are a day apart: it is
/// settled without waiting [`SHARED_GRACE`] (a host that starts finds those at once).
const LONG_ABANDONED: Duration = Duration::from_secs(24 * 3600);

/// The intents this process is carrying out, and when it first saw each intent of
/// another process still waiting.
pub struct InFlight {
    /// This process's name in the intents it records.
    process: String,
    carrying: Mutex<HashSet<Vec<u8>>>,
    seen: Mutex<HashMap<Vec<u8>, Instant>>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            process: uuid::Uuid::new_v4().simple().to_string(),
            carrying: Mutex::default(),
            seen: Mutex::default(),
        }
    }
}

/// One key per root namespace being created: two creators of one name meet here.
fn own_key(root: &str) -> Vec<u8> {
    format!("{INTENT}own/{root}").into_bytes()
}

/// The checks that `root` has no owner and that no create of it is under way.
fn unowned(root: &str) -> [Check; 2] {
    [Check::Absent(owner_key(root)), Check::Absent(own_key(root))]
}

/// An intent for `effect`, by `process`, and the commit that records it.
fn recording(effect: Effect, process: &str) -> Result<(Intent, Commit), Error> {
    let mut checks = vec![];
    let (key, durability) = match &effect {
        Effect::Own { root, .. } => {
            checks.extend(unowned(root));
            // Its change is the root catalog's, in this store (see above).
            (own_key(root), Durability::Soon)
        }
        // The change may be in another store: the intent is on disk before it.
        _ => (format!("{INTENT}{}", uuid::Uuid::now_v7().simple()).into_bytes(), Durability::Now),
    };
    let intent = Intent { key, at: now(), by: process.to_string(), effect };
    let value = serde_json::to_vec(&intent).map_err(|e| Error::Internal(e.to_string()))?;
    let writes = vec![Write { key: intent.key.clone(), value: Some(value) }];
    Ok((intent, Commit { checks, writes, durability }))
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Authorizer {
    /// Records an intent before its backend change. Creating a root namespace that has
    /// an owner, or that somebody else is creating right now, is refused here (409).
    pub async fn intend(&self, effect: Effect) -> Result<Intent, Error> {
        let (intent, commit) = recording(effect, &self.in_flight.process)?;
        let carrying = self.carry(&intent);
        let refused = match self.space.make(&commit).await {
            Ok(()) => return Ok(intent),
            Err(KvError::Conflict) => match &intent.effect {
                Effect::Own { root, .. } => Error::namespace_exists(root),
                _ => Error::Internal("an intent key was taken twice".into()),
            },
            Err(e) => store_err(e),
        };
        if carrying {
            self.carried(&intent);
        }
        Err(refused)
    }

    /// As `intend`, in one commit with `also` (to the host key space: a location's
    /// claim). `None` if a check of either failed, without saying which.
    pub async fn intend_with(&self, effect: Effect, also: Commit) -> Result<Option<Intent>, Error> {
        let (intent, commit) = recording(effect, &self.in_flight.process)?;
        let carrying = self.carry(&intent);
        let refused = match self.space.make(&commit.join(also)).await {
            Ok(()) => return Ok(Some(intent)),
            Err(KvError::Conflict) => Ok(None),
            Err(e) => Err(store_err(e)),
        };
        if carrying {
            self.carried(&intent);
        }
        refused
    }

    /// The commit that makes `tenant` the owner of the new root namespace `root` with no
    /// intent, refused if it has an owner or a create of it is under way: for a create
    /// whose backend commit to this store carries it (`plugins::riders`), so the two
    /// land together. `learn_owner` brings it to memory.
    pub fn ownership(&self, root: &str, tenant: &str) -> Commit {
        Commit {
            checks: unowned(root).into(),
            writes: vec![Write { key: owner_key(root), value: Some(tenant.as_bytes().to_vec()) }],
            durability: Durability::Soon,
        }
    }

    /// The commit that forgets `resource` (its grants, and a root's owner) with no
    /// intent: for a drop whose backend commit to this store carries it, so the two land
    /// together. `learn` brings the keys it writes to memory once it has.
    pub async fn forgetting(&self, resource: &Resource) -> Result<(Commit, Vec<Vec<u8>>), Error> {
        let writes = self.forgetting_writes(resource).await?;
        let keys = writes.iter().map(|w| w.key.clone()).collect();
        Ok((Commit { checks: vec![], writes, durability: Durability::Soon }, keys))
    }

    /// What forgetting `resource` writes: nothing created later under its name may
    /// inherit its grants or its owner.
    async fn forgetting_writes(&self, resource: &Resource) -> Result<Vec<Write>, Error> {
        let root = resource.namespace().first().map_or("", String::as_str);
        let mut writes: Vec<Write> = self
            .grants_on_root(root)
            .await?
            .iter()
            .filter(|g| resource.covers(&g.resource))
            .map(grants::removal)
            .collect();
        if let Resource::Namespace(ns) = resource {
            if let [root] = ns.as_slice() {
                writes.push(Write { key: owner_key(root), value: None });
            }
        }
        Ok(writes)
    }

    /// Reads `keys` into memory, after a commit this host made carried them.
    pub async fn learn(&self, keys: &[Vec<u8>]) -> Result<(), Error> {
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        self.applied(&keys).await
    }

    /// Reads the owner of `root` into memory, after a commit this host made carried it.
    pub async fn learn_owner(&self, root: &str) -> Result<(), Error> {
        let key = owner_key(root);
        self.applied(&[key.as_slice()]).await
    }

    /// Marks `intent` as carried out by this process, before it is recorded (a
    /// repair running meanwhile must not take it for one left behind). False when a
    /// request of this process carries it already (a create of the same root).
    fn carry(&self, intent: &Intent) -> bool {
        self.in_flight.carrying.lock().unwrap().insert(intent.key.clone())
    }

    /// This process no longer carries `intent` out, settled or not.
    pub fn carried(&self, intent: &Intent) {
        self.in_flight.carrying.lock().unwrap().remove(&intent.key);
    }

    /// Whether a request may still be carrying `intent` out, so that settling it now
    /// could abandon a change about to land (see the module note): one of this
    /// process's while it carries it; another process's on a store no other host
    /// shares never (it was left by an earlier run of this host); another host's
    /// until this host has seen it waiting for [`SHARED_GRACE`], or it was recorded a
    /// day ago.
    pub fn may_be_in_flight(&self, intent: &Intent) -> bool {
        if intent.by == self.in_flight.process {
            return self.in_flight.carrying.lock().unwrap().contains(&intent.key);
        }
        if !self.shared() || now().saturating_sub(intent.at) >= LONG_ABANDONED.as_secs() {
            return false;
        }
        let mut seen = self.in_flight.seen.lock().unwrap();
        seen.entry(intent.key.clone()).or_insert_with(Instant::now).elapsed() < SHARED_GRACE
    }

    /// Forgets when it first saw intents no longer waiting (all but `waiting`).
    pub fn forget_seen_but(&self, waiting: &[Intent]) {
        let keys: HashSet<&[u8]> = waiting.iter().map(|i| i.key.as_slice()).collect();
        self.in_flight.seen.lock().unwrap().retain(|key, _| keys.contains(key.as_slice()));
    }

    /// The intent to create the root namespace `root`, if one is waiting.
    pub async fn pending_creation(&self, root: &str) -> Result<Option<Intent>, Error> {
        self.space.get(&own_key(root)).await.map_err(store_err)?.map(Intent::stored).transpose()
    }

    /// The backend change happened: applies the effect and removes the intent, in one
    /// commit.
    pub async fn fulfil(&self, intent: &Intent) -> Result<(), Error> {
        let mut writes = vec![Write { key: intent.key.clone(), value: None }];
        match &intent.effect {
            Effect::Own { root, tenant } => {
                writes.push(Write { key: owner_key(root), value: Some(tenant.as_bytes().to_vec()) })
            }
            Effect::Forget { resource } => writes.extend(self.forgetting_writes(resource).await?),
            Effect::Move { from, to } => {
                let root = from.namespace().first().map_or("", String::as_str);
                for grant in self.grants_on_root(root).await?.into_iter().filter(|g| &g.resource == from) {
                    let moved = grants::Grant { resource: to.clone(), ..grant };
                    writes.push(grants::write(&moved)?);
                }
                // A renamed table keeps its read policies too: a rename must not lift them.
                let known = self.current().await?;
                for policy in known.state.policies_on_root(root).filter(|p| &p.resource == from) {
                    let moved = policies::Policy { resource: to.clone(), ..policy.as_ref().clone() };
                    writes.push(policies::write(&moved)?);
                }
            }
        }
        self.change_if(&[], writes, Durability::Soon).await.map(|_| ())
    }

    /// The backend change did not happen: removes the intent.
    pub async fn abandon(&self, intent: &Intent) -> Result<(), Error> {
        let removal = Write { key: intent.key.clone(), value: None };
        self.space.commit_with(&[], &[removal], Durability::Soon).await.map_err(store_err)
    }

    /// Puts on disk every settlement made so far (a server that stops leaves none for
    /// the next start to settle again).
    pub async fn sync(&self) -> Result<(), Error> {
        self.space.sync().await.map_err(store_err)
    }

    /// Every intent still waiting.
    pub async fn intents(&self) -> Result<Vec<Intent>, Error> {
        let end = prefix_end(INTENT.as_bytes());
        let entries = self.space.scan(INTENT.as_bytes(), end.as_deref(), usize::MAX).await.map_err(store_err)?;
        entries.into_iter().map(Intent::stored).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::authz::{Grantee, Privilege};
    use crate::storage::kv::{KvStore, RedbStore};

    async fn authorizer(dir: &tempfile::TempDir) -> Authorizer {
        let store = RedbStore::open(&dir.path().join("h.redb")).unwrap();
        Authorizer::load(KvStore::Redb(store.space("h").unwrap()), HashMap::new()).await.unwrap()
    }

    fn ns(name: &str) -> Resource {
        Resource::Namespace(vec![name.to_string()])
    }

    #[tokio::test]
    async fn a_root_is_owned_only_once_the_intent_is_fulfilled() {
        let dir = tempfile::tempdir().unwrap();
        let authz = authorizer(&dir).await;
        let own = Effect::Own { root: "sales".into(), tenant: "acme".into() };
        let intent = authz.intend(own.clone()).await.unwrap();
        assert_eq!(
            authz.current().await.unwrap().state.owners().count(),
            0,
            "nobody owns it before the backend change"
        );
        let again = authz.intend(own.clone()).await.unwrap_err();
        assert!(matches!(again, Error::AlreadyExists(_)), "a second creator waits for nobody: {again}");
        assert_eq!(authz.intents().await.unwrap().len(), 1);
        authz.fulfil(&intent).await.unwrap();
        assert_eq!(authz.current().await.unwrap().state.owner("sales").map(String::as_str), Some("acme"));
        assert!(authz.intents().await.unwrap().is_empty());
        assert!(matches!(authz.intend(own).await, Err(Error::AlreadyExists(_))), "an owned root exists");
    }

    #[tokio::test]
    async fn an_intent_made_with_another_commit_lands_with_it_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let authz = authorizer(&dir).await;
        let own = |root: &str| Effect::Own { root: root.into(), tenant: "acme".into() };
        let claim = |check: Check| Commit {
            checks: vec![check],
            writes: vec![Write { key: b"loc/x/".to_vec(), value: Some(vec![]) }],
            durability: Durability::Soon,
        };
        authz.space.commit(&[], &[Write { key: b"taken".to_vec(), value: Some(vec![]) }]).await.unwrap();
        let refused = authz.intend_with(own("sales"), claim(Check::Absent(b"taken".to_vec()))).await.unwrap();
        assert!(refused.is_none(), "the other commit's check failed");
        assert!(authz.intents().await.unwrap().is_empty(), "so no intent was recorded");
        assert!(authz.space.get(b"loc/x/").await.unwrap().is_none());

        let intent = authz.intend_with(own("sales"), claim(Check::Present(b"taken".to_vec()))).await.unwrap();
        assert!(intent.is_some());
        assert_eq!(authz.intents().await.unwrap().len(), 1);
        assert!(authz.space.get(b"loc/x/").await.unwrap().is_some(), "written with the intent");
        let again = authz.intend_with(own("sales"), claim(Check::Present(b"taken".to_vec()))).await.unwrap();
        assert!(again.is_none(), "the intent's own check holds too");
    }

    #[tokio::test]
    async fn forgetting_and_moving_change_grants_in_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let authz = authorizer(&dir).await;
        authz.set_owner("sales", "acme").await.unwrap();
        let bob = Grantee::Principal("bob-id".into());
        let t = Resource::table(&["sales".to_string()], "t");
        let u = Resource::table(&["sales".to_string()], "u");
        let kept = authz.add_grant(ns("other"), Privilege::Read, bob.clone()).await.unwrap();
        let on_t = authz.add_grant(t.clone(), Privilege::Write, bob.clone()).await.unwrap();
        authz.add_grant(t.clone(), Privilege::Read, Grantee::Tenant("evil".into())).await.unwrap();

        let rename = authz.intend(Effect::Move { from: t.clone(), to: u.clone() }).await.unwrap();
        authz.fulfil(&rename).await.unwrap();
        let grants = authz.all_grants().await.unwrap();
        assert_eq!(grants.iter().filter(|g| g.resource == u).count(), 2, "{grants:?}");
        assert!(grants.iter().any(|g| g.id == on_t.id && g.resource == u), "a moved grant keeps its id");
        assert!(!grants.iter().any(|g| g.resource == t));

        let drop = authz.intend(Effect::Forget { resource: ns("sales") }).await.unwrap();
        authz.fulfil(&drop).await.unwrap();
        let grants = authz.all_grants().await.unwrap();
        assert_eq!(grants.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(), [kept.id.as_str()]);
        assert_eq!(authz.current().await.unwrap().state.owners().count(), 0, "the dropped root has no owner");
    }

    #[tokio::test]
    async fn an_abandoned_intent_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let authz = authorizer(&dir).await;
        let grant = authz.add_grant(ns("a"), Privilege::Read, Grantee::Tenant("t".into())).await.unwrap();
        let intent = authz.intend(Effect::Forget { resource: ns("a") }).await.unwrap();
        authz.abandon(&intent).await.unwrap();
        assert_eq!(authz.all_grants().await.unwrap(), vec![grant]);
        assert!(authz.intents().await.unwrap().is_empty());
    }
}
