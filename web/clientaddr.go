package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address a request's limits are counted under: its
// client's (clientIP), with an IPv6 client counted by its /64, the block
// one host or site is usually given, so that walking through the addresses
// of one block does not walk around the limits.
func (s *Server) clientAddr(r *http.Request) string { return addrKey(s.clientIP(r)) }

// addrClient is whom a limit per client address counts a request for: its
// client's address (clientAddr) and, for an IPv6 client where sites are
// counted, its site (siteKey), from one reading of the request's address.
func (s *Server) addrClient(r *http.Request) limitClient {
	ip := s.clientIP(r)
	return limitClient{who: addrKey(ip), site: s.siteKey(ip)}
}

// addrKey is the key of clientAddr for the client address addr.
func addrKey(addr netip.Addr) string {
	if !addr.IsValid() {
		return "unknown"
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// DefaultSiteLimitFactor is how many times a limit counted per client
// address an IPv6 client's /48 is allowed (Config.SiteLimitFactor).
const DefaultSiteLimitFactor = 8

// siteBits is the IPv6 site: the block a network is given whole (RFC 6177
// leaves it between /48 and /64; tunnel brokers and many hosts hand out a
// /48 for free), 65,536 /64s, each a client of its own to clientAddr.
const siteBits = 48

// siteKey is the IPv6 site of the client address addr, which the limits
// counted by address count too, at siteFactor times the limit: "" for an
// IPv4 client, or when sites are not counted.
func (s *Server) siteKey(addr netip.Addr) string {
	if s.sites <= 0 || !addr.Is6() {
		return ""
	}
	p, _ := addr.Prefix(siteBits)
	return p.String()
}

// siteFactor is the factor the limits' script is given for sites: never
// less than 1, which it divides by.
func (s *Server) siteFactor() int { return max(1, s.sites) }

// clientIP is the address of a request's client: the connection's peer,
// or, when that peer is one of the trusted proxies, the nearest address in
// X-Forwarded-For that is not one. Nobody else's X-Forwarded-For is
// believed: a client could name any address in it. It is not valid when
// the peer's address is not an IP address.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := peerAddr(r)
	if !peer.IsValid() {
		return peer
	}
	addr := peer
	if s.trusted(peer) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a hop a trusted proxy did not write: stop believing
			}
			addr = hop.Unmap()
			if !s.trusted(addr) {
				break
			}
		}
	}
	return addr
}

func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseProxies reads a comma-separated list of proxy addresses or CIDR
// blocks ("10.0.0.0/8, 192.0.2.7") for Config.TrustedProxies.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, err
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
