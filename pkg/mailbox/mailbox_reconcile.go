package mailbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// reconcile brings one SyncTarget's mailbox into being and reports on it and on its syncer. It
// returns when to look again without any event (to notice a heartbeat going stale).
func (c *Controller) reconcile(ctx context.Context, cluster logicalcluster.Name, st *edgev1alpha1.SyncTarget) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	if st.DeletionTimestamp != nil {
		return 0, nil
	}
	status := st.Status.DeepCopy()
	name := WorkspaceName(cluster, st.UID)
	path := c.cfg.ESPW.Join(name)

	ws, err := c.ensureWorkspace(ctx, cluster, st, name)
	var invalid *invalidNameError
	switch {
	case errors.Is(err, errSetupQueued):
		status.MailboxWorkspace = path.String()
		setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonMailboxCreating, c.settingUpMessage(path))
		return setupQueuedRecheck + time.Duration(rand.Int64N(int64(setupQueuedRecheck))), c.writeStatus(ctx, cluster, st, status)
	case errors.As(err, &invalid):
		setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonInvalidName, invalid.Error())
		return 0, c.writeStatus(ctx, cluster, st, status)
	case err != nil:
		setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonMailboxError, err.Error())
		return 0, errors.Join(err, c.writeStatus(ctx, cluster, st, status))
	}
	status.MailboxWorkspace = path.String()
	settingUp := c.settingUpMessage(path)
	if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || ws.Spec.Cluster == "" {
		setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonMailboxCreating, settingUp)
		return 0, c.writeStatus(ctx, cluster, st, status) // the workspace's events bring it back
	}

	if outage, down := c.mailboxOutage(ctx, logicalcluster.Name(ws.Spec.Cluster)); down {
		// Nothing in the mailbox can be read or written: its set-up is not checked, and
		// SyncerReady says why the heartbeats stop, once the grace period has passed.
		status.MailboxCluster = ws.Spec.Cluster
		renewed, _ := c.heartbeat(logicalcluster.Name(ws.Spec.Cluster))
		recheck := unreachableStatusAt(c.now(), c.cfg.HeartbeatGracePeriod, status, path, outage, renewed)
		return recheck, c.writeStatus(ctx, cluster, st, status)
	}
	if c.contentsStageOf(ws.UID) != contentsReady {
		if err := c.ensureContents(ctx, path, ws.UID, c.isFresh(name)); errors.Is(err, errNotYet) {
			setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonMailboxCreating, settingUp)
			return c.notYet.When(ws.UID), c.writeStatus(ctx, cluster, st, status)
		} else if err != nil {
			setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionFalse, edgev1alpha1.ReasonMailboxError,
				fmt.Sprintf("setting up mailbox %s: %v", path, err))
			return 0, errors.Join(err, c.writeStatus(ctx, cluster, st, status))
		}
		c.setContentsStage(ws.UID, contentsReady)
		c.notYet.Forget(ws.UID)
		c.endSetup(name)
		logger.V(2).Info("mailbox ready", "mailbox", path)
	}
	status.MailboxCluster = ws.Spec.Cluster
	setCondition(status, edgev1alpha1.SyncTargetMailboxReady, metav1.ConditionTrue, edgev1alpha1.ReasonMailboxReady,
		fmt.Sprintf("mailbox workspace %s is ready for the syncer", path))

	var recheck time.Duration
	renewed, known := c.heartbeat(logicalcluster.Name(ws.Spec.Cluster))
	if known || meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady) == nil {
		// Until the heartbeats are known, SyncerReady stays as it was; their watch's first
		// list brings every SyncTarget back.
		recheck = c.syncerStatus(status, renewed)
	}
	if cfg, known := c.syncerConfig(logicalcluster.Name(ws.Spec.Cluster)); known {
		syncerCompatibility(status, cfg)
	}
	return recheck, c.writeStatus(ctx, cluster, st, status)
}

// settingUpMessage is MailboxReady's message from the SyncTarget's first reconcile until its
// mailbox is ready. One message covers every stage (waiting for a set-up slot, the workspace's
// phases, the binding, the token), so that a mailbox's progress costs no status writes: a
// mailbox costs its SyncTarget two, this one and the one that says it is ready.
func (c *Controller) settingUpMessage(path logicalcluster.Path) string {
	return fmt.Sprintf("setting up mailbox workspace %s: the workspace, its APIBinding and the syncer's identity (at most %d mailboxes are set up at once; the others wait their turn)",
		path, c.cfg.MaxSetups)
}

// A mailbox being set up is looked at again after notYetFirst, doubling up to notYetMax: when kcp
// is busy making many mailboxes at once, frequent checks would only add to its load.
const (
	notYetFirst = 500 * time.Millisecond
	notYetMax   = 15 * time.Second
)

// errSetupQueued means that the mailbox is not created yet because MaxSetups mailboxes are being
// set up. kcp sets up workspaces faster, in total, a few at a time than all at once: each is
// ready sooner, and the fleet sooner too.
var errSetupQueued = errors.New("queued behind other mailboxes being set up")

// setupQueuedRecheck is how soon a queued SyncTarget looks for a free slot (plus up to as much
// again, at random); looking costs no request.
const setupQueuedRecheck = 500 * time.Millisecond

// setupSlotTimeout frees the slot of a mailbox whose set-up has not finished in this long, so
// that one stuck mailbox cannot hold up the others.
const setupSlotTimeout = 2 * time.Minute

// admitSetup takes a set-up slot for the named mailbox, if one is free.
func (c *Controller) admitSetup(name string) bool {
	c.contentsMu.Lock()
	defer c.contentsMu.Unlock()
	if _, ok := c.setups[name]; ok {
		return true
	}
	now := c.now()
	for n, started := range c.setups {
		if now.Sub(started) > setupSlotTimeout {
			delete(c.setups, n)
		}
	}
	if len(c.setups) >= c.cfg.MaxSetups {
		return false
	}
	c.setups[name] = now
	return true
}

// endSetup frees the named mailbox's set-up slot.
func (c *Controller) endSetup(name string) {
	c.contentsMu.Lock()
	defer c.contentsMu.Unlock()
	delete(c.setups, name)
	delete(c.fresh, name)
}

// isFresh says whether this process created the named mailbox workspace and has not finished
// setting it up: such a mailbox holds nothing of the syncer's identity yet, so its objects are
// created without being read first.
func (c *Controller) isFresh(name string) bool {
	c.contentsMu.Lock()
	defer c.contentsMu.Unlock()
	return c.fresh[name]
}

// invalidNameError says that no workspace can be named for a SyncTarget.
type invalidNameError struct{ msg string }

func (e *invalidNameError) Error() string { return e.msg }

// ensureWorkspace returns the mailbox workspace, creating it if it is missing.
func (c *Controller) ensureWorkspace(ctx context.Context, cluster logicalcluster.Name, st *edgev1alpha1.SyncTarget, name string) (*tenancyv1alpha1.Workspace, error) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return nil, &invalidNameError{fmt.Sprintf("the mailbox workspace name %q, made of the inventory workspace's logical cluster %q and the SyncTarget's UID, is not a valid workspace name: %v",
			name, cluster, errs)}
	}
	if obj, exists, err := c.mailboxes.GetIndexer().GetByKey(name); err != nil {
		return nil, err
	} else if exists {
		return obj.(*tenancyv1alpha1.Workspace), nil
	}
	ws := &tenancyv1alpha1.Workspace{
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type: &tenancyv1alpha1.WorkspaceTypeReference{Name: edgev1alpha1.MailboxWorkspaceType, Path: c.cfg.ESPW.String()},
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{LabelMailbox: "true"},
			Annotations: map[string]string{
				AnnotationSyncTargetCluster: cluster.String(),
				AnnotationSyncTargetName:    st.Name,
				AnnotationSyncTargetUID:     string(st.UID),
			},
		},
	}
	if !c.admitSetup(name) {
		return nil, errSetupQueued
	}
	klog.FromContext(ctx).Info("creating mailbox workspace", "mailbox", c.cfg.ESPW.Join(name))
	created, err := c.cfg.KCP.Cluster(c.cfg.ESPW).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return c.cfg.KCP.Cluster(c.cfg.ESPW).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		c.endSetup(name)
		return nil, fmt.Errorf("creating mailbox workspace %s in %s: %w", name, c.cfg.ESPW, err)
	}
	c.contentsMu.Lock()
	c.fresh[name] = true
	c.contentsMu.Unlock()
	return created, nil
}

// contentsStage is how far this process got in setting up a mailbox's contents.
type contentsStage int

const (
	contentsUnknown contentsStage = iota
	// contentsWritten: the binding's claims are accepted and the syncer's identity is written;
	// only the token, which kcp fills into the Secret, may be missing.
	contentsWritten
	// contentsReady: all is in place, token included.
	contentsReady
)

func (c *Controller) contentsStageOf(uid types.UID) contentsStage {
	c.contentsMu.Lock()
	defer c.contentsMu.Unlock()
	return c.contents[uid]
}

// setContentsStage records a mailbox's stage; contentsUnknown forgets it.
func (c *Controller) setContentsStage(uid types.UID, stage contentsStage) {
	c.contentsMu.Lock()
	defer c.contentsMu.Unlock()
	if stage == contentsUnknown {
		delete(c.contents, uid)
	} else {
		c.contents[uid] = stage
	}
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
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed meanwhile: the change's event brings it back
	}
	if err != nil {
		return fmt.Errorf("updating status of SyncTarget %s|%s: %w", cluster, st.Name, err)
	}
	return nil
}

func setCondition(status *edgev1alpha1.SyncTargetStatus, condType string, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message})
}
