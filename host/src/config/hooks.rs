//! `[gates.<name>]` and `[events.plugin.<name>]`: components that are not backends (an
//! admission gate, an event sink), what each is granted, and its limits.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{MountAuth, MountConfig, MountGrant, PluginLimits, PluginOverrides};

/// A gate's or a plugin sink's component, and what it may reach.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// The component file (`.wasm`).
    pub plugin: String,
    /// What it may use besides its configuration, the log and the clock: `http`
    /// (requests to `url`'s origin and `http_origins`) or `tcp` (connections to `url`'s
    /// host and port and `tcp_origins`). Default: nothing. Never `kv`.
    #[serde(default)]
    pub grants: Vec<MountGrant>,
    /// The service it reaches, for `http` or `tcp`.
    pub url: Option<String>,
    /// Origins besides `url`'s that the http grant reaches.
    #[serde(default)]
    pub http_origins: Vec<String>,
    /// Addresses besides `url`'s that the tcp grant reaches.
    #[serde(default)]
    pub tcp_origins: Vec<String>,
    /// The credential the host adds to its http requests (the component never sees it).
    pub auth: Option<MountAuth>,
    /// Plain string settings the component reads with `config.get`.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// How long connecting and one request may take, in milliseconds (http).
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Its own limits, over `[plugins]`.
    #[serde(default)]
    pub plugins: PluginOverrides,
}

fn default_connect_timeout_ms() -> u64 {
    1_000
}

fn default_request_timeout_ms() -> u64 {
    2_000
}

impl HookConfig {
    /// The same grants written as a mount's, so that a hook's origins and addresses are
    /// granted and checked by the mounts' own rules (`url` stands for `catalog_url`).
    pub fn as_mount(&self) -> MountConfig {
        MountConfig {
            backend: self.plugin.clone(),
            catalog_url: self.url.clone().unwrap_or_default(),
            warehouse_location: None,
            owner: String::new(),
            unstructured_locations: false,
            grants: Some(self.grants.clone()),
            config: self.config.clone(),
            auth: self.auth.clone(),
            token_env: None,
            http_origins: self.http_origins.clone(),
            tcp_origins: self.tcp_origins.clone(),
            read_only: None,
            connect_timeout_ms: self.connect_timeout_ms,
            request_timeout_ms: self.request_timeout_ms,
            plugins: self.plugins.clone(),
            s3: None,
        }
    }

    /// What cannot work, each problem prefixed with `scope` (`gates.<name>`).
    pub fn problems(&self, scope: &str, defaults: &PluginLimits) -> Vec<String> {
        let mut problems = Vec::new();
        if self.grants.contains(&MountGrant::Kv) {
            problems.push(format!("{scope} grants kv: a gate or a sink keeps no state of its own"));
        }
        let reaches = self.grants.contains(&MountGrant::Http) || self.grants.contains(&MountGrant::Tcp);
        if reaches && self.url.is_none() {
            problems.push(format!("{scope} grants {}, which needs a url", self.grants_named()));
        }
        if self.grants.contains(&MountGrant::Http) && self.grants.contains(&MountGrant::Tcp) {
            problems.push(format!("{scope} grants http and tcp: its url is one of an origin or an address"));
        }
        if !self.http_origins.is_empty() && !self.grants.contains(&MountGrant::Http) {
            problems.push(format!("{scope}.http_origins is set but it does not grant http"));
        }
        if !self.tcp_origins.is_empty() && !self.grants.contains(&MountGrant::Tcp) {
            problems.push(format!("{scope}.tcp_origins is set but it does not grant tcp"));
        }
        let limits = self.plugins.over(defaults);
        if limits.call_timeout_ms == 0 || limits.pool_size == 0 || limits.memory_limit_mib == 0 {
            problems.push(format!("{scope}.plugins: a limit is 0: no call could run"));
        }
        problems
    }

    fn grants_named(&self) -> String {
        self.grants.iter().map(|g| g.name()).collect::<Vec<_>>().join(" and ")
    }
}
