package syncer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// leasesGR names Leases in the API's answers (see transport.Gone).
var leasesGR = coordinationv1.SchemeGroupVersion.WithResource("leases").GroupResource()

// heartbeat renews the heartbeat Lease in the mailbox at the heartbeat interval (see
// heartbeatInterval), with a little jitter, until ctx ends; a change of the interval takes effect
// at once. The first renewal is at once; the wait after it is drawn at random within the interval
// (see nextHeartbeat). A failed renewal is logged once per outage and tried again at the next tick.
func (s *Syncer) heartbeat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	first := true
	for {
		interval := s.heartbeatInterval()
		err := s.probeEdge(ctx, interval)
		if err == nil {
			err = s.renewLease(ctx, interval)
		}
		s.mu.Lock()
		wasOK := s.heartbeatOK
		s.heartbeatOK = err == nil
		s.mu.Unlock()
		switch {
		case err != nil:
			metricHeartbeats.WithLabelValues("failed").Inc()
			metricConnected.Set(0)
			if wasOK {
				logger.Error(err, "no heartbeat reached the mailbox; the edge stays as it is, and the syncer keeps trying")
			}
		default:
			metricHeartbeats.WithLabelValues("ok").Inc()
			metricConnected.Set(1)
			if !wasOK {
				logger.Info("the heartbeat reaches the mailbox", "interval", interval.String())
			}
		}
		timer := time.NewTimer(nextHeartbeat(interval, first, rand.Float64))
		first = false
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.heartbeatSignal:
			timer.Stop()
			first = true
			logger.Info("the heartbeat interval changed", "interval", s.heartbeatInterval().String())
		case <-timer.C:
		}
	}
}

// probeEdge asks the edge cluster's /readyz, when the heartbeat needs the edge
// (Config.HeartbeatNeedsEdge), and reports the outcome to Config.EdgeProbed.
func (s *Syncer) probeEdge(ctx context.Context, interval time.Duration) error {
	if !s.cfg.HeartbeatNeedsEdge {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(interval, 10*time.Second))
	defer cancel()
	_, err := s.edgeKube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		err = &EdgeUnreachableError{Err: err}
	}
	if s.cfg.EdgeProbed != nil {
		s.cfg.EdgeProbed(err)
	}
	return err
}

// EdgeUnreachableError is a heartbeat skipped because the edge cluster did not answer.
type EdgeUnreachableError struct{ Err error }

func (e *EdgeUnreachableError) Error() string {
	return "the edge cluster does not answer, so no heartbeat is sent for it: " + e.Err.Error()
}

func (e *EdgeUnreachableError) Unwrap() error { return e.Err }

// nextHeartbeat returns how long to wait after a renewal before the next one: the interval with
// up to 10% added at random; but after the first renewal (at the syncer's start, or once the
// interval changed), a time drawn uniformly from (0, interval], random a value of [0, 1). Syncers
// started together (a fleet installed at once, edge clusters powered on together) would otherwise
// renew in one wave every interval, N writes within seconds that delay whatever else the center
// writes then; drawn once, their phases stay spread over the interval, and the center sees the same
// N / interval writes a second at any time.
func nextHeartbeat(interval time.Duration, first bool, random func() float64) time.Duration {
	if first {
		return max(time.Duration((1-random())*float64(interval)), time.Millisecond)
	}
	return interval + time.Duration(0.1*random()*float64(interval))
}

// renewLease renews the heartbeat Lease. It writes the Lease as it was last written, without
// reading it first: one request per heartbeat, which at hundreds of syncers is most of what an
// idle center serves. Only when that write fails (someone else wrote the Lease, or it is gone,
// or there is none yet) does it read the Lease and write again.
func (s *Syncer) renewLease(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, interval)
	defer cancel()
	leases := s.mailboxKube.CoordinationV1().Leases(s.cfg.HeartbeatNamespace)
	now := metav1.NewMicroTime(time.Now())
	if last := s.lastLease; last != nil {
		lease := last.DeepCopy()
		lease.Spec.HolderIdentity = ptr.To(s.cfg.Identity)
		lease.Spec.RenewTime = &now
		lease.Spec.LeaseDurationSeconds = leaseDuration(interval)
		written, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil {
			s.lastLease = written
			return nil
		}
		s.lastLease = nil
		if !apierrors.IsConflict(err) && !transport.Gone(err, leasesGR, s.cfg.HeartbeatLease) {
			return fmt.Errorf("renewing Lease %s/%s in the mailbox: %w", s.cfg.HeartbeatNamespace, s.cfg.HeartbeatLease, err)
		}
	}
	lease, err := leases.Get(ctx, s.cfg.HeartbeatLease, metav1.GetOptions{})
	if transport.Gone(err, leasesGR, s.cfg.HeartbeatLease) {
		lease, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: s.cfg.HeartbeatLease, Namespace: s.cfg.HeartbeatNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(s.cfg.Identity),
				LeaseDurationSeconds: leaseDuration(interval),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
	} else if err == nil {
		lease.Spec.HolderIdentity = ptr.To(s.cfg.Identity)
		lease.Spec.RenewTime = &now
		lease.Spec.LeaseDurationSeconds = leaseDuration(interval)
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renewing Lease %s/%s in the mailbox: %w", s.cfg.HeartbeatNamespace, s.cfg.HeartbeatLease, err)
	}
	s.lastLease = lease
	return nil
}

// leaseDuration is the Lease's leaseDurationSeconds for a heartbeat interval: four intervals.
func leaseDuration(interval time.Duration) *int32 {
	return ptr.To(int32(4 * interval / time.Second))
}
