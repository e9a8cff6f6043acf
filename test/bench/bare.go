package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// settle is how long a kcp is left alone before its idle CPU is measured.
const settle = 10 * time.Second

// measureBare measures what the center's idle CPU is compared with: a fresh kcp, started as the
// center was (same binary, same arguments), holding N bare workspaces of kcp's default type in
// root and serving no client, over the same window as the fleet's idle phase. The fleet must be
// stopped first, so that the two do not share the CPU. The kcp is stopped at the end.
func measureBare(ctx context.Context, c config, fig *bareFigures) error {
	fig.Workspaces = c.N
	args := "stock settings"
	if len(c.CenterKCPArgs) > 0 {
		args = strings.Join(c.CenterKCPArgs, " ")
	}
	say("bare: starting a fresh kcp as the center was (%s), for %d bare workspaces and no client", args, c.N)
	s, err := framework.StartKCP(framework.WithArgs(c.CenterKCPArgs...))
	if s != nil {
		defer s.Stop()
	}
	if err != nil {
		return err
	}
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	mb := func(b int64) float64 { return float64(b) / 1e6 }
	fresh, _, _ := framework.RSS(s.PID())
	fig.FreshRSSMB = mb(fresh)

	say("bare: creating %d workspaces in root, %d at a time, each until ready", c.N, c.Parallel)
	var done atomic.Int64
	stop := every(10*time.Second, func() string { return fmt.Sprintf("bare: %d of %d workspaces ready", done.Load(), c.N) })
	t0 := time.Now()
	root := logicalcluster.NewPath("root")
	err = framework.ForEach(c.N, c.Parallel, func(i int) error {
		if err := createReadyWorkspace(ctx, s, root, fmt.Sprintf("bare-%05d", i)); err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
	stop()
	if err != nil {
		return err
	}
	fig.SetupSeconds = time.Since(t0).Seconds()

	say("bare: settling %s, then measuring its CPU over %s with no client", settle, c.idle)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	requests := startCounting(ctx, s)
	cpu0, t1 := framework.CPUSeconds(s.PID()), time.Now()
	if err := sleep(ctx, c.idle); err != nil {
		return err
	}
	cpu, window := framework.CPUSeconds(s.PID())-cpu0, time.Since(t1).Seconds()
	fig.WindowSeconds, fig.CPUPercent = window, 100*cpu/window
	fig.Requests = requests.since(ctx).rates(window, nil, 0)
	rss, _, _ := framework.RSS(s.PID())
	fig.RSSMB = mb(rss)
	fig.MBPerWorkspace = mb(rss-fresh) / float64(c.N)
	fig.Measured = true
	say("bare: %d workspaces made in %.0fs; idle %.1f%% of a core; RSS %.0f MB (%.1f MB per workspace)",
		c.N, fig.SetupSeconds, fig.CPUPercent, fig.RSSMB, fig.MBPerWorkspace)
	return nil
}

// createReadyWorkspace creates a workspace of kcp's default type and waits until it is ready.
func createReadyWorkspace(ctx context.Context, s *framework.Server, parent logicalcluster.Path, name string) error {
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating workspace %s in %s: %w", name, parent, err)
	}
	return workspaces.Poll(ctx, stall, func(ctx context.Context) (bool, error) {
		ws, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	}, "workspace %s in %s to be ready", name, parent)
}
