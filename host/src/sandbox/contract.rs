//! The contract a component is checked against before it may serve a mount: the
//! version of `rustberg:catalog` it was built against, and every import it makes,
//! judged by what its mount grants and by this host's WASI policy. `runtime` refuses
//! a component on the first problem; `rustberg plugin check` prints every verdict.

use std::fmt;
use std::sync::LazyLock;

use super::pool::{BackendKind, GateKind, Kind, SinkKind};
use crate::config::MountGrant;

/// The WIT package this host implements, as built into it, and the earlier series it
/// still loads (frozen).
const WIT: &str = include_str!("../../../wit/catalog.wit");
const WIT_0_1: &str = include_str!("../../../wit/0.1/catalog.wit");
const PACKAGE: &str = "rustberg:catalog";

/// A `major.minor.patch` version of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(u64, u64, u64);

impl Version {
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.').map(|p| p.parse::<u64>().ok());
        let version = Version(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    }

    /// What semver (and wasmtime's linker) treats as one compatible series: the major,
    /// or `0.minor` while the major is 0.
    pub fn series(self) -> (u64, u64) {
        if self.0 == 0 {
            (0, self.1)
        } else {
            (self.0, 0)
        }
    }

    fn series_name(self) -> String {
        match self.series() {
            (0, minor) => format!("0.{minor}.x"),
            (major, _) => format!("{major}.x"),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The version a WIT file's `package` line declares.
fn declared(wit: &str) -> Version {
    wit.lines()
        .find_map(|line| line.trim().strip_prefix(&format!("package {PACKAGE}@"))?.strip_suffix(';'))
        .and_then(Version::parse)
        .expect("the WIT declares `package rustberg:catalog@x.y.z;`")
}

/// The version of the contract this host implements (the `package` line of the WIT).
pub static HOST_VERSION: LazyLock<Version> = LazyLock::new(|| declared(WIT));

/// The newest version of every series this host loads, the current one first: a
/// component of an earlier series is served through that series' bindings.
pub static SERIES: LazyLock<[Version; 2]> = LazyLock::new(|| [*HOST_VERSION, declared(WIT_0_1)]);

fn loaded_series() -> String {
    SERIES.iter().map(|v| v.series_name()).collect::<Vec<_>>().join(" and ")
}

/// What a mount grants its component.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Granted {
    pub kv: bool,
    pub http: bool,
    pub tcp: bool,
}

impl From<&[MountGrant]> for Granted {
    /// What a mount's `grants` give.
    fn from(grants: &[MountGrant]) -> Self {
        Self {
            kv: grants.contains(&MountGrant::Kv),
            http: grants.contains(&MountGrant::Http),
            tcp: grants.contains(&MountGrant::Tcp),
        }
    }
}

impl Granted {
    /// Everything a mount can grant (what `plugin check` judges by without a mount).
    pub const ALL: Granted = Granted { kv: true, http: true, tcp: true };

    pub fn describe(self) -> String {
        let mut grants = vec!["types", "log", "clock", "config"];
        grants.extend(self.names());
        grants.join(", ")
    }

    /// The grants a mount gave, by the names its `grants` key uses.
    pub fn names(self) -> Vec<&'static str> {
        [("kv", self.kv), ("http", self.http), ("tcp", self.tcp)]
            .into_iter()
            .filter_map(|(name, granted)| granted.then_some(name))
            .collect()
    }
}

/// What `wasi:sockets` gives a component, by whether its mount grants tcp.
const SOCKETS_GRANTED: &str = "TCP connections to the mount's addresses only (granted: tcp)";
const SOCKETS_DENIED: &str = "linked, every address refused (the mount grants no tcp)";

/// The WASI interfaces this host links, and the ones it refuses with the way to build
/// without them. The host's WASI has no preopened directory and no environment; its
/// sockets reach only what a mount's tcp grant names; stdout and stderr go to the log.
const WASI: &[(&str, Result<&str, &str>)] = &[
    ("wasi:cli/", Ok("stdout and stderr go to the log; the environment is empty")),
    ("wasi:clocks/", Ok("clocks")),
    ("wasi:io/", Ok("streams and polling")),
    ("wasi:random/", Ok("randomness")),
    ("wasi:filesystem/", Ok("a file system with no directory in it (componentize-js cannot build without it)")),
    ("wasi:sockets/", Ok(SOCKETS_DENIED)),
    (
        "wasi:http/",
        Err("outbound HTTP is the rustberg:catalog/http import, which adds the mount's credential; build \
             without wasi:http (jco componentize: -d http fetch-event)"),
    ),
];

/// Splits `ns:pkg/iface@version` into the interface and its version.
fn split(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((interface, version)) => (interface, Some(version)),
        None => (name, None),
    }
}

/// Whether a component built against `version` of the contract loads here.
fn check_version(name: &str, version: Option<&str>) -> Result<(), String> {
    let Some(built) = version.and_then(Version::parse) else {
        let host = *HOST_VERSION;
        return Err(format!("`{name}` has no x.y.z version of {PACKAGE}; build against wit/ of this host ({host})"));
    };
    let Some(&host) = SERIES.iter().find(|v| v.series() == built.series()) else {
        return Err(format!(
            "`{name}` was built against {PACKAGE}@{built}; this host ({}) loads components of {}",
            *HOST_VERSION,
            loaded_series()
        ));
    };
    if built > host {
        return Err(format!(
            "`{name}` was built against {PACKAGE}@{built}, newer than this host's {host}: upgrade Rustberg, \
             or build against the WIT of this host (`rustberg plugin new` writes it)"
        ));
    }
    Ok(())
}

/// Why an import is accepted (a short description), or why it is refused.
pub fn import_verdict(name: &str, granted: Granted) -> Result<&'static str, String> {
    let (interface, version) = split(name);
    if let Some(own) = interface.strip_prefix(&format!("{PACKAGE}/")) {
        check_version(name, version)?;
        return match own {
            "types" => Ok("the contract's types"),
            "log" => Ok("log lines tagged with the mount"),
            "clock" => Ok("wall-clock time"),
            "config" => Ok("the mount's [config] settings"),
            "kv" if granted.kv => Ok("the mount's key space (granted: kv)"),
            "http" if granted.http => Ok("requests to the mount's origins (granted: http)"),
            "kv" | "http" => Err(format!(
                "the component imports `{name}`, which this mount does not grant (it grants {}); \
                 add \"{own}\" to the mount's grants if it should",
                granted.describe()
            )),
            _ => Err(format!(
                "the component imports `{name}`, which {PACKAGE}@{} does not define",
                version.unwrap_or("?")
            )),
        };
    }
    if interface.starts_with("wasi:sockets/") && granted.tcp {
        return Ok(SOCKETS_GRANTED);
    }
    match WASI.iter().find(|(prefix, _)| interface.starts_with(prefix)) {
        Some((_, Ok(what))) => Ok(what),
        Some((_, Err(how))) => Err(format!("the component imports `{name}`, which no backend may: {how}")),
        None => Err(format!("the component imports `{name}`, which this host does not provide")),
    }
}

/// Checks that the component exports a compatible interface of kind `K` (`backend`,
/// `admission-gate`, `event-sink`), and answers the version it was built against.
pub fn export_verdict<'a, K: Kind>(mut exports: impl Iterator<Item = &'a str>) -> Result<Version, String> {
    let names: Vec<&str> = exports.by_ref().collect();
    let wanted = format!("{PACKAGE}/{}", K::INTERFACE);
    match names.iter().find(|name| split(name).0 == wanted) {
        Some(name) => {
            check_version(name, split(name).1)?;
            Ok(split(name).1.and_then(Version::parse).expect("checked above"))
        }
        None => Err(format!(
            "the component exports no `{wanted}`, so it is not a {} (it exports: {})",
            K::NOUN,
            if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
        )),
    }
}

/// The kind of component `exports` make: the first of backend, gate and sink whose
/// interface it exports.
pub fn kind_of<'a>(exports: impl Iterator<Item = &'a str> + Clone) -> Option<&'static str> {
    [
        (BackendKind::INTERFACE, BackendKind::NOUN),
        (GateKind::INTERFACE, GateKind::NOUN),
        (SinkKind::INTERFACE, SinkKind::NOUN),
    ]
    .into_iter()
    .find(|(interface, _)| exports.clone().any(|name| split(name).0 == format!("{PACKAGE}/{interface}")))
    .map(|(_, noun)| noun)
}

/// The first problem with a component as a `K`, if any: what it exports (whether it is
/// one at all), then each import; else the version of the contract it was built against.
pub fn check<'a, K: Kind>(
    imports: impl Iterator<Item = &'a str>,
    exports: impl Iterator<Item = &'a str>,
    granted: Granted,
) -> Result<Version, String> {
    let built = export_verdict::<K>(exports)?;
    for name in imports {
        import_verdict(name, granted)?;
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KV: Granted = Granted { kv: true, http: false, tcp: false };

    #[test]
    fn the_host_version_is_the_wits() {
        assert!(WIT.contains(&format!("package {PACKAGE}@{};", *HOST_VERSION)));
    }

    #[test]
    fn earlier_versions_of_the_series_load_and_others_do_not() {
        let host = *HOST_VERSION;
        let earlier = format!("{PACKAGE}/kv@{}.{}.0", host.0, host.1);
        assert!(import_verdict(&earlier, KV).is_ok());
        let newer = format!("{PACKAGE}/kv@{}.{}.{}", host.0, host.1, host.2 + 1);
        assert!(import_verdict(&newer, KV).unwrap_err().contains("newer than this host"));
        let next_series = format!("{PACKAGE}/kv@{}.{}.0", host.0, host.1 + 1);
        assert!(import_verdict(&next_series, KV).unwrap_err().contains("loads components of 0.2.x and 0.1.x"));
        // The series before loads, up to its last version.
        assert!(import_verdict(&format!("{PACKAGE}/kv@0.1.0"), KV).is_ok());
        assert!(import_verdict(&format!("{PACKAGE}/kv@0.1.3"), KV).is_ok());
        assert!(import_verdict(&format!("{PACKAGE}/kv@0.1.4"), KV).unwrap_err().contains("newer than this host"));
        assert!(import_verdict(&format!("{PACKAGE}/kv@0.0.9"), KV).unwrap_err().contains("loads components of"));
        assert!(import_verdict(&format!("{PACKAGE}/kv"), KV).unwrap_err().contains("no x.y.z version"));
    }

    #[test]
    fn grants_decide_kv_and_http() {
        let http = format!("{PACKAGE}/http@{}", *HOST_VERSION);
        let refused = import_verdict(&http, KV).unwrap_err();
        assert!(refused.contains("does not grant") && refused.contains("add \"http\""), "{refused}");
        assert!(import_verdict(&http, Granted { kv: false, http: true, tcp: false }).is_ok());
    }

    #[test]
    fn sockets_load_and_reach_only_what_tcp_grants() {
        let tcp = "wasi:sockets/tcp@0.2.9";
        assert_eq!(import_verdict(tcp, KV).unwrap(), SOCKETS_DENIED);
        assert_eq!(import_verdict(tcp, Granted { kv: false, http: false, tcp: true }).unwrap(), SOCKETS_GRANTED);
    }

    #[test]
    fn wasi_http_is_refused_with_a_way_out() {
        for (name, hint) in [
            ("wasi:http/outgoing-handler@0.2.0", "-d http fetch-event"),
            ("wasi:keyvalue/store@0.2.0", "does not provide"),
        ] {
            let refused = import_verdict(name, KV).unwrap_err();
            assert!(refused.contains(name) && refused.contains(hint), "{refused}");
        }
        for name in ["wasi:cli/stdout@0.2.9", "wasi:io/streams@0.2.0", "wasi:filesystem/preopens@0.2.12"] {
            assert!(import_verdict(name, KV).is_ok(), "{name}");
        }
    }

    #[test]
    fn a_component_without_the_backend_export_is_not_a_backend() {
        let refused = export_verdict::<BackendKind>(["wasi:cli/run@0.2.0"].into_iter()).unwrap_err();
        assert!(refused.contains("not a backend") && refused.contains("wasi:cli/run"), "{refused}");
        let ok = format!("{PACKAGE}/backend@{}", *HOST_VERSION);
        assert_eq!(export_verdict::<BackendKind>([ok.as_str()].into_iter()).unwrap(), *HOST_VERSION);
        let gate = format!("{PACKAGE}/admission-gate@{}", *HOST_VERSION);
        assert!(export_verdict::<BackendKind>([gate.as_str()].into_iter()).unwrap_err().contains("not a backend"));
        assert_eq!(export_verdict::<GateKind>([gate.as_str()].into_iter()).unwrap(), *HOST_VERSION);
        assert_eq!(kind_of([gate.as_str()].into_iter()), Some("gate"));
    }
}
