//! `[policy.<name>]`: read policies written in the configuration file, beside those the
//! management API keeps. What one means (and the checks of its row filter and masks) is
//! the policies' own (`scan::restrictions`); this file reads and checks its shape.

use serde::Deserialize;

/// `[policy.<name>]`: a row filter and column masks for one subject, on a table or on
/// every table under a namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// The namespace it restricts (and everything beneath it), by its levels.
    pub namespace: Vec<String>,
    /// A table of that namespace, to restrict that table alone.
    pub table: Option<String>,
    /// The subject, exactly one of: a principal's name, a role, a tenant.
    pub principal: Option<String>,
    pub role: Option<String>,
    pub tenant: Option<String>,
    /// An Iceberg expression as the REST spec writes it in JSON (a string holding it).
    pub row_filter: Option<String>,
    /// `{ column = "…", action = "…" }` (and `value` for `mask-to-fixed-value`).
    #[serde(default)]
    pub masks: Vec<toml::Value>,
}

impl PolicyConfig {
    /// What is wrong with `[policy.<name>]` as written.
    pub fn problems(&self, name: &str) -> Vec<String> {
        let mut problems = Vec::new();
        if self.namespace.is_empty() || self.namespace.iter().any(String::is_empty) {
            problems.push(format!("policy.{name}.namespace needs at least one level, none empty"));
        }
        let subjects = [&self.principal, &self.role, &self.tenant].iter().filter(|s| s.is_some()).count();
        if subjects != 1 {
            problems.push(format!("policy.{name} must name exactly one of principal, role or tenant"));
        }
        if let Some(row_filter) = &self.row_filter {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(row_filter) {
                problems.push(format!("policy.{name}.row_filter is not JSON: {e}"));
            }
        }
        problems
    }
}
