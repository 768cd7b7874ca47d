//! `rustberg plugin check`: what a component is (contract version, world, imports,
//! exports) and whether a mount's grants would accept it, without serving anything.

use std::io::Write;

use anyhow::anyhow;

use crate::config::Config;
use crate::sandbox::contract::{self, Granted, HOST_VERSION};
use crate::sandbox::pool::{BackendKind, GateKind, SinkKind};
use crate::sandbox::{builtin, Runtime};

/// Prints the report for `component` (a file or a built-in name); with `mount`, judged
/// by that mount's grants. Ok(true) when the component would be accepted.
pub async fn check(
    component: &str,
    config: &Config,
    mount: Option<&str>,
    out: &mut impl Write,
) -> anyhow::Result<bool> {
    let wasm = builtin::component(component).map_err(|e| anyhow!(e))?;
    let granted = match mount {
        Some(name) => {
            let mount = config.mounts.get(name).ok_or_else(|| anyhow!("the configuration has no [mount.{name}]"))?;
            Some(Granted::from(mount.grants().as_slice()))
        }
        None => None,
    };
    let runtime = Runtime::new(
        std::slice::from_ref(&config.plugins),
        config.component_cache_dir(),
        config.component_cache.max_mib << 20,
    )
    .map_err(|e| anyhow!("starting the plugin runtime: {e:#}"))?;
    let compiled = runtime.compile(wasm.clone(), component).await.map_err(|e| anyhow!(e))?;
    let (imports, exports) = runtime.interface(&compiled);

    let digest: String = wasm.digest().iter().map(|b| format!("{b:02x}")).collect();
    writeln!(out, "component  {component} ({} bytes, sha256 {digest})", wasm.len())?;
    let names = || exports.iter().map(String::as_str);
    // What it is: a backend, a gate or a sink, by the interface it exports.
    let kind = contract::kind_of(names());
    let hook = matches!(kind, Some("gate" | "sink"));
    let built = match kind {
        Some("gate") => contract::export_verdict::<GateKind>(names()),
        Some("sink") => contract::export_verdict::<SinkKind>(names()),
        _ => contract::export_verdict::<BackendKind>(names()),
    };
    writeln!(out, "kind       {}", kind.unwrap_or("none (it exports no backend, admission-gate or event-sink)"))?;
    match &built {
        Ok(version) if version.series() == HOST_VERSION.series() => {
            writeln!(out, "contract   rustberg:catalog@{version} (this host: {}; compatible)", *HOST_VERSION)?
        }
        Ok(version) => writeln!(
            out,
            "contract   rustberg:catalog@{version} (this host: {}; loaded through its earlier series' bindings: \
             it lists endpoint strings where the current series declares features; docs/plugins.md, \
             \"Migrating from 0.1\")",
            *HOST_VERSION
        )?,
        Err(why) => writeln!(out, "contract   {why}")?,
    }
    let imports_interface = |i: &str| imports.iter().any(|n| n.starts_with(&format!("rustberg:catalog/{i}@")));
    let sockets = imports.iter().any(|n| n.starts_with("wasi:sockets/"));
    let (http, kv) = (imports_interface("http"), imports_interface("kv"));
    let world = match kind {
        Some(noun) if hook => match (kv, http, sockets) {
            (true, _, _) => format!("none: a {noun} imports kv, which is never granted to one"),
            (false, true, _) => format!("http-{noun} (needs the http grant)"),
            (false, false, true) => format!("{noun} over wasi:sockets (needs the tcp grant)"),
            (false, false, false) => format!("{noun} (needs no grant)"),
        },
        _ => match (kv, http, sockets) {
            (true, false, _) => "kv-backend (needs the kv grant)",
            (false, true, _) => "http-backend (needs the http grant)",
            (true, true, _) => "catalog-host (needs kv and http, which no mount grants together)",
            (false, false, true) => "tcp-backend (reaches its store over wasi:sockets: needs the tcp grant)",
            (false, false, false) => "kv-backend or http-backend (needs neither kv nor http)",
        }
        .to_string(),
    };
    writeln!(out, "world      {world}")?;
    if let Some(granted) = granted {
        writeln!(out, "grants     {}", granted.describe())?;
    }
    // Without a mount, judge the contract imports as if everything were granted.
    // A gate or a sink is never granted a key space.
    let judged_by = granted.unwrap_or(match hook {
        true => Granted { kv: false, ..Granted::ALL },
        false => Granted::ALL,
    });
    writeln!(out, "imports")?;
    let mut refused = built.is_err();
    for name in &imports {
        match contract::import_verdict(name, judged_by) {
            Ok(what) => writeln!(out, "  ok       {name:<44} {what}")?,
            Err(why) => {
                refused = true;
                writeln!(out, "  REFUSED  {name:<44} {why}")?;
            }
        }
    }
    writeln!(out, "exports")?;
    for name in &exports {
        writeln!(out, "  {name}")?;
    }
    let verdict = match (mount, refused) {
        (Some(name), false) => format!("mount `{name}` would accept it"),
        (Some(name), true) => format!("mount `{name}` would refuse it"),
        (None, false) => {
            "no import or export is refused (name a mount with --config and --mount to check its grants)".into()
        }
        (None, true) => "refused whatever the mount grants".into(),
    };
    writeln!(out, "verdict    {verdict}")?;
    Ok(!refused)
}
