//! Commits to one table run one at a time in this process. Losing the compare-and-swap
//! to a sibling request would only cost a retry; and through a store that cannot check
//! versions (moto's Glue ignores `VersionId`), two commits made through one host can
//! never both read the same base and both land. Several hosts still rely on the
//! backend's own compare-and-swap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::plugins::bindings::Ident;

type Key = (String, Vec<String>, String);

/// The locks of tables being committed to, by (mount space, namespace, name).
static LOCKS: std::sync::LazyLock<Mutex<HashMap<Key, Weak<tokio::sync::Mutex<()>>>>> =
    std::sync::LazyLock::new(Default::default);

/// Past this many entries, the ones no commit holds are swept.
const SWEEP_AT: usize = 1024;

/// Waits until no other commit to this table runs in this process; the guard lets the
/// next one in when dropped.
pub async fn one_at_a_time(space: &str, ident: &Ident) -> tokio::sync::OwnedMutexGuard<()> {
    let key = (space.to_string(), ident.namespace.clone(), ident.name.clone());
    let lock = {
        let mut locks = LOCKS.lock().expect("table locks");
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
    use super::*;

    #[tokio::test]
    async fn one_table_at_a_time_and_others_meanwhile() {
        let t = Ident { namespace: vec!["a".into()], name: "t".into() };
        let u = Ident { namespace: vec!["a".into()], name: "u".into() };
        let held = one_at_a_time("s", &t).await;
        // Another table is not held up.
        let _other = one_at_a_time("s", &u).await;
        let waiting = tokio::spawn(async move { one_at_a_time("s", &t).await });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a second commit to the same table waits");
        drop(held);
        tokio::time::timeout(std::time::Duration::from_secs(1), waiting).await.unwrap().unwrap();
    }
}
