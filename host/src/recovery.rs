//! Backend changes and the authorization effects that go with them, carried through
//! to the end: an intent (`authz::intents`) is recorded before the backend change and
//! settled after it — fulfilled if the change happened, abandoned if it did not. When
//! a change fails in a way that leaves its outcome open, or a crash interrupts it, the
//! backend is asked whether the change is there; at start-up every intent left behind
//! is settled that way before the server answers anybody.

use std::future::Future;

use crate::authz::{Authorizer, Effect, Intent, Resource};
use crate::error::Error;
use crate::mounts::Mounts;
use crate::sandbox::bindings::Ident;
use crate::sandbox::BackendErrorKind;

/// Runs `change` (a backend change) under an intent for `effect`, and settles the
/// intent by its outcome.
pub async fn with_intent<T>(
    authz: &Authorizer,
    mounts: &Mounts,
    effect: Effect,
    change: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let intent = match (authz.intend(effect.clone()).await, &effect) {
        // A create of this root that failed earlier without telling whether it applied
        // blocks the name until it is settled: settle it now, then try again. One another
        // host may still be carrying out is its to settle: abandoned now, the name would
        // go to whichever create landed, and the location claim both share could be
        // released by the one that failed.
        (Err(Error::AlreadyExists(exists)), Effect::Own { root, .. }) => match authz.pending_creation(root).await? {
            Some(earlier) if !authz.may_be_in_flight(&earlier) => {
                settle(authz, mounts, &earlier).await?;
                authz.intend(effect).await?
            }
            _ => return Err(Error::AlreadyExists(exists)),
        },
        (intent, _) => intent?,
    };
    carry_through(authz, mounts, intent, change).await
}

/// Runs `change` (a backend change) under `intent`, already recorded, and settles the
/// intent by its outcome.
pub async fn carry_through<T>(
    authz: &Authorizer,
    mounts: &Mounts,
    intent: Intent,
    change: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let outcome = change.await;
    let settled = match &outcome {
        // The change landed: its answer is success whatever befalls the bookkeeping (an
        // error would tell the client it did not). A store failing now is retried a
        // few times; an intent still left is settled by the repair that runs while
        // serving (`repair_while_serving`).
        Ok(_) => fulfil_retrying(authz, &intent).await,
        Err(e) if !e.may_have_applied() => authz.abandon(&intent).await,
        Err(_) => settle(authz, mounts, &intent).await.map(|_| ()),
    };
    if let Err(e) = settled {
        tracing::warn!(effect = ?intent.effect, error = %e, "an intent stays for the repair");
    }
    authz.carried(&intent);
    outcome
}

/// Fulfils `intent`, trying again after 100 ms, 200 ms, … (five tries, 1.5 s in all)
/// while the store fails.
async fn fulfil_retrying(authz: &Authorizer, intent: &Intent) -> Result<(), Error> {
    let mut pause = std::time::Duration::from_millis(100);
    for _ in 0..4 {
        match authz.fulfil(intent).await {
            Ok(()) => return Ok(()),
            Err(e) => tracing::debug!(error = %e, "fulfilling an intent failed; trying again"),
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
    authz.fulfil(intent).await
}

/// How often the host looks for intents that a failure left behind while serving.
const REPAIR_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Settles, every few seconds, the intents that a failure of the store left behind
/// while serving (those no request carries out any more), so that none waits for a
/// restart.
pub async fn repair_while_serving(authz: &Authorizer, mounts: &Mounts) {
    let mut every = tokio::time::interval(REPAIR_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let _ = repair(authz, mounts).await;
    }
}

/// Fulfils `intent` if the backend shows its change, abandons it if not; which of the
/// two it did.
async fn settle(authz: &Authorizer, mounts: &Mounts, intent: &Intent) -> Result<Settled, Error> {
    let happened = match &intent.effect {
        Effect::Own { root, .. } => exists(mounts, &Resource::Namespace(vec![root.clone()])).await?,
        Effect::Forget { resource } => !exists(mounts, resource).await?,
        Effect::Move { from, to } => exists(mounts, to).await? && !exists(mounts, from).await?,
    };
    if happened {
        authz.fulfil(intent).await.map(|_| Settled::Fulfilled)
    } else {
        authz.abandon(intent).await.map(|_| Settled::Abandoned)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    Fulfilled,
    Abandoned,
}

/// Whether the backend holds `resource` now; an error when it cannot say.
async fn exists(mounts: &Mounts, resource: &Resource) -> Result<bool, Error> {
    let (mount, local) = mounts.route(resource.namespace());
    let ident = |name: &str| Ident { namespace: local.to_vec(), name: name.to_string() };
    let found = match resource {
        // A mount root exists because the mount does.
        Resource::Namespace(_) if local.is_empty() => return Ok(true),
        Resource::Namespace(_) => mount.backend.load_namespace(local.to_vec()).await.map(|_| ()),
        Resource::Table { name, .. } => mount.backend.load_table(&ident(name), None).await.map(|_| ()),
        Resource::View { name, .. } => mount.backend.load_view(ident(name)).await.map(|_| ()),
    };
    match found {
        Ok(()) => Ok(true),
        Err(e) if e.kind == BackendErrorKind::NotFound => Ok(false),
        Err(e) => {
            let why = format!("cannot tell whether {resource} exists: {e}");
            Err(if matches!(e.kind, BackendErrorKind::Unavailable | BackendErrorKind::Busy) {
                Error::Unavailable(why)
            } else {
                Error::Internal(why)
            })
        }
    }
}

/// Settles every intent left behind (by a crash, or by a store that failed while it
/// was being settled), but those a request may still be carrying out
/// (`Authorizer::may_be_in_flight`). Returns how many it settled and how many it left
/// (each reported in the log).
pub async fn repair(authz: &Authorizer, mounts: &Mounts) -> Result<(usize, usize), Error> {
    let (mut settled, mut left) = (0, 0);
    let intents = authz.intents().await?;
    authz.forget_seen_but(&intents);
    for intent in intents {
        if authz.may_be_in_flight(&intent) {
            tracing::debug!(effect = ?intent.effect, "repair: left alone, a request may be carrying it out");
            left += 1;
            continue;
        }
        match settle(authz, mounts, &intent).await {
            Ok(how) => {
                tracing::warn!(effect = ?intent.effect, outcome = ?how, "repair: settled a change a failure left");
                settled += 1;
            }
            Err(e) => {
                tracing::warn!(effect = ?intent.effect, error = %e, "repair: cannot settle yet; trying again later");
                left += 1;
            }
        }
    }
    Ok((settled, left))
}
