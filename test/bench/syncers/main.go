// Command syncers runs many edge syncers in one process (package syncerhost): the child process
// of the fleet benchmark (test/bench), so that the syncers' CPU time and memory are measured
// apart from everything else.
//
//	syncers -spec syncers.json [-http-address 127.0.0.1:8080] [-pprof-address 127.0.0.1:6060]
//
// The spec is a JSON list of syncerhost.Spec: {"name", "uid", "mailboxKubeconfig",
// "edgeKubeconfig"}. /readyz answers 200 once every syncer is ready, else 503 with how many are
// and why the first that is not is not. -pprof-address serves Go's /debug/pprof. SIGTERM stops
// them all.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // -pprof-address serves http.DefaultServeMux
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/health"
	"github.com/kcp-dev/edge-mc/test/bench/syncerhost"
)

func main() {
	specPath := flag.String("spec", "", "JSON file listing the syncers to run")
	httpAddress := flag.String("http-address", "127.0.0.1:8080", "address serving /healthz, /readyz (all syncers ready) and /metrics")
	pprofAddress := flag.String("pprof-address", "", "address serving /debug/pprof (none if empty)")
	klog.InitFlags(nil)
	flag.Parse()
	if *specPath == "" {
		fmt.Fprintln(os.Stderr, "error: -spec must name the JSON list of syncers to run")
		os.Exit(2)
	}
	if err := run(*specPath, *httpAddress, *pprofAddress); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(specPath, httpAddress, pprofAddress string) error {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var specs []syncerhost.Spec
	if err := json.Unmarshal(raw, &specs); err != nil {
		return fmt.Errorf("reading %s: %w", specPath, err)
	}
	host, err := syncerhost.New(specs)
	if err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("edge-syncer"))
	if _, err := health.Serve(httpAddress, host.Ready); err != nil {
		return err
	}
	if pprofAddress != "" {
		srv := &http.Server{Addr: pprofAddress, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.FromContext(ctx).Error(err, "serving pprof")
			}
		}()
	}
	klog.FromContext(ctx).Info("starting syncers", "count", len(specs))
	return host.Run(ctx)
}
