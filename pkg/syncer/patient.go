package syncer

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
)

// listRetryInterval is how often, jittered, a list of the mailbox is tried again while the
// center cannot be reached.
const listRetryInterval = 2 * time.Second

// listPatiently runs list (a list or a watch) until it returns something other than "the
// center cannot be reached" (centerUnreachable), trying again every listRetryInterval
// (jittered) meanwhile, or until ctx ends.
//
// Why: client-go's reflector backs off between failed lists and watches exponentially, up to
// 30 s and with as much jitter again (a factor of 1.0), and does not say when the server is
// back. After a center outage of a minute, a syncer could wait as long again before it listed
// its mailbox, and meanwhile apply nothing new. Trying on its own while the center is away keeps
// the reflector's backoff at its first step, so the syncer catches up within seconds of the
// center's return; it costs one refused connection per informer every two seconds or so while
// the center is down. Other errors (forbidden, not found, too many requests) go back to the
// reflector at once, with its backoff.
func listPatiently[T any](ctx context.Context, what string, every time.Duration, list func(context.Context) (T, error)) (T, error) {
	logger := klog.FromContext(ctx)
	failing := time.Time{}
	for {
		out, err := list(ctx)
		if err == nil || !centerUnreachable(err) || ctx.Err() != nil {
			if err == nil && !failing.IsZero() {
				logger.Info("the center answers again: listed", "resource", what, "after", time.Since(failing).Round(time.Millisecond))
			}
			return out, err
		}
		if failing.IsZero() {
			failing = time.Now()
			logger.Info("the center cannot be reached; listing again every few seconds until it answers", "resource", what, "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(jitter(every)):
		}
	}
}

// centerUnreachable says whether err means that the center did not answer, or is not ready to:
// a connection refused, reset or cut short, a network timeout, or 503 Service Unavailable.
func centerUnreachable(err error) bool {
	switch {
	case err == nil:
		return false
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
