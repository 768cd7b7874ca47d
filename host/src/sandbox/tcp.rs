//! The `tcp` grant: the addresses a mount's component may open TCP connections to,
//! through `wasi:sockets`, and the check the host makes on every socket it is asked for.
//!
//! The guest names a host and a port; the host resolves the name (`ip-name-lookup`) and
//! checks each connection against the granted origins, resolved again by the host at
//! that moment, so a name that moves to another address keeps working and no guest can
//! reach an address by naming it. Listening, accepting and UDP are never allowed.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::WasiCtxBuilder;

/// The `host:port` origins a mount grants, and how it is named in the log.
#[derive(Debug, Clone)]
pub struct TcpGrant {
    label: String,
    origins: Arc<[(String, u16)]>,
}

/// `host:port` (a name, an IPv4 address, or a bracketed IPv6 one), or why it is not.
pub fn parse_origin(text: &str) -> Result<(String, u16), String> {
    let refuse = || format!("{text} is not an address (host:port)");
    let (host, port) = text.rsplit_once(':').ok_or_else(refuse)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| refuse())?;
    if host.is_empty() || port == 0 || host.contains(['/', '@', ' ']) {
        return Err(refuse());
    }
    Ok((host.to_ascii_lowercase(), port))
}

impl TcpGrant {
    pub fn new(label: String, origins: Vec<(String, u16)>) -> Self {
        Self { label, origins: origins.into() }
    }

    /// Whether a connection to `addr` reaches one of the granted origins.
    pub async fn allows(&self, addr: SocketAddr) -> bool {
        for (host, port) in self.origins.iter() {
            if *port != addr.port() {
                continue;
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                if ip == addr.ip() {
                    return true;
                }
                continue;
            }
            if let Ok(mut resolved) = tokio::net::lookup_host((host.as_str(), *port)).await {
                if resolved.any(|granted| granted.ip() == addr.ip()) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether the guest may use `addr` the way it asks: connections to the granted
    /// origins, and the implicit bind to the wildcard address a connection makes.
    async fn permits(&self, addr: SocketAddr, usage: SocketAddrUse) -> bool {
        let allowed = match usage {
            SocketAddrUse::TcpConnect => self.allows(addr).await,
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            _ => false,
        };
        if !allowed {
            tracing::warn!(mount = %self.label, address = %addr, use = ?usage,
                "refused a socket the mount does not grant (its tcp grant reaches {})", self.describe());
        }
        allowed
    }

    fn describe(&self) -> String {
        self.origins.iter().map(|(host, port)| format!("{host}:{port}")).collect::<Vec<_>>().join(", ")
    }
}

/// WASI's sockets for a mount: TCP to the origins of its grant when it has one, and
/// every address refused when it has none (`wasi:sockets` is linked for every component).
pub fn sockets(builder: &mut WasiCtxBuilder, grant: Option<&TcpGrant>) {
    builder.allow_udp(false);
    match grant {
        Some(grant) => {
            let grant = grant.clone();
            builder.allow_tcp(true).allow_ip_name_lookup(true).socket_addr_check(move |addr, usage| {
                let grant = grant.clone();
                Box::pin(async move { grant.permits(addr, usage).await })
            });
        }
        None => {
            builder.allow_tcp(false).allow_ip_name_lookup(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse() {
        assert_eq!(parse_origin("hms.internal:9083").unwrap(), ("hms.internal".into(), 9083));
        assert_eq!(parse_origin("[::1]:9083").unwrap(), ("::1".into(), 9083));
        for bad in ["hms", "hms:", "hms:0", ":9083", "a/b:1", "hms:99999"] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn only_granted_addresses_connect() {
        let grant = TcpGrant::new("mount `m`".into(), vec![("127.0.0.1".into(), 9083), ("localhost".into(), 9084)]);
        let connect = |a: &str| grant.permits(a.parse().unwrap(), SocketAddrUse::TcpConnect);
        assert!(connect("127.0.0.1:9083").await);
        assert!(connect("127.0.0.1:9084").await, "a granted name is resolved by the host");
        assert!(!connect("127.0.0.1:22").await);
        assert!(!connect("10.0.0.1:9083").await);
        assert!(grant.permits("0.0.0.0:0".parse().unwrap(), SocketAddrUse::TcpBind).await);
        assert!(!grant.permits("0.0.0.0:9083".parse().unwrap(), SocketAddrUse::TcpBind).await);
        assert!(!grant.permits("127.0.0.1:9083".parse().unwrap(), SocketAddrUse::TcpListen).await);
    }
}
