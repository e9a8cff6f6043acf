// Package syncerhost runs many edge syncers in one process, for the fleet benchmark
// (test/bench, whose child process test/bench/syncers uses it). Each syncer serves its own
// SyncTarget, with its own mailbox credential, into its own edge cluster, exactly as an
// edge-syncer process does (package syncer, with edge-syncer's default request rates); only the
// process is shared, so that a benchmark can run hundreds of them on one machine and read their
// CPU time and memory apart from everything else.
package syncerhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/syncer"
)

// Spec is one syncer to run.
type Spec struct {
	// Name and UID are the SyncTarget's.
	Name string `json:"name"`
	UID  string `json:"uid"`
	// MailboxKubeconfig is the file that kubectl edge prep-for-syncer --kubeconfig-only wrote.
	MailboxKubeconfig string `json:"mailboxKubeconfig"`
	// EdgeKubeconfig reaches the edge cluster.
	EdgeKubeconfig string `json:"edgeKubeconfig"`
}

// Host is a set of syncers run together.
type Host struct {
	specs   []Spec
	syncers []*syncer.Syncer
}

// New builds the syncers of specs; they connect to nothing until Run.
func New(specs []Spec) (*Host, error) {
	if len(specs) == 0 {
		return nil, errors.New("no syncer to run")
	}
	h := &Host{specs: specs}
	for _, sp := range specs {
		s, err := newSyncer(sp)
		if err != nil {
			return nil, fmt.Errorf("syncer %s: %w", sp.Name, err)
		}
		h.syncers = append(h.syncers, s)
	}
	return h, nil
}

// Run runs every syncer until ctx ends, and returns their errors.
func (h *Host) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(h.syncers))
	for i, s := range h.syncers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs[i] = fmt.Errorf("syncer %s: %w", h.specs[i].Name, err)
				klog.FromContext(ctx).Error(err, "syncer stopped", "syncTarget", h.specs[i].Name)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Ready says whether every syncer is ready, or how many are and why the first that is not is
// not.
func (h *Host) Ready() (bool, string) {
	ready, firstWhy := 0, ""
	for i, s := range h.syncers {
		if ok, why := s.Ready(); ok {
			ready++
		} else if firstWhy == "" {
			firstWhy = h.specs[i].Name + ": " + why
		}
	}
	if ready == len(h.syncers) {
		return true, ""
	}
	return false, fmt.Sprintf("%d of %d syncers ready; %s", ready, len(h.syncers), firstWhy)
}

// newSyncer builds the syncer of one spec, with edge-syncer's default request rates.
func newSyncer(sp Spec) (*syncer.Syncer, error) {
	mailboxCfg, err := loadKubeconfig(sp.MailboxKubeconfig)
	if err != nil {
		return nil, err
	}
	mailboxCfg.QPS, mailboxCfg.Burst = syncer.DefaultMailboxQPS, syncer.DefaultMailboxBurst
	edgeCfg, err := loadKubeconfig(sp.EdgeKubeconfig)
	if err != nil {
		return nil, err
	}
	edgeCfg.QPS, edgeCfg.Burst = syncer.DefaultEdgeQPS, syncer.DefaultEdgeBurst
	return syncer.New(syncer.Config{
		Mailbox: mailboxCfg, Edge: edgeCfg,
		SyncTargetName: sp.Name, SyncTargetUID: sp.UID, Identity: sp.Name,
	})
}

func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return cfg, nil
}
