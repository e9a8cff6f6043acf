package syncer

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// leasesGR names Leases in the API's answers (see transport.Gone).
var leasesGR = coordinationv1.SchemeGroupVersion.WithResource("leases").GroupResource()

// heartbeat renews the heartbeat Lease in the mailbox at the heartbeat interval (see
// heartbeatInterval), with a little jitter, until ctx ends; a change of the interval takes effect
// at once. A failed renewal is logged once per outage and tried again at the next tick.
func (s *Syncer) heartbeat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		interval := s.heartbeatInterval()
		err := s.renewLease(ctx, interval)
		s.mu.Lock()
		wasOK := s.heartbeatOK
		s.heartbeatOK = err == nil
		s.mu.Unlock()
		switch {
		case err != nil:
			metricHeartbeats.WithLabelValues("failed").Inc()
			metricConnected.Set(0)
			if wasOK {
				logger.Error(err, "the heartbeat did not reach the mailbox; the edge stays as it is, and the syncer keeps trying")
			}
		default:
			metricHeartbeats.WithLabelValues("ok").Inc()
			metricConnected.Set(1)
			if !wasOK {
				logger.Info("the heartbeat reaches the mailbox", "interval", interval.String())
			}
		}
		timer := time.NewTimer(wait.Jitter(interval, 0.1))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.heartbeatSignal:
			timer.Stop()
			logger.Info("the heartbeat interval changed", "interval", s.heartbeatInterval().String())
		case <-timer.C:
		}
	}
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
