package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/spf13/cobra"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var (
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
)

func newEnsureLocationCommand(o *Options) *cobra.Command {
	var imw, edgeKubeconfig string
	var push, pull bool
	cmd := &cobra.Command{
		Use:   "location <name> [key=value ...] [key- ...] [--imw <workspace path>]",
		Short: "Make sure a Location and its SyncTarget exist in an inventory workspace, with the given labels",
		Long: `ensure location makes sure the inventory management workspace --imw (by default the
kubeconfig's current workspace, as kubectl's current namespace) holds a SyncTarget and a
Location of the given name, one per edge cluster: the SyncTarget describes the cluster and gets
a mailbox workspace and a syncer identity from the mailbox controller; the Location's
instanceSelector selects exactly that SyncTarget (by its label ` + edgev1alpha1.LabelSyncTarget + `=<name>).

Each key=value argument sets a label on both objects, and each key- removes one. Labels already
on the objects and not named here are kept, so that a later run can add or change one label
without repeating the others. EdgePlacements select Locations by their labels, and workloads
are customised with the SyncTarget's labels.

Run again with the same arguments, it changes nothing. The name must be a DNS-1123 subdomain of
at most 63 characters (lower-case letters, digits, '-' and '.'). Run "kubectl edge ensure imw"
first. Next, run "kubectl edge prep-for-syncer <name> --imw ..." to install the syncer in the
edge cluster.

With --push --edge-kubeconfig <file>, the edge cluster is in push mode: nothing is installed in
it, and edge-controller-manager runs its syncer at the center, reaching the edge cluster with
that kubeconfig. The kubeconfig (its current context, with the files it names inlined) is stored
as the Secret ` + edgev1alpha1.PushKubeconfigNamespace + `/<name> in the inventory workspace, which only its admins and
edge-controller-manager's user read (Role and RoleBinding ` + edgev1alpha1.PushHostRole + `); the SyncTarget gets
the label ` + edgev1alpha1.LabelSyncMode + `=push. The center then holds a credential of the edge cluster: see
the operations guide on choosing a mode. The kubeconfig must not run a credential plugin. Run
again with another file, it replaces the stored one; --pull turns the SyncTarget back to pull
mode and deletes the stored kubeconfig.`,
		Example: `  kubectl edge ensure location edge-1 env=prod region=eu-west --imw root:imw
  kubectl edge ensure location lab-7 env=lab --push --edge-kubeconfig lab-7.kubeconfig --imw root:imw
  kubectl edge ensure location edge-1 env=staging region- --imw root:imw   # change env, drop region`,
		Args:              positional([]string{"<name>"}, -1),
		ValidArgsFunction: o.syncTargetArg(&imw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			name := args[0]
			if err := validateLocationName(name); err != nil {
				return err
			}
			changes, err := parseLabelArgs(args[1:])
			if err != nil {
				return err
			}
			mode := ""
			var kubeconfig []byte
			switch {
			case push && pull:
				return fmt.Errorf("--push and --pull: give one")
			case push && edgeKubeconfig == "":
				return fmt.Errorf("--push needs --edge-kubeconfig <file>: the kubeconfig with which the center reaches the edge cluster %s", name)
			case !push && edgeKubeconfig != "":
				return fmt.Errorf("--edge-kubeconfig is for push mode: add --push")
			case push:
				mode = edgev1alpha1.SyncModePush
				if kubeconfig, err = readEdgeKubeconfig(edgeKubeconfig); err != nil {
					return err
				}
			case pull:
				mode = edgev1alpha1.SyncModePull
			}
			inv, err := o.inventory(ctx, imw)
			if err != nil {
				return err
			}
			if push {
				// The credential is in place before the SyncTarget says push, so that the push
				// host finds it when it starts the syncer.
				if err := o.ensurePushCredential(ctx, inv, name, kubeconfig, o.Out); err != nil {
					return err
				}
			}
			hash := ""
			if push {
				sum := sha256.Sum256(kubeconfig)
				hash = hex.EncodeToString(sum[:])
			}
			if err := ensureLocation(ctx, inv, name, changes, mode, hash, o.Out); err != nil {
				return err
			}
			if pull {
				// The push host stops the syncer once the SyncTarget says pull; the credential
				// then serves nothing.
				return o.removePushCredential(ctx, inv, name, o.Out)
			}
			return nil
		},
	}
	o.addIMWFlag(cmd, &imw)
	cmd.Flags().BoolVar(&push, "push", false, "push mode: edge-controller-manager runs this edge cluster's syncer at the center, reaching the edge with --edge-kubeconfig (nothing is installed in the edge cluster)")
	cmd.Flags().StringVar(&edgeKubeconfig, "edge-kubeconfig", "", "with --push: the kubeconfig with which the center reaches the edge cluster (its current context; files it names are inlined); stored as Secret "+edgev1alpha1.PushKubeconfigNamespace+"/<name> in the inventory workspace")
	cmd.Flags().BoolVar(&pull, "pull", false, "pull mode (the default for a new SyncTarget): the syncer runs in the edge cluster (kubectl edge prep-for-syncer); turns a push SyncTarget back and deletes its stored edge kubeconfig")
	return cmd
}

// ensureLocation makes sure the SyncTarget and the Location of the given name exist in the
// inventory workspace, with the label changes made on both, and says what it did on out.
// mode, if not "", sets the SyncTarget's label edge.kcp.io/sync-mode (push or pull), and
// kubeconfigHash its annotation edge.kcp.io/push-kubeconfig-sha256 (removed in pull mode).
func ensureLocation(ctx context.Context, inv *inventoryClients, name string, changes labelChanges, mode, kubeconfigHash string, out io.Writer) error {
	result, err := ensureObject(ctx, inv.syncTargets, syncTargetsGVR.GroupResource(), name, func() (*unstructured.Unstructured, error) {
		return newUnstructured(&edgev1alpha1.SyncTarget{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		})
	}, func(u *unstructured.Unstructured) string {
		labels := changes.apply(u.GetLabels())
		labels[edgev1alpha1.LabelSyncTarget] = name
		if mode != "" {
			labels[edgev1alpha1.LabelSyncMode] = mode
		}
		changed := setLabels(u, labels)
		annotations := u.GetAnnotations()
		switch old, had := annotations[edgev1alpha1.AnnotationPushKubeconfigHash]; {
		case mode == edgev1alpha1.SyncModePush && old != kubeconfigHash:
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[edgev1alpha1.AnnotationPushKubeconfigHash] = kubeconfigHash
			u.SetAnnotations(annotations)
			changed = joinChanges(changed, "edge kubeconfig")
		case mode == edgev1alpha1.SyncModePull && had:
			delete(annotations, edgev1alpha1.AnnotationPushKubeconfigHash)
			u.SetAnnotations(annotations)
			changed = joinChanges(changed, "edge kubeconfig")
		}
		return changed
	})
	if err != nil {
		return fmt.Errorf("ensuring SyncTarget %s in %s: %w%s", name, inv.path, err, inventoryAdminHint(err))
	}
	fmt.Fprintf(out, "synctarget %s %s\n", name, result)

	selector, err := toUnstructured(&edgev1alpha1.LocationSpec{InstanceSelector: instanceSelectorFor(name)})
	if err != nil {
		return err
	}
	result, err = ensureObject(ctx, inv.locations, locationsGVR.GroupResource(), name, func() (*unstructured.Unstructured, error) {
		return newUnstructured(&edgev1alpha1.Location{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Location"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		})
	}, func(u *unstructured.Unstructured) string {
		changed := setLabels(u, changes.apply(u.GetLabels()))
		old, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "instanceSelector")
		if !apiequality.Semantic.DeepEqual(old, selector["instanceSelector"]) {
			_ = unstructured.SetNestedField(u.Object, selector["instanceSelector"], "spec", "instanceSelector")
			changed = joinChanges(changed, "instanceSelector")
		}
		return changed
	})
	if err != nil {
		return fmt.Errorf("ensuring Location %s in %s: %w%s", name, inv.path, err, inventoryAdminHint(err))
	}
	fmt.Fprintf(out, "location %s %s\n", name, result)
	return nil
}

func newRemoveCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Make sure an inventory object is gone",
	}
	cmd.AddCommand(newRemoveLocationCommand(o))
	return cmd
}

func newRemoveLocationCommand(o *Options) *cobra.Command {
	var imw string
	cmd := &cobra.Command{
		Use:   "location <name> --imw <workspace path>",
		Short: "Delete a Location and its SyncTarget from an inventory workspace",
		Long: `remove location deletes the Location and the SyncTarget of the given name from the inventory
management workspace --imw. The mailbox controller then deletes the SyncTarget's mailbox, and
the edge cluster's syncer loses its access to the center; a push edge's stored kubeconfig
(Secret ` + edgev1alpha1.PushKubeconfigNamespace + `/<name>) is deleted too. Objects already absent are fine: run
again, it changes nothing. --imw has no default here, unlike the other verbs: a removal in
whatever workspace the kubeconfig points at could take an edge cluster's workloads by mistake.`,
		Example:           `  kubectl edge remove location edge-1 --imw root:imw`,
		Args:              positional([]string{"<name>"}, 0),
		ValidArgsFunction: o.syncTargetArg(&imw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			name := args[0]
			if err := validateLocationName(name); err != nil {
				return err
			}
			inv, err := o.inventory(ctx, imw)
			if err != nil {
				return err
			}
			for _, r := range []struct {
				kind   string
				client dynamic.ResourceInterface
			}{{"location", inv.locations}, {"synctarget", inv.syncTargets}} {
				err := r.client.Delete(ctx, name, metav1.DeleteOptions{})
				switch {
				case err == nil:
					fmt.Fprintf(o.Out, "%s %s deleted\n", r.kind, name)
				case apierrors.IsNotFound(err):
					fmt.Fprintf(o.Out, "%s %s already absent\n", r.kind, name)
				default:
					return fmt.Errorf("deleting %s %s in %s: %w%s", r.kind, name, inv.path, err, inventoryAdminHint(err))
				}
			}
			// A push edge's stored kubeconfig goes with it: it would serve nothing but a leak.
			return o.removePushCredential(ctx, inv, name, o.Out)
		},
	}
	o.addRequiredIMWFlag(cmd, &imw)
	return cmd
}

// addIMWFlag adds --imw, which defaults to the kubeconfig's current workspace, as --wmw does.
func (o *Options) addIMWFlag(cmd *cobra.Command, imw *string) {
	cmd.Flags().StringVar(imw, "imw", "", "path of the inventory management workspace, e.g. root:imw (default: the kubeconfig's current workspace)")
}

// addRequiredIMWFlag adds --imw without a default, for the verbs that delete: removing a
// location in whatever workspace the kubeconfig happens to point at would take the workloads off
// an edge cluster by accident.
func (o *Options) addRequiredIMWFlag(cmd *cobra.Command, imw *string) {
	cmd.Flags().StringVar(imw, "imw", "", "path of the inventory management workspace (e.g. root:imw); required")
	_ = cmd.MarkFlagRequired("imw")
}

// validateLocationName checks the name of a Location and SyncTarget: a DNS-1123 subdomain that
// is also a label value (it is the value of the label edge.kcp.io/synctarget).
func validateLocationName(name string) error {
	msgs := validation.IsDNS1123Subdomain(name)
	msgs = append(msgs, validation.IsValidLabelValue(name)...)
	if len(msgs) > 0 {
		return fmt.Errorf("%q cannot name a location: use at most 63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (%s)", name, strings.Join(dedupe(msgs), "; "))
	}
	return nil
}

// instanceSelectorFor selects exactly the SyncTarget of the given name.
func instanceSelectorFor(name string) edgev1alpha1.LabelSelector {
	return edgev1alpha1.LabelSelector{MatchLabels: map[string]string{edgev1alpha1.LabelSyncTarget: name}}
}

// inventoryClients reach the SyncTargets and Locations of one inventory workspace.
type inventoryClients struct {
	path        logicalcluster.Path
	base        *rest.Config
	syncTargets dynamic.ResourceInterface
	locations   dynamic.ResourceInterface
}

// inventory checks that the workspace named by --imw exists and serves SyncTargets and Locations,
// and returns clients for them.
//
// Without --imw (imw ""), it is the kubeconfig's current workspace, and an error says so.
func (o *Options) inventory(ctx context.Context, imw string) (*inventoryClients, error) {
	kcp, _, err := o.kcpClient()
	if err != nil {
		return nil, err
	}
	base, path, fromKubeconfig, err := o.imwPath(imw)
	if err != nil {
		return nil, err
	}
	current := ""
	if fromKubeconfig {
		current = " (the kubeconfig's current workspace, as no --imw was given)"
	}
	cfg := workspaces.ConfigFor(base, path)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	workspaceExists := func() (bool, error) {
		parent, _ := path.Parent()
		_, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, path.Base(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if err := checkInventoryWorkspace(disco, workspaceExists, path, o.ensureIMWHint(path)); err != nil {
		if current != "" {
			return nil, fmt.Errorf("%w%s", err, current)
		}
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &inventoryClients{
		path:        path,
		base:        base,
		syncTargets: client.Resource(syncTargetsGVR),
		locations:   client.Resource(locationsGVR),
	}, nil
}

// imwPath is the inventory workspace that --imw names, or without it (imw "") the kubeconfig's
// current workspace (fromKubeconfig), with the config of the server's base URL.
func (o *Options) imwPath(imw string) (base *rest.Config, path logicalcluster.Path, fromKubeconfig bool, err error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, path, false, err
	}
	base, current := workspaces.Split(cfg)
	if imw != "" {
		if path, err = workspaces.ParsePath(imw); err != nil {
			return nil, path, false, fmt.Errorf("--imw: %w", err)
		}
		return base, path, false, nil
	}
	if current.Empty() {
		return nil, path, false, fmt.Errorf("no --imw given, and the kubeconfig's server %s names no workspace: give the inventory workspace, e.g. --imw root:imw", cfg.Host)
	}
	if path, err = workspaces.ParsePath(current.String()); err != nil {
		return nil, path, false, fmt.Errorf("no --imw given, and the kubeconfig's current workspace, %s, cannot be an inventory workspace: give one, e.g. --imw root:imw", current)
	}
	return base, path, true, nil
}

// ensureIMWHint is the command that makes path an inventory workspace.
func (o *Options) ensureIMWHint(path logicalcluster.Path) string {
	hint := "kubectl edge ensure imw " + path.String()
	if o.ESPW != "" && o.ESPW != edgev1alpha1.DefaultESPW {
		hint += " --espw " + o.ESPW
	}
	return hint
}

// inventoryAdminHint says what to do about a write of a SyncTarget or Location that kcp refused
// (403): edge.kcp.io's maximal permission policy lets only inventory admins make them, wherever
// the export is bound ("" for any other error).
func inventoryAdminHint(err error) string {
	if !apierrors.IsForbidden(err) {
		return ""
	}
	return fmt.Sprintf("; only inventory admins may write SyncTargets and Locations: an operator makes you one by the group %s, or by a subject %s in the ClusterRoleBinding %s of the ESPW (%soperations.md#who-may-make-synctargets-and-locations); you also need rights in the inventory workspace",
		espw.InventoryAdminsGroup, espw.PolicyName("<your user>"), espw.InventoryAdminRole, docsURL)
}

// checkInventoryWorkspace asks the workspace's discovery whether it serves SyncTargets and
// Locations. kcp v0.28.1 answers 403 for a workspace that does not exist (as for one the user
// may not see), and an empty list of resources, not 404, when the workspace does not bind
// edge.kcp.io. workspaceExists tells the first two apart where the user may read the parent.
func checkInventoryWorkspace(disco discovery.DiscoveryInterface, workspaceExists func() (bool, error), path logicalcluster.Path, hint string) error {
	resources, err := disco.ServerResourcesForGroupVersion(edgev1alpha1.SchemeGroupVersion.String())
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		resources = &metav1.APIResourceList{}
	case apierrors.IsForbidden(err):
		if exists, existsErr := workspaceExists(); existsErr == nil && !exists {
			return fmt.Errorf("workspace %s does not exist: create it with %q", path, hint)
		}
		return fmt.Errorf("workspace %s does not exist, or you may not use it (%v): create it with %q", path, err, hint)
	default:
		return fmt.Errorf("reaching workspace %s: %w", path, err)
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		served[r.Name] = true
	}
	switch {
	case served[syncTargetsGVR.Resource] && served[locationsGVR.Resource]:
		return nil
	case len(resources.APIResources) == 0:
		return fmt.Errorf("workspace %s does not bind the edge.kcp.io API, so it cannot hold Locations and SyncTargets: run %q", path, hint)
	default:
		return fmt.Errorf("workspace %s binds edge.kcp.io but does not serve both synctargets and locations; the binding may be to an old export: run %q", path, hint)
	}
}

// ensureObject makes sure the object of the given name exists and that mutate has nothing more
// to change on it. newObject gives the object to create when it is missing, before mutate;
// mutate edits an object in place and says what it changed ("" for nothing). An object that
// mutate leaves as it was is not written, so its resourceVersion stays. The result is
// "created", "unchanged" or "updated (<what>)".
func ensureObject(ctx context.Context, client dynamic.ResourceInterface, resource schema.GroupResource, name string,
	newObject func() (*unstructured.Unstructured, error), mutate func(*unstructured.Unstructured) string) (string, error) {
	var result string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj, err := newObject()
			if err != nil {
				return err
			}
			mutate(obj)
			_, err = client.Create(ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Created by someone else since the Get: look again, as for a conflict.
				return apierrors.NewConflict(resource, name, err)
			}
			result = "created"
			return err
		}
		if err != nil {
			return err
		}
		obj := existing.DeepCopy()
		changed := mutate(obj)
		if changed == "" || apiequality.Semantic.DeepEqual(existing.Object, obj.Object) {
			result = "unchanged"
			return nil
		}
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		result = "updated (" + changed + ")"
		return err
	})
	return result, err
}

// labelChanges is what the label arguments of ensure location ask for: labels to set and keys
// to remove, as with kubectl label.
type labelChanges struct {
	Set    map[string]string
	Remove []string
}

// parseLabelArgs reads key=value (set) and key- (remove) arguments. Every key must be a
// qualified name and every value a label value; a key may not be both set and removed, nor set
// to two values, and the key edge.kcp.io/synctarget is kept for the SyncTarget's own name.
func parseLabelArgs(args []string) (labelChanges, error) {
	changes := labelChanges{Set: map[string]string{}}
	removed := map[string]bool{}
	for _, arg := range args {
		var key, value string
		remove := false
		if k, v, found := strings.Cut(arg, "="); found {
			key, value = k, v
		} else if k, found := strings.CutSuffix(arg, "-"); found {
			key, remove = k, true
		} else {
			return labelChanges{}, fmt.Errorf("%q is not a label argument: write key=value to set a label, or key- to remove one", arg)
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return labelChanges{}, fmt.Errorf("label %q: the key %q is not valid: %s", arg, key, strings.Join(msgs, "; "))
		}
		if key == edgev1alpha1.LabelSyncMode {
			return labelChanges{}, fmt.Errorf("label %q: the key %s says who runs the syncer; use --push --edge-kubeconfig <file> or --pull", arg, key)
		}
		if key == edgev1alpha1.LabelSyncTarget {
			return labelChanges{}, fmt.Errorf("label %q: the key %s is set by kubectl edge to the SyncTarget's name, so that the Location selects it; choose another key", arg, key)
		}
		if remove {
			if _, set := changes.Set[key]; set {
				return labelChanges{}, fmt.Errorf("label %q: the key %s is both set and removed", arg, key)
			}
			if !removed[key] {
				removed[key] = true
				changes.Remove = append(changes.Remove, key)
			}
			continue
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return labelChanges{}, fmt.Errorf("label %q: the value %q is not valid: %s", arg, value, strings.Join(msgs, "; "))
		}
		if removed[key] {
			return labelChanges{}, fmt.Errorf("label %q: the key %s is both set and removed", arg, key)
		}
		if old, set := changes.Set[key]; set && old != value {
			return labelChanges{}, fmt.Errorf("label %q: the key %s is given two values, %q and %q", arg, key, old, value)
		}
		changes.Set[key] = value
	}
	sort.Strings(changes.Remove)
	return changes, nil
}

// apply returns existing with the changes made; existing is not modified.
func (c labelChanges) apply(existing map[string]string) map[string]string {
	out := make(map[string]string, len(existing)+len(c.Set))
	for k, v := range existing {
		out[k] = v
	}
	for k, v := range c.Set {
		out[k] = v
	}
	for _, k := range c.Remove {
		delete(out, k)
	}
	return out
}

// setLabels gives u the labels and says which changed, e.g. "labels +env=prod -zone", or ""
// when none did.
func setLabels(u *unstructured.Unstructured, labels map[string]string) string {
	diff := describeLabelChanges(u.GetLabels(), labels)
	if diff == "" {
		return ""
	}
	if len(labels) == 0 {
		labels = nil // no empty map: it would differ from an absent one at the next comparison
	}
	u.SetLabels(labels)
	return "labels " + diff
}

// describeLabelChanges lists, sorted by key, the labels that after adds (+k=v) or changes
// (~k=v) with respect to before, and those it lacks (-k).
func describeLabelChanges(before, after map[string]string) string {
	var parts []string
	for _, k := range unionKeys(before, after) {
		old, had := before[k]
		v, has := after[k]
		switch {
		case had && !has:
			parts = append(parts, "-"+k)
		case !had && has:
			parts = append(parts, "+"+k+"="+v)
		case old != v:
			parts = append(parts, "~"+k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func joinChanges(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// toUnstructured converts a typed object, or part of one, for the dynamic client; a status is
// dropped, as it is not written with the object.
func toUnstructured(obj any) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	return u, nil
}

func newUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	u, err := toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: u}, nil
}

func dedupe(msgs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// unionKeys returns the keys of a and b, sorted, each once.
func unionKeys(a, b map[string]string) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
