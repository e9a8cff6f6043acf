package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// collectFigures: with -collect, what the placements' status.collected and the assemblages'
// status showed once the status phase had turned Deployments ready, checked against what the
// bench made true at the edges. Measured is false, with NotMeasured saying why, when they did not
// show it within -status-timeout: the run then fails, after its table.
type collectFigures struct {
	Enabled     bool   `json:"enabled"`
	Collector   string `json:"collector"`
	HealthRule  string `json:"healthRule"`
	Measured    bool   `json:"measured"`
	NotMeasured string `json:"notMeasured"`
	// ReadyDeployments is how many Deployments (of the first placement, one replica each) the
	// status phase had turned ready: the sum of availableReplicas the first placement's
	// status.collected must show (WantAvailable); Available is what it showed.
	ReadyDeployments int     `json:"readyDeployments"`
	WantAvailable    int64   `json:"wantAvailable"`
	Available        float64 `json:"available"`
	// Deployments and Destinations are the collector's count of Deployments and the
	// destinations whose report went in, over every placement (N each, when right); Errors the
	// evaluations that failed.
	Deployments  int64 `json:"deployments"`
	Destinations int64 `json:"destinations"`
	Errors       int64 `json:"errors"`
	// Seconds is from the summary counting the last Deployment turned ready to every
	// placement's status.collected right.
	Seconds float64 `json:"seconds"`
	// RuleReady is how many destinations' assemblages report their Deployment Ready, and
	// RuleNotReady how many report it not ready with the health rule's reason (not kstatus's):
	// ReadyDeployments and N minus it, when the rule decides everywhere.
	RuleReady    int `json:"ruleReady"`
	RuleNotReady int `json:"ruleNotReady"`
}

// collectedRow reads a placement's status.collected entry of the benchmark's collector: the sum
// of availableReplicas (0 when no Deployment had a number) and the count of Deployments. It says
// why not when the entry is not the collector's one row of two columns.
func collectedRow(c *edgev1alpha1.CollectedStatus) (available float64, deployments int64, why string) {
	switch {
	case c == nil:
		return 0, 0, "no status.collected entry " + collectorName
	case c.Problem != "":
		return 0, 0, "problem: " + c.Problem
	case strings.Join(c.Columns, ",") != "available,deployments":
		return 0, 0, fmt.Sprintf("columns %v, want [available deployments]", c.Columns)
	case len(c.Rows) != 1 || len(c.Rows[0].Values) != 2:
		return 0, 0, fmt.Sprintf("%d rows, want one row of two values", len(c.Rows))
	}
	values := c.Rows[0].Values
	if raw := values[0].Raw; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &available); err != nil {
			return 0, 0, fmt.Sprintf("available is %s, not a number", raw)
		}
	}
	var count float64
	if err := json.Unmarshal(values[1].Raw, &count); err != nil {
		return 0, 0, fmt.Sprintf("deployments is %s, not a number", values[1].Raw)
	}
	return available, int64(count), ""
}

// ruleVerdict reads the state that a destination's assemblage status reports for the object
// key: ready, or not ready by the health rule (its reason), or why it is neither.
func ruleVerdict(status *edgev1alpha1.AssemblageStatus, key string) (ready, notReadyByRule bool, other string) {
	if status == nil {
		return false, false, "no assemblage status"
	}
	for _, o := range status.Objects {
		if o.Object != key {
			continue
		}
		switch {
		case o.State == edgev1alpha1.ObjectReady:
			return true, false, ""
		case o.State == edgev1alpha1.ObjectApplied && o.Reason == ruleNotReady:
			return false, true, ""
		}
		return false, false, fmt.Sprintf("%s is %s: %q", key, o.State, o.Reason)
	}
	return false, false, key + " is not in the status"
}

// statusOf is the status of the destination's assemblage of its placement, as the feed's cache
// holds it now; nil when it has none.
func (a *assemblageFeed) statusOf(d *destination) *edgev1alpha1.AssemblageStatus {
	item, exists, err := a.assemblages.GetByKey(kcpcache.ToClusterAwareKey(d.mailboxCluster.String(), "", a.name(d)))
	if err != nil || !exists {
		return nil
	}
	asm := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.(*unstructured.Unstructured).Object, asm); err != nil {
		return nil
	}
	return &asm.Status
}

// checkCollect, with -collect, waits until every placement's status.collected holds the right
// sum and count, with ready Deployments of the first placement turned ready, and every
// destination's assemblage reports its Deployment as the health rule decides; it records what
// it saw in fig. A wait past -status-timeout is recorded as not measured, with why.
func (f *fleet) checkCollect(ctx context.Context, placements *placementsView, ready int, fig *collectFigures) error {
	fig.ReadyDeployments, fig.WantAvailable = ready, int64(ready)
	deploymentKey := func(d *destination) string {
		return edgev1alpha1.CopyKey(schema.GroupResource{Group: "apps", Resource: "deployments"}, groupNamespace(d.group), deploymentName)
	}
	// check returns why what the center shows is not yet right, "" when it is.
	check := func() string {
		var deployments, destinations, errs int64
		for j := range f.cfg.P {
			want := len(f.destinationsOf(j))
			c := placements.collectedOf(placementName(j), collectorName)
			available, count, why := collectedRow(c)
			if why != "" {
				return fmt.Sprintf("EdgePlacement %s: %s", placementName(j), why)
			}
			deployments, destinations, errs = deployments+count, destinations+int64(c.Destinations), errs+c.Errors
			if j == 0 {
				fig.Available = available
			}
			switch {
			case count != int64(want) || c.Destinations != int32(want):
				return fmt.Sprintf("EdgePlacement %s: %d Deployments from %d destinations, want %d from %d", placementName(j), count, c.Destinations, want, want)
			case c.Errors != 0:
				return fmt.Sprintf("EdgePlacement %s: %d errors, for example %+v", placementName(j), c.Errors, c.ErrorExample)
			case j == 0 && available != float64(ready):
				return fmt.Sprintf("EdgePlacement %s: available %v, want the %d Deployments turned ready", placementName(j), available, ready)
			case j > 0 && available != 0:
				return fmt.Sprintf("EdgePlacement %s: available %v, want 0 (none turned ready)", placementName(j), available)
			}
		}
		fig.Deployments, fig.Destinations, fig.Errors = deployments, destinations, errs
		readyAt, notReady, other := 0, 0, ""
		for _, d := range f.dests {
			r, n, why := ruleVerdict(f.feed.statusOf(d), deploymentKey(d))
			switch {
			case r:
				readyAt++
			case n:
				notReady++
			case other == "":
				other = d.name + ": " + why
			}
		}
		fig.RuleReady, fig.RuleNotReady = readyAt, notReady
		if readyAt != ready || notReady != f.cfg.N-ready {
			return fmt.Sprintf("the assemblages report the Deployment ready at %d destinations and not ready by health rule %s at %d, want %d and %d (for example %s)",
				readyAt, healthRuleName, notReady, ready, f.cfg.N-ready, other)
		}
		return ""
	}
	t0 := time.Now()
	deadline := t0.Add(f.cfg.statusTimeout)
	lastSaid := t0
	for {
		why := check()
		if why == "" {
			fig.Measured, fig.Seconds = true, time.Since(t0).Seconds()
			say("collect: every placement's status.collected %s is right (available %v in %s, %d Deployments from %d destinations) after %.2fs; health rule %s decided at all %d destinations (%d ready)",
				collectorName, fig.Available, placementName(0), fig.Deployments, fig.Destinations, fig.Seconds, healthRuleName, f.cfg.N, fig.RuleReady)
			return nil
		}
		if time.Now().After(deadline) {
			fig.NotMeasured = fmt.Sprintf("not right %s after the summary counted the %d Deployments turned ready: %s", f.cfg.statusTimeout, ready, why)
			say("collect: %s", fig.NotMeasured)
			return nil
		}
		if time.Since(lastSaid) >= 10*time.Second {
			say("collect: waiting: %s", why)
			lastSaid = time.Now()
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
