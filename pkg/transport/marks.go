package transport

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Values of a syncer's owner label (Marks.Label) on an edge object.
const (
	// OwnerCreated: the syncer created the object at the edge, and deletes it when it leaves
	// every assemblage of the mailbox.
	OwnerCreated = "created"
	// OwnerAdopted: the object existed at the edge before the syncer first applied it (a
	// Namespace made by hand, say); the syncer updates it, and when it leaves only removes the
	// syncer's marks from it.
	OwnerAdopted = "adopted"
)

// Marks are the label and annotation keys by which the syncer of one SyncTarget marks the edge
// objects it manages, and its field manager there. They carry the SyncTarget's UID, so that the
// syncers of several SyncTargets can share an edge cluster, and even an object such as a
// Namespace, without fighting over the marks. The keys are those of the syncers before
// assemblages, so that the objects they applied are recognised.
type Marks struct {
	// Label is OwnerCreated or OwnerAdopted.
	Label string
	// SourceAnnotation names what the object comes from: its Key in the assemblage (for a
	// denatured object, the key of the ConfigMap that carries it). Syncers before assemblages
	// wrote another form here (<group>/<resource>/<namespace>/<name> of a mailbox copy).
	SourceAnnotation string
	// HashAnnotation is the hash of what the syncer last applied.
	HashAnnotation string
	// AssemblageAnnotation names the assemblage whose version the syncer applied the object
	// from. Objects applied by syncers before assemblages lack it.
	AssemblageAnnotation string
	// FieldManager is the syncer's server-side apply field manager at the edge.
	FieldManager string
}

// MarksFor returns the marks of the syncer of the SyncTarget with the given UID.
func MarksFor(syncTargetUID string) Marks {
	prefix := syncTargetUID + ".syncer.edge.kcp.io/"
	return Marks{
		Label:                prefix + "owner",
		SourceAnnotation:     prefix + "source",
		HashAnnotation:       prefix + "hash",
		AssemblageAnnotation: prefix + "assemblage",
		FieldManager:         "edge-syncer-" + syncTargetUID,
	}
}

// ManagedBy reports whether the edge object live carries these marks, and whether the syncer
// created it (and so may delete it). An object whose owner label someone removed but whose
// source annotation is still the syncer's counts as managed and adopted: whether the syncer
// created it is no longer known, so it is never deleted.
func (m Marks) ManagedBy(live *unstructured.Unstructured) (managed, created bool) {
	if live == nil {
		return false, false
	}
	switch live.GetLabels()[m.Label] {
	case OwnerCreated:
		return true, true
	case OwnerAdopted:
		return true, false
	}
	return live.GetAnnotations()[m.SourceAnnotation] != "", false
}

// Origin returns the assemblage and the object key that the marks on live name, as the syncer
// wrote them when it applied live from an assemblage; ok is false for an object without them,
// such as one applied by a syncer before assemblages.
func (m Marks) Origin(live *unstructured.Unstructured) (assemblage string, key Key, ok bool) {
	if live == nil {
		return "", Key{}, false
	}
	annotations := live.GetAnnotations()
	assemblage = annotations[m.AssemblageAnnotation]
	if assemblage == "" {
		return "", Key{}, false
	}
	key, ok = ParseKey(annotations[m.SourceAnnotation])
	if !ok {
		return "", Key{}, false
	}
	return assemblage, key, true
}
