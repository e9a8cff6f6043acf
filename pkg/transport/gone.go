package transport

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Gone says whether err is the server's answer that the object name of the resource gr does not
// exist. Another 404 on the way to the object is not that answer: for some seconds after it
// restarts, kcp answers 404 naming the workspace ("workspaces.tenancy.kcp.io ... not found")
// until it serves that logical cluster again, which says nothing about the objects in it. A
// component that deletes, forgets or stops retrying because an object is gone asks Gone, not
// apierrors.IsNotFound: a syncer that took that 404 for its assemblage would delete the
// workload at its edge, and a status write dropped on it is never retried.
func Gone(err error, gr schema.GroupResource, name string) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name && d.Kind == gr.Resource && d.Group == gr.Group
}
