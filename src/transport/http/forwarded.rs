//! Which client a request came from when a reverse proxy the endpoint
//! trusts forwarded it: an address of `X-Forwarded-For`, read from the
//! right as nginx's `realip` module does with `real_ip_recursive on`.
//!
//! Only a proxy named with [`HttpConfig::trust_proxy`] is believed, and
//! only for the hops trusted proxies appended: a client can write anything
//! into the header it sends, but it cannot remove what the proxies after
//! it append. The walk passes every trusted address, so a client whose own
//! address is trusted is believed for the hops it wrote: trust proxies'
//! addresses, never a network clients are on. Without trusted proxies
//! nothing here runs.
//!
//! [`HttpConfig::trust_proxy`]: super::HttpConfig::trust_proxy

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
pub use ipnet::IpNet;
use ipnet::Ipv4Net;

/// The header a proxy appends its peer's address to.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The reverse proxies whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub(super) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Trusts the proxies in `net` too. A network of IPv4-mapped IPv6
    /// addresses (`::ffff:10.0.0.0/104`) is kept as the IPv4 network it
    /// maps, as addresses are compared in their IPv4 form.
    pub(super) fn add(&mut self, net: IpNet) {
        let net = match net {
            IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
                Some(v4) => Ipv4Net::new(v4, v6.prefix_len() - 96).map_or(net, IpNet::V4),
                None => net,
            },
            net => net,
        };
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
    /// proxy. The fields of `X-Forwarded-For` (all its lines, the last
    /// first) are walked from the right, past every trusted proxy's
    /// address: the first address that is not a trusted proxy's is the
    /// client; when every field is a trusted proxy's, the leftmost is; a
    /// field that is no address (`unknown`, a name, garbage) stops the
    /// walk at the trusted hop right of it, which passed it on. Fields are
    /// separated by commas and spaces, and empty ones are skipped, as nginx
    /// reads them. `None` when `peer` is not trusted, or when the walk
    /// ends at `peer` itself (no header, or its last field is no address).
    pub(super) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> Option<IpAddr> {
        if !self.trusts(peer) {
            return None;
        }
        let peer = peer.to_canonical();
        let fields = headers
            .get_all(X_FORWARDED_FOR)
            .iter()
            .rev()
            .flat_map(|value| {
                value
                    .as_bytes()
                    .rsplit(|&b| b == b',' || b.is_ascii_whitespace())
            })
            .filter(|field| !field.is_empty());
        let mut reached = peer;
        for field in fields {
            let Some(ip) = address(field) else { break };
            reached = ip;
            if !self.trusts(ip) {
                break;
            }
        }
        (reached != peer).then_some(reached)
    }
}

/// One `X-Forwarded-For` field as an address: `192.0.2.7`, `2001:db8::1`,
/// `[2001:db8::1]`, or either with a port (`192.0.2.7:4711`,
/// `[2001:db8::1]:4711`).
fn address(field: &[u8]) -> Option<IpAddr> {
    let field = std::str::from_utf8(field).ok()?;
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

        /// The address the hop stands for, written apart from its field.
        fn ip(&self) -> Option<IpAddr> {
            match self {
                Hop::Proxy(n) => Some(IpAddr::from([10, 0, 0, *n])),
                Hop::Client(n) => Some(IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(*n)])),
                Hop::Junk(_) => None,
            }
        }
    }

    fn hop() -> impl proptest::strategy::Strategy<Value = Hop> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u8>().prop_map(Hop::Proxy),
            any::<u8>().prop_map(Hop::Client),
            "[a-z_]{1,8}".prop_map(Hop::Junk),
        ]
    }

    proptest::proptest! {
        /// The walk agrees with the rule stated over the hops themselves:
        /// from the right, trusted hops are passed; the first client's is
        /// the answer, and a hop left of it is never believed; something
        /// that is no address stops at the trusted hop right of it; with
        /// only trusted hops, the leftmost. However the fields are split
        /// into header lines and separated (commas, spaces, empty fields).
        #[test]
        fn the_client_is_the_rightmost_hop_not_a_trusted_proxys(
            hops in proptest::collection::vec(hop(), 0..8),
            separators in proptest::collection::vec(
                proptest::sample::select(vec![",", ", ", " ", " , ", ",,", "\n"]), 8),
        ) {
            let proxies = trusting(&["10.0.0.0/8"]);
            let peer = ip("10.255.255.255");
            let mut written = String::new();
            for (n, hop) in hops.iter().enumerate() {
                written.push_str(&hop.field());
                written.push_str(separators[n]);
            }
            // A "\n" separator starts another header line.
            let lines: Vec<&str> = written.split('\n').collect();
            let mut expected = None;
            for hop in hops.iter().rev() {
                match hop {
                    Hop::Junk(_) => break,
                    Hop::Proxy(_) => expected = hop.ip(),
                    Hop::Client(_) => {
                        expected = hop.ip();
                        break;
                    }
                }
            }
            proptest::prop_assert_eq!(proxies.client(peer, &headers(&lines)), expected);
            proptest::prop_assert_eq!(proxies.client(ip("192.0.2.1"), &headers(&lines)), None);
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
    fn without_the_header_the_peer_is_the_client_and_with_only_trusted_hops_the_leftmost() {
        let proxies = trusting(&["10.0.0.0/8"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &HeaderMap::new()), None);
        let h = headers(&["10.0.0.3, 10.0.0.2"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), Some(ip("10.0.0.3")));
        let h = headers(&["10.0.0.1"]);
        assert_eq!(proxies.client(ip("10.0.0.1"), &h), None);
    }

    #[test]
    fn fields_are_separated_by_commas_and_spaces_and_empty_ones_skipped_as_nginx_does() {
        let proxies = trusting(&["10.0.0.0/8"]);
        for written in [
            "203.0.113.9,,10.0.0.7",
            "203.0.113.9, 10.0.0.7,",
            "192.0.2.5 203.0.113.9",
            "203.0.113.9 , , 10.0.0.7 ",
        ] {
            let h = headers(&[written]);
            assert_eq!(
                proxies.client(ip("10.0.0.1"), &h),
                Some(ip("203.0.113.9")),
                "{written}"
            );
        }
    }

    #[test]
    fn a_trusted_network_of_mapped_addresses_trusts_their_ipv4_form() {
        let proxies = trusting(&["::ffff:10.0.0.0/104", "::ffff:127.0.0.2/128"]);
        for peer in ["10.1.2.3", "::ffff:10.1.2.3", "127.0.0.2"] {
            assert!(proxies.trusts(ip(peer)), "{peer}");
        }
        assert!(!proxies.trusts(ip("127.0.0.3")));
        let h = headers(&["203.0.113.9"]);
        assert_eq!(proxies.client(ip("127.0.0.2"), &h), Some(ip("203.0.113.9")));
    }

    #[test]
    fn a_client_whose_own_address_is_trusted_is_believed_for_the_hops_it_wrote() {
        // Why only proxies' addresses may be trusted: the proxy appends the
        // client's 10.0.0.9, the walk passes it, and the forged hop is next.
        let proxies = trusting(&["10.0.0.0/8"]);
        let h = headers(&["198.51.100.66, 10.0.0.9"]);
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &h),
            Some(ip("198.51.100.66"))
        );
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
