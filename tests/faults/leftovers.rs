//! What a run left behind in the host's store and the warehouse: intents not settled,
//! location claims that nothing holds, and metadata files that nothing refers to.
//!
//! Some are expected, and bounded: a create or commit whose outcome the server could
//! not tell (CommitStateUnknownException, or no answer) keeps its claim and its
//! metadata file for safety (docs/reliability.md says what removes them).

use std::collections::BTreeSet;

use serde_json::Value;

use super::history::Outcome;
use super::workload::{Host, Workload, AREA, COMMITTED, PAIR};

/// The space the host keeps its records in (`server.rs`).
const HOST_SPACE: &str = "rustberg:host";

#[derive(Debug, Default)]
pub struct Leftovers {
    /// Intents in the host's store (every run's, not only this one's).
    pub intents: usize,
    /// Claims under the run's namespace that no namespace or table of it holds.
    pub stray_claims: Vec<String>,
    /// Metadata files in the run's tables that neither their metadata nor its log
    /// names, newer than the oldest the log names (older ones left the log as Iceberg
    /// means them to).
    pub stray_files: usize,
}

/// The host store's keys under `prefix`.
async fn keys(pool: &sqlx::PgPool, prefix: &str) -> Vec<String> {
    let mut end = prefix.as_bytes().to_vec();
    *end.last_mut().unwrap() += 1;
    let rows: Vec<(Vec<u8>,)> =
        sqlx::query_as("SELECT key FROM rustberg_kv WHERE space = $1 AND key >= $2 AND key < $3 ORDER BY key")
            .bind(HOST_SPACE)
            .bind(prefix.as_bytes())
            .bind(end)
            .fetch_all(pool)
            .await
            .unwrap();
    rows.into_iter().map(|(k,)| String::from_utf8_lossy(&k).into_owned()).collect()
}

/// What the run over `workload` left, the host's store in Postgres at `catalog_url`,
/// the tables read through `host`.
pub async fn leftovers(catalog_url: &str, workload: &Workload, host: &Host) -> Leftovers {
    let pool = sqlx::PgPool::connect(catalog_url).await.unwrap();
    let intents = keys(&pool, "intent/").await.len();
    let mut tables = vec![];
    for name in COMMITTED.into_iter().chain(PAIR).chain(AREA) {
        if let Some(table) = workload.load(host, name).await {
            tables.push(table);
        }
    }
    let location = |table: &Value| table["metadata"]["location"].as_str().unwrap().trim_end_matches('/').to_string();
    let namespace = location(&tables[0]).rsplit_once('/').unwrap().0.to_string();
    let area = format!("{namespace}/area");
    let mut held: BTreeSet<String> = tables.iter().map(location).collect();
    held.insert(namespace.clone());
    if workload.namespace_exists(host, AREA[0]).await {
        held.insert(area);
    }
    let stray_claims = keys(&pool, &format!("loc/{namespace}/"))
        .await
        .into_iter()
        .map(|key| key["loc/".len()..key.len() - 1].to_string())
        .filter(|claimed| !held.contains(claimed))
        .collect();
    pool.close().await;
    let stray_files = tables.iter().map(stray_files).sum();
    Leftovers { intents, stray_claims, stray_files }
}

/// The metadata files in `table`'s folder (a local warehouse) that nothing names.
fn stray_files(table: &Value) -> usize {
    let Some(folder) = table["metadata"]["location"].as_str().and_then(|l| l.strip_prefix("file://")) else {
        return 0;
    };
    let mut named: BTreeSet<String> = table["metadata"]["metadata-log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["metadata-file"].as_str())
        .map(file_name)
        .collect();
    named.insert(file_name(table["metadata-location"].as_str().unwrap()));
    let oldest = named.iter().filter_map(|f| version_of(f)).min().unwrap_or(0);
    let Ok(entries) = std::fs::read_dir(format!("{folder}/metadata")) else { return 0 };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".metadata.json") && !named.contains(f))
        .filter(|f| version_of(f).is_some_and(|v| v >= oldest))
        .count()
}

fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

/// `00012-<uuid>.metadata.json`: 12.
fn version_of(file: &str) -> Option<u64> {
    file.split('-').next()?.parse().ok()
}

/// How many writes of `op` (a create, a commit, …) ended with their outcome unknown or
/// failed: each may leave a claim or a file.
pub fn undecided(workload: &Workload, ops: &[&str]) -> usize {
    let operations = workload.history.operations();
    operations.iter().filter(|o| ops.contains(&o.op) && matches!(o.outcome, Outcome::Unknown | Outcome::Failed)).count()
}

/// How many drops took effect or may have: each may leave its table's claim, which is
/// released after the drop, when that release fails (until its namespace is dropped).
pub fn drops_not_refused(workload: &Workload) -> usize {
    let operations = workload.history.operations();
    operations.iter().filter(|o| o.op == "drop" && !matches!(o.outcome, Outcome::Refused)).count()
}
