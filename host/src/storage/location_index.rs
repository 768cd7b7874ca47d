//! The location index: which namespace, table or view holds which location, across
//! every mount and warehouse, kept in the host's own key space.
//!
//! A claim on `L` is one conditional kv commit: no claim at `L` or below it (one
//! prefix check), and none above it (one point check per ancestor) except the
//! claimant's own namespaces. So two tables, views or unrelated namespaces can never
//! share files, and the check costs the same however big the catalog is.
//!
//! A claim has an id. A table that moves (`set-location`) claims its new location
//! under the same id, so dropping it releases every location it ever held.

use super::kv::{prefix_end, Check, Commit, Durability, KvError, KvStore, Write};
use super::location::Location;

/// What holds a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    Namespace,
    Table,
    View,
}

impl ClaimKind {
    fn byte(self) -> u8 {
        match self {
            ClaimKind::Namespace => b'n',
            ClaimKind::Table => b't',
            ClaimKind::View => b'v',
        }
    }
}

/// The id of one namespace's, table's or view's claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimId(uuid::Uuid);

impl ClaimId {
    /// A fresh id (a table or view: a retried create gets a new location anyway).
    pub fn new() -> Self {
        ClaimId(uuid::Uuid::new_v4())
    }

    /// The id of one namespace of one catalog: the same namespace always claims under
    /// the same id, so a create retried after an unknown outcome finds its own claim.
    pub fn of_namespace(catalog: &str, namespace: &[String]) -> Self {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(catalog.as_bytes());
        for level in namespace {
            hash.update([0x1f]);
            hash.update(level.as_bytes());
        }
        let digest = hash.finalize();
        ClaimId(uuid::Uuid::from_bytes(digest[..16].try_into().expect("16 bytes")))
    }
}

impl Default for ClaimId {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "the location {0} overlaps (is, contains or lies inside) the location of another table, view or namespace"
    )]
    Overlap(String),
    #[error("the location index is unavailable: {0}")]
    Store(String),
}

/// The index, in the host key space (shared by every host on one Postgres root).
#[derive(Clone)]
pub struct LocationIndex {
    kv: KvStore,
    /// When a claim is on disk (see `ahead_of_its_store`).
    claims: Durability,
}

/// `loc/<location>/`: the trailing slash makes a prefix scan stop at whole segments.
fn claim_key(location: &Location) -> Vec<u8> {
    format!("loc/{location}/").into_bytes()
}

/// A claim's value: its id (16 bytes), its kind (1), then the namespace location it
/// relies on (none in claims made before claims named it), then `MOVED` once its table
/// or view was renamed into another namespace, its files left where they were.
const ID_AND_KIND: usize = 17;
const MOVED: u8 = 0;

/// The id a claim's value names.
fn id_of(value: &[u8]) -> Option<ClaimId> {
    value.get(..16).and_then(|b| uuid::Uuid::from_slice(b).ok()).map(ClaimId)
}

/// Whether a claim below `namespace` (its value) relies on it: `moved` too when its
/// table or view was renamed out of it.
fn relies_on(value: &[u8], namespace: &[u8], moved: bool) -> bool {
    match value.get(ID_AND_KIND..) {
        Some([relied @ .., MOVED]) if moved => relied == namespace,
        Some(relied) => relied == namespace,
        None => false,
    }
}

/// `own/<id>/<location>`: every location one claim id holds.
fn owned_prefix(id: ClaimId) -> Vec<u8> {
    format!("own/{}/", id.0.simple()).into_bytes()
}

fn store(e: KvError) -> ClaimError {
    ClaimError::Store(e.to_string())
}

impl LocationIndex {
    pub fn new(kv: KvStore) -> Self {
        Self { kv, claims: Durability::Now }
    }

    /// The index, for a warehouse whose backend stores its changes in the index's own
    /// store (the root catalog's): a claim is made for a change the backend commits
    /// after it, which carries it to disk, so the claim need not be waited for.
    pub fn ahead_of_its_store(&self) -> Self {
        Self { kv: self.kv.clone(), claims: Durability::Soon }
    }

    /// The key space the claims are kept in.
    pub fn key_space(&self) -> &KvStore {
        &self.kv
    }

    /// Claims `location` for `id`, unless a claim exists at it, below it, or above it
    /// anywhere but at `own_namespaces` (the claimant's namespace and its ancestors).
    /// True when the claim is new; false when `id` held it already.
    pub async fn claim(
        &self,
        location: &Location,
        kind: ClaimKind,
        id: ClaimId,
        own_namespaces: &[Location],
    ) -> Result<bool, ClaimError> {
        match self.kv.make(&self.claim_commit(location, kind, id, own_namespaces)).await {
            Ok(()) => Ok(true),
            Err(KvError::Conflict) if self.holder(location).await? == Some(id) => Ok(false),
            Err(KvError::Conflict) => Err(ClaimError::Overlap(location.to_string())),
            Err(e) => Err(store(e)),
        }
    }

    /// The commit `claim` makes, for a caller that makes it together with a commit of
    /// its own to the host key space; a failed check in it says only that `claim` would
    /// not have made a new claim.
    pub fn claim_commit(
        &self,
        location: &Location,
        kind: ClaimKind,
        id: ClaimId,
        own_namespaces: &[Location],
    ) -> Commit {
        let key = claim_key(location);
        let mut checks: Vec<Check> = location
            .ancestors()
            .filter(|above| !own_namespaces.contains(above))
            .map(|above| Check::Absent(claim_key(&above)))
            .collect();
        checks.push(Check::PrefixEmpty(key.clone()));
        let mut value = id.0.as_bytes().to_vec();
        value.push(kind.byte());
        // The namespace location the claim relies on (`take_over_leftovers`).
        if let Some(within) = own_namespaces.last() {
            value.extend_from_slice(within.to_string().as_bytes());
        }
        let mut owned = owned_prefix(id);
        owned.extend_from_slice(location.to_string().as_bytes());
        let writes = vec![Write { key, value: Some(value) }, Write { key: owned, value: Some(vec![]) }];
        Commit { checks, writes, durability: self.claims }
    }

    /// `claim_commit`, but letting the claims below `location` be, with `at` for what
    /// must be at it (`restore`, `take_over_leftovers`).
    fn claim_commit_over_below(
        &self,
        location: &Location,
        kind: ClaimKind,
        id: ClaimId,
        own_namespaces: &[Location],
        at: Check,
    ) -> Commit {
        let key = claim_key(location);
        let mut commit = self.claim_commit(location, kind, id, own_namespaces);
        for each in &mut commit.checks {
            if matches!(each, Check::PrefixEmpty(below) if *below == key) {
                *each = at.clone();
            }
        }
        commit
    }

    /// Claims `location` again for `id`, for a namespace created while a drop of the
    /// same name (same id) was releasing its claim. As `claim`, but claims below it are
    /// let be: they were made inside the new namespace after it was created, relying on
    /// its location being its own. A claim `id` holds already is written anew, so that
    /// the drop's release (`release_unchanged`), made after, leaves it.
    pub async fn restore(
        &self,
        location: &Location,
        kind: ClaimKind,
        id: ClaimId,
        own_namespaces: &[Location],
    ) -> Result<(), ClaimError> {
        let key = claim_key(location);
        // Released or taken between the read and the commit: once more, from what is
        // there then; a conflict that stays is another's claim above.
        for _ in 0..3 {
            let at = match self.kv.get(&key).await.map_err(store)? {
                Some(held) if id_of(&held.value) == Some(id) => Check::AtVersion(key.clone(), held.version),
                Some(_) => break,
                None => Check::Absent(key.clone()),
            };
            let commit = self.claim_commit_over_below(location, kind, id, own_namespaces, at);
            match self.kv.make(&commit).await {
                Ok(()) => return Ok(()),
                Err(KvError::Conflict) => continue,
                Err(e) => return Err(store(e)),
            }
        }
        Err(ClaimError::Overlap(location.to_string()))
    }

    /// Claims a namespace's `location` for `id` over the claims below it that a dropped
    /// namespace at the same location left: tables renamed into another namespace, their
    /// files still there, and tables whose creates failed without telling whether they
    /// landed, made after the drop read what to release. Each says it relies on
    /// `location` being its namespace's. True when claimed; false when something else is
    /// there (a claim at it, or one below that relies on another location: a sibling's,
    /// placed inside it while it was free).
    pub async fn take_over_leftovers(
        &self,
        location: &Location,
        id: ClaimId,
        ancestors: &[Location],
    ) -> Result<bool, ClaimError> {
        let key = claim_key(location);
        if !self.only_leftovers_below(location, None).await? {
            return Ok(false);
        }
        let commit = self.claim_commit_over_below(location, ClaimKind::Namespace, id, ancestors, Check::Absent(key));
        match self.kv.make(&commit).await {
            Ok(()) => {}
            Err(KvError::Conflict) => return Ok(false),
            Err(e) => return Err(store(e)),
        }
        // A sibling's claim made below between the scan and the commit: given back.
        if !self.only_leftovers_below(location, Some(id)).await? {
            self.release_one(location, id).await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether there are claims below `location`, each relying on `location` being its
    /// namespace's, and at it only `holder`'s (none for none).
    async fn only_leftovers_below(&self, location: &Location, holder: Option<ClaimId>) -> Result<bool, ClaimError> {
        let key = claim_key(location);
        let end = prefix_end(&key);
        let relied_on = location.to_string().into_bytes();
        let claims = self.kv.scan(&key, end.as_deref(), 10_000).await.map_err(store)?;
        let mut below = 0;
        for claim in &claims {
            match claim.key == key {
                true if holder.is_none() || id_of(&claim.value) != holder => return Ok(false),
                true => {}
                false if !relies_on(&claim.value, &relied_on, true) => return Ok(false),
                false => below += 1,
            }
        }
        Ok(below > 0)
    }

    /// The commit that releases every location `id` (a namespace) holds now, and every
    /// claim below them that relies on it, unless one of those claims is written again
    /// before it is made (`restore`): for a namespace's drop, read before the drop, made
    /// after it.
    ///
    /// A namespace is dropped only when it is empty, so a claim inside it then is a
    /// table's whose create failed without telling whether it landed (its claim kept
    /// for safety) and did not, one whose create is still under way and can no longer
    /// land, one whose drop could not release it, or a table's renamed into another
    /// namespace (`mark_moved`), its files where they were: that one is kept, so that no
    /// table can be created over those files; a namespace created there again takes it
    /// over (`take_over_leftovers`).
    pub async fn release_unchanged(&self, id: ClaimId) -> Result<Commit, ClaimError> {
        let (mut writes, _) = self.release_writes(id).await?;
        let claims: Vec<Vec<u8>> =
            writes.iter().filter(|w| w.key.starts_with(b"loc/")).map(|w| w.key.clone()).collect();
        let mut checks = vec![];
        for key in claims {
            match self.kv.get(&key).await.map_err(store)? {
                Some(entry) => checks.push(Check::AtVersion(key.clone(), entry.version)),
                None => checks.push(Check::Absent(key.clone())),
            }
            let end = prefix_end(&key);
            // `loc/<location>/` is the claim on `<location>`.
            let namespace = &key[4..key.len() - 1];
            for inside in self.kv.scan(&key, end.as_deref(), 10_000).await.map_err(store)? {
                // Claims from before claims named a location are released too.
                let left = inside.value.len() == ID_AND_KIND || relies_on(&inside.value, namespace, false);
                if inside.key == key || !left {
                    continue;
                }
                checks.push(Check::AtVersion(inside.key.clone(), inside.version));
                if let Some(holder) = id_of(&inside.value) {
                    let mut owned = owned_prefix(holder);
                    // `loc/<location>/` holds `<location>`.
                    owned.extend_from_slice(&inside.key[4..inside.key.len() - 1]);
                    writes.push(Write { key: owned, value: None });
                }
                writes.push(Write { key: inside.key, value: None });
            }
        }
        Ok(Commit { checks, writes, durability: Durability::Now })
    }

    /// Marks the claim on `location` (a table's or view's) as that of one renamed out of
    /// the namespace it relies on, before the rename: a drop of that namespace keeps it.
    /// Marked once; a rename that then fails leaves it marked, which only keeps it
    /// until its table's own drop.
    pub async fn mark_moved(&self, location: &Location) -> Result<(), ClaimError> {
        let key = claim_key(location);
        for _ in 0..3 {
            let Some(held) = self.kv.get(&key).await.map_err(store)? else { return Ok(()) };
            if held.value.len() <= ID_AND_KIND || held.value.last() == Some(&MOVED) {
                return Ok(());
            }
            let mut value = held.value.clone();
            value.push(MOVED);
            let check = Check::AtVersion(key.clone(), held.version);
            match self.kv.commit(&[check], &[Write { key: key.clone(), value: Some(value) }]).await {
                Ok(()) => return Ok(()),
                Err(KvError::Conflict) => continue,
                Err(e) => return Err(store(e)),
            }
        }
        Err(ClaimError::Store(format!("the claim on {location} kept changing")))
    }

    /// The id holding the claim exactly at `location`, if any.
    pub async fn holder(&self, location: &Location) -> Result<Option<ClaimId>, ClaimError> {
        let Some(entry) = self.kv.get(&claim_key(location)).await.map_err(store)? else {
            return Ok(None);
        };
        Ok(id_of(&entry.value))
    }

    /// Releases one location claimed by `id` (a claim that did not take effect).
    pub async fn release_one(&self, location: &Location, id: ClaimId) -> Result<(), ClaimError> {
        if self.holder(location).await? != Some(id) {
            return Ok(());
        }
        let mut owned = owned_prefix(id);
        owned.extend_from_slice(location.to_string().as_bytes());
        let writes = [Write { key: claim_key(location), value: None }, Write { key: owned, value: None }];
        self.kv.commit(&[], &writes).await.map_err(store)
    }

    /// Releases every location `id` holds, in one commit.
    pub async fn release(&self, id: ClaimId) -> Result<usize, ClaimError> {
        let (writes, released) = self.release_writes(id).await?;
        self.kv.commit(&[], &writes).await.map_err(store)?;
        Ok(released)
    }

    async fn release_writes(&self, id: ClaimId) -> Result<(Vec<Write>, usize), ClaimError> {
        let prefix = owned_prefix(id);
        let end = prefix_end(&prefix);
        // A claim id holds a handful of locations (one per set-location).
        let owned = self.kv.scan(&prefix, end.as_deref(), 10_000).await.map_err(store)?;
        let mut writes = Vec::with_capacity(owned.len() * 2);
        for entry in &owned {
            let location = String::from_utf8_lossy(&entry.key[prefix.len()..]).into_owned();
            writes.push(Write { key: format!("loc/{location}/").into_bytes(), value: None });
            writes.push(Write { key: entry.key.clone(), value: None });
        }
        Ok((writes, owned.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::RedbStore;

    fn index() -> (tempfile::TempDir, LocationIndex) {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("x.redb")).unwrap();
        (dir, LocationIndex::new(KvStore::Redb(store.space("host").unwrap())))
    }

    fn at(s: &str) -> Location {
        Location::parse(s).unwrap()
    }

    #[tokio::test]
    async fn overlaps_are_refused_in_every_direction() {
        let (_dir, index) = index();
        let ns = at("s3://b/wh/sales");
        let own = std::slice::from_ref(&ns);
        let sales = ClaimId::of_namespace("root", &["sales".into()]);
        assert_eq!(sales, ClaimId::of_namespace("root", &["sales".into()]));
        assert_ne!(sales, ClaimId::of_namespace("mount:m", &["sales".into()]));
        assert!(index.claim(&ns, ClaimKind::Namespace, sales, &[]).await.unwrap());
        let table = ClaimId::new();
        index.claim(&at("s3://b/wh/sales/orders"), ClaimKind::Table, table, own).await.unwrap();
        for other in ["s3://b/wh/sales/orders", "s3://b/wh/sales/orders/data", "s3://b/wh/sales", "s3://b/wh"] {
            let refused = index.claim(&at(other), ClaimKind::Table, ClaimId::new(), own).await;
            assert!(matches!(refused, Err(ClaimError::Overlap(_))), "{other}");
        }
        // Inside somebody else's namespace: refused unless it is one's own.
        let refused = index.claim(&at("s3://b/wh/sales/x"), ClaimKind::Table, ClaimId::new(), &[]).await;
        assert!(matches!(refused, Err(ClaimError::Overlap(_))));
        // Claiming again under the same id holds it already.
        let again = index.claim(&at("s3://b/wh/sales/orders"), ClaimKind::Table, table, own).await;
        assert!(!again.unwrap());
        // A sibling sharing a string prefix is not an overlap.
        index.claim(&at("s3://b/wh/sales/orders2"), ClaimKind::Table, ClaimId::new(), own).await.unwrap();
        index.claim(&at("s3://b/wh/sales2"), ClaimKind::Namespace, ClaimId::new(), &[]).await.unwrap();

        // A moved table holds both locations until it is dropped.
        index.claim(&at("s3://b/wh/sales/moved"), ClaimKind::Table, table, own).await.unwrap();
        assert_eq!(index.holder(&at("s3://b/wh/sales/moved")).await.unwrap(), Some(table));
        assert_eq!(index.release(table).await.unwrap(), 2);
        assert_eq!(index.holder(&at("s3://b/wh/sales/orders")).await.unwrap(), None);
        index.claim(&at("s3://b/wh/sales/orders"), ClaimKind::Table, ClaimId::new(), own).await.unwrap();
    }

    #[tokio::test]
    async fn a_namespace_restores_its_claim_over_its_own_tables_only() {
        let (_dir, index) = index();
        let ns = at("s3://b/wh/sales");
        let sales = ClaimId::of_namespace("root", &["sales".into()]);
        // Its claim released by a drop of the same name, a table created in it since.
        index
            .claim(&at("s3://b/wh/sales/orders"), ClaimKind::Table, ClaimId::new(), std::slice::from_ref(&ns))
            .await
            .unwrap();
        assert!(index.claim(&ns, ClaimKind::Namespace, sales, &[]).await.is_err(), "a plain claim refuses it");
        index.restore(&ns, ClaimKind::Namespace, sales, &[]).await.unwrap();
        assert_eq!(index.holder(&ns).await.unwrap(), Some(sales));
        index.restore(&ns, ClaimKind::Namespace, sales, &[]).await.unwrap();
        // A drop's release read before the claim was restored leaves it.
        let release = index.release_unchanged(sales).await.unwrap();
        index.restore(&ns, ClaimKind::Namespace, sales, &[]).await.unwrap();
        assert!(matches!(index.key_space().make(&release).await, Err(KvError::Conflict)));
        assert_eq!(index.holder(&ns).await.unwrap(), Some(sales));
        // Released after a drop, with what a create that failed left inside it, and a
        // claim from before claims named a location; a table's renamed into another
        // namespace, its files still inside, is kept, and taken over by the next
        // create there.
        let legacy = at("s3://b/wh/sales/old");
        let mut value = ClaimId::new().0.as_bytes().to_vec();
        value.push(ClaimKind::Table.byte());
        index.key_space().commit(&[], &[Write { key: claim_key(&legacy), value: Some(value) }]).await.unwrap();
        let moved = at("s3://b/wh/sales/moved");
        index.claim(&moved, ClaimKind::Table, ClaimId::new(), std::slice::from_ref(&ns)).await.unwrap();
        index.mark_moved(&moved).await.unwrap();
        index.mark_moved(&moved).await.unwrap();
        let release = index.release_unchanged(sales).await.unwrap();
        index.key_space().make(&release).await.unwrap();
        assert_eq!(index.holder(&ns).await.unwrap(), None);
        assert_eq!(index.holder(&at("s3://b/wh/sales/orders")).await.unwrap(), None);
        assert_eq!(index.holder(&legacy).await.unwrap(), None);
        assert!(index.holder(&moved).await.unwrap().is_some());
        assert!(index.claim(&ns, ClaimKind::Namespace, sales, &[]).await.is_err());
        assert!(index.take_over_leftovers(&ns, sales, &[]).await.unwrap(), "claimed anew");
        index.restore(&ns, ClaimKind::Namespace, sales, &[]).await.unwrap();
        // Never over another's claim, at it or above it.
        let other = ClaimId::of_namespace("root", &["other".into()]);
        assert!(index.restore(&ns, ClaimKind::Namespace, other, &[]).await.is_err());
        assert!(index.restore(&at("s3://b/wh/sales/orders/x"), ClaimKind::Namespace, other, &[]).await.is_err());
    }

    #[tokio::test]
    async fn a_namespace_takes_over_only_what_a_dropped_namespace_there_left() {
        let (_dir, index) = index();
        let (parent, ns) = (at("s3://b/wh"), at("s3://b/wh/sales"));
        let above = std::slice::from_ref(&parent);
        let sales = ClaimId::of_namespace("root", &["sales".into()]);
        // Nothing below: nothing to take over.
        assert!(!index.take_over_leftovers(&ns, sales, above).await.unwrap());
        // A table whose create's outcome was unknown, made in a dropped `sales`.
        let inside = [parent.clone(), ns.clone()];
        index.claim(&at("s3://b/wh/sales/orders"), ClaimKind::Table, ClaimId::new(), &inside).await.unwrap();
        assert!(index.claim(&ns, ClaimKind::Namespace, sales, above).await.is_err());
        assert!(index.take_over_leftovers(&ns, sales, above).await.unwrap());
        assert_eq!(index.holder(&ns).await.unwrap(), Some(sales));
        // Held now: not taken over again, by anyone.
        let other = ClaimId::of_namespace("root", &["other".into()]);
        assert!(!index.take_over_leftovers(&ns, other, above).await.unwrap());

        // A table of the parent placed inside a free location relies on the parent's.
        let free = at("s3://b/wh/free");
        index.claim(&at("s3://b/wh/free/t"), ClaimKind::Table, ClaimId::new(), above).await.unwrap();
        let id = ClaimId::of_namespace("root", &["free".into()]);
        assert!(!index.take_over_leftovers(&free, id, above).await.unwrap());
        assert_eq!(index.holder(&free).await.unwrap(), None);
    }
}
