// Package v1alpha1 holds the edge.kcp.io/v1alpha1 API of edge-mc.
//
// Inventory workspaces hold Locations and SyncTargets (one SyncTarget per edge cluster). Workload
// workspaces hold the workload objects, EdgePlacements that say where they go, the
// SinglePlacementSlices in which the edge scheduler records each placement's destinations, and
// Customizers. Each mailbox workspace holds one Assemblage (with its AssemblageParts, when it is
// large) per EdgePlacement that has the mailbox's SyncTarget as a destination, and one
// SyncerConfig, telling its syncer what else to do (up-sync, heartbeat).
//
// The types are served by kcp through APIExports in the edge service provider workspace:
// "mailbox.edge.kcp.io" serves SyncerConfig, Assemblage and AssemblagePart, "edge.kcp.io" the
// others; the APIResourceSchemas are generated from these types (make codegen).
//
// +kubebuilder:object:generate=true
// +groupName=edge.kcp.io
package v1alpha1
