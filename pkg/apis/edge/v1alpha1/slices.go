package v1alpha1

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// SliceDestinations returns the destinations of a SinglePlacementSlice read as unstructured (as
// the controllers' dynamic informers hold it); nil for nil or for an object that does not decode.
func SliceDestinations(u *unstructured.Unstructured) []SinglePlacement {
	if u == nil {
		return nil
	}
	s := &SinglePlacementSlice{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil
	}
	return s.Destinations
}
