//! Admission gates: each configured gate, in name order, is asked about a change after
//! its caller was authorized and before anything is written. The first refusal stops
//! the change with a 403 naming the gate and giving its reason; a gate that fails (traps,
//! runs out of time or memory, cannot be instantiated) refuses too, naming itself.

use std::borrow::Cow;
use std::collections::HashMap;

use anyhow::Context;

use crate::config::Config;
use crate::error::Error;
use crate::events::Teller;
use crate::sandbox::bindings::hooks::{Proposal, Verdict};
use crate::sandbox::pool::GateKind;
use crate::sandbox::{InstancePool, Runtime};

/// The gates, in name order; none when `[gates]` names none.
#[derive(Default)]
pub struct Gates {
    gates: Vec<(String, InstancePool<GateKind>)>,
}

/// A change about to be made, as the handler knows it: everything a gate is told but
/// who asks. Borrowed, so that proposing costs nothing when no gate is configured.
pub struct Proposed<'a> {
    /// The events' name of the operation: `create-table`, `drop-namespace`, …
    pub operation: &'static str,
    /// The namespace in the mount's own names (the mount's name is added for the gate).
    pub namespace: &'a [String],
    /// The table or view, or empty for a namespace's change.
    pub name: &'a str,
    /// Properties the change sets.
    pub properties: Option<&'a HashMap<String, String>>,
    /// The request's JSON body, or what a drop asks (`{"purge-requested": …}`).
    pub request: Cow<'a, [u8]>,
}

impl<'a> Proposed<'a> {
    /// `operation` on `name` in `namespace` (an empty name for the namespace itself).
    pub fn of(operation: &'static str, namespace: &'a [String], name: &'a str) -> Self {
        Self { operation, namespace, name, properties: None, request: Cow::Borrowed(&[]) }
    }

    /// With the request's JSON body, as the client sent it.
    pub fn with_request(self, body: &'a [u8]) -> Self {
        Self { request: Cow::Borrowed(body), ..self }
    }

    /// With the properties the change sets.
    pub fn with_properties(self, properties: &'a HashMap<String, String>) -> Self {
        Self { properties: Some(properties), ..self }
    }

    /// A drop's request: whether the files go too.
    pub fn purging(self, purge: bool) -> Self {
        let request = serde_json::json!({ "purge-requested": purge }).to_string().into_bytes();
        Self { request: Cow::Owned(request), ..self }
    }
}

impl Gates {
    /// Loads every `[gates.<name>]` component; refuses to start on the first that
    /// cannot serve as a gate.
    pub async fn open(config: &Config, runtime: &Runtime) -> anyhow::Result<Self> {
        let mut gates = Vec::new();
        for (name, hook) in &config.gates {
            let pool = super::load::<GateKind>(format!("gate `{name}`"), hook, config, runtime)
                .await
                .with_context(|| format!("gates.{name}"))?;
            gates.push((name.clone(), pool));
        }
        Ok(Self { gates })
    }

    /// Whether no gate is configured: a change is then asked about nothing.
    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }

    /// Puts `proposed`, asked for by the request `teller` tells the changes of, to every
    /// gate in turn, in the mount `mount` (`None`: the root catalog). Ok when each allows it.
    pub async fn admit(&self, teller: &Teller, mount: Option<&str>, proposed: Proposed<'_>) -> Result<(), Error> {
        if self.gates.is_empty() {
            return Ok(());
        }
        let proposal = Proposal {
            operation: proposed.operation.to_string(),
            mount: mount.unwrap_or_default().to_string(),
            namespace: mount.iter().map(|m| m.to_string()).chain(proposed.namespace.iter().cloned()).collect(),
            name: proposed.name.to_string(),
            principal: teller.actor().principal.clone(),
            tenant: teller.actor().tenant.clone(),
            request_id: teller.request_id().to_string(),
            properties: proposed.properties.into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect(),
            request: String::from_utf8_lossy(&proposed.request).into_owned(),
        };
        for (name, pool) in &self.gates {
            // Each call owns what it lends the gate (a call's future outlives any borrow).
            let asked = proposal.clone();
            let verdict =
                pool.call(None, |store, gate| Box::pin(async move { gate.call_admit(store, &asked).await })).await;
            let reason = match verdict {
                Ok(Verdict::Allow) => continue,
                Ok(Verdict::Refuse(reason)) => reason,
                Err(e) => {
                    tracing::warn!(gate = %name, error = %e, "a gate failed, so it refuses the change");
                    format!("it failed, so it refuses: {}", e.message)
                }
            };
            crate::telemetry::gate_refusal(name);
            return Err(Error::Forbidden(format!("gate `{name}` refused the change: {reason}")));
        }
        Ok(())
    }

    /// How many gates there are.
    pub fn count(&self) -> usize {
        self.gates.len()
    }
}
