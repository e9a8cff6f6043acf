package syncer

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// departure is an object at the edge that a new version of an assemblage no longer has.
type departure struct {
	key transport.Key
	ref objectRef
	// replaced: the key is still in the version, but names another object at the edge now.
	replaced bool
}

// whatLeft returns the objects at the edge that the assemblage put there (owned) and that its
// version p no longer has: their key is neither among p's objects nor among those p shares
// (which another assemblage carries), or they are orphans, the former objects of a key that
// now names another.
func whatLeft(owned map[transport.Key]objectRef, orphans []orphan, p *plan) []departure {
	var out []departure
	for key, ref := range owned {
		if _, ok := p.byKey[key]; ok {
			continue
		}
		if _, ok := p.shared[key]; ok {
			continue
		}
		out = append(out, departure{key: key, ref: ref})
	}
	for _, o := range orphans {
		out = append(out, departure{key: o.key, ref: o.ref, replaced: true})
	}
	return out
}

// verdict is what becomes of an edge object whose assemblage no longer has it.
type verdict int

const (
	// verdictKeep: the object stays as it is.
	verdictKeep verdict = iota
	// verdictDelete: the syncer created it from this assemblage, and deletes it.
	verdictDelete
	// verdictRelease: the syncer adopted it: it stays, without the syncer's marks.
	verdictRelease
)

// deletionVerdict decides what becomes of the edge object live, which the object with the given
// key of the assemblage asm was applied as, now that the assemblage no longer has it. Only an
// object whose marks still name that assemblage and key is touched: deleted if this syncer
// created it, released if it adopted it. why says why it is kept.
func deletionVerdict(live *unstructured.Unstructured, m transport.Marks, asm string, key transport.Key) (v verdict, why string) {
	if live == nil {
		return verdictKeep, "it is not at the edge"
	}
	from, fromKey, ok := m.Origin(live)
	switch {
	case !ok:
		return verdictKeep, "its marks do not say it was applied from an assemblage"
	case from != asm || fromKey != key:
		return verdictKeep, fmt.Sprintf("it is applied from %s of assemblage %s now", fromKey, from)
	}
	managed, created := m.ManagedBy(live)
	switch {
	case !managed:
		return verdictKeep, "it does not carry this syncer's marks"
	case created:
		return verdictDelete, ""
	}
	return verdictRelease, ""
}

// prune deletes at the edge what left the assemblage with version p, once the center confirms
// that p is the assemblage's current version: an object that no other assemblage of the mailbox
// carries, and that this syncer created; one it adopted only loses its marks.
func (s *Syncer) prune(ctx context.Context, st *assemblageState, p *plan) error {
	s.mu.Lock()
	leaving := whatLeft(st.owned, st.orphans, p)
	s.mu.Unlock()
	if len(leaving) == 0 {
		return nil
	}
	current, err := s.mailboxEdge.getAssemblage(ctx, st.name)
	if err != nil {
		return fmt.Errorf("confirming version %s of assemblage %s with the center, before deleting what left it: %w", p.version, st.name, err)
	}
	if current.Spec.Version != p.version {
		return fmt.Errorf("the center has version %s of assemblage %s, not %s; the cache is behind", current.Spec.Version, st.name, p.version)
	}
	var errs []error
	for _, l := range leaving {
		if l.replaced || !s.carriedElsewhere(l.key, st.name) {
			if err := s.deleteIfCreated(ctx, st.name, l.key, l.ref); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		s.mu.Lock()
		if l.replaced {
			for i, o := range st.orphans {
				if o.key == l.key && o.ref == l.ref {
					st.orphans = append(st.orphans[:i], st.orphans[i+1:]...)
					break
				}
			}
		} else if st.owned[l.key] == l.ref {
			delete(st.owned, l.key)
			delete(st.appliedHash, l.key)
			delete(st.createdAt, l.key)
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.stopUnneededEdgeWatchesLocked()
	s.mu.Unlock()
	return utilerrors.NewAggregate(errs)
}

// deleteIfCreated deletes the edge object ref, which the object key of the assemblage asm was
// applied as, if this syncer created it; an adopted object only loses the syncer's marks. An
// object whose marks name another assemblage or key now is left alone.
func (s *Syncer) deleteIfCreated(ctx context.Context, asm string, key transport.Key, ref objectRef) error {
	logger := klog.FromContext(ctx).WithValues("object", ref.String(), "key", key.String())
	client := s.edge.Resource(ref.GVR).Namespace(ref.Namespace)
	live, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading %s at the edge: %w", ref, err)
	}
	v, why := deletionVerdict(live, s.marks, asm, key)
	switch v {
	case verdictKeep:
		logger.V(1).Info("left at the edge", "why", why)
		return nil
	case verdictRelease:
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels": map[string]any{s.marks.Label: nil},
			"annotations": map[string]any{
				s.marks.SourceAnnotation: nil, s.marks.HashAnnotation: nil, s.marks.AssemblageAnnotation: nil,
			},
		}})
		if _, err := client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing %s at the edge: %w", ref, err)
		}
		logger.Info("released an object that was at the edge before the syncer applied it: it stays, without the syncer's marks")
		return nil
	}
	uid := live.GetUID()
	policy := metav1.DeletePropagationBackground
	err = client.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s at the edge: %w", ref, err)
	}
	metricDeletes.Inc()
	logger.Info("deleted: it left its assemblage", "assemblage", asm)
	return nil
}
