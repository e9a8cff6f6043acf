package scheduler

import (
	"context"
	"errors"
	"fmt"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// reconcilePlacement writes the placement's slices and status from the engine's result; for a
// placement that is gone, it deletes the slices it owned.
func (c *Controller) reconcilePlacement(ctx context.Context, key PlacementKey) error {
	obj, exists, err := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(key.Cluster, "", key.Name))
	if err != nil {
		return err
	}
	if !exists {
		return c.deleteSlices(ctx, key, nil)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, p); err != nil {
		return nil // cannot happen with the schema's validation; nothing to retry
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	c.engineMu.Lock()
	res, known := c.engine.Result(key)
	c.engineMu.Unlock()
	if !known {
		return nil // the engine hears of it with the informer's event, which queues it again
	}

	cond := metav1.Condition{Type: edgev1alpha1.PlacementScheduled, Status: res.Status, Reason: res.Reason, Message: res.Message, ObservedGeneration: p.Generation}
	destinations := res.Destinations
	var picked *metav1.Condition
	if res.NumberOfDestinations > 0 && res.Reason != edgev1alpha1.ReasonInvalidSelector {
		current, err := c.currentDestinations(key)
		if err != nil {
			return err
		}
		pick := Pick(PickRequest{PlacementUID: p.UID, N: res.NumberOfDestinations, SpreadBy: res.SpreadBy, Candidates: res.Candidates, Current: current})
		destinations = pick.Picked
		picked = &metav1.Condition{Type: edgev1alpha1.PlacementDestinationsPicked, Status: pick.Status, Reason: pick.Reason, Message: pick.Message, ObservedGeneration: p.Generation}
		klog.FromContext(ctx).V(3).Info("picked destinations", "picked", len(pick.Picked), "kept", pick.Kept, "candidates", len(res.Candidates))
	}
	var sliceErr error
	if res.Reason != edgev1alpha1.ReasonInvalidSelector {
		// With an invalid selector the slices keep the last good result, so that a typo does
		// not take the workload off every edge cluster.
		sliceErr = c.writeSlices(ctx, key, p, destinations)
	}
	var conflict *sliceConflictError
	if errors.As(sliceErr, &conflict) {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, edgev1alpha1.ReasonSliceConflict, conflict.Error()
		sliceErr = nil // the user must act; the slice's events bring the placement back
	}

	status := p.Status.DeepCopy()
	status.ObservedGeneration = p.Generation
	status.MatchingLocationCount = int32(res.MatchingLocations)
	status.MatchingSyncTargetCount = int32(res.MatchingSyncTargets)
	switch {
	case picked != nil:
		status.MatchingSyncTargetCount = int32(len(destinations))
		meta.SetStatusCondition(&status.Conditions, *picked)
	case res.NumberOfDestinations == 0:
		meta.RemoveStatusCondition(&status.Conditions, edgev1alpha1.PlacementDestinationsPicked)
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return errors.Join(sliceErr, c.writePlacementStatus(ctx, key, p, status))
}

// currentDestinations returns the destinations that the placement's slices hold: its current
// picks.
func (c *Controller) currentDestinations(key PlacementKey) ([]edgev1alpha1.SinglePlacement, error) {
	owned, err := c.slices.GetIndexer().ByIndex(byOwner, key.String())
	if err != nil {
		return nil, err
	}
	var out []edgev1alpha1.SinglePlacement
	for _, obj := range owned {
		s := &edgev1alpha1.SinglePlacementSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, s); err != nil {
			return nil, fmt.Errorf("decoding SinglePlacementSlice %s: %w", obj.(*unstructured.Unstructured).GetName(), err)
		}
		out = append(out, s.Destinations...)
	}
	return out, nil
}

// sliceConflictError says that a slice the placement needs is held by something else.
type sliceConflictError struct{ msg string }

func (e *sliceConflictError) Error() string { return e.msg }

// writeSlices makes the placement's SinglePlacementSlices hold exactly the destinations, in
// order, and deletes the slices it no longer needs. Unchanged slices are not written.
func (c *Controller) writeSlices(ctx context.Context, key PlacementKey, p *edgev1alpha1.EdgePlacement, destinations []edgev1alpha1.SinglePlacement) error {
	logger := klog.FromContext(ctx)
	client := c.cfg.Edge.Cluster(logicalcluster.NewPath(key.Cluster)).Resource(slicesGVR)
	owner := metav1.OwnerReference{
		APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "EdgePlacement",
		Name: p.Name, UID: p.UID, Controller: ptrTo(true),
	}
	desired := DesiredSlices(p.Name, destinations, c.cfg.MaxDestinationsPerSlice)
	wanted := map[string]bool{}
	for _, d := range desired {
		wanted[d.Name] = true
		want := &edgev1alpha1.SinglePlacementSlice{
			TypeMeta:     metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "SinglePlacementSlice"},
			ObjectMeta:   metav1.ObjectMeta{Name: d.Name, OwnerReferences: []metav1.OwnerReference{owner}},
			Destinations: d.Destinations,
		}
		if len(p.Name) <= validation.LabelValueMaxLength {
			want.Labels = map[string]string{edgev1alpha1.LabelPlacement: p.Name}
		}
		obj, exists, err := c.slices.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(key.Cluster, "", d.Name))
		if err != nil {
			return err
		}
		if !exists {
			u, err := toUnstructured(want)
			if err != nil {
				return err
			}
			if _, err := client.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating SinglePlacementSlice %s: %w", d.Name, err)
			}
			logger.V(2).Info("created slice", "slice", d.Name, "destinations", len(d.Destinations))
			continue
		}
		got := &edgev1alpha1.SinglePlacementSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, got); err != nil {
			return fmt.Errorf("decoding SinglePlacementSlice %s: %w", d.Name, err)
		}
		if o, ok := sliceOwner(obj); !ok || o != key {
			return &sliceConflictError{fmt.Sprintf("the SinglePlacementSlice %s that this placement needs exists and is not controlled by it: delete or rename it", d.Name)}
		}
		if equality.Semantic.DeepEqual(got.Destinations, want.Destinations) && (len(got.Destinations) == 0) == (len(want.Destinations) == 0) &&
			equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) && got.Labels[edgev1alpha1.LabelPlacement] == want.Labels[edgev1alpha1.LabelPlacement] {
			continue
		}
		updated := got.DeepCopy()
		updated.Destinations, updated.OwnerReferences = want.Destinations, want.OwnerReferences
		if want.Labels != nil {
			if updated.Labels == nil {
				updated.Labels = map[string]string{}
			}
			updated.Labels[edgev1alpha1.LabelPlacement] = p.Name
		}
		u, err := toUnstructured(updated)
		if err != nil {
			return err
		}
		if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return fmt.Errorf("updating SinglePlacementSlice %s: %w (will retry with the newer copy)", d.Name, err)
			}
			return fmt.Errorf("updating SinglePlacementSlice %s: %w", d.Name, err)
		}
		logger.V(2).Info("updated slice", "slice", d.Name, "destinations", len(d.Destinations))
	}
	return c.deleteSlices(ctx, key, wanted)
}

// deleteSlices deletes the slices that the placement controls, except those named in keep.
func (c *Controller) deleteSlices(ctx context.Context, key PlacementKey, keep map[string]bool) error {
	owned, err := c.slices.GetIndexer().ByIndex(byOwner, key.String())
	if err != nil {
		return err
	}
	client := c.cfg.Edge.Cluster(logicalcluster.NewPath(key.Cluster)).Resource(slicesGVR)
	var errs []error
	for _, obj := range owned {
		name := obj.(*unstructured.Unstructured).GetName()
		if keep[name] {
			continue
		}
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting SinglePlacementSlice %s: %w", name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("deleted slice", "slice", name)
	}
	return errors.Join(errs...)
}

// writePlacementStatus writes the placement's status if it changed.
func (c *Controller) writePlacementStatus(ctx context.Context, key PlacementKey, p *edgev1alpha1.EdgePlacement, status *edgev1alpha1.EdgePlacementStatus) error {
	if equality.Semantic.DeepEqual(&p.Status, status) {
		return nil
	}
	updated := p.DeepCopy()
	updated.Status = *status
	return c.updateStatus(ctx, placementsGVR, key.Cluster, updated, "EdgePlacement")
}

// reconcileLocation writes a Location's status.instances and availableInstances.
func (c *Controller) reconcileLocation(ctx context.Context, key ObjectKey) error {
	obj, exists, err := c.locations.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(key.Cluster, "", key.Name))
	if err != nil || !exists {
		return err
	}
	l := &edgev1alpha1.Location{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, l); err != nil {
		return nil
	}
	c.engineMu.Lock()
	instances, available := c.engine.LocationInstances(key)
	c.engineMu.Unlock()
	if l.Status.Instances == int32(instances) && l.Status.AvailableInstances == int32(available) {
		return nil
	}
	l.Status.Instances, l.Status.AvailableInstances = int32(instances), int32(available)
	return c.updateStatus(ctx, locationsGVR, key.Cluster, l, "Location")
}

// updateStatus writes obj's status through the virtual workspace. A missing object is not an
// error. A conflict is, so that the object is looked at again: the other controllers writing
// the same status (placement translator, status summarizer) change nothing the scheduler
// watches for, so no event of theirs would bring it back.
func (c *Controller) updateStatus(ctx context.Context, gvr schema.GroupVersionResource, cluster string, obj runtime.Object, kind string) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	u.SetKind(kind)
	_, err = c.cfg.Edge.Cluster(logicalcluster.NewPath(cluster)).Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of %s %s|%s: %w", kind, cluster, u.GetName(), err)
	}
	return nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(edgev1alpha1.SchemeGroupVersion.String())
	return u, nil
}

func ptrTo[T any](v T) *T { return &v }
