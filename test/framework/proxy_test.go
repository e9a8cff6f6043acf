package framework

import (
	"bufio"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// echoServer answers each line it reads with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends a line on c and returns the answer, or an error if none comes within timeout.
func roundTrip(c net.Conn, line string, timeout time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dialling the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyForwards(t *testing.T) {
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	for _, line := range []string{"hello", strings.Repeat("x", 100_000)} {
		if got, err := roundTrip(c, line, 5*time.Second); err != nil || got != line {
			t.Fatalf("round trip of %d bytes: got %d bytes, %v", len(line), len(got), err)
		}
	}
	if p.Accepted() != 1 {
		t.Errorf("Accepted = %d, want 1", p.Accepted())
	}
}

func TestProxyStopResetsAndRefusesThenStartForwardsOnTheSameAddress(t *testing.T) {
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addr := p.Addr()
	open := dial(t, addr)
	if _, err := roundTrip(open, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}

	p.Stop()
	if _, err := roundTrip(open, "during", 2*time.Second); err == nil {
		t.Error("a connection open across Stop still carries data")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("a new connection is accepted while the proxy is stopped")
	}

	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Errorf("the address changed from %s to %s", addr, p.Addr())
	}
	if got, err := roundTrip(dial(t, addr), "after", 5*time.Second); err != nil || got != "after" {
		t.Errorf("after Start: %q, %v", got, err)
	}
}

func TestProxyPauseHoldsTrafficUntilStart(t *testing.T) {
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	open := dial(t, p.Addr())
	if _, err := roundTrip(open, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}

	p.Pause()
	answer := make(chan string, 1)
	go func() {
		got, err := roundTrip(open, "held", 20*time.Second)
		if err != nil {
			got = "error: " + err.Error()
		}
		answer <- got
	}()
	fresh := dial(t, p.Addr()) // accepted, but silent
	freshAnswer := make(chan string, 1)
	go func() {
		got, err := roundTrip(fresh, "new", 20*time.Second)
		if err != nil {
			got = "error: " + err.Error()
		}
		freshAnswer <- got
	}()
	select {
	case got := <-answer:
		t.Fatalf("data passed while paused: %q", got)
	case got := <-freshAnswer:
		t.Fatalf("a new connection carried data while paused: %q", got)
	case <-time.After(time.Second):
	}

	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan string{"open": answer, "new": freshAnswer} {
		want := map[string]string{"open": "held", "new": "new"}[name]
		select {
		case got := <-ch:
			if got != want {
				t.Errorf("the %s connection after Start: got %q, want %q", name, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the %s connection carried nothing after Start", name)
		}
	}
}

func TestProxyCloseWhilePaused(t *testing.T) {
	p, err := StartProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	p.Pause()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("x\n"))
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while the proxy was paused")
	}
}

func TestProxyKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mailbox.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["mailbox"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443/clusters/root:espw:abc-mb-1", CertificateAuthorityData: []byte("ca")}
	kc.AuthInfos["syncer"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["mailbox"] = &clientcmdapi.Context{Cluster: "mailbox", AuthInfo: "syncer"}
	kc.CurrentContext = "mailbox"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	p, err := proxyKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Target() != "127.0.0.1:6443" {
		t.Errorf("the proxy forwards to %s, want 127.0.0.1:6443", p.Target())
	}
	got, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + p.Addr() + "/clusters/root:espw:abc-mb-1"; got.Clusters["mailbox"].Server != want {
		t.Errorf("server %s, want %s", got.Clusters["mailbox"].Server, want)
	}
	if string(got.Clusters["mailbox"].CertificateAuthorityData) != "ca" || got.AuthInfos["syncer"].Token != "t" {
		t.Error("the rest of the kubeconfig changed")
	}
}
