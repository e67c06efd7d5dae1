//! Which client a request came from when a reverse proxy the endpoint
//! trusts forwarded it: the address in `X-Forwarded-For` that the last
//! trusted proxy was given, read from the right as nginx's `realip`
//! module does with `real_ip_recursive on`.
//!
//! Only a proxy named with [`HttpConfig::trust_proxy`] is believed, and
//! only for the hops it (and other trusted proxies) appended: a client can
//! write anything into the header it sends, but it cannot remove what the
//! proxies after it append. Without trusted proxies nothing here runs.
//!
//! [`HttpConfig::trust_proxy`]: super::HttpConfig::trust_proxy

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
pub use ipnet::IpNet;

/// The header a proxy appends its peer's address to.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The reverse proxies whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub(super) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Trusts the proxies in `net` too.
    pub(super) fn add(&mut self, net: IpNet) {
        self.0.push(net.trunc());
    }

    /// Whether no proxy is trusted (the default): every request is its
    /// connection's peer's.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is a trusted proxy's (an IPv4-mapped IPv6 address as
    /// its IPv4 address).
    pub(super) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client a request from `peer` came from, when `peer` is a trusted
    /// proxy: the rightmost address of `X-Forwarded-For` (all its fields,
    /// in order) that is not a trusted proxy's. `None` when `peer` is not
    /// trusted, or the header names no such address: then the request is
    /// the peer's. A value that is not an address (`unknown`, an
    /// obfuscated name, garbage) ends the walk at the trusted hop that
    /// passed it on, which is then the client.
    pub(super) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> Option<IpAddr> {
        if !self.trusts(peer) {
            return None;
        }
        let hops = headers
            .get_all(X_FORWARDED_FOR)
            .iter()
            .rev()
            .flat_map(|value| value.as_bytes().rsplit(|&b| b == b','));
        let mut reached = peer.to_canonical();
        let mut forwarded = false;
        for hop in hops {
            let Some(ip) = address(hop) else { break };
            reached = ip;
            forwarded = true;
            if !self.trusts(ip) {
                break;
            }
        }
        (forwarded && reached != peer.to_canonical()).then_some(reached)
    }
}

/// One `X-Forwarded-For` field as an address: `192.0.2.7`, `2001:db8::1`,
/// `[2001:db8::1]`, or either with a port (`192.0.2.7:4711`,
/// `[2001:db8::1]:4711`), with spaces around it.
fn address(field: &[u8]) -> Option<IpAddr> {
    let field = std::str::from_utf8(field).ok()?.trim();
    if let Ok(ip) = field.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(addr) = field.parse::<SocketAddr>() {
        return Some(addr.ip().to_canonical());
    }
    let bracketed = field.strip_prefix('[')?.strip_suffix(']')?;
    bracketed
        .parse::<std::net::Ipv6Addr>()
        .ok()
        .map(|v6| IpAddr::V6(v6).to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusting(nets: &[&str]) -> TrustedProxies {
        let mut proxies = TrustedProxies::default();
        for net in nets {
            proxies.add(net.parse().expect("a net"));
        }
        proxies
    }

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(X_FORWARDED_FOR, value.parse().expect("a header value"));
        }
        headers
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    /// One field of a generated `X-Forwarded-For`: a trusted proxy's
    /// address, a client's, or something that is no address.
    #[derive(Debug, Clone)]
    enum Hop {
        Proxy(u8),
        Client(u8),
        Junk(String),
    }

    impl Hop {
        fn field(&self) -> String {
            match self {
                Hop::Proxy(n) => format!("10.0.0.{n}"),
                Hop::Client(n) => format!("[2001:db8::{n:x}]:{}", u16::from(*n) + 1),
                Hop::Junk(text) => text.clone(),
            }
        }
    }

    fn hop() -> impl proptest::strategy::Strategy<Value = Hop> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u8>().prop_map(Hop::Proxy),
            any::<u8>().prop_map(Hop::Client),
            "[a-z_ ]{0,8}".prop_map(Hop::Junk),
        ]
    }

    proptest::proptest! {
        /// The walk agrees with the rule stated over the hops themselves:
        /// from the right, trusted hops are passed; the first client's is
        /// the answer; something that is no address stops at the hop
        /// before it; a client-written hop left of a client's is never
        /// believed. However the fields are split into header lines.
        #[test]
        fn the_client_is_the_rightmost_hop_not_a_trusted_proxys(
            hops in proptest::collection::vec(hop(), 0..8),
            lines in 1usize..4,
        ) {
            let proxies = trusting(&["10.0.0.0/8"]);
            let peer = ip("10.255.255.255");
            let fields: Vec<String> = hops.iter().map(Hop::field).collect();
            let per_line = fields.len().div_ceil(lines).max(1);
            let values: Vec<String> = fields.chunks(per_line).map(|c| c.join(",")).collect();
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            let mut expected = None;
            for hop in hops.iter().rev() {
                match hop {
                    Hop::Junk(_) => break,
                    Hop::Proxy(_) => expected = address(hop.field().as_bytes()),
                    Hop::Client(_) => {
                        expected = address(hop.field().as_bytes());
                        break;
                    }
                }
            }
            let expected = expected.filter(|ip| *ip != peer);
            proptest::prop_assert_eq!(proxies.client(peer, &headers(&refs)), expected);
            proptest::prop_assert_eq!(proxies.client(ip("192.0.2.1"), &headers(&refs)), None);
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let proxies = trusting(&["10.0.0.0/8"]);
        let h = headers(&["203.0.113.9"]);
        assert_eq!(proxies.client(ip("192.0.2.1"), &h), None);
    }

    #[test]
    fn a_trusted_peer_names_the_rightmost_untrusted_hop() {
        let proxies = trusting(&["10.0.0.0/8", "127.0.0.1/32"]);
        // A client-written first hop, then what the proxies appended.
        let h = headers(&["198.51.100.66, 203.0.113.9, 10.1.2.3"]);
        assert_eq!(proxies.client(ip("127.0.0.1"), &h), Some(ip("203.0.113.9")));
    }

    #[test]
    fn fields_of_several_headers_are_one_list_in_order() {
        let proxies = trusting(&["10.0.0.0/8"]);
        let h = headers(&["198.51.100.66", "203.0.113.9 ,10.0.0.2"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), Some(ip("203.0.113.9")));
    }

    #[test]
    fn a_field_that_is_no_address_ends_the_walk_at_the_trusted_hop() {
        let proxies = trusting(&["10.0.0.0/8"]);
        let h = headers(&["203.0.113.9, unknown, 10.0.0.7"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), Some(ip("10.0.0.7")));
        let h = headers(&["203.0.113.9, junk"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), None);
    }

    #[test]
    fn without_the_header_or_with_only_trusted_hops_the_peer_is_the_client() {
        let proxies = trusting(&["10.0.0.0/8"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &HeaderMap::new()), None);
        let h = headers(&["10.0.0.3, 10.0.0.2"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), Some(ip("10.0.0.3")));
        let h = headers(&["10.0.0.1"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), None);
    }

    #[test]
    fn ports_brackets_and_mapped_addresses_are_read() {
        let proxies = trusting(&["127.0.0.0/8", "::1/128"]);
        for (field, client) in [
            ("192.0.2.7:4711", "192.0.2.7"),
            ("[2001:db8::1]:4711", "2001:db8::1"),
            ("[2001:db8::1]", "2001:db8::1"),
            (" 2001:db8::1 ", "2001:db8::1"),
            ("::ffff:192.0.2.7", "192.0.2.7"),
        ] {
            let h = headers(&[field]);
            assert_eq!(proxies.client(ip("::1"), &h), Some(ip(client)), "{field}");
            assert_eq!(
                proxies.client(ip("::ffff:127.0.0.1"), &h),
                Some(ip(client)),
                "{field} from a mapped peer"
            );
        }
    }
}
