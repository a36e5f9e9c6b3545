// Package testredis starts a real redis-server for tests, on a free
// loopback port, with persistence off. Tests that need Redis call Start; it
// skips the test when redis-server is not installed, except under CI (CI or
// TOOLGATE_REQUIRE_REDIS set), where it fails: .ci/run installs it.
package testredis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testing/wait"
)

// Server is a running redis-server.
type Server struct {
	Addr string // host:port
	cmd  *exec.Cmd
	// exited is closed once cmd has exited.
	exited chan struct{}
	port   int
	dir    string
	t      testing.TB
	extra  []string // more redis-server arguments (a cluster node's)
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Start starts a redis-server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t)
}

// require skips (or, under CI, fails) a test without redis-server (and
// the other commands it needs).
func require(t testing.TB, commands ...string) {
	t.Helper()
	for _, c := range append([]string{"redis-server"}, commands...) {
		if _, err := exec.LookPath(c); err != nil {
			msg := c + " is not installed (apt-get install -y redis-server)"
			if os.Getenv("CI") != "" || os.Getenv("TOOLGATE_REQUIRE_REDIS") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg + "; skipped outside CI")
		}
	}
}

func start(t testing.TB, extra ...string) *Server {
	t.Helper()
	require(t)
	s := &Server{dir: t.TempDir(), t: t, extra: extra}
	var err error
	for range 5 { // a free port can be taken between finding and binding it
		if s.port, err = freePort(); err == nil {
			if err = s.run(); err == nil {
				break
			}
		}
	}
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server (a test may stop it early to see Redis go away).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

func (s *Server) run() error {
	s.Addr = "127.0.0.1:" + strconv.Itoa(s.port)
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--loglevel", "warning"}, s.extra...)...)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	listening := wait.Until(wait.Patience, func() bool {
		select {
		case <-exited: // it could not start (its port was taken)
			return true
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	select {
	case <-exited:
	default:
		if listening {
			s.cmd, s.exited = cmd, exited
			return nil
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server did not listen on %s", s.Addr)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Calls returns how many times the server has run cmd (lower case, as
// INFO commandstats names it): a test counts the round trips a request
// cost.
func (s *Server) Calls(t testing.TB, cmd string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, wait.Patience)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait.Patience))
	if _, err := io.WriteString(c, "*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	n, convErr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || convErr != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO commandstats: %q %v", head, err)
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(info)) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			calls, _, _ := strings.Cut(rest, ",")
			v, _ := strconv.Atoi(calls)
			return v
		}
	}
	return 0
}
