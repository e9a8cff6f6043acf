// Package workspaces reaches kcp workspaces by path and makes sure they exist with the
// APIBindings they need. kubectl-edge, the controllers and the test harness all use it.
//
// A kcp kubeconfig points at one workspace (https://host:port/clusters/root); Split separates
// the server's base URL from that workspace's path, and the cluster-aware clients reach any
// other workspace from the base.
package workspaces

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// DefaultTimeout bounds each wait for a workspace or binding to become ready.
const DefaultTimeout = 2 * time.Minute

// pollInterval is how often a wait looks again. Workspaces get ready in about a second.
const pollInterval = 250 * time.Millisecond

// Split returns a copy of cfg whose Host is the server's base URL, without any /clusters/<path>
// suffix, and the workspace path that the suffix named (empty if there was none).
func Split(cfg *rest.Config) (*rest.Config, logicalcluster.Path) {
	base := rest.CopyConfig(cfg)
	host := strings.TrimRight(base.Host, "/")
	i := strings.Index(host, "/clusters/")
	if i < 0 {
		return base, logicalcluster.Path{}
	}
	base.Host = host[:i]
	return base, logicalcluster.NewPath(host[i+len("/clusters/"):])
}

// ConfigFor returns a copy of base that reaches the workspace at path.
func ConfigFor(base *rest.Config, path logicalcluster.Path) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Host = strings.TrimRight(cfg.Host, "/") + path.RequestPath()
	return cfg
}

// ParsePath checks a workspace path given by a user, such as root:edge:imw.
func ParsePath(s string) (logicalcluster.Path, error) {
	p := logicalcluster.NewPath(s)
	if s == "" || !p.IsValid() {
		return logicalcluster.Path{}, fmt.Errorf("%q is not a workspace path: use names of lower-case letters, digits and '-', joined by ':' (for example root:edge:imw)", s)
	}
	if _, hasParent := p.Parent(); !hasParent {
		return logicalcluster.Path{}, fmt.Errorf("%q has no parent workspace: give a full path such as root:%s", s, s)
	}
	return p, nil
}

// Ensurer creates workspaces and bindings if they are missing, and waits for them to be ready.
// It says what it does on Out.
type Ensurer struct {
	KCP     kcpclientset.ClusterInterface
	Out     io.Writer
	Timeout time.Duration
}

func (e *Ensurer) say(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

func (e *Ensurer) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// Workspace makes sure the workspace at path exists and is ready, creating it, and any missing
// ancestor below root, with the parent's default type. It returns the ready Workspace.
func (e *Ensurer) Workspace(ctx context.Context, path logicalcluster.Path) (*tenancyv1alpha1.Workspace, error) {
	return e.WorkspaceOfType(ctx, path, nil)
}

// WorkspaceOfType is Workspace for a workspace of the given type (nil: the parent's default),
// which it creates with that type. An existing workspace of another type is an error, since kcp
// cannot change a workspace's type.
func (e *Ensurer) WorkspaceOfType(ctx context.Context, path logicalcluster.Path, wsType *tenancyv1alpha1.WorkspaceTypeReference) (*tenancyv1alpha1.Workspace, error) {
	parent, ok := path.Parent()
	if !ok {
		return nil, fmt.Errorf("workspace %s has no parent", path)
	}
	name := path.Base()
	ws, err := e.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), isParentMissing(err):
		if _, grand := parent.Parent(); grand {
			if _, err := e.Workspace(ctx, parent); err != nil {
				return nil, err
			}
		}
		e.say("creating workspace %s", path)
		want := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if wsType != nil {
			want.Spec.Type = wsType.DeepCopy()
		}
		// A WorkspaceType created a moment ago may not have reached kcp's admission yet, which
		// then refuses the workspace as of a type it cannot find. Wait for that a little too.
		err = CreateWhenServed(ctx, isTypeNotYetKnown, func() (err error) {
			ws, err = e.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, want, metav1.CreateOptions{})
			return err
		})
		if apierrors.IsAlreadyExists(err) {
			ws, err = e.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("creating workspace %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("reading workspace %s: %w", path, err)
	}
	if wsType != nil && (ws.Spec.Type == nil || ws.Spec.Type.Name != wsType.Name || ws.Spec.Type.Path != wsType.Path) {
		return nil, fmt.Errorf("workspace %s exists with type %s, but it must be of type %s:%s, and kcp cannot change a workspace's type: delete the workspace (kubectl delete workspace %s in %s) and try again",
			path, describeType(ws.Spec.Type), wsType.Path, wsType.Name, name, parent)
	}
	if ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady {
		return ws, nil
	}
	e.say("waiting for workspace %s to be ready", path)
	err = wait.PollUntilContextTimeout(ctx, pollInterval, e.timeout(), true, func(ctx context.Context) (bool, error) {
		ws, err = e.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace %s did not become ready (phase %q%s): %w", path, ws.Status.Phase, conditionsSummary(ws.Status.Conditions), err)
	}
	return ws, nil
}

func describeType(t *tenancyv1alpha1.WorkspaceTypeReference) string {
	if t == nil {
		return "(none)"
	}
	if t.Path == "" {
		return string(t.Name)
	}
	return t.Path + ":" + string(t.Name)
}

// isParentMissing tells whether err says that the workspace the request went to does not exist,
// which kcp reports as 403 or 404 for a path it cannot resolve.
func isParentMissing(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "workspace")
}

// Binding makes sure the workspace at path has an APIBinding of the given name to the APIExport
// exportName in the workspace exportPath, and waits until it is bound.
func (e *Ensurer) Binding(ctx context.Context, path logicalcluster.Path, name string, exportPath logicalcluster.Path, exportName string) (*apisv1alpha2.APIBinding, error) {
	return e.BindingAccepting(ctx, path, name, exportPath, exportName, nil)
}

// BindingAccepting is Binding, with the given permission claims of the export accepted (an
// existing binding's accepted claims are brought in line).
func (e *Ensurer) BindingAccepting(ctx context.Context, path logicalcluster.Path, name string, exportPath logicalcluster.Path, exportName string, claims []apisv1alpha2.AcceptablePermissionClaim) (*apisv1alpha2.APIBinding, error) {
	bound, err := e.Bindings(ctx, path, BindingRequest{Name: name, ExportPath: exportPath, ExportName: exportName, Claims: claims})
	if err != nil {
		return nil, err
	}
	return bound[0], nil
}

// BindingRequest is one APIBinding that Bindings makes sure of: its name, the APIExport it binds
// (ExportName in the workspace ExportPath) and the permission claims it accepts (nil leaves an
// existing binding's claims as they are).
type BindingRequest struct {
	Name       string
	ExportPath logicalcluster.Path
	ExportName string
	Claims     []apisv1alpha2.AcceptablePermissionClaim
}

// Bindings makes sure the workspace at path has each of the APIBindings asked for, in their
// order, and only then waits until all of them are bound, so that kcp binds them side by side:
// binding an export whose schemas no workspace of the shard binds yet makes kcp create their CRDs,
// which it declares established no sooner than 5 s later (kcp runs the CRD machinery as one of
// several servers), and two such exports bound one after the other take twice that. Then it
// waits until kcp has applied the claims each accepts (waitClaimsApplied). It returns the bound
// APIBindings, in the order asked.
func (e *Ensurer) Bindings(ctx context.Context, path logicalcluster.Path, reqs ...BindingRequest) ([]*apisv1alpha2.APIBinding, error) {
	bindings := e.KCP.Cluster(path).ApisV1alpha2().APIBindings()
	got := make([]*apisv1alpha2.APIBinding, len(reqs))
	for i, r := range reqs {
		b, err := e.ensureBinding(ctx, path, r)
		if err != nil {
			return nil, err
		}
		got[i] = b
	}
	for i, r := range reqs {
		b := got[i]
		if b.Status.Phase == apisv1alpha2.APIBindingPhaseBound {
			continue
		}
		e.say("waiting for APIBinding %s in %s to be bound", r.Name, path)
		err := wait.PollUntilContextTimeout(ctx, pollInterval, e.timeout(), true, func(ctx context.Context) (bool, error) {
			var err error
			if b, err = bindings.Get(ctx, r.Name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			return b.Status.Phase == apisv1alpha2.APIBindingPhaseBound, nil
		})
		if err != nil {
			return nil, fmt.Errorf("APIBinding %s in %s was not bound (phase %q%s): %w", r.Name, path, b.Status.Phase, conditionsSummary(b.Status.Conditions), err)
		}
		got[i] = b
	}
	for i, r := range reqs {
		b, err := e.waitClaimsApplied(ctx, path, r, got[i])
		if err != nil {
			return nil, err
		}
		got[i] = b
	}
	return got, nil
}

// claimsNudgeInterval is how often waitClaimsApplied touches a binding whose accepted claims kcp
// has not applied yet.
const claimsNudgeInterval = 5 * time.Second

// ClaimsNudgeAnnotation is the annotation that waitClaimsApplied sets on an APIBinding, to the
// time, to have kcp look at its accepted permission claims again.
const ClaimsNudgeAnnotation = "edge.kcp.io/claims-checked-at"

// waitClaimsApplied waits until kcp has applied every claim that the binding accepts: until then
// the export's owner cannot see the claimed objects (edge-mc's controllers could not read the
// workspace's Deployments). kcp applies claims with a controller that, while the informers of a
// claimed kind that a new export brought are not running yet, retries with a delay that doubles
// each time, and looks again at once only when the binding changes: seen taking 87 s after the
// first binding of a new ESPW, and more than 90 s once in the e2e tests. So while it waits it sets
// ClaimsNudgeAnnotation every claimsNudgeInterval, which changes nothing but has kcp look again.
func (e *Ensurer) waitClaimsApplied(ctx context.Context, path logicalcluster.Path, r BindingRequest, b *apisv1alpha2.APIBinding) (*apisv1alpha2.APIBinding, error) {
	if claimsApplied(b) {
		return b, nil
	}
	e.say("waiting for kcp to apply the permission claims accepted in APIBinding %s in %s", r.Name, path)
	bindings := e.KCP.Cluster(path).ApisV1alpha2().APIBindings()
	lastNudge := time.Now()
	err := Poll(ctx, e.timeout(), func(ctx context.Context) (bool, error) {
		var err error
		if b, err = bindings.Get(ctx, r.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if claimsApplied(b) {
			return true, nil
		}
		if time.Since(lastNudge) >= claimsNudgeInterval {
			lastNudge = time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ClaimsNudgeAnnotation, lastNudge.UTC().Format(time.RFC3339))
			if _, err := bindings.Patch(ctx, r.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return false, fmt.Errorf("asking kcp to look at the claims of APIBinding %s in %s again: %w", r.Name, path, err)
			}
		}
		return false, nil
	}, "kcp to apply the permission claims accepted in APIBinding %s in %s", r.Name, path)
	if err != nil {
		return nil, fmt.Errorf("%w (conditions: %s)", err, strings.TrimPrefix(conditionsSummary(b.Status.Conditions), "; "))
	}
	return b, nil
}

// claimsApplied says whether kcp has applied every claim that the binding accepts.
func claimsApplied(b *apisv1alpha2.APIBinding) bool {
	applied := map[string]bool{}
	for _, c := range b.Status.AppliedPermissionClaims {
		applied[claimKey(c.PermissionClaim)] = true
	}
	for _, c := range b.Spec.PermissionClaims {
		if c.State == apisv1alpha2.ClaimAccepted && !applied[claimKey(c.PermissionClaim)] {
			return false
		}
	}
	return true
}

// claimKey identifies a claim by what it claims, not its verbs, which kcp may list in another
// order.
func claimKey(c apisv1alpha2.PermissionClaim) string {
	return c.Group + "/" + c.Resource + "/" + c.IdentityHash
}

// ensureBinding creates the APIBinding r in the workspace at path, or checks the one there and
// brings its accepted claims in line, without waiting for it to be bound.
func (e *Ensurer) ensureBinding(ctx context.Context, path logicalcluster.Path, r BindingRequest) (*apisv1alpha2.APIBinding, error) {
	want := apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: r.ExportPath.String(), Name: r.ExportName}}
	bindings := e.KCP.Cluster(path).ApisV1alpha2().APIBindings()
	b, err := bindings.Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		e.say("binding %s in %s to APIExport %s:%s", r.Name, path, r.ExportPath, r.ExportName)
		b, err = bindings.Create(ctx, &apisv1alpha2.APIBinding{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name},
			Spec:       apisv1alpha2.APIBindingSpec{Reference: want, PermissionClaims: r.Claims},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating APIBinding %s in %s: %w", r.Name, path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading APIBinding %s in %s: %w", r.Name, path, err)
	default:
		got := b.Spec.Reference.Export
		if got == nil || got.Name != r.ExportName || (got.Path != r.ExportPath.String() && got.Path != "") {
			return nil, fmt.Errorf("workspace %s already has an APIBinding %q that binds %s, not %s:%s; delete it or use another workspace", path, r.Name, describeReference(b.Spec.Reference), r.ExportPath, r.ExportName)
		}
		if r.Claims != nil && !equality.Semantic.DeepEqual(b.Spec.PermissionClaims, r.Claims) {
			e.say("accepting the permission claims of APIExport %s:%s in %s", r.ExportPath, r.ExportName, path)
			b.Spec.PermissionClaims = r.Claims
			if b, err = bindings.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
				return nil, fmt.Errorf("accepting the permission claims in APIBinding %s in %s: %w", r.Name, path, err)
			}
		}
	}
	return b, nil
}

func describeReference(r apisv1alpha2.BindingReference) string {
	if r.Export == nil {
		return "nothing"
	}
	return r.Export.Path + ":" + r.Export.Name
}

// Poll calls check every pollInterval until it returns true, fails, or timeout passes. The error
// on timeout says what was awaited: "timed out after 2m0s waiting for <what>".
func Poll(ctx context.Context, timeout time.Duration, check wait.ConditionWithContextFunc, what string, args ...any) error {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, check)
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("timed out after %s waiting for %s", timeout, fmt.Sprintf(what, args...))
	}
	return err
}

// conditionsSummary lists the conditions that are not True, for error messages.
func conditionsSummary(conds conditionsv1alpha1.Conditions) string {
	var parts []string
	for _, c := range conds {
		if c.Status == "True" {
			continue
		}
		s := string(c.Type) + "=" + string(c.Status)
		if c.Reason != "" {
			s += " " + c.Reason
		}
		if c.Message != "" {
			s += ": " + c.Message
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// CreateWhenServed calls create until it is not refused with 404, nor with an error that alsoWait
// (nil: none) says to wait for, for up to 30 s, and returns create's last error. A workspace that
// turned Ready a moment ago may not be served at its path yet, and answers 404 for the kind being
// created (seen in CI: "the server could not find the requested resource (post
// workspaces.tenancy.kcp.io)" a second after the workspace was Ready; and for WorkspaceTypes).
func CreateWhenServed(ctx context.Context, alsoWait func(error) bool, create func() error) error {
	err := create()
	for deadline := time.Now().Add(30 * time.Second); (apierrors.IsNotFound(err) || (alsoWait != nil && alsoWait(err))) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		err = create()
	}
	return err
}

// isTypeNotYetKnown says whether kcp refused a workspace because its WorkspaceType is not (yet)
// known to admission.
func isTypeNotYetKnown(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "workspacetypes.tenancy.kcp.io") && strings.Contains(err.Error(), "not found")
}

// WaitUntilTypeAdmitted waits until kcp's admission accepts a workspace of the type t in the
// workspace parent, which it checks with a dry-run create (nothing is stored). A WorkspaceType
// created a moment ago reaches kcp's admission a little later (seen in CI: a workspace of a type
// created 0.1 s before was refused with "workspacetypes.tenancy.kcp.io ... not found"), and
// whoever makes such workspaces next should not have to know that.
func WaitUntilTypeAdmitted(ctx context.Context, kcp kcpclientset.ClusterInterface, parent logicalcluster.Path, t tenancyv1alpha1.WorkspaceTypeReference) error {
	probe := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-mc-type-probe"},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: t.DeepCopy()},
	}
	var last error
	err := Poll(ctx, DefaultTimeout, func(ctx context.Context) (bool, error) {
		_, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return true, nil
		case isTypeNotYetKnown(err):
			last = err
			return false, nil
		default:
			return false, fmt.Errorf("kcp refuses a workspace of type %s in %s: %w", describeType(&t), parent, err)
		}
	}, "kcp to admit workspaces of type %s in %s", describeType(&t), parent)
	if err != nil && last != nil {
		return fmt.Errorf("%w (kcp's last answer: %v)", err, last)
	}
	return err
}
