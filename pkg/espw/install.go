// Package espw installs edge-mc's APIs into the edge service provider workspace (ESPW): the
// APIResourceSchemas and the APIExports edge.kcp.io and workloads.edge.kcp.io, that inventory
// and workload workspaces bind, and mailbox.edge.kcp.io, that mailbox workspaces bind.
//
// It also installs two WorkspaceTypes. Mailboxes are the most numerous workspaces, and kcp's
// universal type would give each two APIBindings it does not need, so mailboxes have a lean type
// of their own, "mailbox" in the ESPW, whose only default binding is mailbox.edge.kcp.io. kcp
// lets a workspace hold children only of the types its own type allows, so the ESPW has the type
// "edge-service-provider", created in its parent: universal, plus mailbox children.
//
// edge.kcp.io has a maximal permission policy (policy.go): only inventory admins make SyncTargets
// and Locations, wherever the export is bound.
//
// edge.kcp.io also carries permission claims (EdgeClaims) on the kinds workloads are made of, so
// that the placement translator can read a workload workspace, once its owner accepts them, through
// the export's virtual workspace. They name the workloads export by its identity, which kcp gives
// it when it is created, so they are added here rather than generated.
//
// Installing is idempotent: what is already as wanted is left untouched, so a second install
// changes no resourceVersion.
package espw

import (
	"context"
	"fmt"
	"io"
	"slices"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcp-dev/edge-mc/config/exports"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Result says what an install did.
type Result struct {
	Workspace logicalcluster.Path
	Created   []string
	Updated   []string
	Unchanged []string
}

// Install makes sure the ESPW at path exists, holds every embedded APIResourceSchema, and
// serves both APIExports, then waits until each export has its identity.
func Install(ctx context.Context, kcp kcpclientset.ClusterInterface, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, out io.Writer) (*Result, error) {
	schemas, apiExports, err := exports.Load()
	if err != nil {
		return nil, err
	}
	parent, ok := path.Parent()
	if !ok {
		return nil, fmt.Errorf("the ESPW %s has no parent workspace: give a path such as %s", path, edgev1alpha1.DefaultESPW)
	}
	res := &Result{Workspace: path}
	if _, hasGrandParent := parent.Parent(); hasGrandParent {
		if _, err := (&workspaces.Ensurer{KCP: kcp, Out: out}).Workspace(ctx, parent); err != nil {
			return nil, err
		}
	}
	if err := ensureWorkspaceType(ctx, kcp, parent, serviceProviderType(path), res); err != nil {
		return nil, err
	}
	ensurer := &workspaces.Ensurer{KCP: kcp, Out: out}
	if _, err := ensurer.WorkspaceOfType(ctx, path, &tenancyv1alpha1.WorkspaceTypeReference{
		Name: edgev1alpha1.ServiceProviderWorkspaceType, Path: parent.String(),
	}); err != nil {
		return nil, err
	}
	for _, s := range schemas {
		if err := ensureSchema(ctx, kcp, path, s, res); err != nil {
			return nil, err
		}
	}
	// edge.kcp.io claims the resources of workloads.edge.kcp.io by that export's identity, so
	// it comes last.
	var edge *apisv1alpha2.APIExport
	for _, e := range apiExports {
		if e.Name == edgev1alpha1.EdgeAPIExportName {
			edge = e
			continue
		}
		if e.Name == edgev1alpha1.MailboxAPIExportName {
			e = e.DeepCopy()
			e.Spec.PermissionClaims = MailboxClaims()
		}
		if err := ensureExport(ctx, kcp, path, e, res); err != nil {
			return nil, err
		}
	}
	if edge == nil {
		return nil, fmt.Errorf("this kubectl-edge carries no APIExport %s", edgev1alpha1.EdgeAPIExportName)
	}
	workloads, err := waitForIdentity(ctx, kcp, path, edgev1alpha1.WorkloadsAPIExportName)
	if err != nil {
		return nil, err
	}
	edge = edge.DeepCopy()
	edge.Spec.PermissionClaims = EdgeClaims(workloads)
	if err := ensureEdgePolicyRBAC(ctx, kube, path, res); err != nil {
		return nil, err
	}
	edge.Spec.MaximalPermissionPolicy = edgePolicy()
	if err := ensureExport(ctx, kcp, path, edge, res); err != nil {
		return nil, err
	}
	for _, name := range []string{edgev1alpha1.MailboxAPIExportName, edge.Name} {
		if _, err := waitForIdentity(ctx, kcp, path, name); err != nil {
			return nil, err
		}
	}
	if err := ensureWorkspaceType(ctx, kcp, path, mailboxType(path), res); err != nil {
		return nil, err
	}
	// The mailbox controller makes mailboxes of this type as soon as edge-controller-manager
	// runs, so init returns only once kcp admits them.
	if err := workspaces.WaitUntilTypeAdmitted(ctx, kcp, path, tenancyv1alpha1.WorkspaceTypeReference{Name: edgev1alpha1.MailboxWorkspaceType, Path: path.String()}); err != nil {
		return nil, err
	}
	if out != nil {
		fmt.Fprintf(out, "ESPW %s: %d created, %d updated, %d unchanged\n", path, len(res.Created), len(res.Updated), len(res.Unchanged))
	}
	return res, nil
}

func ensureSchema(ctx context.Context, kcp kcpclientset.ClusterInterface, path logicalcluster.Path, want *apisv1alpha1.APIResourceSchema, res *Result) error {
	client := kcp.Cluster(path).ApisV1alpha1().APIResourceSchemas()
	kind := "APIResourceSchema " + want.Name
	got, err := client.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := client.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s in %s: %w", kind, path, err)
		}
		res.Created = append(res.Created, kind)
		return nil
	case err != nil:
		return fmt.Errorf("reading %s in %s: %w", kind, path, err)
	}
	if !schemaSpecEqual(got.Spec, want.Spec) {
		// Schemas are immutable and generated names change with content, so a difference means
		// somebody else wrote this name.
		return fmt.Errorf("%s in %s differs from the one this kubectl-edge carries; schemas are immutable and named after their content, so it was not written by edge-mc: delete it and run init again", kind, path)
	}
	res.Unchanged = append(res.Unchanged, kind)
	return nil
}

// schemaSpecEqual compares two schema specs after a JSON round trip of the raw schemas, so that
// key order and white space do not count.
func schemaSpecEqual(a, b apisv1alpha1.APIResourceSchemaSpec) bool {
	if a.Group != b.Group || a.Scope != b.Scope || !equality.Semantic.DeepEqual(a.Names, b.Names) || len(a.Versions) != len(b.Versions) {
		return false
	}
	for i := range a.Versions {
		va, vb := a.Versions[i], b.Versions[i]
		sa, errA := va.GetSchema()
		sb, errB := vb.GetSchema()
		if errA != nil || errB != nil || !equality.Semantic.DeepEqual(sa, sb) {
			return false
		}
		va.Schema, vb.Schema = runtime.RawExtension{}, runtime.RawExtension{}
		if !equality.Semantic.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

func ensureExport(ctx context.Context, kcp kcpclientset.ClusterInterface, path logicalcluster.Path, want *apisv1alpha2.APIExport, res *Result) error {
	client := kcp.Cluster(path).ApisV1alpha2().APIExports()
	kind := "APIExport " + want.Name
	got, err := client.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := client.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s in %s: %w", kind, path, err)
		}
		res.Created = append(res.Created, kind)
		return nil
	case err != nil:
		return fmt.Errorf("reading %s in %s: %w", kind, path, err)
	}
	if equality.Semantic.DeepEqual(got.Spec.Resources, want.Spec.Resources) &&
		equality.Semantic.DeepEqual(got.Spec.PermissionClaims, want.Spec.PermissionClaims) &&
		equality.Semantic.DeepEqual(got.Spec.MaximalPermissionPolicy, want.Spec.MaximalPermissionPolicy) {
		res.Unchanged = append(res.Unchanged, kind)
		return nil
	}
	got.Spec.Resources = want.Spec.Resources
	got.Spec.PermissionClaims = want.Spec.PermissionClaims
	got.Spec.MaximalPermissionPolicy = want.Spec.MaximalPermissionPolicy
	if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s in %s: %w", kind, path, err)
	}
	res.Updated = append(res.Updated, kind)
	return nil
}

// workspaceType is a WorkspaceType that install wants, with how to bring an existing one in line.
type workspaceType struct {
	want *tenancyv1alpha1.WorkspaceType
	// update changes what in got differs from what install needs, keeping what kcp defaulted and
	// what others added, and says whether it changed anything.
	update func(got *tenancyv1alpha1.WorkspaceType) bool
}

var universal = tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"}

// serviceProviderType is the WorkspaceType of the ESPW at espw: kcp's universal type (its
// default bindings, so that the ESPW can hold workspaces), allowing mailbox children too. Several
// ESPWs with one parent share it, each adding its mailbox type to the allowed children.
func serviceProviderType(espw logicalcluster.Path) workspaceType {
	mailboxes := tenancyv1alpha1.WorkspaceTypeReference{Name: edgev1alpha1.MailboxWorkspaceType, Path: espw.String()}
	want := &tenancyv1alpha1.WorkspaceType{
		ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.ServiceProviderWorkspaceType},
		Spec: tenancyv1alpha1.WorkspaceTypeSpec{
			Extend:                    tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{universal}},
			DefaultChildWorkspaceType: universal.DeepCopy(),
			LimitAllowedChildren:      &tenancyv1alpha1.WorkspaceTypeSelector{Types: []tenancyv1alpha1.WorkspaceTypeReference{universal, mailboxes}},
		},
	}
	return workspaceType{want: want, update: func(got *tenancyv1alpha1.WorkspaceType) bool {
		changed := false
		if !equality.Semantic.DeepEqual(got.Spec.Extend, want.Spec.Extend) {
			got.Spec.Extend, changed = want.Spec.Extend, true
		}
		if !equality.Semantic.DeepEqual(got.Spec.DefaultChildWorkspaceType, want.Spec.DefaultChildWorkspaceType) {
			got.Spec.DefaultChildWorkspaceType, changed = want.Spec.DefaultChildWorkspaceType, true
		}
		if got.Spec.LimitAllowedChildren == nil {
			got.Spec.LimitAllowedChildren = &tenancyv1alpha1.WorkspaceTypeSelector{}
		}
		for _, ref := range want.Spec.LimitAllowedChildren.Types {
			if !slices.Contains(got.Spec.LimitAllowedChildren.Types, ref) {
				got.Spec.LimitAllowedChildren.Types, changed = append(got.Spec.LimitAllowedChildren.Types, ref), true
			}
		}
		return changed
	}}
}

// mailboxType is the WorkspaceType of the mailboxes in the ESPW at espw: one default binding,
// to mailbox.edge.kcp.io, whose permission claims kcp accepts when it makes the binding.
func mailboxType(espw logicalcluster.Path) workspaceType {
	want := &tenancyv1alpha1.WorkspaceType{
		ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.MailboxWorkspaceType},
		Spec: tenancyv1alpha1.WorkspaceTypeSpec{
			DefaultAPIBindings: []tenancyv1alpha1.APIExportReference{{Path: espw.String(), Export: edgev1alpha1.MailboxAPIExportName}},
		},
	}
	return workspaceType{want: want, update: func(got *tenancyv1alpha1.WorkspaceType) bool {
		if equality.Semantic.DeepEqual(got.Spec.DefaultAPIBindings, want.Spec.DefaultAPIBindings) {
			return false
		}
		got.Spec.DefaultAPIBindings = want.Spec.DefaultAPIBindings
		return true
	}}
}

func ensureWorkspaceType(ctx context.Context, kcp kcpclientset.ClusterInterface, path logicalcluster.Path, t workspaceType, res *Result) error {
	client := kcp.Cluster(path).TenancyV1alpha1().WorkspaceTypes()
	kind := "WorkspaceType " + t.want.Name
	got, err := client.Get(ctx, t.want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// The parent, made a moment ago, may answer 404 for the kind itself (seen in the
		// scheduler benchmark).
		err := workspaces.CreateWhenServed(ctx, nil, func() error {
			_, err := client.Create(ctx, t.want, metav1.CreateOptions{})
			return err
		})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating %s in %s: %w", kind, path, err)
			}
			res.Created = append(res.Created, kind)
			return nil
		}
		// Another init made it meanwhile (ESPWs of one parent share the type): bring that one
		// in line.
		if got, err = client.Get(ctx, t.want.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading %s in %s: %w", kind, path, err)
		}
	case err != nil:
		return fmt.Errorf("reading %s in %s: %w", kind, path, err)
	}
	if !t.update(got) {
		res.Unchanged = append(res.Unchanged, kind)
		return nil
	}
	if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s in %s: %w", kind, path, err)
	}
	res.Updated = append(res.Updated, kind)
	return nil
}

func waitForIdentity(ctx context.Context, kcp kcpclientset.ClusterInterface, path logicalcluster.Path, name string) (*apisv1alpha2.APIExport, error) {
	var export *apisv1alpha2.APIExport
	err := workspaces.Poll(ctx, workspaces.DefaultTimeout, func(ctx context.Context) (bool, error) {
		e, err := kcp.Cluster(path).ApisV1alpha2().APIExports().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		export = e
		return e.Status.IdentityHash != "", nil
	}, "APIExport %s in %s to get its identity", name, path)
	return export, err
}
