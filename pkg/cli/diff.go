package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/fleetview"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/customize"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/projection"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// ExitError is an error that asks for a particular exit status: kubectl edge diff exits 1 when
// there are changes (with no message) and 2 on an error, as kubectl diff does.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the exit status for an error that Execute returned: an ExitError's own, else 1.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

var (
	slicesGVR          = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	customizersGVR     = edgev1alpha1.SchemeGroupVersion.WithResource("customizers")
	assemblagePartsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
	crdsGVR            = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// maxNamedDestinations is how many destinations of a group of identical changes the output names;
// the rest are counted.
const maxNamedDestinations = 5

type diffOptions struct {
	*Options
	wmw   string
	files []string
}

func newDiffCommand(o *Options) *cobra.Command {
	do := &diffOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "diff (-f FILE | PLACEMENT)",
		Short: "Show what each edge cluster would get if the file were applied, or what a placement's waiting destinations will get",
		Long: `Show, before anything is applied, what applying the file's objects to the workload workspace
would change at each destination of its EdgePlacements: objects added, changed and removed, and a
unified diff of each changed object as the destination would get it (customised: Customizers and
%(key) expansion).

The file's objects are sent to the workload workspace as a server-side dry run (nothing is
stored), and each destination's copies are computed before and after with the placement
translator's own code. Destinations whose changes are the same are shown once, with their count.
A changed EdgePlacement is shown at the destinations the edge scheduler chose for it now.

With an EdgePlacement instead of a file: what each of its destinations has been delivered (the
assemblage in its mailbox) against what the workspace holds now, that is what a paused or gated
rollout, or a dependency not ready yet, still holds back from each destination. This reads the
mailboxes, as kubectl edge status --target does, and needs read access to them.

Exit status, as kubectl diff's: 0 no change, 1 changes, 2 an error.`,
		Example: `  kubectl edge diff -f web.yaml
  kubectl edge diff -f web.yaml --wmw root:wmw-a
  kubectl edge diff -f - < customizer.yaml
  kubectl edge diff web --wmw root:wmw-a`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := positional(nil, 1)(cmd, args); err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			return nil
		},
		ValidArgsFunction: o.placementArg(&do.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(do.files) == 0 && len(args) == 0:
				return &ExitError{Code: 2, Err: fmt.Errorf("kubectl edge diff: give the objects to compare with -f FILE (- for standard input), or an EdgePlacement whose destinations' delivered versions to compare with the workspace")}
			case len(do.files) > 0 && len(args) > 0:
				return &ExitError{Code: 2, Err: fmt.Errorf("kubectl edge diff: give -f FILE or an EdgePlacement, not both")}
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			var changed bool
			var err error
			if len(args) == 1 {
				changed, err = do.runPlacement(ctx, args[0])
			} else {
				changed, err = do.run(ctx, cmd.InOrStdin())
			}
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			if changed {
				return &ExitError{Code: 1}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: 2, Err: err} })
	cmd.Flags().StringArrayVarP(&do.files, "filename", "f", nil, "file of the objects to compare (YAML or JSON, several documents; - for standard input); may be repeated")
	cmd.Flags().StringVar(&do.wmw, "wmw", "", "path of the workload workspace (default: the kubeconfig's current workspace)")
	return cmd
}

// workspaceState is what the projection reads of a workload workspace: its placements, their
// destinations, its Customizers and its placeable objects.
type workspaceState struct {
	placements  map[string]*edgev1alpha1.EdgePlacement
	customizers map[types.NamespacedName]*unstructured.Unstructured
	cands       []projection.Candidate
	nsLabels    map[string]map[string]string
}

func (s *workspaceState) clone() *workspaceState {
	out := &workspaceState{placements: map[string]*edgev1alpha1.EdgePlacement{}, customizers: map[types.NamespacedName]*unstructured.Unstructured{},
		cands: append([]projection.Candidate(nil), s.cands...), nsLabels: map[string]map[string]string{}}
	for k, v := range s.placements {
		out.placements[k] = v
	}
	for k, v := range s.customizers {
		out.customizers[k] = v
	}
	for k, v := range s.nsLabels {
		out.nsLabels[k] = v
	}
	return out
}

// placeable is a resource whose objects placements select: claimed by edge.kcp.io and accepted
// in the workspace's binding, or a custom kind defined by a CRD of the workspace.
type placeable struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	custom     bool
}

// diffClients are the clients of one diff run.
type diffClients struct {
	base      *rest.Config
	wmw       logicalcluster.Path
	dyn       dynamic.Interface
	mapper    meta.RESTMapper
	resources []placeable
}

func (do *diffOptions) clients(ctx context.Context) (*diffClients, error) {
	cfg, err := do.restConfig()
	if err != nil {
		return nil, err
	}
	base, current := workspaces.Split(cfg)
	wmw := current
	if do.wmw != "" {
		if wmw, err = workspaces.ParsePath(do.wmw); err != nil {
			return nil, fmt.Errorf("--wmw: %w", err)
		}
	}
	if wmw.Empty() {
		return nil, fmt.Errorf("no workload workspace: give --wmw, or use a kubeconfig whose server is a workspace's URL")
	}
	wcfg := workspaces.ConfigFor(base, wmw)
	dyn, err := dynamic.NewForConfig(wcfg)
	if err != nil {
		return nil, err
	}
	kcp, err := kcpclientset.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(wcfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	resources, err := placeableResources(ctx, kcp, dyn, mapper, wmw)
	if err != nil {
		return nil, err
	}
	return &diffClients{base: base, wmw: wmw, dyn: dyn, mapper: mapper, resources: resources}, nil
}

func (do *diffOptions) run(ctx context.Context, in io.Reader) (bool, error) {
	objs, err := readObjects(do.files, in)
	if err != nil {
		return false, err
	}
	c, err := do.clients(ctx)
	if err != nil {
		return false, err
	}
	base, wmw, dyn, mapper, resources := c.base, c.wmw, c.dyn, c.mapper, c.resources
	before, err := readWorkspace(ctx, dyn, resources, wmw)
	if err != nil {
		return false, err
	}
	after, notes, err := dryRun(ctx, dyn, mapper, resources, before, objs, wmw)
	if err != nil {
		return false, err
	}
	for _, n := range notes {
		fmt.Fprintln(do.ErrOut, "note: "+n)
	}
	dests, err := destinationsOf(ctx, dyn, wmw)
	if err != nil {
		return false, err
	}
	params := &paramReader{base: base, cache: map[string]*unstructured.Unstructured{}}

	names := map[string]bool{}
	for n := range before.placements {
		names[n] = true
	}
	for n := range after.placements {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	if len(sorted) == 0 {
		fmt.Fprintf(do.Out, "Workspace %s has no EdgePlacement: nothing is delivered anywhere, before or after.\n", wmw)
		return false, nil
	}
	anyChange := false
	for _, name := range sorted {
		changes := map[string][]objectChange{}
		var order []string
		for _, dest := range dests[name] {
			id := destinationName(dest)
			order = append(order, id)
			b, err := project(ctx, before, before.placements[name], dest, params)
			if err != nil {
				return false, fmt.Errorf("EdgePlacement %s, destination %s, as it is: %w", name, id, err)
			}
			a, err := project(ctx, after, after.placements[name], dest, params)
			if err != nil {
				return false, fmt.Errorf("EdgePlacement %s, destination %s, after the file: %w", name, id, err)
			}
			changes[id] = compareCopies(b, a)
		}
		groups := groupChanges(order, changes)
		printPlacementDiff(do.Out, name, len(order), groups)
		for _, g := range groups {
			anyChange = anyChange || len(g.Changes) > 0
		}
	}
	return anyChange, nil
}

// runPlacement compares, at each destination of a placement, what its mailbox's assemblage
// holds with what the workspace holds now.
func (do *diffOptions) runPlacement(ctx context.Context, name string) (bool, error) {
	c, err := do.clients(ctx)
	if err != nil {
		return false, err
	}
	now, err := readWorkspace(ctx, c.dyn, c.resources, c.wmw)
	if err != nil {
		return false, err
	}
	p := now.placements[name]
	if p == nil {
		return false, fmt.Errorf("there is no EdgePlacement %q in %s", name, c.wmw)
	}
	cluster := logicalcluster.From(p).String()
	dests, err := destinationsOf(ctx, c.dyn, c.wmw)
	if err != nil {
		return false, err
	}
	params := &paramReader{base: c.base, cache: map[string]*unstructured.Unstructured{}}
	changes := map[string][]objectChange{}
	var order []string
	for _, dest := range dests[name] {
		id := destinationName(dest)
		order = append(order, id)
		delivered, shared, err := params.delivered(ctx, dest, transport.AssemblageName(cluster, name))
		if err != nil {
			return false, fmt.Errorf("EdgePlacement %s, destination %s: %w", name, id, err)
		}
		want, err := project(ctx, now, p, dest, params)
		if err != nil {
			return false, fmt.Errorf("EdgePlacement %s, destination %s: %w", name, id, err)
		}
		for k := range shared {
			delete(want, k) // delivered in another placement's assemblage
		}
		changes[id] = compareCopies(delivered, want)
	}
	groups := groupChanges(order, changes)
	printPlacementDiff(do.Out, name, len(order), groups)
	for _, g := range groups {
		if len(g.Changes) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// readObjects reads every object of the files ("-": in).
func readObjects(files []string, in io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		var r io.Reader = in
		if f != "-" {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			r = bytes.NewReader(data)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
		for i := 1; ; i++ {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: document %d: %w", f, i, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("%s: document %d has no apiVersion, kind or metadata.name", f, i)
			}
			if u.IsList() {
				return nil, fmt.Errorf("%s: document %d is a %s: give the objects one by one", f, i, u.GetKind())
			}
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objects in %s", strings.Join(files, ", "))
	}
	return out, nil
}

// placeableResources are the resources of the workspace whose objects placements select: those
// that edge.kcp.io claims and the workspace's binding accepts, and the custom kinds of its CRDs.
func placeableResources(ctx context.Context, kcp kcpclientset.ClusterInterface, dyn dynamic.Interface, mapper meta.RESTMapper, wmw logicalcluster.Path) ([]placeable, error) {
	bindings, err := kcp.Cluster(wmw).ApisV1alpha2().APIBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the APIBindings of %s: %w", wmw, err)
	}
	var binding *apisv1alpha2.APIBinding
	for i := range bindings.Items {
		if ref := bindings.Items[i].Spec.Reference.Export; ref != nil && ref.Name == edgev1alpha1.EdgeAPIExportName {
			binding = &bindings.Items[i]
		}
	}
	if binding == nil {
		return nil, fmt.Errorf("workspace %s binds no %s APIExport: it is no workload workspace (kubectl edge ensure wmw %s)", wmw, edgev1alpha1.EdgeAPIExportName, wmw)
	}
	var out []placeable
	seen := map[schema.GroupResource]bool{}
	for _, c := range binding.Spec.PermissionClaims {
		gr := schema.GroupResource{Group: c.Group, Resource: c.Resource}
		if c.State != apisv1alpha2.ClaimAccepted || seen[gr] || gr.Group == edgev1alpha1.GroupName {
			continue
		}
		seen[gr] = true
		gvk, err := mapper.KindFor(gr.WithVersion(""))
		if err != nil {
			continue // not served (yet): nothing of it to select
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue
		}
		out = append(out, placeable{gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
	}
	crds, err := dyn.Resource(crdsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the CRDs of %s: %w", wmw, err)
	}
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if storage, _ := vm["storage"].(bool); storage {
				name, _ := vm["name"].(string)
				out = append(out, placeable{gvr: schema.GroupVersionResource{Group: group, Version: name, Resource: plural}, namespaced: scope == "Namespaced", custom: true})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, nil
}

// readWorkspace reads the workspace's placements, Customizers and placeable objects.
func readWorkspace(ctx context.Context, dyn dynamic.Interface, resources []placeable, wmw logicalcluster.Path) (*workspaceState, error) {
	s := &workspaceState{placements: map[string]*edgev1alpha1.EdgePlacement{}, customizers: map[types.NamespacedName]*unstructured.Unstructured{}, nsLabels: map[string]map[string]string{}}
	list, err := dyn.Resource(placementsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the EdgePlacements of %s: %w", wmw, err)
	}
	for i := range list.Items {
		p := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, p); err != nil {
			return nil, fmt.Errorf("decoding EdgePlacement %s: %w", list.Items[i].GetName(), err)
		}
		s.placements[p.Name] = p
	}
	list, err = dyn.Resource(customizersGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Customizers of %s: %w", wmw, err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		s.customizers[types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}] = u
	}
	for _, r := range resources {
		list, err := dyn.Resource(r.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s in %s: %w", r.gvr.GroupResource(), wmw, err)
		}
		for i := range list.Items {
			s.add(r, &list.Items[i])
		}
	}
	return s, nil
}

// add puts an object among the candidates, in place of any of the same key.
func (s *workspaceState) add(r placeable, u *unstructured.Unstructured) {
	c := projection.Candidate{Object: projection.Object{Group: r.gvr.Group, Resource: r.gvr.Resource, Namespaced: r.namespaced,
		Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels()}, Custom: r.custom, Source: u}
	key := projection.KeyOf(c)
	replaced := false
	for i := range s.cands {
		if projection.KeyOf(s.cands[i]) == key {
			s.cands[i], replaced = c, true
		}
	}
	if !replaced {
		s.cands = append(s.cands, c)
	}
	if r.gvr.Group == "" && r.gvr.Resource == "namespaces" {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		s.nsLabels[u.GetName()] = labels
	}
}

// dryRun sends each object to the workspace as a server-side apply with dryRun=All and returns
// the workspace as it would be after them, with notes on objects no placement can select.
func dryRun(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, resources []placeable, before *workspaceState, objs []*unstructured.Unstructured, wmw logicalcluster.Path) (*workspaceState, []string, error) {
	after := before.clone()
	byGR := map[schema.GroupResource]placeable{}
	for _, r := range resources {
		byGR[r.gvr.GroupResource()] = r
	}
	var notes []string
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: workspace %s does not serve this kind: %w", u.GetKind(), u.GetName(), wmw, err)
		}
		var client dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if u.GetNamespace() == "" {
				u.SetNamespace(metav1.NamespaceDefault)
			}
			client = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		} else {
			u.SetNamespace("")
		}
		body, err := u.MarshalJSON()
		if err != nil {
			return nil, nil, err
		}
		force := true
		result, err := client.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kubectl", Force: &force})
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: the workspace refuses it (server-side dry run): %w", u.GetKind(), objectName(u), err)
		}
		gr := m.Resource.GroupResource()
		switch {
		case gr == placementsGVR.GroupResource():
			p := &edgev1alpha1.EdgePlacement{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(result.Object, p); err != nil {
				return nil, nil, fmt.Errorf("decoding EdgePlacement %s: %w", result.GetName(), err)
			}
			after.placements[p.Name] = p
			if _, known := before.placements[p.Name]; !known {
				notes = append(notes, fmt.Sprintf("EdgePlacement %s is new: the edge scheduler has chosen no destination for it yet, so none is shown", p.Name))
			}
		case gr == customizersGVR.GroupResource():
			after.customizers[types.NamespacedName{Namespace: result.GetNamespace(), Name: result.GetName()}] = result
		default:
			r, ok := byGR[gr]
			if !ok {
				notes = append(notes, fmt.Sprintf("%s %s is of a kind that no placement can select (edge.kcp.io does not claim %s, or the workspace has not accepted the claim)", u.GetKind(), objectName(u), gr))
				continue
			}
			after.add(r, result)
		}
	}
	return after, notes, nil
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}

// destinationsOf returns each placement's destinations, from its SinglePlacementSlices, in the
// slices' order.
func destinationsOf(ctx context.Context, dyn dynamic.Interface, wmw logicalcluster.Path) (map[string][]edgev1alpha1.SinglePlacement, error) {
	list, err := dyn.Resource(slicesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the SinglePlacementSlices of %s: %w", wmw, err)
	}
	return fleetview.DestinationsOf(list.Items)
}

func destinationName(d edgev1alpha1.SinglePlacement) string {
	return d.Cluster + ":" + d.SyncTargetName
}

// paramReader reads the customisation parameters of destinations (their SyncTargets' and
// Locations' labels and annotations), only when an object needs them, once each.
type paramReader struct {
	base  *rest.Config
	dyn   map[string]dynamic.Interface
	cache map[string]*unstructured.Unstructured
}

func (r *paramReader) get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	key := cluster + "|" + gvr.Resource + "|" + name
	if u, ok := r.cache[key]; ok {
		return u, nil
	}
	if r.dyn == nil {
		r.dyn = map[string]dynamic.Interface{}
	}
	client := r.dyn[cluster]
	if client == nil {
		var err error
		if client, err = dynamic.NewForConfig(workspaces.ConfigFor(r.base, logicalcluster.NewPath(cluster))); err != nil {
			return nil, err
		}
		r.dyn[cluster] = client
	}
	u, err := client.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("an object is customised (a Customizer, or %%(key) parameters), with the labels and annotations of the destination's SyncTarget and Location, and your credentials cannot read %s %s in the inventory workspace %s: %w", gvr.Resource, name, cluster, err)
		}
		return nil, fmt.Errorf("reading %s %s in the inventory workspace %s: %w", gvr.Resource, name, cluster, err)
	}
	r.cache[key] = u
	return u, nil
}

func (r *paramReader) parameters(ctx context.Context, dest edgev1alpha1.SinglePlacement) (customize.Parameters, error) {
	var p customize.Parameters
	st, err := r.get(ctx, dest.Cluster, syncTargetsGVR, dest.SyncTargetName)
	if err != nil {
		return p, err
	}
	loc, err := r.get(ctx, dest.Cluster, locationsGVR, dest.LocationName)
	if err != nil {
		return p, err
	}
	p.SyncTargetLabels, p.SyncTargetAnnotations = st.GetLabels(), st.GetAnnotations()
	p.LocationLabels, p.LocationAnnotations = loc.GetLabels(), loc.GetAnnotations()
	return p, nil
}

// delivered returns what a destination's mailbox holds of an assemblage, by object key, as YAML,
// and the keys of the objects it shares with another placement's assemblage. A destination
// with no assemblage yet has nothing.
func (r *paramReader) delivered(ctx context.Context, dest edgev1alpha1.SinglePlacement, assemblage string) (map[string]string, map[string]bool, error) {
	st, err := r.get(ctx, dest.Cluster, syncTargetsGVR, dest.SyncTargetName)
	if err != nil {
		return nil, nil, err
	}
	mailbox, _, _ := unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
	if mailbox == "" {
		return nil, nil, fmt.Errorf("SyncTarget %s has no mailbox yet (see its MailboxReady condition)", dest.SyncTargetName)
	}
	path, err := workspaces.ParsePath(mailbox)
	if err != nil {
		return nil, nil, fmt.Errorf("SyncTarget %s names mailbox %q: %w", dest.SyncTargetName, mailbox, err)
	}
	client, err := dynamic.NewForConfig(workspaces.ConfigFor(r.base, path))
	if err != nil {
		return nil, nil, err
	}
	u, err := client.Resource(assemblagesGVR).Get(ctx, assemblage, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return map[string]string{}, nil, nil
	case apierrors.IsForbidden(err):
		return nil, nil, fmt.Errorf("your credentials cannot read the assemblage %s in mailbox %s; diff of a placement reads the mailboxes, as kubectl edge status --target does: %w", assemblage, path, err)
	case err != nil:
		return nil, nil, fmt.Errorf("reading the assemblage %s in mailbox %s: %w", assemblage, path, err)
	}
	a := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
		return nil, nil, fmt.Errorf("decoding the assemblage %s in mailbox %s: %w", assemblage, path, err)
	}
	var parts []*edgev1alpha1.AssemblagePart
	if a.Spec.Parts > 1 {
		list, err := client.Resource(assemblagePartsGVR).List(ctx, metav1.ListOptions{LabelSelector: transport.LabelAssemblage + "=" + transport.LabelValue(assemblage)})
		if err != nil {
			return nil, nil, fmt.Errorf("listing the parts of assemblage %s in mailbox %s: %w", assemblage, path, err)
		}
		parts = transport.PartsOf(list.Items)
	}
	doc, err := transport.DecodeAssemblage(a, parts)
	if err != nil {
		return nil, nil, fmt.Errorf("the assemblage %s in mailbox %s cannot be read: %w", assemblage, path, err)
	}
	out := map[string]string{}
	for i := range doc.Objects {
		e := &doc.Objects[i]
		obj := e.Object
		if e.Sealed != nil || transport.NeedsSealing(e.Group, e.Resource, e.Object) {
			// Sealed (or, from before sealing, due to be): only what travels in the clear is
			// compared.
			obj = transport.ClearView(obj)
		}
		text, err := yaml.Marshal(obj)
		if err != nil {
			return nil, nil, err
		}
		out[e.Key().String()] = string(text)
	}
	shared := map[string]bool{}
	for _, o := range a.Spec.Shared {
		shared[o.Object] = true
	}
	return out, shared, nil
}

// project is what a placement delivers to a destination from a workspace's state, by object
// key: the copies as YAML, or, for an object that cannot be copied, the error the placement
// would report (the destination keeps its last good copy).
func project(ctx context.Context, s *workspaceState, p *edgev1alpha1.EdgePlacement, dest edgev1alpha1.SinglePlacement, params *paramReader) (map[string]string, error) {
	out := map[string]string{}
	if p == nil {
		return out, nil
	}
	selected, err := projection.Select(p.Spec.Downsync, s.cands, func(ns string) map[string]string { return s.nsLabels[ns] })
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	var destParams *customize.Parameters
	for key, c := range selected {
		var prm customize.Parameters
		_, _, customized := projection.CustomizerOf(c.Source)
		if customized || c.Source.GetAnnotations()[edgev1alpha1.AnnotationExpandParameters] == "true" {
			if destParams == nil {
				got, err := params.parameters(ctx, dest)
				if err != nil {
					return nil, err
				}
				destParams = &got
			}
			prm = *destParams
		}
		copied, cerr := projection.Copy(c.Source, key.String(), func(ns, name string) (*unstructured.Unstructured, bool) {
			u, ok := s.customizers[types.NamespacedName{Namespace: ns, Name: name}]
			return u, ok
		}, prm)
		if cerr != nil {
			out[key.String()] = "# " + cerr.Reason + ": " + cerr.Message + "\n"
			continue
		}
		obj := copied.Object
		if transport.NeedsSealing(key.Group, key.Resource, obj) {
			// It travels sealed: its content is compared by nobody but the edge.
			obj = transport.ClearView(obj)
		}
		text, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out[key.String()] = string(text)
	}
	return out, nil
}

// objectChange is one object's change at a destination.
type objectChange struct {
	Object string
	// Op is "added", "changed" or "removed".
	Op string
	// Diff is the unified diff of the object's copy, before and after.
	Diff string
}

// compareCopies lists, in object order, what differs between two projections. A Secret's
// values are masked, as kubectl diff masks them: "***", or "*** (before)" and "*** (after)"
// where the value changes.
func compareCopies(before, after map[string]string) []objectChange {
	var out []objectChange
	for _, k := range unionKeys(before, after) {
		b, inBefore := before[k]
		a, inAfter := after[k]
		if strings.HasPrefix(k, "secrets/") {
			b, a = maskSecret(b, a)
		}
		if inBefore && inAfter && a == b {
			continue
		}
		op := "changed"
		switch {
		case !inBefore:
			op = "added"
		case !inAfter:
			op = "removed"
		}
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(b), B: difflib.SplitLines(a),
			FromFile: k + " (now)", ToFile: k + " (after)", Context: 3,
		})
		out = append(out, objectChange{Object: k, Op: op, Diff: diff})
	}
	return out
}

// maskSecret replaces the values of a Secret's data and stringData in the YAML of its two
// versions (either may be empty: absent), so that no value is printed, while a changed value
// still shows as a change. Text that is no object (a projection error) stays as it is.
func maskSecret(before, after string) (string, string) {
	parse := func(text string) map[string]any {
		var obj map[string]any
		if text == "" || yaml.Unmarshal([]byte(text), &obj) != nil {
			return nil
		}
		return obj
	}
	b, a := parse(before), parse(after)
	for _, field := range []string{"data", "stringData"} {
		bv, _ := b[field].(map[string]any)
		av, _ := a[field].(map[string]any)
		for key := range bv {
			if v, ok := av[key]; ok && fmt.Sprint(v) != fmt.Sprint(bv[key]) {
				bv[key], av[key] = "*** (before)", "*** (after)"
				continue
			}
			bv[key] = "***"
		}
		for key := range av {
			if s, _ := av[key].(string); s != "*** (after)" {
				av[key] = "***"
			}
		}
	}
	render := func(obj map[string]any, text string) string {
		if obj == nil {
			return text
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return ""
		}
		return string(out)
	}
	return render(b, before), render(a, after)
}

// changeGroup is a set of destinations whose changes are the same.
type changeGroup struct {
	Destinations []string
	Changes      []objectChange
}

// changeSignature is what makes two destinations' changes the same: the same objects, each
// added, changed or removed, with the same lines removed and added. The lines of context around
// them may differ (another destination's parameters in a line nearby).
func changeSignature(cs []objectChange) string {
	var sig strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&sig, "%q %q", c.Object, c.Op)
		for _, line := range strings.Split(c.Diff, "\n") {
			if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++ ") && !strings.HasPrefix(line, "--- ") {
				fmt.Fprintf(&sig, " %q", line)
			}
		}
		sig.WriteString(";")
	}
	return sig.String()
}

// groupChanges groups the destinations (in the given order) by the same changes
// (changeSignature): the groups in the order of their first destination, whose changes they
// show; the unchanged destinations are a group like any other.
func groupChanges(order []string, changes map[string][]objectChange) []changeGroup {
	var groups []changeGroup
	index := map[string]int{}
	for _, d := range order {
		cs := changes[d]
		sig := changeSignature(cs)
		i, ok := index[sig]
		if !ok {
			i = len(groups)
			index[sig] = i
			groups = append(groups, changeGroup{Changes: cs})
		}
		groups[i].Destinations = append(groups[i].Destinations, d)
	}
	return groups
}

// printPlacementDiff prints one placement's groups: changed ones first, each with its count and
// up to maxNamedDestinations of its destinations, then the count of unchanged destinations.
func printPlacementDiff(out io.Writer, placement string, destinations int, groups []changeGroup) {
	if destinations == 0 {
		fmt.Fprintf(out, "EdgePlacement %s: no destination, so no change anywhere\n", placement)
		return
	}
	changed, unchanged := 0, 0
	for _, g := range groups {
		if len(g.Changes) > 0 {
			changed += len(g.Destinations)
		} else {
			unchanged += len(g.Destinations)
		}
	}
	fmt.Fprintf(out, "EdgePlacement %s: %d of %d destinations change\n", placement, changed, destinations)
	for _, g := range groups {
		if len(g.Changes) == 0 {
			continue
		}
		named := g.Destinations
		more := ""
		if len(named) > maxNamedDestinations {
			more = fmt.Sprintf(" and %d more", len(named)-maxNamedDestinations)
			named = named[:maxNamedDestinations]
		}
		fmt.Fprintf(out, "\n== %d destination(s): %s%s\n", len(g.Destinations), strings.Join(named, ", "), more)
		for _, c := range g.Changes {
			fmt.Fprintf(out, "%s %s\n", c.Op, c.Object)
		}
		if len(g.Destinations) > 1 {
			fmt.Fprintf(out, "(as at %s; the others' lines of context may differ)\n", g.Destinations[0])
		}
		for _, c := range g.Changes {
			fmt.Fprint(out, c.Diff)
		}
	}
	if unchanged > 0 && changed > 0 {
		fmt.Fprintf(out, "\n== %d destination(s) unchanged\n", unchanged)
	}
	fmt.Fprintln(out)
}
