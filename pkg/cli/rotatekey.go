package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func newRotateKeyCommand(o *Options) *cobra.Command {
	var imw string
	var waitFor time.Duration
	cmd := &cobra.Command{
		Use:   "rotate-key <synctarget> [--imw <workspace path>]",
		Short: "Make the syncer of a SyncTarget take a new key pair for sealed objects",
		Long: `rotate-key asks the syncer of a SyncTarget for a new key pair for sealed objects (Secrets, and
objects annotated edge.kcp.io/sealed: "true"; ` + docsURL + `workloads.md). The request is an
annotation on the SyncerConfig of the SyncTarget's mailbox; the syncer makes the new pair at the
edge, keeps it in its key Secret there with the pair it replaces, and publishes the new public
key. The center then seals the next versions for it; until then what was sealed for the replaced
key still opens, so nothing at the edge is refused or recreated.

The command waits (--wait, 0 not to wait) until the syncer has published the new key, and prints
both key ids. A syncer that is not connected acts on the request when it next reads its
SyncerConfig. The private key never leaves the edge cluster.`,
		Example: `  kubectl edge rotate-key edge-1 --imw root:imw
  kubectl edge rotate-key edge-1 --imw root:imw --wait 0   # ask, and do not wait`,
		Args:              positional([]string{"<synctarget>"}, 0),
		ValidArgsFunction: o.syncTargetArg(&imw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			inv, err := o.inventory(ctx, imw)
			if err != nil {
				return err
			}
			return rotateKey(ctx, o, inv, args[0], waitFor)
		},
	}
	o.addIMWFlag(cmd, &imw)
	cmd.Flags().DurationVar(&waitFor, "wait", 2*time.Minute, "how long to wait for the syncer to publish its new key (0: do not wait)")
	return cmd
}

// rotateKey asks the syncer of SyncTarget name for a new key, and waits up to waitFor for it.
func rotateKey(ctx context.Context, o *Options, inv *inventoryClients, name string, waitFor time.Duration) error {
	st, err := inv.syncTargetWithMailbox(ctx, name)
	if err != nil {
		return err
	}
	mbPath, client, err := inv.mailboxOf(st)
	if err != nil {
		return err
	}
	configs := client.Resource(syncerConfigsGVR)
	cfg, err := configs.Get(ctx, edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("mailbox %s of SyncTarget %s has no SyncerConfig yet: nothing is placed on it, so nothing is sealed for its key; rotate it once a placement reaches it", mbPath, name)
	}
	if err != nil {
		return fmt.Errorf("reading the SyncerConfig of SyncTarget %s in mailbox %s: %w", name, mbPath, err)
	}
	before, _, _ := unstructured.NestedString(cfg.Object, "status", "keyID")
	if before == "" {
		return fmt.Errorf("the syncer of SyncTarget %s has published no key (SyncerConfig status.keyID in mailbox %s): it has not started yet, or is older than sealed objects; upgrade it (kubectl edge prep-for-syncer %s)", name, mbPath, name)
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{transport.AnnotationRotateKey: token}}})
	if err != nil {
		return err
	}
	if _, err := configs.Patch(ctx, edgev1alpha1.SyncerConfigName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("asking the syncer of SyncTarget %s for a new key (SyncerConfig in mailbox %s): %w", name, mbPath, err)
	}
	fmt.Fprintf(o.Out, "SyncTarget %s: asked its syncer for a new key (its key now: %s)\n", name, before)
	if waitFor <= 0 {
		return nil
	}
	after, err := waitForNewKey(ctx, configs, before, waitFor)
	if err != nil {
		return fmt.Errorf("the syncer of SyncTarget %s has not published a new key within %s (%v): is it running? (kubectl edge status --target %s). The request stays, and the syncer acts on it when it next reads its SyncerConfig", name, waitFor, err, name)
	}
	fmt.Fprintf(o.Out, "SyncTarget %s: new key %s published (was %s); the next versions of its sealed objects are sealed for it\n", name, after, before)
	return nil
}

// waitForNewKey polls the SyncerConfig until its status.keyID is neither empty nor before.
func waitForNewKey(ctx context.Context, configs dynamic.ResourceInterface, before string, waitFor time.Duration) (string, error) {
	var after string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitFor, true, func(ctx context.Context) (bool, error) {
		cfg, err := configs.Get(ctx, edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
		if err != nil {
			return false, nil // the center may be away for a moment: keep trying until the wait ends
		}
		after, _, _ = unstructured.NestedString(cfg.Object, "status", "keyID")
		return after != "" && after != before, nil
	})
	return after, err
}
