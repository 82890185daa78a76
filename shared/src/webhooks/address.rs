//! Where a webhook may be sent. A webhook URL is chosen by a tenant and fetched by our worker, so
//! it must not reach what only the worker can reach: the URL must be `https`, carry no
//! credentials, and its host must be, and resolve only to, public addresses (no loopback,
//! private, shared, link-local, cloud metadata, documentation, multicast or reserved ones). The
//! api checks this when an endpoint is registered or changed ([`check_url`], then
//! [`resolve_public`]); the worker checks every address again when it connects (its DNS resolver
//! refuses non-public answers, so a name that changes its answer after registration, DNS
//! rebinding, gains nothing) and follows no redirect. `WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`
//! lifts both rules, for local use and tests.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeUrl {
    #[error("{0}")]
    Invalid(String),
    #[error("a webhook URL must be https")]
    NotHttps,
    #[error("a webhook URL must not carry a user name or password")]
    Credentials,
    #[error("{0} is not a public address")]
    NotPublic(IpAddr),
    #[error("{host} resolves to {addr}, which is not a public address")]
    ResolvesNotPublic { host: String, addr: IpAddr },
    #[error("{0} does not resolve to any address")]
    Unresolvable(String),
}

/// Checks what can be checked without the network: scheme, credentials, and a host that is a
/// public address or a name. Returns the parsed URL.
pub fn check_url(url: &str, allow_private: bool) -> Result<Url, UnsafeUrl> {
    let parsed = Url::parse(url).map_err(|e| UnsafeUrl::Invalid(format!("not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_private => {}
        _ => return Err(UnsafeUrl::NotHttps),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UnsafeUrl::Credentials);
    }
    match parsed.host() {
        None => return Err(UnsafeUrl::Invalid("the URL has no host".into())),
        Some(_) if allow_private => {}
        Some(Host::Ipv4(ip)) => ensure_public(IpAddr::V4(ip))?,
        Some(Host::Ipv6(ip)) => ensure_public(IpAddr::V6(ip))?,
        // A name is judged by what it resolves to: [`resolve_public`], and again at connect time.
        Some(Host::Domain(_)) => {}
    }
    Ok(parsed)
}

/// Resolves a URL checked by [`check_url`] and requires every address to be public (all of
/// them: a client may connect to any). Unless `allow_private`.
pub async fn resolve_public(url: &Url, allow_private: bool) -> Result<Vec<SocketAddr>, UnsafeUrl> {
    let host = url
        .host_str()
        .ok_or_else(|| UnsafeUrl::Invalid("the URL has no host".into()))?;
    let port = url.port_or_known_default().unwrap_or(443);
    let lookup_host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((lookup_host, port))
        .await
        .map_err(|_| UnsafeUrl::Unresolvable(host.to_owned()))?
        .collect();
    if addrs.is_empty() {
        return Err(UnsafeUrl::Unresolvable(host.to_owned()));
    }
    if !allow_private {
        if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
            return Err(UnsafeUrl::ResolvesNotPublic {
                host: host.to_owned(),
                addr: bad.ip(),
            });
        }
    }
    Ok(addrs)
}

fn ensure_public(ip: IpAddr) -> Result<(), UnsafeUrl> {
    if is_public(ip) {
        Ok(())
    } else {
        Err(UnsafeUrl::NotPublic(ip))
    }
}

/// Azure's platform endpoint (the wire server behind VM agents, DHCP and DNS): public-looking,
/// and reachable only from inside Azure.
const AZURE_WIRE_SERVER: Ipv4Addr = Ipv4Addr::new(168, 63, 129, 16);

/// True for a globally routable unicast address a webhook may reach.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    const NOT_PUBLIC: [([u8; 4], u32); 16] = [
        ([0, 0, 0, 0], 8),       // "this network"
        ([10, 0, 0, 0], 8),      // private
        ([100, 64, 0, 0], 10),   // shared address space (carrier-grade NAT)
        ([127, 0, 0, 0], 8),     // loopback
        ([169, 254, 0, 0], 16),  // link-local, with the cloud metadata service 169.254.169.254
        ([172, 16, 0, 0], 12),   // private
        ([192, 0, 0, 0], 24),    // IETF protocol assignments
        ([192, 0, 2, 0], 24),    // documentation
        ([192, 88, 99, 0], 24),  // 6to4 relay anycast
        ([192, 168, 0, 0], 16),  // private
        ([198, 18, 0, 0], 15),   // benchmarking
        ([198, 51, 100, 0], 24), // documentation
        ([203, 0, 113, 0], 24),  // documentation
        ([224, 0, 0, 0], 4),     // multicast
        ([240, 0, 0, 0], 4),     // reserved, with the broadcast address
        ([168, 63, 129, 16], 32),
    ];
    ip != AZURE_WIRE_SERVER && !NOT_PUBLIC.iter().any(|&(net, p)| in_v4(ip, net, p))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    let bits = u128::from(ip);
    let in_v6 = |net: u128, prefix: u32| {
        let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
        bits & mask == net & mask
    };
    // Forms that carry an IPv4 address: judged by it.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if in_v6(0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96) {
        // NAT64: the IPv4 address in the last 32 bits.
        return is_public_v4(Ipv4Addr::from(bits as u32));
    }
    if seg[0] == 0x2002 {
        // 6to4: the IPv4 address in bits 16..48.
        return is_public_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    // Only global unicast (2000::/3) is public, less its special blocks.
    in_v6(0x2000 << 112, 3)
        && !in_v6(0x2001_0000 << 96, 32) // Teredo: a tunnel to an IPv4 address it hides
        && !in_v6(0x2001_0db8 << 96, 32) // documentation
        && !in_v6(0x2001_0010 << 96, 28) // ORCHID
        && !in_v6(0x2001_0020 << 96, 28) // ORCHIDv2
        && !in_v6(0x3fff_0000 << 96, 20) // documentation
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().expect("an address"))
    }

    #[test]
    fn only_globally_routable_unicast_addresses_are_public() {
        for ok in [
            "8.8.8.8",
            "20.1.2.3",
            "2606:4700::1111",
            "2001:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(public(ok), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "168.63.129.16",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
            "2001:db8::1",
            "2001::1",
            "::127.0.0.1",
            "fec0::1",
            "100::1",
        ] {
            assert!(!public(bad), "{bad}");
        }
        // Just outside the private blocks.
        assert!(public("172.32.0.1"));
        assert!(public("11.0.0.1"));
    }

    #[test]
    fn a_url_must_be_https_without_credentials_and_name_no_private_address() {
        assert!(check_url("https://hooks.example.com/in?x=1", false).is_ok());
        assert_eq!(
            check_url("http://hooks.example.com/", false),
            Err(UnsafeUrl::NotHttps)
        );
        assert_eq!(
            check_url("ftp://hooks.example.com/", true),
            Err(UnsafeUrl::NotHttps)
        );
        assert_eq!(
            check_url("https://u:p@hooks.example.com/", false),
            Err(UnsafeUrl::Credentials)
        );
        for bad in [
            "https://127.0.0.1/",
            "https://[::1]:8443/",
            "https://169.254.169.254/latest/meta-data",
            "https://10.1.2.3/",
            "https://2130706433/",
            "https://0x7f.1/",
            "https://[::ffff:7f00:1]/",
        ] {
            assert!(
                matches!(check_url(bad, false), Err(UnsafeUrl::NotPublic(_))),
                "{bad}: {:?}",
                check_url(bad, false)
            );
        }
        assert!(check_url("not a url", false).is_err());
        // Lifted for local use: http and loopback pass.
        assert!(check_url("http://127.0.0.1:8080/hook", true).is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_unless_allowed() {
        let url = check_url("https://localhost:1/", true).expect("allowed syntax");
        assert!(matches!(
            resolve_public(&url, false).await,
            Err(UnsafeUrl::ResolvesNotPublic { .. })
        ));
        assert!(resolve_public(&url, true).await.is_ok());
    }
}
