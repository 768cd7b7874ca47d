//! The configuration file (TOML) and its defaults. Every key is documented in
//! `docs/configuration.md`. One file per section: `server` (with `[log]`, `[audit]`,
//! `[component_cache]`), `auth`, `storage`, `mounts`, `events`, `hooks` (gates and plugin
//! sinks), `planning`, `policies`; this one reads the file and checks
//! that the sections agree.

mod auth;
mod events;
mod hooks;
mod mounts;
mod planning;
mod policies;
mod server;
mod storage;

pub use auth::*;
pub use events::*;
pub use hooks::*;
pub use mounts::*;
pub use planning::*;
pub use policies::*;
pub use server::*;
pub use storage::*;

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub plugins: PluginLimits,
    /// `[component_cache]`: where compiled components are kept.
    pub component_cache: ComponentCacheConfig,
    /// `[log]`: how log lines are written.
    pub log: LogConfig,
    /// `[audit]`: the audit log of authorization decisions.
    pub audit: AuditConfig,
    pub auth: AuthConfig,
    /// `[mount.<name>]`: catalogs mounted under top-level names.
    #[serde(rename = "mount")]
    pub mounts: std::collections::BTreeMap<String, MountConfig>,
    /// `[events]`: events of changes, and where they are pushed.
    pub events: EventsConfig,
    /// `[gates.<name>]`: admission gates, which see every change before it is made.
    pub gates: std::collections::BTreeMap<String, HookConfig>,
    /// `[planning]`: server-side scan planning, answered at once or polled for.
    pub planning: PlanningConfig,
    /// `[policy.<name>]`: read policies (row filters and column masks).
    #[serde(rename = "policy")]
    pub policies: std::collections::BTreeMap<String, PolicyConfig>,
}

impl Config {
    /// Where compiled components are cached.
    pub fn component_cache_dir(&self) -> PathBuf {
        if let Some(dir) = &self.component_cache.dir {
            return dir.clone();
        }
        let user_cache = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
        match user_cache {
            Some(dir) => dir.join("rustberg").join("components"),
            None => self.data_dir().join("component-cache"),
        }
    }
}

/// A configuration error, reported at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {source}")]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error("invalid value for {key}: {reason}")]
    Invalid { key: &'static str, reason: String },
    #[error("the configuration cannot work:\n  - {}", .0.join("\n  - "))]
    Contradictions(Vec<String>),
}

impl Config {
    /// Reads a TOML configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse { path: path.to_owned(), source })
    }

    /// The limits the calls of mount `name` run under.
    /// The limits of every component the server runs: the root catalog's backend, each
    /// mount's, each gate's and each plugin sink's (the runtime's pool is sized by them).
    pub fn all_plugin_limits(&self) -> Vec<PluginLimits> {
        let hooks = self.gates.values().chain(self.events.plugins.values()).map(|h| h.plugins.over(&self.plugins));
        std::iter::once(self.plugins.clone())
            .chain(self.mounts.keys().map(|m| self.plugin_limits(m)))
            .chain(hooks)
            .collect()
    }

    pub fn plugin_limits(&self, name: &str) -> PluginLimits {
        match self.mounts.get(name) {
            Some(mount) => mount.plugins.over(&self.plugins),
            None => self.plugins.clone(),
        }
    }

    /// Refuses limits and mounts that cannot work together, listing every problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let scopes = std::iter::once(("plugins".to_string(), self.plugins.clone()))
            .chain(self.mounts.keys().map(|name| (format!("mount.{name}.plugins"), self.plugin_limits(name))));
        for (scope, limits) in scopes {
            for (key, value) in [
                ("call_timeout_ms", limits.call_timeout_ms),
                ("memory_limit_mib", limits.memory_limit_mib),
                ("pool_size", limits.pool_size as u64),
                ("recycle_after_calls", limits.recycle_after_calls),
            ] {
                if value == 0 {
                    problems.push(format!("{scope}.{key} is 0: no backend call could run"));
                }
            }
        }
        let mut subjects = std::collections::HashMap::new();
        for (name, principal) in &self.auth.principals {
            let Some(subject) = &principal.oidc_subject else { continue };
            if self.auth.oidc.is_none() {
                problems.push(format!("auth.principals.{name}.oidc_subject is set, but there is no [auth.oidc]"));
            }
            if let Some(other) = subjects.insert(subject, name) {
                problems.push(format!("auth.principals.{name} and auth.principals.{other} name the same oidc_subject"));
            }
        }
        let mut stores: std::collections::HashMap<CatalogUrl, &str> = std::collections::HashMap::new();
        for (name, mount) in &self.mounts {
            if crate::prefixes::RESERVED.contains(&name.as_str()) {
                problems.push(format!(
                    "mount.{name}: `{name}` is a REST prefix of the catalog's own; name the mount otherwise"
                ));
            }
            let limits = self.plugin_limits(name);
            let grants = mount.grants();
            let readers: Vec<&str> = MountGrant::ALL.iter().filter(|g| grants.contains(g)).map(|g| g.name()).collect();
            if readers.len() > 1 {
                problems.push(format!(
                    "mount.{name} grants {}: its catalog_url is one of a store (kv), an origin (http) or an address (tcp)",
                    readers.join(" and ")
                ));
            }
            if !mount.tcp_origins.is_empty() && !grants.contains(&MountGrant::Tcp) {
                problems.push(format!("mount.{name}.tcp_origins is set but the mount does not grant tcp"));
            }
            if mount.auth.is_some() && mount.token_env.is_some() {
                problems.push(format!("mount.{name} sets both token_env and [mount.{name}.auth]: keep one"));
            }
            if mount.auth().is_some() && !grants.contains(&MountGrant::Http) {
                problems.push(format!("mount.{name} has a credential for http requests but does not grant http"));
            }
            if !mount.http_origins.is_empty() && !grants.contains(&MountGrant::Http) {
                problems.push(format!("mount.{name}.http_origins is set but the mount does not grant http"));
            }
            if grants.contains(&MountGrant::Http) {
                if mount.request_timeout_ms > limits.call_timeout_ms {
                    problems.push(format!(
                        "mount.{name}.request_timeout_ms ({}) is above {} ({}): the call would be cut off before the remote's answer could be reported",
                        mount.request_timeout_ms,
                        match mount.plugins.call_timeout_ms {
                            Some(_) => format!("mount.{name}.plugins.call_timeout_ms"),
                            None => "plugins.call_timeout_ms".into(),
                        },
                        limits.call_timeout_ms
                    ));
                }
                continue;
            }
            if let Ok(url) = CatalogUrl::parse(&mount.catalog_url) {
                if let Some(other) = stores.insert(url, name) {
                    problems.push(format!(
                        "mount.{name} and mount.{other} use the same catalog_url: one store would serve two catalogs"
                    ));
                }
            }
        }
        problems.extend(self.events.problems());
        problems.extend(self.planning.problems());
        for (name, policy) in &self.policies {
            problems.extend(policy.problems(name));
        }
        for (name, gate) in &self.gates {
            problems.extend(gate.problems(&format!("gates.{name}"), &self.plugins));
        }
        for (name, sink) in &self.events.plugins {
            problems.extend(sink.problems(&format!("events.plugin.{name}"), &self.plugins));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            problems.sort();
            Err(ConfigError::Contradictions(problems))
        }
    }

    /// The data directory as an absolute path.
    pub fn data_dir(&self) -> PathBuf {
        std::path::absolute(&self.server.data_dir).unwrap_or_else(|_| self.server.data_dir.clone())
    }

    /// Where the root catalog (and the host's own key space) lives: a redb file
    /// (default `<data_dir>/catalog.redb`) or a Postgres database shared by several hosts.
    pub fn root_catalog(&self) -> Result<CatalogUrl, ConfigError> {
        match &self.storage.catalog_url {
            None => Ok(CatalogUrl::Redb(self.data_dir().join("catalog.redb"))),
            Some(url) => {
                CatalogUrl::parse(url).map_err(|reason| ConfigError::Invalid { key: "storage.catalog_url", reason })
            }
        }
    }

    /// The root warehouse, as a `file://` or `s3://` URL without a trailing slash.
    pub fn warehouse(&self) -> Result<String, ConfigError> {
        let location = match &self.storage.warehouse_location {
            Some(location) => location.clone(),
            None => format!("file://{}", self.data_dir().join("warehouse").display()),
        };
        warehouse_url(&location).map_err(|reason| ConfigError::Invalid { key: "storage.warehouse_location", reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale-out example's configuration stays one `serve` accepts.
    #[test]
    fn the_scale_out_example_is_a_valid_configuration() {
        let config: Config = toml::from_str(include_str!("../../../deploy/rustberg.toml")).unwrap();
        config.check().unwrap();
        assert!(matches!(config.root_catalog(), Ok(CatalogUrl::Postgres(_))));
        assert!(config.audit.enabled && config.audit.file.is_some());
    }

    #[test]
    fn contradictions_are_all_listed() {
        let config: Config = toml::from_str(
            r#"
            [plugins]
            call_timeout_ms = 1000
            pool_size = 0
            [mount.a]
            backend = "native"
            catalog_url = "redb:///x/a.redb"
            owner = "t"
            [mount.b]
            backend = "native"
            catalog_url = "redb:///x/a.redb"
            owner = "t"
            [mount.r]
            backend = "rest"
            catalog_url = "http://127.0.0.1:1"
            owner = "t"
            request_timeout_ms = 5000
            "#,
        )
        .unwrap();
        let message = config.check().unwrap_err().to_string();
        for expected in [
            "plugins.pool_size is 0",
            "mount.b and mount.a use the same catalog_url",
            "mount.r.request_timeout_ms (5000)",
        ] {
            assert!(message.contains(expected), "{expected} in {message}");
        }
        assert!(Config::default().check().is_ok());
    }
}
