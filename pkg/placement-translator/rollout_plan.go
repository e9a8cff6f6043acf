package placementtranslator

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// DefaultProgressDeadline is how long a destination may take to be done with a new version
// before it counts as failed, unless spec.rollout.progressDeadlineSeconds says otherwise.
const DefaultProgressDeadline = 10 * time.Minute

// rolloutDestination is what the rollout planner knows of one destination of a placement.
type rolloutDestination struct {
	// mailbox names the destination's mailbox workspace; name is <cluster>:<SyncTarget>, for
	// people.
	mailbox, name string
	// labels are the SyncTarget's labels, overlaid with the Location's, for the stages.
	labels map[string]string
	// desired is the version the destination should have now, as its mailbox's last reconcile
	// computed it ("" before the first).
	desired string
	// current is the version in the mailbox ("" none), delivered at deliveredAt.
	current     string
	deliveredAt time.Time
	// applied: the syncer applied current. readySince: since when the objects of current are
	// ready at the edge (zero: not ready).
	applied    bool
	readySince time.Time
	// failure says why the destination fails with current ("" it does not): the edge refused it
	// or objects fail.
	failure string
	// stale: its syncer has been silent past the grace period.
	stale bool
}

// destinationState is a destination's state in a rollout.
type destinationState int

const (
	// stateUnknown: its mailbox has not been reconciled since the placement changed.
	stateUnknown destinationState = iota
	// stateWaiting: it does not have its newest version yet.
	stateWaiting
	// stateInFlight: it has its newest version, not done with it yet.
	stateInFlight
	// stateDone: ready with its newest version for minReadySeconds.
	stateDone
	// stateFailed: failing with its newest version, past the progress deadline, or stale.
	stateFailed
)

// rolloutPlan is the planner's decision for a placement at one moment.
type rolloutPlan struct {
	// permit holds the mailboxes that may get their desired version now.
	permit map[string]bool
	// recheck is when to plan again without any event (0: no need): the end of a soak, a
	// progress deadline, a jitter offset.
	recheck time.Duration
	// stages counts the destinations of each stage by state.
	stages []edgev1alpha1.StageStatus
	// pausedAt is the stage whose pause gate holds the rollout.
	pausedAt string
	// paused: spec.rollout.paused holds it.
	paused bool
	// stalled lists the first failed destinations with their reasons, when there are more than
	// maxFailures allows.
	stalled  []string
	failures int
	// complete: every destination is done with its newest version.
	complete bool
	// progressing: some destination waits for its newest version or has it in flight.
	progressing bool
	// emptyStages are stages whose selector matches no destination.
	emptyStages []string
}

// maxStalledNamed bounds how many failed destinations RolloutStalled names.
const maxStalledNamed = 5

// unknownHold is how long after a revision is published a destination whose state is not known
// yet keeps its place in the order of a rollout (see planRollout).
const unknownHold = 10 * time.Second

// planRollout decides which destinations of a placement may get their newest version now, for
// the placement's newest revision, first seen at published. It is pure: everything it needs is in
// its arguments.
func planRollout(strategy *edgev1alpha1.RolloutStrategy, revision string, published time.Time, dests []rolloutDestination, now time.Time) rolloutPlan {
	if strategy == nil {
		strategy = &edgev1alpha1.RolloutStrategy{}
	}
	sort.Slice(dests, func(i, j int) bool { return dests[i].name < dests[j].name })
	minReady := time.Duration(strategy.MinReadySeconds) * time.Second
	deadline := DefaultProgressDeadline
	if strategy.ProgressDeadlineSeconds != nil {
		deadline = time.Duration(*strategy.ProgressDeadlineSeconds) * time.Second
	}
	plan := rolloutPlan{permit: map[string]bool{}, paused: strategy.Paused}
	soonest := func(d time.Duration) {
		if d > 0 && (plan.recheck == 0 || d < plan.recheck) {
			plan.recheck = d
		}
	}

	// Each destination's state and stage.
	n := len(dests)
	states := make([]destinationState, n)
	reasons := make([]string, n)
	stageOf := make([]int, n)
	selectors := make([]labels.Selector, len(strategy.Stages))
	for i := range strategy.Stages {
		sel, _, err := strategy.Stages[i].Selector.AsSelector("")
		if err != nil {
			sel = labels.Nothing()
		}
		selectors[i] = sel
	}
	for i, d := range dests {
		stageOf[i] = len(strategy.Stages)
		for s, sel := range selectors {
			if sel.Matches(labels.Set(d.labels)) {
				stageOf[i] = s
				break
			}
		}
		states[i], reasons[i] = classify(d, minReady, deadline, now, soonest)
	}

	// Stop for failures: more than maxFailures failed or stale destinations.
	var failed []string
	for i := range dests {
		if states[i] == stateFailed {
			failed = append(failed, fmt.Sprintf("%s: %s", dests[i].name, reasons[i]))
		}
	}
	plan.failures = len(failed)
	if strategy.MaxFailures != nil && len(failed) > scaled(strategy.MaxFailures, n, false) {
		plan.stalled = failed[:min(len(failed), maxStalledNamed)]
	}

	// Stage counts, and the first stage not settled (every destination done or failed).
	stageCount := len(strategy.Stages) + 1
	plan.stages = make([]edgev1alpha1.StageStatus, stageCount)
	for s := range plan.stages {
		if s < len(strategy.Stages) {
			plan.stages[s].Name = strategy.Stages[s].Name
		}
	}
	settled := make([]bool, stageCount)
	for s := range settled {
		settled[s] = true
	}
	inFlight := 0
	stageInFlight := make([]int, stageCount)
	for i := range dests {
		st := &plan.stages[stageOf[i]]
		st.Destinations++
		switch states[i] {
		case stateDone:
			st.Updated++
		case stateInFlight:
			st.InFlight++
			inFlight++
			stageInFlight[stageOf[i]]++
			settled[stageOf[i]] = false
		case stateFailed:
			st.Failed++
		default:
			st.Waiting++
			settled[stageOf[i]] = false
		}
	}
	plan.complete = true
	for i := range dests {
		if states[i] != stateDone {
			plan.complete = false
		}
		if states[i] == stateWaiting || states[i] == stateInFlight || states[i] == stateUnknown {
			plan.progressing = true
		}
	}
	for s := range strategy.Stages {
		if plan.stages[s].Destinations == 0 {
			plan.emptyStages = append(plan.emptyStages, strategy.Stages[s].Name)
		}
	}
	if plan.stages[len(strategy.Stages)].Destinations == 0 {
		// No destination in no stage: no unnamed last stage to report.
		plan.stages = plan.stages[:len(strategy.Stages)]
	}
	if plan.paused || plan.stalled != nil {
		return plan
	}

	// The active stage: the first not settled; a pause gate after a settled stage holds the ones
	// after it until resumed for this revision.
	active := -1
	for s := 0; s < stageCount; s++ {
		if !settled[s] {
			active = s
			break
		}
		if s < len(strategy.Stages) && strategy.Stages[s].Pause && countIn(stageOf, s) > 0 && !resumed(strategy, s, revision) && anyAfter(settled, s) {
			plan.pausedAt = strategy.Stages[s].Name
			return plan
		}
	}
	if active < 0 {
		return plan
	}
	globalRoom := math.MaxInt
	if strategy.MaxInFlight != nil {
		globalRoom = scaled(strategy.MaxInFlight, n, true) - inFlight
	}
	stageRoom := math.MaxInt
	if active < len(strategy.Stages) && strategy.Stages[active].MaxInFlight != nil {
		stageRoom = scaled(strategy.Stages[active].MaxInFlight, countIn(stageOf, active), true) - stageInFlight[active]
	}
	room := min(globalRoom, stageRoom)
	jitter := strategy.Jitter != nil && strategy.Jitter.Duration > 0 && strategy.MaxInFlight == nil && len(strategy.Stages) == 0
	for i, d := range dests {
		if room <= 0 {
			break
		}
		if stageOf[i] != active {
			continue
		}
		if states[i] == stateUnknown {
			// Its mailbox has not been reconciled since the revision was published: for a
			// while it keeps its place in name order, rather than be passed by destinations
			// whose mailboxes happened to be reconciled first; then it is passed, so that a
			// mailbox that cannot be reconciled does not hold the rollout. Without a bound on
			// destinations in flight there is no place to keep.
			if held := now.Sub(published); held < unknownHold && room != math.MaxInt {
				soonest(unknownHold - held)
				room--
			}
			continue
		}
		if states[i] != stateWaiting {
			continue
		}
		if jitter {
			if wait := jitterOffset(d.name, revision, strategy.Jitter.Duration) - now.Sub(published); wait > 0 {
				soonest(wait)
				continue
			}
		}
		plan.permit[d.mailbox] = true
		room--
	}
	return plan
}

// classify says what state a destination is in, and why it failed; soonest hears when its state
// would change with time alone.
func classify(d rolloutDestination, minReady, deadline time.Duration, now time.Time, soonest func(time.Duration)) (destinationState, string) {
	switch {
	case d.stale:
		return stateFailed, "its syncer is silent"
	case d.desired == "":
		return stateUnknown, ""
	case d.current != d.desired:
		return stateWaiting, ""
	case d.failure != "":
		return stateFailed, d.failure
	}
	if d.applied && !d.readySince.IsZero() {
		since := d.readySince
		if since.Before(d.deliveredAt) {
			since = d.deliveredAt
		}
		if left := minReady - now.Sub(since); left > 0 {
			soonest(left + time.Millisecond)
		} else {
			return stateDone, ""
		}
	}
	if !d.deliveredAt.IsZero() {
		left := deadline - now.Sub(d.deliveredAt)
		if left <= 0 {
			return stateFailed, fmt.Sprintf("not done %s after its delivery (progress deadline)", deadline)
		}
		soonest(left + time.Millisecond)
	}
	return stateInFlight, ""
}

// jitterOffset is a destination's fixed point in the jitter window for a revision.
func jitterOffset(name, revision string, window time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name + "/" + revision))
	return time.Duration(h.Sum64() % uint64(window))
}

// scaled resolves a count or percentage of n, rounding up or down; at least 1 when rounding up.
func scaled(v *intstr.IntOrString, n int, roundUp bool) int {
	out, err := intstr.GetScaledValueFromIntOrPercent(v, n, roundUp)
	if err != nil {
		return 0
	}
	if roundUp && out < 1 {
		out = 1
	}
	return out
}

func countIn(stageOf []int, s int) int {
	c := 0
	for _, x := range stageOf {
		if x == s {
			c++
		}
	}
	return c
}

// anyAfter says whether any stage after s is not settled: a gate matters only if something
// waits behind it.
func anyAfter(settled []bool, s int) bool {
	for _, ok := range settled[s+1:] {
		if !ok {
			return true
		}
	}
	return false
}

func resumed(strategy *edgev1alpha1.RolloutStrategy, s int, revision string) bool {
	r := strategy.Resume
	return r != nil && r.Stage == strategy.Stages[s].Name && r.Revision == revision
}

// stalledMessage is RolloutStalled's message.
func stalledMessage(p rolloutPlan, maxFailures *intstr.IntOrString) string {
	return fmt.Sprintf("%d destinations failed or are stale, more than maxFailures (%s) allows; the rollout goes on when they recover or a newer version is published: %s",
		p.failures, maxFailures.String(), strings.Join(p.stalled, "; "))
}
