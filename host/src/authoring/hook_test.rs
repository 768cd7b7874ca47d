//! `rustberg plugin test` for a gate or a sink: the component runs in-process under the
//! host's runtime and limits, and is asked what the server would ask it. A gate is put
//! sample changes of every kind (each verdict printed); a sink is handed a batch of
//! sample events. A case fails when the component traps, runs out of time or memory,
//! or (a gate) refuses without a reason; a sink that answers an error passes, with
//! the error printed, since its destination may be unreachable from here.

use std::io::Write;
use std::time::Instant;

use anyhow::anyhow;

use crate::config::{Config, HookConfig, MountGrant, PluginOverrides};
use crate::events::{Actor, Event, Operation};
use crate::mounts::component_grants;
use crate::sandbox::bindings::hooks::{Proposal, Verdict};
use crate::sandbox::builtin::Wasm;
use crate::sandbox::contract;
use crate::sandbox::pool::{GateKind, SinkKind};
use crate::sandbox::Runtime;

/// An origin nothing listens on: what an http gate or sink is granted here.
const NOWHERE: &str = "http://127.0.0.1:9";

/// Tests `wasm` if it is a gate or a sink, writing the report to `out`: `None` when it
/// is neither (then it is a backend, for the conformance suite), else whether it passed.
pub async fn run(wasm: &Wasm, config: &Config, out: &mut impl Write) -> anyhow::Result<Option<bool>> {
    let runtime = Runtime::new(
        std::slice::from_ref(&config.plugins),
        config.component_cache_dir(),
        config.component_cache.max_mib << 20,
    )
    .map_err(|e| anyhow!("starting the plugin runtime: {e:#}"))?;
    let compiled = runtime.compile(wasm.clone(), "component").await.map_err(|e| anyhow!(e))?;
    let (imports, exports) = runtime.interface(&compiled);
    let kind = contract::kind_of(exports.iter().map(String::as_str));
    if !matches!(kind, Some("gate" | "sink")) {
        return Ok(None);
    }
    // What it imports of http, it is granted, on an origin that answers nothing.
    let http = imports.iter().any(|name| name.starts_with("rustberg:catalog/http@"));
    let hook = HookConfig {
        plugin: String::new(),
        grants: if http { vec![MountGrant::Http] } else { vec![] },
        url: http.then(|| NOWHERE.to_string()),
        http_origins: vec![],
        tcp_origins: vec![],
        auth: None,
        config: Default::default(),
        connect_timeout_ms: 250,
        request_timeout_ms: 500,
        plugins: PluginOverrides::default(),
    };
    let nowhere = crate::config::CatalogUrl::Redb(std::path::PathBuf::new());
    let label = format!("{} under test", kind.unwrap_or_default());
    let grants = component_grants(&label, &hook.as_mount(), &nowhere).await?;
    let passed = match kind {
        Some("gate") => {
            let pool = runtime.load::<GateKind>(wasm.clone(), grants, config.plugins.clone()).await?;
            writeln!(out, "the gate, asked about one change of each kind")?;
            let mut failed = 0;
            for proposal in proposals() {
                let started = Instant::now();
                let asked = proposal.clone();
                let verdict =
                    pool.call(None, |store, gate| Box::pin(async move { gate.call_admit(store, &asked).await })).await;
                let ms = started.elapsed().as_secs_f64() * 1e3;
                let what = format!("{} {}", proposal.operation, proposal.namespace.join("."));
                match verdict {
                    Ok(Verdict::Allow) => writeln!(out, "  pass  {what:<40} allowed ({ms:.1} ms)")?,
                    Ok(Verdict::Refuse(reason)) if !reason.trim().is_empty() => {
                        writeln!(out, "  pass  {what:<40} refused: {reason} ({ms:.1} ms)")?
                    }
                    Ok(Verdict::Refuse(_)) => {
                        failed += 1;
                        writeln!(out, "  FAIL  {what}: refused without a reason (the client would read none)")?
                    }
                    Err(e) => {
                        failed += 1;
                        writeln!(out, "  FAIL  {what}: {e}")?
                    }
                }
            }
            failed == 0
        }
        _ => {
            let pool = runtime.load::<SinkKind>(wasm.clone(), grants, config.plugins.clone()).await?;
            let batch = sample_events();
            writeln!(out, "the sink, handed a batch of {} events", batch.len())?;
            let started = Instant::now();
            let delivered =
                pool.call(None, |store, sink| Box::pin(async move { sink.call_deliver(store, &batch).await })).await;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match delivered {
                Ok(Ok(())) => writeln!(out, "  pass  delivered ({ms:.1} ms)")?,
                Ok(Err(said)) => writeln!(
                    out,
                    "  pass  answered an error, which the server would retry: {said} ({ms:.1} ms; its http origin here is {NOWHERE})"
                )?,
                Err(e) => {
                    writeln!(out, "  FAIL  {e}")?;
                    return Ok(Some(false));
                }
            }
            true
        }
    };
    writeln!(out, "{}", if passed { "passed" } else { "failed" })?;
    Ok(Some(passed))
}

/// One change of each kind, as a tester in tenant `acme` would ask for it in mount `prod`.
fn proposals() -> Vec<Proposal> {
    let ask = |operation: &str, name: &str, properties: &[(&str, &str)], request: &str| Proposal {
        operation: operation.to_string(),
        mount: "prod".to_string(),
        namespace: vec!["prod".to_string(), "sales".to_string()],
        name: name.to_string(),
        principal: "tester".to_string(),
        tenant: "acme".to_string(),
        request_id: "plugin-test".to_string(),
        properties: properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        request: request.to_string(),
    };
    vec![
        ask(
            "create-namespace",
            "",
            &[("owner", "ana")],
            r#"{"namespace":["prod","sales"],"properties":{"owner":"ana"}}"#,
        ),
        ask("update-namespace-properties", "", &[], r#"{"removals":["owner"],"updates":{}}"#),
        ask("create-table", "orders", &[], r#"{"name":"orders","schema":{"type":"struct","fields":[]}}"#),
        ask("create-table", "orders", &[("owner", "ana")], r#"{"name":"orders","properties":{"owner":"ana"}}"#),
        ask(
            "update-table",
            "orders",
            &[],
            r#"{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}"#,
        ),
        ask(
            "rename-table",
            "orders",
            &[],
            r#"{"source":{"namespace":["prod","sales"],"name":"orders"},"destination":{"namespace":["prod","sales"],"name":"orders2"}}"#,
        ),
        ask("drop-table", "orders", &[], r#"{"purge-requested":true}"#),
        ask("create-view", "daily", &[], r#"{"name":"daily"}"#),
        ask("drop-namespace", "", &[], ""),
    ]
}

/// Two events, as a sink would be handed them.
fn sample_events() -> Vec<String> {
    let actor = Actor { principal: "tester".into(), tenant: "acme".into() };
    [
        Operation::CreateNamespace { namespace: vec!["prod".into(), "sales".into()], properties: Default::default() },
        Operation::DropNamespace { namespace: vec!["prod".into(), "sales".into()] },
    ]
    .into_iter()
    .enumerate()
    .map(|(i, operation)| {
        let event = Event {
            event_id: format!("00000000-0000-7000-8000-00000000000{i}"),
            request_id: "plugin-test".into(),
            request_event_count: 1,
            timestamp_ms: jiff::Timestamp::now().as_millisecond(),
            actor: actor.clone(),
            operation,
        };
        serde_json::to_string(&event.cloud_event("rustberg-plugin-test")).expect("JSON")
    })
    .collect()
}
