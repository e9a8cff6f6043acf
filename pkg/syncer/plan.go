package syncer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// objectRef names one object of one resource on one server.
type objectRef struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

func (r objectRef) String() string {
	gr := r.GVR.Resource
	if r.GVR.Group != "" {
		gr += "." + r.GVR.Group
	}
	if r.Namespace == "" {
		return gr + " " + r.Name
	}
	return gr + " " + r.Namespace + "/" + r.Name
}

// sameObject says whether r and o name the same object, perhaps at different versions.
func (r objectRef) sameObject(o objectRef) bool {
	return r.GVR.GroupResource() == o.GVR.GroupResource() && r.Namespace == o.Namespace && r.Name == o.Name
}

// stage is when an object is applied within a version: every CRD first, and the syncer waits
// until they are established; then the Namespaces; then the rest.
type stage int

const (
	stageCRDs stage = iota
	stageNamespaces
	stageRest
)

var stages = []stage{stageCRDs, stageNamespaces, stageRest}

var crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

func stageOf(ref objectRef) stage {
	switch ref.GVR.GroupResource() {
	case crdResource:
		return stageCRDs
	case schema.GroupResource{Resource: "namespaces"}:
		return stageNamespaces
	}
	return stageRest
}

// desired is one object of an assemblage's version as the syncer applies it at the edge.
type desired struct {
	// key is the object's key in the assemblage (for a denatured object, the key of the
	// ConfigMap that carries it).
	key transport.Key
	// ref is where it goes at the edge.
	ref objectRef
	// obj is its edge form: the syncer's marks on it, but no owner label, which the syncer sets
	// as it applies (created, or adopted for an object that was there before).
	obj *unstructured.Unstructured
	// hash is the hash of obj, also in its hash annotation.
	hash string
	// createOnly: created when missing, never updated or repaired.
	createOnly bool
	stage      stage
	// invalid says why the object cannot be applied (such as a malformed denatured object);
	// obj is nil then.
	invalid string
}

// plan is one version of an assemblage as the syncer applies it at the edge.
type plan struct {
	version string
	// objects are those the assemblage carries, in apply order (stage, then the document's
	// order).
	objects []*desired
	byKey   map[transport.Key]*desired
	// shared are the objects that the placement selects but that another assemblage carries:
	// key to that assemblage.
	shared map[transport.Key]string
	// sharedOrder are the keys of shared in the order of spec.shared.
	sharedOrder []transport.Key
}

// newPlan makes the plan of a decoded version of the assemblage asm: the edge form of each of
// its objects, except those that spec.shared says another assemblage carries.
func newPlan(asm, version string, doc *transport.Document, shared []edgev1alpha1.SharedObject, marks transport.Marks) *plan {
	p := &plan{version: version, byKey: map[transport.Key]*desired{}, shared: map[transport.Key]string{}}
	for _, sh := range shared {
		key, ok := transport.ParseKey(sh.Object)
		if !ok {
			continue
		}
		if _, dup := p.shared[key]; !dup {
			p.shared[key] = sh.Assemblage
			p.sharedOrder = append(p.sharedOrder, key)
		}
	}
	byRef := map[objectRef]transport.Key{}
	var byStage [3][]*desired
	for i := range doc.Objects {
		e := &doc.Objects[i]
		key := e.Key()
		if _, isShared := p.shared[key]; isShared {
			continue
		}
		if _, dup := p.byKey[key]; dup {
			continue
		}
		d := &desired{key: key, stage: stageRest}
		obj, ref, err := edgeForm(e, asm, marks)
		if e.Sealed != nil {
			// Never applied without its sealed content (openSealed opens what it can first).
			d.invalid = "it is sealed, and was not opened"
		} else if err != nil {
			d.invalid = err.Error()
		} else {
			unversioned := ref
			unversioned.GVR.Version = ""
			if other, taken := byRef[unversioned]; taken {
				d.invalid = fmt.Sprintf("it is written at the edge as %s, as %s is: the assemblage carries one object twice", ref, other)
			} else {
				byRef[unversioned] = key
				d.ref, d.obj, d.stage = ref, obj, stageOf(ref)
				d.hash = obj.GetAnnotations()[marks.HashAnnotation]
				d.createOnly = isCreateOnly(obj)
			}
		}
		p.byKey[key] = d
		byStage[d.stage] = append(byStage[d.stage], d)
	}
	for _, s := range byStage {
		p.objects = append(p.objects, s...)
	}
	return p
}

// openSealed opens the sealed entries of doc in place with the syncer's key pairs (each with
// the one it names: the current, or the one it replaced), and returns
// why each of those that do not open does not (they stay sealed, and are not applied).
func openSealed(doc *transport.Document, keys ...*transport.KeyPair) map[transport.Key]string {
	var unopened map[transport.Key]string
	for i := range doc.Objects {
		sealed := doc.Objects[i].Sealed
		if sealed == nil {
			continue
		}
		// The key the entry names, among the current and the previous one; else the current,
		// whose error says which key the entry wants.
		var kp *transport.KeyPair
		if len(keys) > 0 {
			kp = keys[0]
		}
		for _, k := range keys {
			if transport.KeyID(k.Public) == sealed.KeyID {
				kp = k
				break
			}
		}
		opened, err := transport.Open(doc.Objects[i], kp)
		if err != nil {
			if unopened == nil {
				unopened = map[transport.Key]string{}
			}
			unopened[doc.Objects[i].Key()] = err.Error()
			continue
		}
		doc.Objects[i] = opened
	}
	return unopened
}

// refuse marks the objects of reasons invalid, for those reasons: they are not applied, and
// what the edge has of them stays as it is.
func (p *plan) refuse(reasons map[transport.Key]string) {
	for key, why := range reasons {
		if d := p.byKey[key]; d != nil {
			d.invalid, d.obj = why, nil
		}
	}
}

// inStage returns the plan's objects of one stage, in order.
func (p *plan) inStage(s stage) []*desired {
	var out []*desired
	for _, d := range p.objects {
		if d.stage == s {
			out = append(out, d)
		}
	}
	return out
}

// mailboxOnlyLabels and mailboxOnlyAnnotations describe an object's life in a mailbox (the
// per-object copies before assemblages) and never go to the edge.
var (
	mailboxOnlyLabels      = []string{edgev1alpha1.LabelProjected, edgev1alpha1.LabelSourceCluster}
	mailboxOnlyAnnotations = []string{
		edgev1alpha1.AnnotationPlacements, edgev1alpha1.AnnotationProjectionHash,
		edgev1alpha1.AnnotationSyncError, edgev1alpha1.AnnotationCreatedAtEdge,
	}
)

// edgeForm returns what the syncer applies at the edge for the entry e of the assemblage asm,
// and where: the object without what a server set (uid, resourceVersion, status, kcp's
// annotations, ...), re-natured if it is a denatured object, with the syncer's marks naming its
// source and assemblage and the hash of its content. It carries no owner label: the caller sets
// it as it applies.
func edgeForm(e *transport.Entry, asm string, marks transport.Marks) (*unstructured.Unstructured, objectRef, error) {
	in := &unstructured.Unstructured{Object: e.Object}
	var obj *unstructured.Unstructured
	var ref objectRef
	if transport.IsDenatured(in) {
		natural, err := transport.ParseDenatured(in)
		if err != nil {
			return nil, objectRef{}, err
		}
		gv, _ := schema.ParseGroupVersion(natural.GetAPIVersion())
		resource, _ := transport.ActiveResource(gv.WithKind(natural.GetKind()).GroupKind())
		obj = transport.Sanitize(natural)
		ref = objectRef{GVR: gv.WithResource(resource), Name: obj.GetName()}
	} else {
		gv, err := schema.ParseGroupVersion(in.GetAPIVersion())
		if err != nil {
			return nil, objectRef{}, fmt.Errorf("apiVersion %q: %w", in.GetAPIVersion(), err)
		}
		if gv != e.GVR().GroupVersion() {
			return nil, objectRef{}, fmt.Errorf("its apiVersion is %s, but the assemblage files it under %s", in.GetAPIVersion(), e.GVR())
		}
		if in.GetKind() == "" {
			return nil, objectRef{}, fmt.Errorf("it has no kind")
		}
		obj = transport.Sanitize(in)
		ref = objectRef{GVR: e.GVR(), Name: obj.GetName()}
		if e.Namespaced {
			ref.Namespace = obj.GetNamespace()
		} else {
			unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
		}
	}
	labels := obj.GetLabels()
	for _, k := range mailboxOnlyLabels {
		delete(labels, k)
	}
	delete(labels, marks.Label)
	annotations := obj.GetAnnotations()
	for _, k := range mailboxOnlyAnnotations {
		delete(annotations, k)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, marks.HashAnnotation)
	annotations[marks.SourceAnnotation] = e.Key().String()
	annotations[marks.AssemblageAnnotation] = asm
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	// The hash covers the content, the source and the assemblage; not the owner label, nor
	// itself.
	annotations[marks.HashAnnotation] = transport.Hash(obj.Object)
	obj.SetAnnotations(annotations)
	return obj, ref, nil
}

// isCreateOnly reports whether the workload author marked the object create-only.
func isCreateOnly(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[edgev1alpha1.AnnotationCreateOnly] == "true"
}

// withLabel returns a copy of obj with the label key set to value.
func withLabel(obj *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	out.SetLabels(labels)
	return out
}
