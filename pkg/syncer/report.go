package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// maxReportedErrors bounds SyncerConfig status.errors, as its schema does.
const maxReportedErrors = 20

// writeReport writes the SyncerConfig's status: the generation acted on and the errors met, at
// most maxReportedErrors of them, when it changed.
func (s *Syncer) writeReport(ctx context.Context, _ string) (time.Duration, error) {
	s.mu.Lock()
	if !s.configSeen {
		s.mu.Unlock()
		return 0, nil
	}
	// At most one write each reportCoalesce: what changes meanwhile goes in the next one.
	if wait := reportCoalesce - time.Since(s.lastReportAt); wait > 0 {
		s.mu.Unlock()
		return wait, nil
	}
	errs := append([]string(nil), s.configErrors...)
	for src, msg := range s.objectErrors {
		errs = append(errs, src.String()+": "+msg)
	}
	generation := s.observedGeneration
	applied := s.appliedReportLocked()
	s.mu.Unlock()
	errs = sortedErrors(errs, maxReportedErrors)
	id := fmt.Sprintf("%d|%s|%s", generation, strings.Join(errs, "\n"), appliedID(applied))
	s.mu.Lock()
	same := id == s.lastReport
	s.mu.Unlock()
	if same {
		return 0, nil
	}
	status := map[string]any{
		"observedGeneration":         generation,
		"lastSyncerConfigUpdateTime": metav1.Now().UTC().Format(time.RFC3339),
	}
	if len(errs) > 0 {
		status["errors"] = errs // left out when there are none, which withdraws the earlier ones
	}
	if len(applied) > 0 {
		status["applied"] = applied
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
		"kind":       "SyncerConfig",
		"metadata":   map[string]any{"name": edgev1alpha1.SyncerConfigName},
		"status":     status,
	})
	if err != nil {
		return 0, err
	}
	force := true
	if _, err := s.mailbox.Resource(syncerConfigGVR).Patch(ctx, edgev1alpha1.SyncerConfigName, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, "status"); err != nil {
		return 0, fmt.Errorf("writing the SyncerConfig's status: %w", err)
	}
	s.mu.Lock()
	s.lastReport = id
	s.lastReportAt = time.Now()
	s.mu.Unlock()
	return 0, nil
}

// reportCoalesce gathers what comes in a burst (errors, copies applied) into one write of the
// SyncerConfig's status, and is the least time between two such writes.
const reportCoalesce = time.Second

// appliedReportLocked returns status.applied: the applied version of each copy, keyed by
// edgev1alpha1.CopyKey. Copies that are no longer in the mailbox are dropped (those reported by
// an earlier run and gone since): a copy whose resource is not synced any more, or whose watch
// has synced without it. s.mu is held.
func (s *Syncer) appliedReportLocked() map[string]string {
	out := make(map[string]string, len(s.appliedCopies))
	for src, hash := range s.appliedCopies {
		w := s.downsync[src.groupResource()]
		if w == nil {
			delete(s.appliedCopies, src)
			continue
		}
		if w.run.informer.HasSynced() {
			if _, exists, _ := w.run.informer.GetStore().GetByKey(cacheKey(src.Namespace, src.Name)); !exists {
				delete(s.appliedCopies, src)
				continue
			}
		}
		out[edgev1alpha1.CopyKey(src.groupResource(), src.Namespace, src.Name)] = hash
	}
	return out
}

// appliedID is a stable rendering of status.applied, to tell whether it changed.
func appliedID(applied map[string]string) string {
	keys := make([]string, 0, len(applied))
	for k := range applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + applied[k] + ";")
	}
	return b.String()
}
