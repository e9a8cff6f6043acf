package pushhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/syncer"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// waitingRecheck is how soon a push SyncTarget whose mailbox or token is not ready is looked at
// again (the SyncTarget's own status change usually brings it back sooner).
const waitingRecheck = 5 * time.Second

// unreadableRecheck is how soon a push SyncTarget whose stored kubeconfig cannot be read is
// looked at again: kcp's authorizer may take a moment to honour the RoleBinding that kubectl
// edge ensure location --push made just before it labelled the SyncTarget.
const unreadableRecheck = 15 * time.Second

// reconcile runs, starts again or stops the syncer of one SyncTarget, and writes EdgeReachable.
// It returns when to look again: every Resync while the SyncTarget is in push mode.
func (c *Controller) reconcile(ctx context.Context, key string, cluster logicalcluster.Name, st *edgev1alpha1.SyncTarget) (time.Duration, error) {
	status := st.Status.DeepCopy()
	if st.DeletionTimestamp != nil || st.Labels[edgev1alpha1.LabelSyncMode] != edgev1alpha1.SyncModePush {
		c.stop(ctx, key, "the SyncTarget is not in push mode")
		meta.RemoveStatusCondition(&status.Conditions, edgev1alpha1.SyncTargetEdgeReachable)
		return 0, c.writeStatus(ctx, cluster, st, status)
	}

	mailboxPath := logicalcluster.NewPath(st.Status.MailboxWorkspace)
	if !meta.IsStatusConditionTrue(st.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady) || !mailboxPath.IsValid() {
		setCondition(status, metav1.ConditionUnknown, edgev1alpha1.ReasonEdgeWaitingForMailbox, "the push syncer starts once the mailbox is ready (see MailboxReady)")
		return waitingRecheck, c.writeStatus(ctx, cluster, st, status)
	}
	secret, err := c.cfg.Kube.Cluster(mailboxPath).CoreV1().Secrets(transport.SyncerNamespace).Get(ctx, transport.SyncerTokenSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		setCondition(status, metav1.ConditionUnknown, edgev1alpha1.ReasonEdgeWaitingForMailbox, "the push syncer starts once the mailbox holds the syncer's token")
		return waitingRecheck, c.writeStatus(ctx, cluster, st, status)
	} else if err != nil {
		return 0, fmt.Errorf("reading the syncer's token in mailbox %s: %w", mailboxPath, err)
	}
	token, why := tokenOf(secret)
	if token == nil {
		setCondition(status, metav1.ConditionUnknown, edgev1alpha1.ReasonEdgeWaitingForMailbox, why)
		return waitingRecheck, c.writeStatus(ctx, cluster, st, status)
	}

	kubeconfig, err := c.cfg.Kube.Cluster(cluster.Path()).CoreV1().Secrets(edgev1alpha1.PushKubeconfigNamespace).Get(ctx, st.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		// The Secret is gone, or this identity may not read it: no syncer can reach the edge.
		c.stop(ctx, key, "its edge kubeconfig cannot be read")
		setCondition(status, metav1.ConditionFalse, edgev1alpha1.ReasonEdgeKubeconfigInvalid, fmt.Sprintf(
			"edge-controller-manager cannot read the edge kubeconfig, Secret %s/%s in the inventory workspace (%s); run kubectl edge ensure location %s --push --edge-kubeconfig <file> again",
			edgev1alpha1.PushKubeconfigNamespace, st.Name, reasonText(err), st.Name))
		return unreadableRecheck, c.writeStatus(ctx, cluster, st, status)
	case err != nil:
		return 0, fmt.Errorf("reading the edge kubeconfig of SyncTarget %s: %w", st.Name, err)
	}
	data := kubeconfig.Data[edgev1alpha1.PushKubeconfigKey]
	edgeCfg, err := EdgeConfig(data)
	if err != nil {
		c.stop(ctx, key, "its edge kubeconfig cannot be used")
		setCondition(status, metav1.ConditionFalse, edgev1alpha1.ReasonEdgeKubeconfigInvalid, fmt.Sprintf(
			"the edge kubeconfig in Secret %s/%s of the inventory workspace cannot be used: %v; run kubectl edge ensure location %s --push --edge-kubeconfig <file> again",
			edgev1alpha1.PushKubeconfigNamespace, st.Name, err, st.Name))
		return c.cfg.Resync, c.writeStatus(ctx, cluster, st, status)
	}

	mailboxHost := strings.TrimRight(c.cfg.Base.Host, "/") + mailboxPath.RequestPath()
	inputs := inputsHash([]byte(mailboxHost), []byte(st.UID), token, data)
	r := c.runningFor(key)
	if r == nil || r.inputs != inputs {
		mailboxCfg := rest.AnonymousClientConfig(c.cfg.Base)
		mailboxCfg.Host = mailboxHost
		mailboxCfg.BearerToken = string(token)
		mailboxCfg.QPS, mailboxCfg.Burst = syncer.DefaultMailboxQPS, syncer.DefaultMailboxBurst
		edgeCfg.QPS, edgeCfg.Burst = syncer.DefaultEdgeQPS, syncer.DefaultEdgeBurst
		if err := c.startSyncer(ctx, key, inputs, syncer.Config{
			Mailbox: mailboxCfg, Edge: edgeCfg,
			SyncTargetName: st.Name, SyncTargetUID: string(st.UID),
			Identity:           "push:" + c.cfg.Identity,
			HeartbeatNeedsEdge: true,
		}); err != nil {
			setCondition(status, metav1.ConditionFalse, edgev1alpha1.ReasonEdgeKubeconfigInvalid, fmt.Sprintf("the push syncer cannot start: %v", err))
			return c.cfg.Resync, c.writeStatus(ctx, cluster, st, status)
		}
		r = c.runningFor(key)
	}
	if r != nil {
		r.probeMu.Lock()
		probe := r.probe
		r.probeMu.Unlock()
		if probe == nil {
			if meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable) == nil {
				setCondition(status, metav1.ConditionUnknown, edgev1alpha1.ReasonEdgeUnreachable, "the push syncer has not reached the edge cluster yet")
			}
		} else {
			edgeCondition(status, edgeCfg.Host, probe.err)
		}
	}
	return c.cfg.Resync, c.writeStatus(ctx, cluster, st, status)
}

// edgeCondition sets EdgeReachable from the outcome of the last probe of the edge at host. A
// condition with the same status and reason keeps its message, so that a probe that fails the
// same way again costs no write.
func edgeCondition(status *edgev1alpha1.SyncTargetStatus, host string, err error) {
	reason := reasonOf(err)
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable); c != nil && c.Reason == reason {
		return
	}
	switch reason {
	case edgev1alpha1.ReasonEdgeReachable:
		setCondition(status, metav1.ConditionTrue, reason, fmt.Sprintf("the push syncer reaches the edge cluster at %s", host))
	case edgev1alpha1.ReasonEdgeUnauthorized:
		setCondition(status, metav1.ConditionFalse, reason, fmt.Sprintf(
			"the edge cluster at %s refuses the credential of the stored kubeconfig (%s): give a valid one with kubectl edge ensure location <name> --push --edge-kubeconfig <file>; meanwhile no heartbeat is sent, and the edge shows stale after the grace period", host, reasonText(err)))
	default:
		setCondition(status, metav1.ConditionFalse, reason, fmt.Sprintf(
			"the edge cluster at %s does not answer (%s); no heartbeat is sent while it does not, nothing is deleted there, and the syncer converges once it answers", host, reasonText(err)))
	}
}

// reasonText is an error's text for a condition: a status error's message from the server, or
// the error (neither holds a credential).
func reasonText(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return fmt.Sprintf("%d %s", status.Status().Code, status.Status().Message)
	}
	return err.Error()
}

// EdgeConfig builds the client config of an edge kubeconfig stored for push mode. It must be
// self-contained: no file is read on the center's machine and no program run there, so a
// kubeconfig that names files (certificates, keys, token files) or an exec or auth-provider
// plugin is refused, naming what to change.
func EdgeConfig(data []byte) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("the Secret has no key %q", edgev1alpha1.PushKubeconfigKey)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("it is not a kubeconfig: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.CurrentContext == "" {
		return nil, fmt.Errorf("it has no current context")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("its current context %q names no cluster of it", cfg.CurrentContext)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("its current context %q names no user of it", cfg.CurrentContext)
	}
	var files []string
	if cluster.CertificateAuthority != "" {
		files = append(files, "certificate-authority")
	}
	if user.ClientCertificate != "" {
		files = append(files, "client-certificate")
	}
	if user.ClientKey != "" {
		files = append(files, "client-key")
	}
	if user.TokenFile != "" {
		files = append(files, "tokenFile")
	}
	if len(files) > 0 {
		return nil, fmt.Errorf("it names files (%s), which the center does not have: inline them (kubectl config view --minify --flatten)", strings.Join(files, ", "))
	}
	if user.Exec != nil || user.AuthProvider != nil {
		return nil, fmt.Errorf("its user runs a credential plugin (exec or auth-provider), which the center does not run: give a token or a client certificate")
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("its cluster %q has no server", kctx.Cluster)
	}
	return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// writeStatus writes the SyncTarget's status through the virtual workspace if it changed.
func (c *Controller) writeStatus(ctx context.Context, cluster logicalcluster.Name, st *edgev1alpha1.SyncTarget, status *edgev1alpha1.SyncTargetStatus) error {
	if equality.Semantic.DeepEqual(&st.Status, status) {
		return nil
	}
	updated := st.DeepCopy()
	updated.Status = *status
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(updated)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(edgev1alpha1.SchemeGroupVersion.String())
	u.SetKind("SyncTarget")
	_, err = c.cfg.Edge.Cluster(cluster.Path()).Resource(syncTargetsGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of SyncTarget %s|%s: %w", cluster, st.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("SyncTarget status written", "condition", edgev1alpha1.SyncTargetEdgeReachable)
	return nil
}

func setCondition(status *edgev1alpha1.SyncTargetStatus, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: edgev1alpha1.SyncTargetEdgeReachable, Status: s, Reason: reason, Message: message})
}
