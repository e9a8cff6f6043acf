package v1alpha1

import "slices"

// MatchesResource says whether the set names the resource: its group is the set's apiGroup ("" is
// the core group) and its name is among the set's resources, or they hold "*".
func (u *UpsyncSet) MatchesResource(group, resource string) bool {
	return group == u.APIGroup && (slices.Contains(u.Resources, "*") || slices.Contains(u.Resources, resource))
}

// MatchesObject says whether the set's namespaces and names take the object; namespace is ""
// for a cluster-scoped object. Namespaces omitted or holding "*" take every namespace and
// cluster-scoped objects; otherwise only objects of the listed namespaces. Names omitted or
// holding "*" take every name.
func (u *UpsyncSet) MatchesObject(namespace, name string) bool {
	nsOK := len(u.Namespaces) == 0 || slices.Contains(u.Namespaces, "*") || (namespace != "" && slices.Contains(u.Namespaces, namespace))
	nameOK := len(u.Names) == 0 || slices.Contains(u.Names, "*") || slices.Contains(u.Names, name)
	return nsOK && nameOK
}

// UpsyncCovers says whether one of the sets covers the object of the given group and resource,
// namespace ("" for cluster-scoped) and name.
func UpsyncCovers(sets []UpsyncSet, group, resource, namespace, name string) bool {
	for i := range sets {
		if sets[i].MatchesResource(group, resource) && sets[i].MatchesObject(namespace, name) {
			return true
		}
	}
	return false
}

// IsUpsynced says whether an object with these labels in a workload workspace was made by the
// up-sync return path (LabelUpsynced): such an object came from an edge, and is never selected
// for down-sync, so that it never goes back to mailboxes.
func IsUpsynced(labels map[string]string) bool {
	return labels[LabelUpsynced] == "true"
}
