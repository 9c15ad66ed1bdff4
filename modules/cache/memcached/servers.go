package memcachedlease

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
)

// ErrInvalidServers is matched by NewServerSet's errors.
var ErrInvalidServers = errors.New("memcachedlease: invalid server list")

// ServerSet is a memcache.ServerSelector that picks each key's server by
// rendezvous (highest random weight) hashing of the key with each server's
// normalised address, so that the choice depends on the set of addresses
// only: not on their order, not on repetitions. memcache.New (and
// memcache.ServerList) picks a server by its position in the list, so two
// candidates listing the same servers in another order address different
// servers for the same election, and both lead; every candidate of an
// election must therefore use a ServerSet (ConfigModule does) over the same
// set of addresses, spelled the same way (a host name on one candidate and
// its IP address on another are two different servers to the hash).
//
// Adding or removing one server moves only the keys that hash to it (about
// 1/n of the elections), not almost all of them as position-based sharding
// does. What moves is still a change of the record's location, and memcached
// does not replicate: see the package documentation for what a rolling
// change of the set does.
//
// Addresses are host:port. Host names are not resolved here: the client
// resolves them each time it opens a connection (net.Dialer), so a changed
// DNS answer is followed when connections are re-established; the hash
// depends on the name, never on the address it resolves to. A ServerSet is
// immutable and safe for concurrent use.
type ServerSet struct {
	addrs []serverAddr // sorted by name, no duplicates
}

var _ memcache.ServerSelector = (*ServerSet)(nil)

// serverAddr is a net.Addr naming a server as configured.
type serverAddr struct {
	name string // normalised host:port
	seed uint64 // hash of name, the start of every key's hash with it
}

func (a serverAddr) Network() string { return "tcp" }
func (a serverAddr) String() string  { return a.name }

// NewServerSet returns the ServerSet of addrs, each host:port (host a name,
// an IPv4 address or a bracketed IPv6 address). Addresses are normalised
// (host names lower-cased and without a trailing dot, IP addresses in
// canonical form), sorted and de-duplicated. An empty list or an address
// that is not host:port gives an error matching ErrInvalidServers that
// gives the address's position, never its value.
func NewServerSet(addrs ...string) (*ServerSet, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no address", ErrInvalidServers)
	}
	names := make([]string, 0, len(addrs))
	for i, a := range addrs {
		n, ok := normaliseAddr(a)
		if !ok {
			return nil, fmt.Errorf("%w: address %d is not host:port", ErrInvalidServers, i+1)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	s := &ServerSet{addrs: make([]serverAddr, len(names))}
	for i, n := range names {
		s.addrs[i] = serverAddr{name: n, seed: fnv1a(fnvOffset, n)}
	}
	return s, nil
}

// normaliseAddr returns a's canonical host:port.
func normaliseAddr(a string) (string, bool) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(a))
	if err != nil || host == "" || port == "" {
		return "", false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return "", false
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port), true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return net.JoinHostPort(host, port), true
}

// Addrs returns the normalised addresses, sorted.
func (s *ServerSet) Addrs() []string {
	out := make([]string, len(s.addrs))
	for i, a := range s.addrs {
		out[i] = a.name
	}
	return out
}

// PickServer implements memcache.ServerSelector: the server whose hash
// with key is the highest (ties, which need a 64-bit collision, go to the
// first name in sorted order).
func (s *ServerSet) PickServer(key string) (net.Addr, error) {
	if len(s.addrs) == 0 {
		return nil, memcache.ErrNoServers
	}
	best, bestScore := 0, uint64(0)
	for i, a := range s.addrs {
		if score := mix(fnv1a(a.seed^0xff, key)); i == 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	return s.addrs[best], nil
}

// Each implements memcache.ServerSelector, in sorted order.
func (s *ServerSet) Each(f func(net.Addr) error) error {
	for _, a := range s.addrs {
		if err := f(a); err != nil {
			return err
		}
	}
	return nil
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv1a continues a 64-bit FNV-1a hash h over s.
func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix is the splitmix64 finaliser: FNV's low-entropy high bits would bias
// the comparison of scores.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
