package gateway

import (
	"net"
	"testing"
)

// Client addresses are grouped for the per-address cap: IPv4 by
// pending_ipv4_prefix (32: each address), IPv6 by pending_ipv6_prefix
// (64: a host's usual share), IPv4-mapped IPv6 as IPv4.
func TestAddressGroup(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		v4, v6 int
		want   string
	}{
		{"192.0.2.7:1", 32, 64, "192.0.2.7/32"},
		{"192.0.2.7:1", 24, 64, "192.0.2.0/24"},
		{"[2001:db8:1:2:aaaa::1]:1", 32, 64, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:443", 32, 64, "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:1", 32, 64, "2001:db8:1:3::/64"},
		{"[2001:db8:1:3::1]:1", 32, 128, "2001:db8:1:3::1/128"},
		{"[::ffff:192.0.2.7]:1", 32, 64, "192.0.2.7/32"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := addressGroup(a, tc.v4, tc.v6); got != tc.want {
			t.Errorf("%s (/%d, /%d): %s, want %s", tc.addr, tc.v4, tc.v6, got, tc.want)
		}
	}
}

// Room among the keyless connections is made from the group holding the
// most, its oldest first, through any order of adds and removes.
func TestKeylessGroups(t *testing.T) {
	k := keylessGroups{byName: map[string]*keylessGroup{}}
	conns := map[string][]*pendingConn{}
	add := func(group string, n int) {
		for range n {
			pc := &pendingConn{ip: group}
			k.add(pc)
			conns[group] = append(conns[group], pc)
		}
	}
	add("a", 3)
	add("b", 5)
	add("c", 1)
	add("a", 4) // a: 7
	for range 8 {
		old := k.oldestOfLargest()
		for g, pcs := range conns {
			if len(pcs) > len(conns[old.ip]) {
				t.Fatalf("made room from %s (%d), while %s holds %d", old.ip, len(conns[old.ip]), g, len(pcs))
			}
		}
		if old != conns[old.ip][0] {
			t.Fatalf("made room from %s, but not from its oldest", old.ip)
		}
		k.remove(old)
		conns[old.ip] = conns[old.ip][1:]
	}
	k.remove(conns["c"][0])
	if k.n != len(conns["a"])+len(conns["b"]) || k.byName["c"] != nil || len(k.heap) != 2 {
		t.Errorf("%d held, groups %v", k.n, k.byName)
	}
}
