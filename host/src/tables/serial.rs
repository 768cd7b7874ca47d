//! Changes to one table, and creates and drops of one namespace, run one at a time in
//! this process.
//!
//! Tables: losing the compare-and-swap to a sibling request would only cost a retry;
//! and through a store that cannot check versions (moto's Glue ignores `VersionId`),
//! two commits made through one host can never both read the same base and both land.
//! Several hosts still rely on the backend's own compare-and-swap.
//!
//! Namespaces: every create of a namespace claims its location under the same id (so a
//! retry finds its own claim), and a create that fails releases the claim it made. Two
//! creates of one name at once would share that claim, and the one that failed could
//! release the claim of the one that landed; likewise a drop releasing the claim of a
//! create that came just after it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::sandbox::bindings::Ident;

/// What is changed one at a time: a table by (namespace, name), a namespace by its path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Subject {
    Table(Vec<String>, String),
    Namespace(Vec<String>),
}

type Key = (String, Subject);

/// The locks of what is being changed, by (mount space, subject).
static LOCKS: std::sync::LazyLock<Mutex<HashMap<Key, Weak<tokio::sync::Mutex<()>>>>> =
    std::sync::LazyLock::new(Default::default);

/// Past this many entries, the ones no change holds are swept.
const SWEEP_AT: usize = 1024;

/// Waits until no other commit to this table runs in this process; the guard lets the
/// next one in when dropped.
pub async fn one_at_a_time(space: &str, ident: &Ident) -> tokio::sync::OwnedMutexGuard<()> {
    turn((space.to_string(), Subject::Table(ident.namespace.clone(), ident.name.clone()))).await
}

/// Waits until no other create or drop of this namespace (its path in the mount) runs
/// in this process; the guard lets the next one in when dropped.
pub async fn namespace_one_at_a_time(space: &str, local: &[String]) -> tokio::sync::OwnedMutexGuard<()> {
    turn((space.to_string(), Subject::Namespace(local.to_vec()))).await
}

async fn turn(key: Key) -> tokio::sync::OwnedMutexGuard<()> {
    let lock = {
        let mut locks = LOCKS.lock().expect("serial locks");
        if locks.len() >= SWEEP_AT {
            locks.retain(|_, lock| lock.strong_count() > 0);
        }
        match locks.get(&key).and_then(Weak::upgrade) {
            Some(lock) => lock,
            None => {
                let lock = Arc::new(tokio::sync::Mutex::new(()));
                locks.insert(key, Arc::downgrade(&lock));
                lock
            }
        }
    };
    lock.lock_owned().await
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::Duration;

    use tokio::sync::OwnedMutexGuard;

    use super::*;

    /// `second` waits while `held` is held, and gets in once it is dropped.
    async fn waits_for(held: OwnedMutexGuard<()>, second: impl Future<Output = OwnedMutexGuard<()>> + Send + 'static) {
        let waiting = tokio::spawn(second);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the second change waits");
        drop(held);
        tokio::time::timeout(Duration::from_secs(1), waiting).await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn one_table_at_a_time_and_others_meanwhile() {
        let t = Ident { namespace: vec!["a".into()], name: "t".into() };
        let u = Ident { namespace: vec!["a".into()], name: "u".into() };
        let held = one_at_a_time("s", &t).await;
        // Another table is not held up.
        let _other = one_at_a_time("s", &u).await;
        waits_for(held, async move { one_at_a_time("s", &t).await }).await;
    }

    #[tokio::test]
    async fn a_namespace_is_held_apart_from_a_table_of_the_same_path() {
        let table = Ident { namespace: vec!["a".into()], name: "b".into() };
        let _commit = one_at_a_time("s", &table).await;
        let path = vec!["a".to_string(), "b".to_string()];
        let held = tokio::time::timeout(Duration::from_secs(1), namespace_one_at_a_time("s", &path))
            .await
            .expect("a table's commit does not hold up its namesake namespace");
        waits_for(held, async move { namespace_one_at_a_time("s", &path).await }).await;
    }
}
