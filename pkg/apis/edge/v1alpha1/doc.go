// Package v1alpha1 holds the edge.kcp.io/v1alpha1 API of edge-mc.
//
// Inventory workspaces hold Locations and SyncTargets (one SyncTarget per edge cluster). Workload
// workspaces hold the workload objects, EdgePlacements that say where they go, the
// SinglePlacementSlices in which the edge scheduler records each placement's destinations, and
// Customizers. Each mailbox workspace holds one SyncerConfig, telling its syncer what to sync.
//
// The types are served by kcp through the APIExport "edge.kcp.io" in the edge service provider
// workspace; the APIResourceSchemas are generated from these types (make codegen).
//
// +kubebuilder:object:generate=true
// +groupName=edge.kcp.io
package v1alpha1
