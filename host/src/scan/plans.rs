//! Plans in progress. Every plan is computed by a task of its own, a bounded number at
//! once; its planTableScan waits for it up to the budget. A plan done by then is
//! answered at once and held nowhere. One that is not is held here, under a random id,
//! until its client fetches it, cancels it, or stops asking for longer than the plan's
//! time to live.
//!
//! Held plans live in this process's memory only: after a restart, or on another
//! process behind the same address, a plan id is unknown (404) and the client plans
//! again.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::{oneshot, Semaphore};
use tokio::task::AbortHandle;

use super::{Plan, PlanRequest};
use crate::error::Error;

/// How plans are run and held (`[planning]`).
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long a planTableScan waits for its plan before answering `submitted`.
    pub budget: Duration,
    /// Plans computed at once.
    pub concurrency: usize,
    /// Plans held at once, after their planTableScan answered `submitted`.
    pub max_plans: usize,
    /// How long a held plan waits for its client's next question.
    pub ttl: Duration,
}

/// What planTableScan answers.
pub enum Answer {
    /// The plan finished within the budget.
    Completed(Plan),
    /// It did not: it goes on, held under this id.
    Submitted(String),
}

/// Where a held plan stands, as fetchPlanningResult tells it.
#[derive(Clone)]
pub enum Status {
    Submitted,
    /// With the request it planned, which its plan tasks carry.
    Completed(Arc<Plan>, PlanRequest),
    /// The Iceberg error model of why it failed.
    Failed(Value),
    Cancelled,
}

/// The plans of this process.
#[derive(Clone)]
pub struct Plans {
    inner: Arc<Inner>,
}

struct Inner {
    held: Mutex<HashMap<String, Held>>,
    permits: Semaphore,
    limits: Limits,
}

struct Held {
    /// The table's plan space: an id is good only for the table it was planned for.
    table: String,
    request: PlanRequest,
    /// Set while the plan's planTableScan still waits for it: the plan goes there,
    /// and the id has not been given out.
    waiting: Option<oneshot::Sender<Result<Plan, Error>>>,
    status: Status,
    expires: Instant,
    task: AbortHandle,
}

impl Plans {
    /// Plans held under `limits`; inside a runtime, a sweeper drops the expired ones
    /// even while nobody asks.
    pub fn new(limits: Limits) -> Plans {
        let inner =
            Arc::new(Inner { held: Mutex::new(HashMap::new()), permits: Semaphore::new(limits.concurrency), limits });
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(sweep_while_alive(Arc::downgrade(&inner)));
        }
        Plans { inner }
    }

    /// The limits plans run under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Runs `work`, the plan of `request` on the table whose plan space is `table`,
    /// and waits for it up to the budget. A request that goes away meanwhile takes its
    /// plan with it. Too many held plans: 503, and the plan is stopped.
    pub async fn plan<F>(&self, table: String, request: PlanRequest, work: F) -> Result<Answer, Error>
    where
        F: Future<Output = Result<Plan, Error>> + Send + 'static,
    {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (sender, mut receiver) = oneshot::channel();
        {
            let mut held = self.inner.lock();
            // Spawned under the lock: the task cannot finish before its entry exists.
            let task = tokio::spawn(compute(self.inner.clone(), id.clone(), work)).abort_handle();
            let expires = Instant::now() + self.inner.limits.ttl;
            let status = Status::Submitted;
            held.insert(id.clone(), Held { table, request, waiting: Some(sender), status, expires, task });
        }
        let guard = Abandoned { inner: &self.inner, id: &id, armed: true };
        // A budget of 0 waits for nothing (a timer would give the plan a tick).
        let budget = self.inner.limits.budget;
        let waited = match budget.is_zero() {
            true => None,
            false => tokio::time::timeout(budget, &mut receiver).await.ok(),
        };
        let done = match waited {
            Some(done) => done.map_err(|_| ()),
            None => {
                let mut held = self.inner.lock();
                let holding = held.values().filter(|h| h.waiting.is_none()).count();
                if let Some(entry) = held.get_mut(&id) {
                    if holding >= self.inner.limits.max_plans {
                        drop(held);
                        drop(guard);
                        crate::telemetry::scan_plan("refused");
                        return Err(Error::Unavailable(format!(
                            "{holding} scan plans are already being computed or waiting to be fetched \
                             (planning.max_plans); plan again later"
                        )));
                    }
                    entry.waiting = None;
                    drop(held);
                    guard.disarm();
                    crate::telemetry::scan_plan("submitted");
                    crate::telemetry::scan_plans_held(holding + 1);
                    return Ok(Answer::Submitted(id));
                }
                // Finished as the budget ran out: it went to the receiver.
                drop(held);
                receiver.try_recv().map_err(|_| ())
            }
        };
        guard.disarm();
        crate::telemetry::scan_plan("completed");
        match done {
            Ok(result) => result.map(Answer::Completed),
            Err(_) => Err(Error::Internal("the scan plan was stopped before it finished".into())),
        }
    }

    /// Runs `work`, a plan made again for a request (a plan id or plan task of a plan
    /// answered at once), in this request, in its turn among the plans computed.
    pub async fn in_turn<T>(&self, work: impl Future<Output = T>) -> T {
        let _turn = self.inner.permits.acquire().await.expect("the semaphore is never closed");
        work.await
    }

    /// Where the plan `id` of `table` stands; asking keeps it another time to live.
    pub fn status(&self, table: &str, id: &str) -> Option<Status> {
        let mut held = self.inner.lock();
        let entry = held.get_mut(id).filter(|h| h.table == table && h.waiting.is_none())?;
        entry.expires = Instant::now() + self.inner.limits.ttl;
        Some(entry.status.clone())
    }

    /// The finished plan `id` of `table`, if still held; asking keeps it another time to live.
    pub fn completed(&self, table: &str, id: &str) -> Option<Arc<Plan>> {
        match self.status(table, id)? {
            Status::Completed(plan, _) => Some(plan),
            _ => None,
        }
    }

    /// Stops the plan `id` of `table` and lets its result go; it answers `cancelled`
    /// until it expires. Whether there was such a plan.
    pub fn cancel(&self, table: &str, id: &str) -> bool {
        let mut held = self.inner.lock();
        let Some(entry) = held.get_mut(id).filter(|h| h.table == table && h.waiting.is_none()) else {
            return false;
        };
        entry.task.abort();
        entry.status = Status::Cancelled;
        true
    }

    /// How many plans are held (running or finished), after dropping the expired.
    pub fn held(&self) -> usize {
        self.inner.sweep();
        self.inner.lock().values().filter(|h| h.waiting.is_none()).count()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Hands a finished plan to its waiting planTableScan, or holds it for its client.
    fn finish(&self, id: &str, result: Result<Plan, Error>) {
        let mut held = self.lock();
        let Some(entry) = held.get_mut(id) else { return };
        if let Some(waiting) = entry.waiting.take() {
            held.remove(id);
            let _ = waiting.send(result);
            return;
        }
        if !matches!(entry.status, Status::Submitted) {
            return;
        }
        entry.status = match result {
            Ok(plan) => Status::Completed(Arc::new(plan), entry.request.clone()),
            Err(e) => Status::Failed(e.model()),
        };
        entry.expires = Instant::now() + self.limits.ttl;
    }

    /// Drops the held plans nobody asked about for their time to live, stopping the
    /// running ones. A plan still waited on belongs to its request.
    fn sweep(&self) {
        let now = Instant::now();
        let mut held = self.lock();
        held.retain(|_, h| {
            let keep = h.waiting.is_some() || h.expires > now;
            if !keep {
                h.task.abort();
            }
            keep
        });
        crate::telemetry::scan_plans_held(held.values().filter(|h| h.waiting.is_none()).count());
    }
}

/// One plan's task: waits its turn, plans, and hands the result on. A panic fails the
/// plan rather than leaving it submitted.
async fn compute<F>(inner: Arc<Inner>, id: String, work: F)
where
    F: Future<Output = Result<Plan, Error>> + Send + 'static,
{
    let result = {
        let _turn = inner.permits.acquire().await.expect("the semaphore is never closed");
        AssertUnwindSafe(work).catch_unwind().await.unwrap_or_else(|_| {
            Err(Error::Internal("planning the scan failed unexpectedly (see the server's log)".into()))
        })
    };
    inner.finish(&id, result);
}

/// Sweeps every so often for as long as the plans exist.
async fn sweep_while_alive(inner: Weak<Inner>) {
    let every = match inner.upgrade() {
        Some(inner) => (inner.limits.ttl / 2).clamp(Duration::from_millis(100), Duration::from_secs(30)),
        None => return,
    };
    loop {
        tokio::time::sleep(every).await;
        match inner.upgrade() {
            Some(inner) => inner.sweep(),
            None => return,
        }
    }
}

/// Drops a plan whose planTableScan went away before answering (the client hung up).
struct Abandoned<'a> {
    inner: &'a Inner,
    id: &'a str,
    armed: bool,
}

impl Abandoned<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Some(entry) = self.inner.lock().remove(self.id) {
                entry.task.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plans(budget_ms: u64, max_plans: usize, ttl_ms: u64) -> Plans {
        Plans::new(Limits {
            budget: Duration::from_millis(budget_ms),
            concurrency: 1,
            max_plans,
            ttl: Duration::from_millis(ttl_ms),
        })
    }

    fn empty() -> Plan {
        Plan { tasks: Vec::new(), delete_files: Vec::new(), residual: Value::Bool(true) }
    }

    async fn slow(ms: u64) -> Result<Plan, Error> {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(empty())
    }

    #[tokio::test]
    async fn a_plan_within_its_budget_is_answered_and_held_nowhere() {
        let plans = plans(1000, 4, 60_000);
        let answer = plans.plan("t".into(), PlanRequest::default(), slow(10)).await.unwrap();
        assert!(matches!(answer, Answer::Completed(_)));
        assert_eq!(plans.held(), 0);
        let failed = plans.plan("t".into(), PlanRequest::default(), async { Err(Error::BadRequest("no".into())) });
        assert!(matches!(failed.await, Err(Error::BadRequest(_))));
    }

    #[tokio::test]
    async fn a_slow_plan_is_submitted_then_completed_for_its_table_only() {
        let plans = plans(20, 4, 60_000);
        let Answer::Submitted(id) = plans.plan("t".into(), PlanRequest::default(), slow(200)).await.unwrap() else {
            panic!("a plan slower than its budget must be submitted")
        };
        assert!(matches!(plans.status("t", &id), Some(Status::Submitted)));
        assert!(plans.status("other", &id).is_none(), "a plan id is good for its own table only");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(matches!(plans.status("t", &id), Some(Status::Completed(..))));
        assert!(plans.completed("t", &id).is_some());
    }

    #[tokio::test]
    async fn a_failed_plan_says_why_in_the_error_model() {
        let plans = plans(0, 4, 60_000);
        let work = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(Error::Internal("the manifest list is unreadable".into()))
        };
        let Answer::Submitted(id) = plans.plan("t".into(), PlanRequest::default(), work).await.unwrap() else {
            panic!("submitted")
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let Some(Status::Failed(model)) = plans.status("t", &id) else { panic!("failed") };
        assert_eq!(model["code"], 500);
        assert!(model["message"].as_str().unwrap().contains("unreadable"), "{model}");
    }

    #[tokio::test]
    async fn cancelling_stops_the_work_and_answers_cancelled() {
        let plans = plans(0, 4, 60_000);
        let ran_to_the_end = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ran_to_the_end.clone();
        let work = async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(empty())
        };
        let Answer::Submitted(id) = plans.plan("t".into(), PlanRequest::default(), work).await.unwrap() else {
            panic!("submitted")
        };
        assert!(plans.cancel("t", &id));
        assert!(!plans.cancel("other", &id));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!ran_to_the_end.load(std::sync::atomic::Ordering::SeqCst), "the cancelled plan went on");
        assert!(matches!(plans.status("t", &id), Some(Status::Cancelled)));
    }

    #[tokio::test]
    async fn a_plan_nobody_asks_about_is_dropped() {
        let plans = plans(0, 4, 150);
        let Answer::Submitted(id) = plans.plan("t".into(), PlanRequest::default(), slow(10)).await.unwrap() else {
            panic!("submitted")
        };
        assert_eq!(plans.held(), 1);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(plans.held(), 0, "the sweeper dropped nothing");
        assert!(plans.status("t", &id).is_none());
    }

    #[tokio::test]
    async fn plans_beyond_the_held_limit_are_refused_and_stopped() {
        let plans = plans(0, 1, 60_000);
        let first = plans.plan("t".into(), PlanRequest::default(), slow(300)).await.unwrap();
        assert!(matches!(first, Answer::Submitted(_)));
        let second = plans.plan("t".into(), PlanRequest::default(), slow(300)).await;
        assert!(matches!(second, Err(Error::Unavailable(_))));
        assert_eq!(plans.held(), 1);
    }

    #[tokio::test]
    async fn a_request_that_goes_away_takes_its_plan_along() {
        let plans = plans(10_000, 4, 60_000);
        let waiting = plans.plan("t".into(), PlanRequest::default(), slow(5_000));
        assert!(tokio::time::timeout(Duration::from_millis(50), waiting).await.is_err());
        assert!(plans.inner.lock().is_empty(), "an abandoned plan stayed");
    }

    #[tokio::test]
    async fn plans_wait_their_turn() {
        let plans = plans(0, 4, 60_000);
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..3 {
            let (running, most) = (running.clone(), most.clone());
            let work = async move {
                let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                Ok(empty())
            };
            plans.plan("t".into(), PlanRequest::default(), work).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 1, "concurrency 1 ran plans side by side");
    }
}
