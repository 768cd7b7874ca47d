//! An admission gate in Rust: two house rules, set by its `[gates.<name>.config]`.
//!
//! - `required_property` (default `owner`; empty turns the rule off): a table, view or
//!   namespace is created only with that property set (non-empty), and a namespace's
//!   update may not remove it.
//! - `no_drop_in = "prod,finance"`: nothing is dropped in those mounts (a mount is the
//!   first level of the namespace; `-` stands for the root catalog).
//!
//! Everything else is allowed. A gate keeps no state between calls, and is asked
//! after the caller was authorized, so it only narrows what grants allow.

wit_bindgen::generate!({ world: "gate", path: "../../../wit" });

use exports::rustberg::catalog::admission_gate::{Guest, Proposal, Verdict};
use rustberg::catalog::config;

struct Gate;

impl Guest for Gate {
    fn admit(proposal: Proposal) -> Verdict {
        let property = config::get("required_property").unwrap_or_else(|| "owner".into());
        if !property.is_empty() {
            if let Some(reason) = lacks_property(&proposal, &property) {
                return Verdict::Refuse(reason);
            }
        }
        if let Some(mounts) = config::get("no_drop_in") {
            let mount = if proposal.mount.is_empty() { "-" } else { proposal.mount.as_str() };
            let guarded = mounts.split(',').map(str::trim).any(|m| m == mount);
            if guarded && proposal.operation.starts_with("drop-") {
                return Verdict::Refuse(format!("nothing is dropped in `{mount}` ({})", proposal.operation));
            }
        }
        Verdict::Allow
    }
}

/// Why a create (or a namespace's update) leaves `property` unset, if it does.
fn lacks_property(proposal: &Proposal, property: &str) -> Option<String> {
    let set = proposal.properties.iter().any(|(key, value)| key == property && !value.is_empty());
    match proposal.operation.as_str() {
        "create-table" | "create-view" | "create-namespace" if !set => {
            Some(format!("a {} needs the property `{property}`", &proposal.operation["create-".len()..]))
        }
        // The request names the keys it removes; a removal of `property` is refused.
        "update-namespace-properties" if removes(&proposal.request, property) => {
            Some(format!("the property `{property}` may not be removed"))
        }
        _ => None,
    }
}

/// Whether an updateNamespaceProperties body lists `property` among its removals
/// (read without a JSON parser: the key appears quoted in the `removals` array).
fn removes(request: &str, property: &str) -> bool {
    let Some(start) = request.find("\"removals\"") else { return false };
    let rest = &request[start..];
    let list = match (rest.find('['), rest.find(']')) {
        (Some(open), Some(close)) if open < close => &rest[open..close],
        _ => return false,
    };
    list.contains(&format!("\"{property}\""))
}

export!(Gate);
