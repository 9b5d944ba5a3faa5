package builtin

import (
	"net/netip"
)

// specialRange is one row of the IANA special-purpose address registries
// (iana-ipv4-special-registry, iana-ipv6-special-registry, as of 2025) plus
// the few blocks that are special by other registries (multicast, the
// deprecated site-local fec0::/10, reserved 240.0.0.0/4). The longest
// matching prefix decides.
type specialRange struct {
	prefix netip.Prefix
	name   string
	// global is the registry's "Globally Reachable" column: true ranges may
	// be reached (they are ordinary unicast for a client).
	global bool
	// embed, for IPv6 ranges that carry an IPv4 address, extracts the IPv4
	// addresses to check as well; the range is allowed only if all are.
	embed func(b [16]byte) []netip.Addr
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func v4(b0, b1, b2, b3 byte) netip.Addr { return netip.AddrFrom4([4]byte{b0, b1, b2, b3}) }

// specialRanges is the source of truth for what the http tool refuses when
// private destinations are not allowed.
var specialRanges = []specialRange{
	// IPv4 special-purpose registry.
	{prefix: pfx("0.0.0.0/8"), name: `"this network" (0.0.0.0/8)`},
	{prefix: pfx("10.0.0.0/8"), name: "a private address (10.0.0.0/8)"},
	{prefix: pfx("100.64.0.0/10"), name: "shared address space (100.64.0.0/10, carrier NAT; some clouds keep metadata services there)"},
	{prefix: pfx("127.0.0.0/8"), name: "a loopback address"},
	{prefix: pfx("169.254.0.0/16"), name: "a link-local address (this includes cloud metadata endpoints)"},
	{prefix: pfx("172.16.0.0/12"), name: "a private address (172.16.0.0/12)"},
	{prefix: pfx("192.0.0.0/24"), name: "an IETF protocol assignment (192.0.0.0/24)"},
	{prefix: pfx("192.0.0.9/32"), name: "port control protocol anycast", global: true},
	{prefix: pfx("192.0.0.10/32"), name: "TURN anycast", global: true},
	{prefix: pfx("192.0.2.0/24"), name: "a documentation address (192.0.2.0/24)"},
	{prefix: pfx("192.31.196.0/24"), name: "AS112-v4", global: true},
	{prefix: pfx("192.52.193.0/24"), name: "AMT", global: true},
	{prefix: pfx("192.88.99.0/24"), name: "the deprecated 6to4 relay anycast (192.88.99.0/24)"},
	{prefix: pfx("192.168.0.0/16"), name: "a private address (192.168.0.0/16)"},
	{prefix: pfx("192.175.48.0/24"), name: "AS112 direct delegation", global: true},
	{prefix: pfx("198.18.0.0/15"), name: "a benchmarking address (198.18.0.0/15)"},
	{prefix: pfx("198.51.100.0/24"), name: "a documentation address (198.51.100.0/24)"},
	{prefix: pfx("203.0.113.0/24"), name: "a documentation address (203.0.113.0/24)"},
	{prefix: pfx("224.0.0.0/4"), name: "a multicast address"},
	{prefix: pfx("240.0.0.0/4"), name: "a reserved address (240.0.0.0/4)"},
	{prefix: pfx("255.255.255.255/32"), name: "the limited broadcast address"},

	// IPv6 special-purpose registry.
	{prefix: pfx("::/128"), name: "an unspecified address"},
	{prefix: pfx("::1/128"), name: "a loopback address"},
	{prefix: pfx("::/96"), name: "an IPv4-compatible address (::/96, deprecated)"},
	{prefix: pfx("::ffff:0:0/96"), name: "an IPv4-mapped address", global: true, embed: func(b [16]byte) []netip.Addr {
		return []netip.Addr{v4(b[12], b[13], b[14], b[15])}
	}},
	{prefix: pfx("64:ff9b::/96"), name: "a NAT64 address", global: true, embed: func(b [16]byte) []netip.Addr {
		return []netip.Addr{v4(b[12], b[13], b[14], b[15])}
	}},
	{prefix: pfx("64:ff9b:1::/48"), name: "a local-use NAT64 address (64:ff9b:1::/48)"},
	{prefix: pfx("100::/64"), name: "a discard-only address (100::/64)"},
	{prefix: pfx("100:0:0:1::/64"), name: "a dummy IPv6 prefix (100:0:0:1::/64)"},
	{prefix: pfx("2001::/23"), name: "an IETF protocol assignment (2001::/23)"},
	{prefix: pfx("2001::/32"), name: "a Teredo address", global: true, embed: func(b [16]byte) []netip.Addr {
		// Teredo: the server's IPv4 in bytes 4-7, the client's, XOR'd with
		// 0xff, in bytes 12-15.
		return []netip.Addr{v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15])}
	}},
	{prefix: pfx("2001:1::1/128"), name: "port control protocol anycast", global: true},
	{prefix: pfx("2001:1::2/128"), name: "TURN anycast", global: true},
	{prefix: pfx("2001:1::3/128"), name: "DNS-SD service registration protocol anycast", global: true},
	{prefix: pfx("2001:2::/48"), name: "a benchmarking address (2001:2::/48)"},
	{prefix: pfx("2001:3::/32"), name: "AMT", global: true},
	{prefix: pfx("2001:4:112::/48"), name: "AS112-v6", global: true},
	{prefix: pfx("2001:10::/28"), name: "a deprecated ORCHID address (2001:10::/28)"},
	{prefix: pfx("2001:20::/28"), name: "ORCHIDv2", global: true},
	{prefix: pfx("2001:30::/28"), name: "drone remote ID", global: true},
	{prefix: pfx("2001:db8::/32"), name: "a documentation address (2001:db8::/32)"},
	{prefix: pfx("2002::/16"), name: "a 6to4 address", global: true, embed: func(b [16]byte) []netip.Addr {
		return []netip.Addr{v4(b[2], b[3], b[4], b[5])}
	}},
	{prefix: pfx("2620:4f:8000::/48"), name: "direct delegation AS112", global: true},
	{prefix: pfx("3fff::/20"), name: "a documentation address (3fff::/20)"},
	{prefix: pfx("5f00::/16"), name: "a segment routing (SRv6) SID (5f00::/16)"},
	{prefix: pfx("fc00::/7"), name: "a unique local (private) address (fc00::/7)"},
	{prefix: pfx("fe80::/10"), name: "a link-local address"},
	{prefix: pfx("fec0::/10"), name: "a deprecated site-local address (fec0::/10)"},
	{prefix: pfx("ff00::/8"), name: "a multicast address"},
}

// globalUnicast6 is the only IPv6 block IANA allocates as global unicast;
// everything outside it (and outside the embedding ranges above) is reserved.
var globalUnicast6 = pfx("2000::/3")

// forbiddenAddr says why ip may not be reached when private destinations are
// disallowed, or "" when it is globally reachable unicast.
func forbiddenAddr(ip netip.Addr) string {
	return forbiddenAddrDepth(ip.WithZone(""), 0)
}

func forbiddenAddrDepth(ip netip.Addr, depth int) string {
	if !ip.IsValid() {
		return "not a valid address"
	}
	var best *specialRange
	for i := range specialRanges {
		r := &specialRanges[i]
		if r.prefix.Contains(ip) && (best == nil || r.prefix.Bits() > best.prefix.Bits()) {
			best = r
		}
	}
	switch {
	case best != nil && !best.global:
		return best.name
	case best != nil && best.embed != nil:
		if depth > 0 { // an embedding inside an embedding is no real destination
			return best.name + " inside another embedded address"
		}
		for _, in := range best.embed(ip.As16()) {
			if why := forbiddenAddrDepth(in, depth+1); why != "" {
				return why + " (embedded in " + best.name + " " + ip.String() + ")"
			}
		}
		return ""
	case best != nil:
		return ""
	case ip.Is6() && !globalUnicast6.Contains(ip):
		return "a reserved IPv6 address (outside the global unicast block 2000::/3)"
	}
	return ""
}
