// The matching engine of the edge scheduler: EdgePlacements x Locations x SyncTargets ->
// destinations, kept up to date incrementally in memory, with no API client. The controller
// feeds it informer events and writes what it resolves.

package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// PlacementKey names an EdgePlacement: the logical cluster of its workload workspace and its name.
type PlacementKey struct{ Cluster, Name string }

// String returns cluster|name.
func (k PlacementKey) String() string { return k.Cluster + "|" + k.Name }

// ObjectKey names a Location or a SyncTarget: the logical cluster of its inventory workspace and
// its name.
type ObjectKey struct{ Cluster, Name string }

// String returns cluster|name.
func (k ObjectKey) String() string { return k.Cluster + "|" + k.Name }

// maxReportedSelectorErrors bounds how many invalid locationSelectors a condition message names.
const maxReportedSelectorErrors = 3

// Result is what the engine resolves for one EdgePlacement: its destinations and the inputs of
// its Scheduled condition.
type Result struct {
	// Destinations are the schedulable SyncTargets of the matching Locations, each once, sorted
	// by Cluster then SyncTargetName. A SyncTarget reached through several Locations carries the
	// smallest of their names. Empty when Status is False; in particular a placement with an
	// invalid selector has no destinations (the controller may prefer to keep what it wrote
	// before when Reason is ReasonInvalidSelector).
	Destinations []edgev1alpha1.SinglePlacement
	// MatchingLocations is the number of distinct Locations that the placement selects.
	MatchingLocations int
	// MatchingSyncTargets is len(Destinations).
	MatchingSyncTargets int
	// Status, Reason and Message are those of the PlacementScheduled condition.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// NumberOfDestinations and SpreadBy are the placement's, as last set with SetPick: with
	// NumberOfDestinations > 0 the controller picks that many of Candidates (see Pick).
	NumberOfDestinations int
	SpreadBy             string
	// Candidates are Destinations with their values of SpreadBy, when NumberOfDestinations > 0.
	Candidates []Candidate
}

// Engine matches EdgePlacements against Locations and SyncTargets. Each Set or Delete does work
// proportional to what it can change and returns the placements whose Result may have changed;
// Result computes a placement's destinations on demand from the kept match sets.
//
// An Engine is not safe for concurrent use.
type Engine struct {
	placements map[PlacementKey]*placementState
	clusters   map[string]*inventoryCluster
	// changedLocations holds the Locations whose LocationInstances or LocationError may have
	// changed since the last TakeChangedLocations.
	changedLocations map[ObjectKey]struct{}
}

// The match sets below link the states to one another by pointer, both ways: a placement and
// the Locations it matches, a Location and the SyncTargets it selects. Every link is removed
// from both ends when it ends, and a state leaves its sets before it leaves the engine.

// placementState is what the engine knows of one EdgePlacement.
type placementState struct {
	key       PlacementKey
	raw       []edgev1alpha1.LabelSelector
	selectors []labels.Selector // nil when err != nil: an invalid placement matches nothing
	err       error
	locations map[*locationState]struct{} // the Locations its selectors match
	// n and spreadBy are spec.numberOfDestinations (0 when unset) and spec.spreadBy.
	n        int
	spreadBy string
}

// locationState is what the engine knows of one Location.
type locationState struct {
	key        ObjectKey
	labels     labels.Set
	raw        edgev1alpha1.LabelSelector
	selector   labels.Selector // labels.Nothing() when err != nil
	err        error
	targets    map[*syncTargetState]struct{} // SyncTargets of its cluster that its selector matches
	placements map[*placementState]struct{}  // placements that match it
}

// syncTargetState is what the engine knows of one SyncTarget.
type syncTargetState struct {
	key           ObjectKey
	uid           types.UID
	labels        labels.Set
	unschedulable bool
	locations     map[*locationState]struct{} // Locations of its cluster that select it
}

// inventoryCluster holds the Locations and SyncTargets of one inventory logical cluster.
type inventoryCluster struct {
	locations map[string]*locationState
	targets   map[string]*syncTargetState
}

// NewEngine returns an empty Engine.
func NewEngine() *Engine {
	return &Engine{
		placements:       map[PlacementKey]*placementState{},
		clusters:         map[string]*inventoryCluster{},
		changedLocations: map[ObjectKey]struct{}{},
	}
}

// SetPlacement records an EdgePlacement's locationSelectors (create or update). It evaluates them
// against every Location and returns the placement's key if its Result may have changed.
func (e *Engine) SetPlacement(key PlacementKey, selectors []edgev1alpha1.LabelSelector) []PlacementKey {
	p, known := e.placements[key]
	if known && selectorListsEqual(p.raw, selectors) {
		return nil
	}
	if !known {
		p = &placementState{key: key, locations: map[*locationState]struct{}{}}
		e.placements[key] = p
	}
	oldCount, oldErr := len(p.raw), errorText(p.err)
	p.raw = make([]edgev1alpha1.LabelSelector, len(selectors))
	for i := range selectors {
		selectors[i].DeepCopyInto(&p.raw[i])
	}
	p.selectors, p.err = parsePlacementSelectors(p.raw)
	changed := !known || oldCount != len(p.raw) || oldErr != errorText(p.err)
	for _, c := range e.clusters {
		for _, l := range c.locations {
			now := p.matches(l.labels)
			if _, was := p.locations[l]; now == was {
				continue
			}
			changed = true
			link(p, l, now)
		}
	}
	// A placement that matches no Location has a message that quotes its selectors, which
	// have changed.
	changed = changed || len(p.locations) == 0
	if !changed {
		return nil
	}
	return []PlacementKey{key}
}

// SetPick records a placement's numberOfDestinations (0 when unset) and spreadBy, after
// SetPlacement. It returns the placement's key if they changed.
func (e *Engine) SetPick(key PlacementKey, n int, spreadBy string) []PlacementKey {
	p, known := e.placements[key]
	if !known || (p.n == n && p.spreadBy == spreadBy) {
		return nil
	}
	p.n, p.spreadBy = n, spreadBy
	return []PlacementKey{key}
}

// DeletePlacement forgets an EdgePlacement. It returns the key itself if the placement was known,
// so that the controller can forget it too; Result then reports it unknown.
func (e *Engine) DeletePlacement(key PlacementKey) []PlacementKey {
	p, known := e.placements[key]
	if !known {
		return nil
	}
	for l := range p.locations {
		delete(l.placements, p)
	}
	delete(e.placements, key)
	return []PlacementKey{key}
}

// SetLocation records a Location's labels and instanceSelector (create or update). A changed label
// set is evaluated against every placement, a changed instanceSelector against the SyncTargets of
// the Location's cluster only. A nil instanceSelector is the same as an empty one, which selects
// every SyncTarget of the cluster: the API field is not a pointer, and a Location without it
// has the empty selector. It returns the placements whose Result may have changed.
func (e *Engine) SetLocation(key ObjectKey, locationLabels map[string]string, instanceSelector *edgev1alpha1.LabelSelector) []PlacementKey {
	var raw edgev1alpha1.LabelSelector
	if instanceSelector != nil {
		instanceSelector.DeepCopyInto(&raw)
	}
	c := e.cluster(key.Cluster)
	l, known := c.locations[key.Name]
	labelsChanged := !known || !labels.Equals(l.labels, locationLabels)
	selectorChanged := !known || !selectorsEqual(&l.raw, &raw)
	if !labelsChanged && !selectorChanged {
		return nil
	}
	if !known {
		l = &locationState{
			key:        key,
			targets:    map[*syncTargetState]struct{}{},
			placements: map[*placementState]struct{}{},
		}
		c.locations[key.Name] = l
	}
	dirty := placementSet{}
	if labelsChanged {
		for p := range l.placements {
			if p.spreadBy != "" && !sameLabel(l.labels, locationLabels, p.spreadBy) {
				dirty[p.key] = struct{}{}
			}
		}
		l.labels = copyLabels(locationLabels)
		for _, p := range e.placements {
			now := p.matches(l.labels)
			if _, was := l.placements[p]; now == was {
				continue
			}
			dirty[p.key] = struct{}{}
			link(p, l, now)
		}
	}
	if selectorChanged {
		wasValid, oldErr := l.err == nil, errorText(l.err)
		l.raw = raw
		l.selector, l.err = parseSelector(&l.raw, "spec.instanceSelector")
		targetsChanged := false
		for _, t := range c.targets {
			now := l.selector.Matches(t.labels)
			if _, was := l.targets[t]; now == was {
				continue
			}
			targetsChanged = true
			selects(l, t, now)
		}
		// The placements' messages count the matching Locations with an invalid selector.
		if !known || targetsChanged || wasValid != (l.err == nil) {
			dirty.addPlacements(l.placements)
		}
		if !known || targetsChanged || oldErr != errorText(l.err) {
			e.changedLocations[key] = struct{}{}
		}
	}
	return dirty.sorted()
}

// DeleteLocation forgets a Location and returns the placements that matched it.
func (e *Engine) DeleteLocation(key ObjectKey) []PlacementKey {
	c := e.clusters[key.Cluster]
	if c == nil {
		return nil
	}
	l := c.locations[key.Name]
	if l == nil {
		return nil
	}
	dirty := placementSet{}
	dirty.addPlacements(l.placements)
	for p := range l.placements {
		delete(p.locations, l)
	}
	for t := range l.targets {
		delete(t.locations, l)
	}
	delete(c.locations, key.Name)
	delete(e.changedLocations, key)
	e.forgetIfEmpty(key.Cluster, c)
	return dirty.sorted()
}

// SetSyncTarget records a SyncTarget (create or update). Changed labels are evaluated against the
// Locations of its cluster only. It returns the placements that match a Location that selects
// the SyncTarget, before or after, when what they get from it may have changed.
func (e *Engine) SetSyncTarget(key ObjectKey, uid types.UID, targetLabels map[string]string, unschedulable bool) []PlacementKey {
	c := e.cluster(key.Cluster)
	t, known := c.targets[key.Name]
	labelsChanged := !known || !labels.Equals(t.labels, targetLabels)
	if known && !labelsChanged && t.uid == uid && t.unschedulable == unschedulable {
		return nil
	}
	if !known {
		t = &syncTargetState{key: key, locations: map[*locationState]struct{}{}}
		c.targets[key.Name] = t
	}
	dirty := placementSet{}
	if known && (t.uid != uid || t.unschedulable != unschedulable) {
		// What the Locations that keep selecting it get from it changes; those that start or
		// stop selecting it are handled below.
		for l := range t.locations {
			dirty.addPlacements(l.placements)
			if t.unschedulable != unschedulable {
				e.changedLocations[l.key] = struct{}{}
			}
		}
	}
	t.uid, t.unschedulable = uid, unschedulable
	if labelsChanged {
		// A placement spread by a label whose value changed may pick differently.
		for l := range t.locations {
			for p := range l.placements {
				if p.spreadBy != "" && !sameLabel(t.labels, targetLabels, p.spreadBy) {
					dirty[p.key] = struct{}{}
				}
			}
		}
		t.labels = copyLabels(targetLabels)
		for _, l := range c.locations {
			now := l.selector.Matches(t.labels)
			if _, was := t.locations[l]; now == was {
				continue
			}
			selects(l, t, now)
			dirty.addPlacements(l.placements)
			e.changedLocations[l.key] = struct{}{}
		}
	}
	return dirty.sorted()
}

// DeleteSyncTarget forgets a SyncTarget and returns the placements that matched a Location that
// selected it.
func (e *Engine) DeleteSyncTarget(key ObjectKey) []PlacementKey {
	c := e.clusters[key.Cluster]
	if c == nil {
		return nil
	}
	t := c.targets[key.Name]
	if t == nil {
		return nil
	}
	dirty := placementSet{}
	for l := range t.locations {
		delete(l.targets, t)
		dirty.addPlacements(l.placements)
		e.changedLocations[l.key] = struct{}{}
	}
	delete(c.targets, key.Name)
	e.forgetIfEmpty(key.Cluster, c)
	return dirty.sorted()
}

// LocationError returns the error in a Location's instanceSelector, or nil if it is valid or the
// Location is unknown. A Location with an invalid instanceSelector selects no SyncTarget.
func (e *Engine) LocationError(key ObjectKey) error {
	if l := e.lookupLocation(key); l != nil {
		return l.err
	}
	return nil
}

// LocationInstances returns how many SyncTargets a Location's instanceSelector selects, and how
// many of those are schedulable: its status.instances and status.availableInstances. Both are 0
// for an unknown Location.
func (e *Engine) LocationInstances(key ObjectKey) (instances, available int) {
	l := e.lookupLocation(key)
	if l == nil {
		return 0, 0
	}
	for t := range l.targets {
		if !t.unschedulable {
			available++
		}
	}
	return len(l.targets), available
}

// TakeChangedLocations returns, sorted, the known Locations whose LocationInstances or
// LocationError may have changed since the previous call, and starts a new record.
func (e *Engine) TakeChangedLocations() []ObjectKey {
	if len(e.changedLocations) == 0 {
		return nil
	}
	out := make([]ObjectKey, 0, len(e.changedLocations))
	for k := range e.changedLocations {
		out = append(out, k)
	}
	clear(e.changedLocations)
	slices.SortFunc(out, compareObjectKeys)
	return out
}

// Result resolves a placement's destinations and Scheduled condition. It reports false if the
// placement is unknown. Its cost is that of visiting the SyncTargets of the matching Locations
// and sorting them.
func (e *Engine) Result(key PlacementKey) (Result, bool) {
	p, known := e.placements[key]
	if !known {
		return Result{}, false
	}
	switch {
	case p.err != nil:
		return Result{Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonInvalidSelector, Message: p.err.Error(),
			NumberOfDestinations: p.n, SpreadBy: p.spreadBy}, true
	case len(p.raw) == 0:
		return Result{Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonNoLocationMatches,
			Message:              "spec.locationSelectors is empty, so no Location is selected; add a selector that matches the labels of some Locations",
			NumberOfDestinations: p.n, SpreadBy: p.spreadBy}, true
	case len(p.locations) == 0:
		return Result{Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonNoLocationMatches,
			Message: noLocationMessage(p.selectors), NumberOfDestinations: p.n, SpreadBy: p.spreadBy}, true
	}

	// Every (SyncTarget, Location) pair, sorted so that each SyncTarget's pairs are together, in
	// destination order, the smallest Location name first.
	n, invalidLocations := 0, 0
	for l := range p.locations {
		n += len(l.targets)
		if l.err != nil {
			invalidLocations++
		}
	}
	reached := make([]reach, 0, n)
	for l := range p.locations {
		for t := range l.targets {
			reached = append(reached, reach{target: t, location: l})
		}
	}
	slices.SortFunc(reached, compareReach)
	schedulable, unschedulable := 0, 0
	for i, r := range reached {
		switch {
		case i > 0 && reached[i-1].target == r.target:
		case r.target.unschedulable:
			unschedulable++
		default:
			schedulable++
		}
	}
	destinations := make([]edgev1alpha1.SinglePlacement, 0, schedulable)
	var candidates []Candidate
	if p.n > 0 {
		candidates = make([]Candidate, 0, schedulable)
	}
	for i, r := range reached {
		if (i > 0 && reached[i-1].target == r.target) || r.target.unschedulable {
			continue
		}
		d := edgev1alpha1.SinglePlacement{
			Cluster:        r.target.key.Cluster,
			LocationName:   r.location.key.Name,
			SyncTargetName: r.target.key.Name,
			SyncTargetUID:  r.target.uid,
		}
		destinations = append(destinations, d)
		if p.n > 0 {
			c := Candidate{Destination: d}
			if p.spreadBy != "" {
				c.SpreadValue, c.Labelled = spreadValue(r.location.labels, r.target.labels, p.spreadBy)
			}
			candidates = append(candidates, c)
		}
	}

	r := Result{
		Destinations:         destinations,
		MatchingLocations:    len(p.locations),
		MatchingSyncTargets:  len(destinations),
		NumberOfDestinations: p.n,
		SpreadBy:             p.spreadBy,
		Candidates:           candidates,
	}
	var notes []string
	if unschedulable > 0 {
		notes = append(notes, fmt.Sprintf("%s left out as unschedulable", countNoun(unschedulable, "SyncTarget")))
	}
	if invalidLocations > 0 {
		notes = append(notes, fmt.Sprintf("%s an invalid instanceSelector", countVerb(invalidLocations, "Location", "has", "have")))
	}
	note := ""
	if len(notes) > 0 {
		note = " (" + strings.Join(notes, "; ") + ")"
	}
	if len(destinations) == 0 {
		r.Destinations = nil
		r.Status, r.Reason = metav1.ConditionFalse, edgev1alpha1.ReasonNoSyncTargetMatches
		if r.MatchingLocations == 1 {
			r.Message = "1 Location matches, but it selects no schedulable SyncTarget" + note
		} else {
			r.Message = fmt.Sprintf("%d Locations match, but they select no schedulable SyncTarget", r.MatchingLocations) + note
		}
		return r, true
	}
	r.Status, r.Reason = metav1.ConditionTrue, edgev1alpha1.ReasonScheduled
	r.Message = countNoun(r.MatchingLocations, "Location") + ", " + countNoun(r.MatchingSyncTargets, "SyncTarget") + note
	return r, true
}

// reach is a SyncTarget reached through a Location.
type reach struct {
	target   *syncTargetState
	location *locationState
}

// compareReach orders by cluster, SyncTarget name, then Location name.
func compareReach(a, b reach) int {
	if a.target != b.target {
		if c := strings.Compare(a.target.key.Cluster, b.target.key.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.target.key.Name, b.target.key.Name)
	}
	return strings.Compare(a.location.key.Name, b.location.key.Name)
}

// spreadValue is a destination's value of the spreadBy label: its Location's, or, if the
// Location lacks the label, its SyncTarget's. It reports false if neither has it.
func spreadValue(location, target labels.Set, key string) (string, bool) {
	if v, ok := location[key]; ok {
		return v, true
	}
	v, ok := target[key]
	return v, ok
}

// sameLabel tells whether two label sets agree on a key, presence included.
func sameLabel(a, b map[string]string, key string) bool {
	av, aok := a[key]
	bv, bok := b[key]
	return aok == bok && av == bv
}

// matches tells whether any of the placement's selectors matches a Location's labels.
func (p *placementState) matches(l labels.Set) bool {
	for _, s := range p.selectors {
		if s.Matches(l) {
			return true
		}
	}
	return false
}

// link records, at both ends, whether a placement matches a Location.
func link(p *placementState, l *locationState, matches bool) {
	if matches {
		p.locations[l] = struct{}{}
		l.placements[p] = struct{}{}
	} else {
		delete(p.locations, l)
		delete(l.placements, p)
	}
}

// selects records, at both ends, whether a Location selects a SyncTarget.
func selects(l *locationState, t *syncTargetState, selected bool) {
	if selected {
		l.targets[t] = struct{}{}
		t.locations[l] = struct{}{}
	} else {
		delete(l.targets, t)
		delete(t.locations, l)
	}
}

// cluster returns the inventory cluster of that name, adding it if it is new.
func (e *Engine) cluster(name string) *inventoryCluster {
	c := e.clusters[name]
	if c == nil {
		c = &inventoryCluster{locations: map[string]*locationState{}, targets: map[string]*syncTargetState{}}
		e.clusters[name] = c
	}
	return c
}

// forgetIfEmpty drops an inventory cluster that holds nothing any more.
func (e *Engine) forgetIfEmpty(name string, c *inventoryCluster) {
	if len(c.locations) == 0 && len(c.targets) == 0 {
		delete(e.clusters, name)
	}
}

// lookupLocation returns the Location, or nil if it is unknown.
func (e *Engine) lookupLocation(key ObjectKey) *locationState {
	if c := e.clusters[key.Cluster]; c != nil {
		return c.locations[key.Name]
	}
	return nil
}

// parsePlacementSelectors parses every locationSelector; the error names each invalid one (the
// first few of them).
func parsePlacementSelectors(raw []edgev1alpha1.LabelSelector) ([]labels.Selector, error) {
	selectors := make([]labels.Selector, 0, len(raw))
	var problems []string
	invalid := 0
	for i := range raw {
		s, err := parseSelector(&raw[i], fmt.Sprintf("spec.locationSelectors[%d]", i))
		if err != nil {
			invalid++
			if invalid <= maxReportedSelectorErrors {
				problems = append(problems, err.Error())
			}
			continue
		}
		selectors = append(selectors, s)
	}
	if invalid == 0 {
		return selectors, nil
	}
	if invalid > maxReportedSelectorErrors {
		problems = append(problems, fmt.Sprintf("and %d more invalid locationSelectors", invalid-maxReportedSelectorErrors))
	}
	return nil, fmt.Errorf("invalid selector, so no Location is selected: %s", strings.Join(problems, "; "))
}

// parseSelector converts a LabelSelector into a labels.Selector. On error it returns
// labels.Nothing() and an error that names the first invalid part, below path.
func parseSelector(s *edgev1alpha1.LabelSelector, path string) (labels.Selector, error) {
	selector, badPath, err := s.AsSelector(path)
	if err != nil {
		return labels.Nothing(), fmt.Errorf("%s: %w", badPath, err)
	}
	return selector, nil
}

// selectorsEqual tells whether two selectors are the same, a nil map or list being the same as
// an empty one.
func selectorsEqual(a, b *edgev1alpha1.LabelSelector) bool {
	if !labels.Equals(a.MatchLabels, b.MatchLabels) || len(a.MatchExpressions) != len(b.MatchExpressions) {
		return false
	}
	for i := range a.MatchExpressions {
		x, y := &a.MatchExpressions[i], &b.MatchExpressions[i]
		if x.Key != y.Key || x.Operator != y.Operator || !slices.Equal(x.Values, y.Values) {
			return false
		}
	}
	return true
}

// selectorListsEqual tells whether two lists of selectors are the same, element by element.
func selectorListsEqual(a, b []edgev1alpha1.LabelSelector) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !selectorsEqual(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// placementSet is a set of placements, returned sorted.
type placementSet map[PlacementKey]struct{}

func (s placementSet) addPlacements(placements map[*placementState]struct{}) {
	for p := range placements {
		s[p.key] = struct{}{}
	}
}

func (s placementSet) sorted() []PlacementKey {
	if len(s) == 0 {
		return nil
	}
	out := make([]PlacementKey, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b PlacementKey) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func compareObjectKeys(a, b ObjectKey) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name))
}

func copyLabels(in map[string]string) labels.Set {
	if len(in) == 0 {
		return labels.Set{}
	}
	out := make(labels.Set, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func noLocationMessage(selectors []labels.Selector) string {
	const fix = "; compare with the Locations' labels (kubectl get locations --show-labels in each inventory workspace), then change the selector or label a Location"
	if len(selectors) == 1 {
		return fmt.Sprintf("no Location matches the locationSelector %q", selectors[0].String()) + fix
	}
	shown := make([]string, 0, maxReportedSelectorErrors)
	for i, s := range selectors {
		if i == maxReportedSelectorErrors {
			shown = append(shown, fmt.Sprintf("and %d more", len(selectors)-i))
			break
		}
		shown = append(shown, fmt.Sprintf("%q", s.String()))
	}
	return fmt.Sprintf("no Location matches any of the %d locationSelectors (%s)", len(selectors), strings.Join(shown, ", ")) + fix
}

// countNoun returns e.g. "1 Location" or "3 Locations".
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// countVerb returns e.g. "1 Location has" or "2 Locations have".
func countVerb(n int, noun, singular, plural string) string {
	if n == 1 {
		return "1 " + noun + " " + singular
	}
	return fmt.Sprintf("%d %ss %s", n, noun, plural)
}
