// Command sharded-center runs a sharded kcp on loopback ports until it is told to stop: the test
// harness's sharded center (framework.StartShardedKCP: a cache server, a root shard, further
// shards and a front-proxy, from bin/), which people and programs reach through the front-proxy
// only. `make demo SHARDS=2` uses it as the demo's center. Run it from the repository's root:
//
//	sharded-center --shards 2 --dir .demo/kcp --kubeconfig-out .demo/kcp/admin.kubeconfig \
//	  --controller-token-out .demo/ecm.token
//
// The center's data, credentials and logs are in --dir, and stay there. Once the center is
// usable, the token by which it knows edge-controller-manager's user is written to
// --controller-token-out, then an admin kubeconfig through the front-proxy to --kubeconfig-out;
// on SIGTERM or SIGINT the processes are stopped, the kubeconfig is removed, and the command
// exits. The processes die with this command even if it is killed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func main() {
	shards := flag.Int("shards", 2, "how many kcp shards, the root shard included (at least 2)")
	dir := flag.String("dir", "", "directory for the center's data, credentials and logs")
	kubeconfigOut := flag.String("kubeconfig-out", "", "where to write an admin kubeconfig, through the front-proxy, once the center is usable")
	tokenOut := flag.String("controller-token-out", "", "where to write the bearer token of edge-controller-manager's kcp user ("+espw.DefaultControllerUser+")")
	flag.Parse()
	if *dir == "" || *kubeconfigOut == "" || *tokenOut == "" {
		fmt.Fprintln(os.Stderr, "usage: sharded-center [--shards N] --dir DIR --kubeconfig-out FILE --controller-token-out FILE")
		os.Exit(2)
	}
	if err := run(*shards, *dir, *kubeconfigOut, *tokenOut); err != nil {
		fmt.Fprintf(os.Stderr, "sharded-center: %v\n", err)
		os.Exit(1)
	}
}

func run(shards int, dir, kubeconfigOut, tokenOut string) error {
	// Signals that arrive while the center starts are acted on once it has started.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	fmt.Printf("%s starting a kcp of %d shards in %s\n", time.Now().Format(time.RFC3339), shards, dir)
	c, err := framework.StartShardedKCP(shards, framework.InDir(dir))
	if c != nil {
		defer c.Stop()
	}
	if err != nil {
		return err
	}
	token, ok := c.Front.UserToken(espw.DefaultControllerUser)
	if !ok {
		return errors.New("the center knows no token of " + espw.DefaultControllerUser)
	}
	if err := writeWhole(tokenOut, []byte(token)); err != nil {
		return err
	}
	raw, err := os.ReadFile(c.Front.KubeconfigPath)
	if err != nil {
		return err
	}
	if err := writeWhole(kubeconfigOut, raw); err != nil {
		return err
	}
	defer os.Remove(kubeconfigOut)
	for _, s := range c.Shards {
		fmt.Printf("shard %s at %s (log %s)\n", s.Name, s.BaseURL, s.LogPath())
	}
	fmt.Printf("%s ready in %s: front-proxy %s, kubeconfig %s\n", time.Now().Format(time.RFC3339),
		c.Front.StartupTime.Round(100*time.Millisecond), c.ProxyURL, kubeconfigOut)

	sig := <-stop
	fmt.Printf("%s %s: stopping the center\n", time.Now().Format(time.RFC3339), sig)
	return nil
}

// writeWhole writes the file whole, then renames it into place, so that whoever waits for the
// file never reads half of it.
func writeWhole(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Clean(path))
}
