package testredis

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wait"
)

// Cluster is a running Redis Cluster: three primaries, one replica each,
// on loopback ports, made with redis-server --cluster-enabled yes and
// redis-cli --cluster create. It stops when the test ends.
type Cluster struct {
	Nodes []*Server
	t     testing.TB
}

// StartCluster starts a cluster and waits until it serves every slot.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	require(t, "redis-cli")
	c := &Cluster{t: t}
	var addrs []string
	for range 6 {
		s := start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0")
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr)
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(c.Nodes[0])
	c.waitReplicas()
	return c
}

// waitReplicas waits until every replica has synced with its primary: a
// replica that never did would not be promoted.
func (c *Cluster) waitReplicas() {
	c.t.Helper()
	for _, s := range c.Nodes {
		wait.For(c.t, "replica "+s.Addr+" to sync with its primary", func() bool {
			out, err := cli(s, "info", "replication")
			return err == nil && (strings.Contains(out, "role:master") || strings.Contains(out, "master_link_status:up"))
		})
	}
}

// Seeds are the nodes' redis:// URLs, comma-separated (state.redis_url).
func (c *Cluster) Seeds() string {
	var urls []string
	for _, s := range c.Nodes {
		if s.cmd != nil {
			urls = append(urls, "redis://"+s.Addr)
		}
	}
	return strings.Join(urls, ",")
}

// cli runs redis-cli against one node.
func cli(s *Server, args ...string) (string, error) {
	host, port, _ := strings.Cut(s.Addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return string(out), err
}

// waitOK waits until node says the cluster is ok (every slot served).
func (c *Cluster) waitOK(node *Server) {
	c.t.Helper()
	wait.For(c.t, "the Redis Cluster to reach cluster_state:ok", func() bool {
		out, err := cli(node, "cluster", "info")
		return err == nil && strings.Contains(out, "cluster_state:ok")
	})
}

// Failover stops a primary that serves slots and waits until its replica
// is promoted and the cluster serves every slot again. It returns the
// stopped primary's address.
func (c *Cluster) Failover() string {
	c.t.Helper()
	out, err := cli(c.Nodes[0], "cluster", "nodes")
	if err != nil {
		c.t.Fatalf("cluster nodes: %v %s", err, out)
	}
	var victim *Server
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		for _, s := range c.Nodes[1:] { // node 0 answers the checks
			if s.Addr == addr && s.cmd != nil {
				victim = s
			}
		}
		if victim != nil {
			break
		}
	}
	if victim == nil {
		c.t.Fatalf("no primary to stop in:\n%s", out)
	}
	victim.Stop()
	wait.For(c.t, "a replica of "+victim.Addr+" to be promoted", func() bool {
		out, _ := cli(c.Nodes[0], "cluster", "nodes")
		return promoted(out, victim.Addr)
	})
	c.waitOK(c.Nodes[0])
	return victim.Addr
}

// promoted says whether cluster nodes' output shows the primary at addr
// failed and no slot left on it (its replica serves them).
func promoted(out, addr string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 8 && strings.HasPrefix(f[1], addr+"@") {
			return strings.Contains(f[2], "fail") && len(f) == 8
		}
	}
	return false
}
