//! The background work of the outbox, on every host: the relay moves pending events into
//! the log soon after a change wakes it (and every second, for what another host over
//! the same database left or a crash left pending), and the log is pruned past its
//! retention once a minute.

use std::time::Duration;

use super::Events;

/// How often the relay looks without being woken.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long a woken relay lets more changes gather before it moves them: each move is
/// a durable commit (an fsync on redb), which a lone writer would otherwise pay again
/// after every change of its own (measured: 40 % of a sequential writer's commits).
const GATHER: Duration = Duration::from_millis(20);
/// How often events past their retention are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Relays and prunes until the process ends.
pub async fn run(events: Events, retention: Duration) {
    let Some(outbox) = events.outbox().cloned() else { return };
    let mut pruned_at = tokio::time::Instant::now() - PRUNE_EVERY;
    let mut failures = 0u32;
    loop {
        match outbox.relay().await {
            Ok(moved) => {
                failures = 0;
                if moved > 0 {
                    crate::telemetry::events_logged(moved);
                }
                if let Ok(last) = outbox.last().await {
                    events.logged(last);
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                tracing::warn!(error = %e, "events: the relay could not move pending events; retrying");
                tokio::time::sleep(LOOK_EVERY * failures.min(30)).await;
                continue;
            }
        }
        if pruned_at.elapsed() >= PRUNE_EVERY {
            pruned_at = tokio::time::Instant::now();
            let cutoff = jiff::Timestamp::now().as_millisecond() - retention.as_millis() as i64;
            if let Err(e) = outbox.prune(cutoff).await {
                tracing::warn!(error = %e, "events: pruning the log failed");
            }
        }
        if tokio::time::timeout(LOOK_EVERY, events.relay_woken()).await.is_ok() {
            tokio::time::sleep(GATHER).await;
        }
    }
}
