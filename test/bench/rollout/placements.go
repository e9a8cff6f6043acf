package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")

// placementWatch is what one watch of the workload workspace's EdgePlacements has seen of them,
// and how many status changes of each it saw, by the controller whose part of the status
// changed.
type placementWatch struct {
	mu         sync.Mutex
	placements map[string]*edgev1alpha1.EdgePlacement
	changes    map[string]*statusChanges
	waiters    waiters
}

// statusChanges counts the changes of a placement's status that a watch saw, by what changed:
// the placement translator's part (status.rollout and the conditions it sets), the status
// summarizer's (summary, broken, objects, summaryTime, Ready), both, or neither (a write that
// changed something else, or only metadata).
type statusChanges struct {
	Translator int `json:"translator"`
	Summarizer int `json:"summarizer"`
	Both       int `json:"both"`
	Neither    int `json:"neither"`
}

func (c statusChanges) minus(o statusChanges) statusChanges {
	return statusChanges{c.Translator - o.Translator, c.Summarizer - o.Summarizer, c.Both - o.Both, c.Neither - o.Neither}
}

// classifyChange says which controllers' parts of the status differ between old and p.
func classifyChange(old, p *edgev1alpha1.EdgePlacement, c *statusChanges) {
	summarizerConds := map[string]bool{edgev1alpha1.PlacementReady: true}
	condsDiffer := func(summarizer bool) bool {
		pick := func(conds []metav1.Condition) map[string]metav1.Condition {
			out := map[string]metav1.Condition{}
			for _, cond := range conds {
				if summarizerConds[cond.Type] == summarizer {
					out[cond.Type] = cond
				}
			}
			return out
		}
		return !equality.Semantic.DeepEqual(pick(old.Status.Conditions), pick(p.Status.Conditions))
	}
	translator := condsDiffer(false) || !equality.Semantic.DeepEqual(old.Status.Rollout, p.Status.Rollout)
	summarizer := condsDiffer(true) || !equality.Semantic.DeepEqual(old.Status.Summary, p.Status.Summary) ||
		!equality.Semantic.DeepEqual(old.Status.Broken, p.Status.Broken) || !equality.Semantic.DeepEqual(old.Status.Objects, p.Status.Objects) ||
		!equality.Semantic.DeepEqual(old.Status.SummaryTime, p.Status.SummaryTime)
	switch {
	case translator && summarizer:
		c.Both++
	case translator:
		c.Translator++
	case summarizer:
		c.Summarizer++
	default:
		c.Neither++
	}
}

func watchPlacements(ctx context.Context, s *framework.Server, wmw logicalcluster.Path) (*placementWatch, error) {
	pw := &placementWatch{placements: map[string]*edgev1alpha1.EdgePlacement{}, changes: map[string]*statusChanges{}}
	client, err := dynamic.NewForConfig(s.ConfigFor(wmw))
	if err != nil {
		return nil, err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(client, placementsGVR, "", 0, cache.Indexers{}, nil).Informer()
	set := func(obj any) {
		at := time.Now()
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		p := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			say("cannot decode EdgePlacement %s: %v", u.GetName(), err)
			return
		}
		pw.mu.Lock()
		defer pw.mu.Unlock()
		if old := pw.placements[p.Name]; old != nil {
			if pw.changes[p.Name] == nil {
				pw.changes[p.Name] = &statusChanges{}
			}
			classifyChange(old, p, pw.changes[p.Name])
		}
		pw.placements[p.Name] = p
		pw.waiters.changed(at)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the watch of the EdgePlacements of %s has not listed", wmw)
	}
	return pw, nil
}

// await returns a channel that receives the time of the event that makes cond true of the
// placement (nil while it has not been seen); cond runs with the watch's lock held.
func (pw *placementWatch) await(name string, cond func(p *edgev1alpha1.EdgePlacement) bool) <-chan time.Time {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.waiters.add(func() bool { return cond(pw.placements[name]) }, time.Now())
}

// get returns a copy of the placement as last seen, nil if it was not.
func (pw *placementWatch) get(name string) *edgev1alpha1.EdgePlacement {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.placements[name].DeepCopy()
}

// changesOf returns the counts of the placement's changes seen so far.
func (pw *placementWatch) changesOf(name string) statusChanges {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if c := pw.changes[name]; c != nil {
		return *c
	}
	return statusChanges{}
}

// revisionOf is the placement's newest revision in status ("" none yet).
func revisionOf(p *edgev1alpha1.EdgePlacement) string {
	if p == nil || p.Status.Rollout == nil {
		return ""
	}
	return p.Status.Rollout.Revision
}

// completedOtherThan says whether the placement's status shows a revision other than old
// complete: RolloutComplete True and the revision's history entry completed.
func completedOtherThan(old string) func(p *edgev1alpha1.EdgePlacement) bool {
	return func(p *edgev1alpha1.EdgePlacement) bool {
		r := revisionOf(p)
		if r == "" || r == old || len(p.Status.Rollout.History) == 0 {
			return false
		}
		h := p.Status.Rollout.History[0]
		return h.Revision == r && h.CompletedTime != nil &&
			meta.IsStatusConditionTrue(p.Status.Conditions, edgev1alpha1.PlacementRolloutComplete)
	}
}

// waitingAtGate says whether the placement's rollout of a revision other than old waits at
// the pause gate after stage.
func waitingAtGate(old, stage string) func(p *edgev1alpha1.EdgePlacement) bool {
	return func(p *edgev1alpha1.EdgePlacement) bool {
		r := revisionOf(p)
		if r == "" || r == old || p.Status.Rollout.PausedAt != stage {
			return false
		}
		c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementProgressing)
		return c != nil && c.Reason == edgev1alpha1.ReasonWaitingAtGate
	}
}

// stageCounts sums the placement's rollout stages: destinations updated, in flight, failed and
// waiting, as a line for people.
func stageCounts(p *edgev1alpha1.EdgePlacement) string {
	if p == nil || p.Status.Rollout == nil {
		return "no rollout status"
	}
	var t edgev1alpha1.StageStatus
	for _, s := range p.Status.Rollout.Stages {
		t.Destinations += s.Destinations
		t.Updated += s.Updated
		t.InFlight += s.InFlight
		t.Failed += s.Failed
		t.Waiting += s.Waiting
	}
	return fmt.Sprintf("%d of %d updated, %d in flight, %d failed, %d waiting", t.Updated, t.Destinations, t.InFlight, t.Failed, t.Waiting)
}

// conditionText is a condition as "Type=Status (Reason)".
func conditionText(p *edgev1alpha1.EdgePlacement, condType string) string {
	if p == nil {
		return condType + " not seen"
	}
	c := meta.FindStatusCondition(p.Status.Conditions, condType)
	if c == nil {
		return condType + " not set"
	}
	return fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason)
}
