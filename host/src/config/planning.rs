//! `[planning]`: how long a scan plan may take before its client is told to poll, how
//! many plan at once, and how long a finished plan waits for its client.

use serde::Deserialize;

/// `[planning]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanningConfig {
    /// A plan that finishes within this many milliseconds is answered `completed`;
    /// a slower one `submitted`, and goes on in the background.
    pub budget_ms: u64,
    /// Plans computed at once, across every table; the rest wait their turn.
    pub concurrency: usize,
    /// Plans held at once (running or finished, waiting to be fetched); a plan beyond
    /// them that outruns its budget is answered 503.
    pub max_plans: usize,
    /// A held plan nobody asks about for this long is dropped (a running one stopped),
    /// and the credentials vended with it live no longer.
    pub plan_ttl_secs: u64,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        Self { budget_ms: 1000, concurrency: 2, max_plans: 64, plan_ttl_secs: 900 }
    }
}

impl PlanningConfig {
    /// What cannot work: no plan could ever run, be held, or be fetched.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.concurrency == 0 {
            problems.push("planning.concurrency is 0: no scan could be planned".to_string());
        }
        if self.max_plans == 0 {
            problems.push("planning.max_plans is 0: a plan that outruns its budget could not be held".to_string());
        }
        if self.plan_ttl_secs == 0 {
            problems.push(
                "planning.plan_ttl_secs is 0: a submitted plan would be dropped before its client polls".to_string(),
            );
        }
        problems
    }
}
