package v1alpha1

// Paces says whether a rollout strategy can hold a new version back from a destination: it has
// maxInFlight, stages, paused, a jitter window or maxFailures. minReadySeconds and
// progressDeadlineSeconds alone pace nothing: they only say when a destination is done or failed,
// which matters to a rollout that waits for it. A placement whose strategy does not pace gets
// every change at every destination at once, as one without spec.rollout.
func (r *RolloutStrategy) Paces() bool {
	return r != nil && (r.MaxInFlight != nil || r.Paused || len(r.Stages) > 0 ||
		(r.Jitter != nil && r.Jitter.Duration > 0) || r.MaxFailures != nil)
}
