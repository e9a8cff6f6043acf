package syncer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// maxReportedErrors bounds SyncerConfig status.errors, as its schema does.
const maxReportedErrors = 20

// watchConfig acts on each change of the SyncerConfig.
func (s *Syncer) watchConfig(ctx context.Context) {
	logger := klog.FromContext(ctx)
	select { // act on what was listed
	case s.configSignal <- struct{}{}:
	default:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.configSignal:
		}
		for {
			err := s.applyConfig(ctx)
			if err == nil {
				break
			}
			logger.Error(err, "acting on the SyncerConfig; retrying")
			select {
			case <-ctx.Done():
				return
			case <-time.After(jitter(5 * time.Second)):
			}
		}
	}
}

// currentConfig returns the SyncerConfig from the cache, or nil.
func (s *Syncer) currentConfig() *edgev1alpha1.SyncerConfig {
	obj, exists, err := s.config.GetStore().GetByKey(edgev1alpha1.SyncerConfigName)
	if err != nil || !exists {
		return nil
	}
	cfg, _ := obj.(*edgev1alpha1.SyncerConfig)
	return cfg
}

// applyConfig takes in the SyncerConfig: a key rotation it asks for, its heartbeat interval and
// its upsync rules, and reports in its status. The down-sync scope of the per-object copies
// before assemblages (spec.namespaceScope, spec.clusterScope) is ignored: the syncer reads
// assemblages only.
func (s *Syncer) applyConfig(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg := s.currentConfig()
	if cfg == nil {
		// A mailbox without a SyncerConfig has had nothing placed in it yet: the assemblages,
		// if any, are applied all the same, and the heartbeat keeps its default interval.
		logger.Info("the mailbox has no SyncerConfig yet")
		s.setConfigHeartbeat(0)
		return nil
	}
	// A rotation asked for (kubectl edge rotate-key): the new key is published with the report
	// below, and the center seals the next versions for it.
	if err := s.rotateKeyIfAsked(ctx, cfg.Annotations[transport.AnnotationRotateKey]); err != nil {
		return err
	}
	var heartbeat time.Duration
	if hb := cfg.Spec.Heartbeat; hb != nil && hb.IntervalSeconds > 0 {
		heartbeat = time.Duration(hb.IntervalSeconds) * time.Second
	}
	s.setConfigHeartbeat(heartbeat)

	var statusResources map[schema.GroupResource]bool
	var configErrors []string
	if len(cfg.Spec.Upsync) > 0 {
		var err error
		if statusResources, err = subresourcesServed(s.mailboxDiscovery, "status"); err != nil {
			return fmt.Errorf("discovering the mailbox's resources: %w", err)
		}
	}
	configErrors = append(configErrors, s.applyUpsyncRules(ctx, cfg.Spec.Upsync, statusResources)...)
	configErrors = append(configErrors, s.applyStatusRules(ctx, &cfg.Spec)...)
	s.mu.Lock()
	s.configSeen = true
	s.configGeneration = cfg.Generation
	s.configErrors = configErrors
	s.mu.Unlock()
	s.reportQueue.Add("report")
	logger.Info("acting on the SyncerConfig", "generation", cfg.Generation, "upsyncRules", len(cfg.Spec.Upsync),
		"heartbeatInterval", s.heartbeatInterval().String())
	return nil
}

// setConfigHeartbeat takes in the SyncerConfig's heartbeat interval (0: unset), and wakes the
// heartbeat up when the interval it keeps changes.
func (s *Syncer) setConfigHeartbeat(d time.Duration) {
	before := s.heartbeatInterval()
	s.mu.Lock()
	s.configHeartbeat = d
	s.mu.Unlock()
	if s.heartbeatInterval() != before {
		select {
		case s.heartbeatSignal <- struct{}{}:
		default:
		}
	}
}

// heartbeatInterval is Config.HeartbeatInterval if set, else the SyncerConfig's, else
// DefaultHeartbeatInterval.
func (s *Syncer) heartbeatInterval() time.Duration {
	if s.cfg.HeartbeatInterval > 0 {
		return s.cfg.HeartbeatInterval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configHeartbeat > 0 {
		return s.configHeartbeat
	}
	return DefaultHeartbeatInterval
}

// syncerConfigReport is what the syncer reports in the SyncerConfig's status.
type syncerConfigReport struct {
	ObservedGeneration         int64        `json:"observedGeneration"`
	LastSyncerConfigUpdateTime *metav1.Time `json:"lastSyncerConfigUpdateTime,omitempty"`
	Errors                     []string     `json:"errors,omitempty"`
	SyncerVersion              string       `json:"syncerVersion"`
	Formats                    []string     `json:"formats"`
	PublicKey                  string       `json:"publicKey,omitempty"`
	KeyID                      string       `json:"keyID,omitempty"`
}

// id is a rendering of the report without its time, to tell whether it changed.
func (r syncerConfigReport) id() string {
	return fmt.Sprintf("%d|%s|%s|%s|%s", r.ObservedGeneration, strings.Join(r.Errors, "\n"), r.SyncerVersion, strings.Join(r.Formats, ","), r.PublicKey)
}

// writeReport writes the SyncerConfig's status: the generation acted on, the errors met (at most
// maxReportedErrors), the syncer's version, the assemblage formats it reads and its public key, when that
// changed; nothing when the status already says it. Server-side apply by the syncer's field
// manager also withdraws what syncers before assemblages wrote there (status.applied).
func (s *Syncer) writeReport(ctx context.Context, _ string) (time.Duration, error) {
	cfg := s.currentConfig()
	s.mu.Lock()
	if !s.configSeen || cfg == nil {
		s.mu.Unlock()
		return 0, nil
	}
	// At most one write each reportCoalesce: what changes meanwhile goes in the next one.
	if wait := reportCoalesce - time.Since(s.lastReportAt); wait > 0 {
		s.mu.Unlock()
		return wait, nil
	}
	report := syncerConfigReport{
		ObservedGeneration: s.configGeneration,
		Errors:             sortedErrors(s.configErrors, maxReportedErrors),
		SyncerVersion:      Version,
		Formats:            slices.Clone(transport.Formats),
	}
	if s.key != nil {
		report.PublicKey, report.KeyID = transport.EncodePublicKey(s.key.Public), transport.KeyID(s.key.Public)
	}
	last := s.lastReport
	s.mu.Unlock()
	id := report.id()
	if id == last || (last == "" && reportedAlready(cfg, report)) {
		s.mu.Lock()
		s.lastReport = id
		s.mu.Unlock()
		return 0, nil
	}
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	report.LastSyncerConfigUpdateTime = &now
	if err := s.mailboxEdge.applyStatus(ctx, syncerConfigsResource, "SyncerConfig", edgev1alpha1.SyncerConfigName, report); err != nil {
		return 0, fmt.Errorf("writing the SyncerConfig's status: %w", err)
	}
	s.mu.Lock()
	s.lastReport = id
	s.lastReportAt = time.Now()
	s.mu.Unlock()
	klog.FromContext(ctx).V(1).Info("reported in the SyncerConfig's status", "generation", report.ObservedGeneration,
		"errors", len(report.Errors), "syncerVersion", report.SyncerVersion, "formats", report.Formats, "keyID", report.KeyID)
	return 0, nil
}

// reportedAlready says whether cfg's status says what report does, and holds nothing more that
// the syncer's field manager would withdraw (status.applied of syncers before assemblages).
func reportedAlready(cfg *edgev1alpha1.SyncerConfig, report syncerConfigReport) bool {
	st := cfg.Status
	return st.ObservedGeneration == report.ObservedGeneration && slices.Equal(st.Errors, report.Errors) &&
		st.SyncerVersion == report.SyncerVersion && slices.Equal(st.Formats, report.Formats) && len(st.Applied) == 0 &&
		st.PublicKey == report.PublicKey && st.KeyID == report.KeyID
}

// reportCoalesce is the least time between two writes of the SyncerConfig's status.
const reportCoalesce = time.Second

// subresourcesServed returns the resources that serve the named subresource, of any version.
// (ServerPreferredResources leaves subresources out.)
func subresourcesServed(d discovery.DiscoveryInterface, sub string) (map[schema.GroupResource]bool, error) {
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	out := map[schema.GroupResource]bool{}
	for _, list := range lists {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			if base, s, ok := strings.Cut(r.Name, "/"); ok && s == sub {
				out[schema.GroupResource{Group: gv.Group, Resource: base}] = true
			}
		}
	}
	return out, nil
}

// sortedErrors returns at most max of errs, sorted, without changing errs.
func sortedErrors(errs []string, max int) []string {
	errs = slices.Clone(errs)
	sort.Strings(errs)
	if len(errs) > max {
		errs = append(errs[:max-1], fmt.Sprintf("... and %d more", len(errs)-max+1))
	}
	return errs
}
