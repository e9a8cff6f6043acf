package v1alpha1

// Condition types. Reasons are CamelCase constants below, by condition.
const (
	// SyncTargetMailboxReady: the SyncTarget's mailbox workspace exists, is ready and holds what
	// its syncer needs.
	SyncTargetMailboxReady = "MailboxReady"
	// SyncTargetSyncerReady: the syncer has renewed its heartbeat within the grace period.
	// Unknown once it has been silent longer.
	SyncTargetSyncerReady = "SyncerReady"

	// PlacementScheduled: the scheduler resolved the placement's destinations.
	PlacementScheduled = "Scheduled"
	// PlacementDestinationsPicked: with spec.numberOfDestinations, whether the scheduler picked
	// that many destinations; the message gives the counts (and per value of spec.spreadBy) or
	// says why fewer. Set only on placements with spec.numberOfDestinations.
	PlacementDestinationsPicked = "DestinationsPicked"
	// PlacementProjected: the selected objects are in every destination's mailbox.
	PlacementProjected = "Projected"
	// PlacementReady: the objects are ready at every destination (kstatus).
	PlacementReady = "Ready"
	// PlacementConflict: an object collides with one from another workload workspace.
	PlacementConflict = "Conflict"
	// PlacementUpsyncConflict: two destinations up-sync the same object identity into the
	// placement's workspace, or the workspace has its own object of that identity.
	PlacementUpsyncConflict = "UpsyncConflict"
	// PlacementSingletonStatus: with spec.wantSingletonReportedState, whether the objects' status
	// is being copied back from their one destination (False while there is not exactly one).
	PlacementSingletonStatus = "SingletonStatus"
	// PlacementUpsynced: the objects that spec.upsync covers come back into the placement's
	// workspace. Set only on placements with spec.upsync.
	PlacementUpsynced = "Upsynced"
	// PlacementTooLarge is not a condition type but the reason of a problem that the Projected
	// condition quotes: an object the placement selects is too large to travel even alone in an
	// assemblage; it is left out, everything else is delivered.
	PlacementTooLarge = "ObjectTooLarge"
	// PlacementSecretsNotSealed is not a condition type but the reason of a problem that the
	// Projected condition quotes: a destination's syncer has published no key, so the
	// placement's Secrets and objects annotated edge.kcp.io/sealed: "true" are not delivered
	// there (never in the clear); what the destination has of them stays.
	PlacementSecretsNotSealed = "SecretsNotSealed"

	// PlacementProgressing: a rollout is under way: some destinations wait for their newest version
	// or have it in flight.
	PlacementProgressing = "Progressing"
	// PlacementRolloutStalled: the rollout stopped: more destinations failed or are stale than
	// spec.rollout.maxFailures allows. The message names the first of them.
	PlacementRolloutStalled = "RolloutStalled"
	// PlacementRolloutComplete: every destination is done with its newest version.
	PlacementRolloutComplete = "RolloutComplete"
	// PlacementDependenciesReady: the placements of spec.dependsOn are ready at every destination,
	// or which are not and where.
	PlacementDependenciesReady = "DependenciesReady"

	// AssemblageApplied: status.appliedVersion is spec.version.
	AssemblageApplied = "Applied"
	// AssemblageReady: every object of the assemblage is ready at the edge (kstatus Current).
	AssemblageReady = "Ready"
	// AssemblageRefused: the syncer cannot read spec (an unknown format, a part missing, a digest
	// or version that does not match); the edge keeps the last good version.
	AssemblageRefused = "Refused"
	// SyncTargetSyncerCompatible: the syncer reads the assemblage format the center writes.
	SyncTargetSyncerCompatible = "SyncerCompatible"
)

// Condition reasons.
const (
	ReasonMailboxCreating     = "MailboxCreating"
	ReasonMailboxReady        = "MailboxReady"
	ReasonInvalidName         = "InvalidName"
	ReasonMailboxError        = "MailboxError"
	ReasonHeartbeatCurrent    = "HeartbeatCurrent"
	ReasonHeartbeatMissing    = "HeartbeatMissing"
	ReasonHeartbeatStale      = "HeartbeatStale"
	ReasonScheduled           = "Scheduled"
	ReasonNoLocationMatches   = "NoLocationMatches"
	ReasonNoSyncTargetMatches = "NoSyncTargetMatches"
	ReasonInvalidSelector     = "InvalidSelector"
	ReasonSliceConflict       = "SliceConflict"
	ReasonPicked              = "Picked"
	ReasonTooFewSyncTargets   = "TooFewSyncTargets"
	// ReasonSpreadLabelMissing: no eligible SyncTarget, nor its Location, has the label that
	// spec.spreadBy names (a typo, most likely): the picks are not spread.
	ReasonSpreadLabelMissing    = "SpreadLabelMissing"
	ReasonConflictingProjection = "ConflictingProjection"

	// Reasons of the Ready condition of an EdgePlacement, written by the status summarizer.
	ReasonAllReady       = "AllReady"
	ReasonNoDestinations = "NoDestinations"
	ReasonNotReady       = "NotReady"
	ReasonFailing        = "Failing"

	// Reasons of the SingletonStatus condition of an EdgePlacement.
	ReasonSingletonReported = "StatusReported"
	ReasonNotSingleton      = "NotSingleton"
	ReasonConflictingUpsync = "ConflictingUpsync"

	// Reasons of the rollout conditions of an EdgePlacement, written by the placement translator.
	ReasonRollingOut          = "RollingOut"
	ReasonRolloutPaused       = "Paused"
	ReasonWaitingAtGate       = "WaitingAtGate"
	ReasonTooManyFailures     = "TooManyFailures"
	ReasonRolloutDone         = "Done"
	ReasonNoFailures          = "NoFailures"
	ReasonDependenciesReady   = "DependenciesReady"
	ReasonDependencyNotReady  = "DependencyNotReady"
	ReasonDependencyMissing   = "DependencyMissing"
	ReasonDependencyNotPlaced = "DependencyNotPlaced"
	ReasonDependencyCycle     = "DependencyCycle"

	// Reasons of an Assemblage's conditions, written by the syncer.
	ReasonVersionApplied   = "VersionApplied"
	ReasonApplying         = "Applying"
	ReasonObjectsFailed    = "ObjectsFailed"
	ReasonObjectsNotReady  = "ObjectsNotReady"
	ReasonAllObjectsReady  = "AllObjectsReady"
	ReasonUnknownFormat    = "UnknownFormat"
	ReasonCorrupt          = "Corrupt"
	ReasonPartsMissing     = "PartsMissing"
	ReasonReadable         = "Readable"
	ReasonSyncerOutdated   = "SyncerOutdated"
	ReasonFormatsSupported = "FormatsSupported"
	// ReasonSyncerNotReported: SyncerCompatible Unknown, no syncer has written its SyncerConfig's
	// status yet.
	ReasonSyncerNotReported = "SyncerNotReported"
)

// Well-known labels and annotations.
const (
	// AnnotationCustomizer on a workload object names the Customizer to apply to it.
	AnnotationCustomizer = "edge.kcp.io/customizer"
	// AnnotationExpandParameters "true" on a workload object turns on %(key) expansion.
	AnnotationExpandParameters = "edge.kcp.io/expand-parameters"
	// AnnotationExecutingCount on a workload object is the number of edge clusters running it.
	AnnotationExecutingCount = "edge.kcp.io/executing-count"
	// LabelPlacement on a SinglePlacementSlice names its EdgePlacement.
	LabelPlacement = "edge.kcp.io/placement"
	// LabelSyncTarget on a SyncTarget is its own name, so that a Location's instanceSelector
	// can select exactly that SyncTarget (kubectl edge ensure location sets both).
	LabelSyncTarget = "edge.kcp.io/synctarget"

	// LabelProjected "true" marks a per-object copy in a mailbox, as the placement translator
	// wrote them before assemblages. The translator deletes only these, once the mailbox's syncer
	// reads assemblages; the syncer never reads them and strips the label from what it applies.
	LabelProjected = "edge.kcp.io/projected"
	// LabelUpsynced "true" marks an object in a mailbox that the syncer up-synced from its edge
	// cluster; the syncer deletes only these, and the placement translator carries them back.
	LabelUpsynced = "edge.kcp.io/upsynced"
	// AnnotationCreateOnly "true" on a workload object: the syncer creates it at the edge when it
	// is missing and never updates or repairs it afterwards.
	AnnotationCreateOnly = "edge.kcp.io/create-only"
	// AnnotationSyncError on a mailbox copy (before assemblages) was why the syncer could not
	// apply it at the edge; the syncer strips it from what it applies.
	AnnotationSyncError = "edge.kcp.io/sync-error"
	// AnnotationCreatedAtEdge on a mailbox copy (before assemblages) of a create-only object was
	// when the syncer created it at the edge; the syncer strips it from what it applies.
	AnnotationCreatedAtEdge = "edge.kcp.io/created-at-edge"
	// AnnotationUpsyncedFrom on an up-synced object, in a mailbox or in a workload workspace,
	// names the SyncTarget it came from.
	AnnotationUpsyncedFrom = "edge.kcp.io/upsynced-from"

	// LabelSourceCluster on a mailbox copy (before assemblages) is the logical cluster of the
	// workload workspace its original is in; the syncer strips it from what it applies.
	LabelSourceCluster = "edge.kcp.io/source-cluster"
	// AnnotationPlacements on a mailbox copy (before assemblages) lists, comma-separated, the
	// EdgePlacements of the source cluster that select its original.
	AnnotationPlacements = "edge.kcp.io/placements"
	// AnnotationProjectionHash on a mailbox copy (before assemblages) is the hash of what the
	// placement translator last wrote into it.
	AnnotationProjectionHash = "edge.kcp.io/projection-hash"
	// AnnotationSingletonStatusFrom on a workload object names the destination whose status the
	// status summarizer copied onto it (wantSingletonReportedState).
	AnnotationSingletonStatusFrom = "edge.kcp.io/singleton-status-from"
	// AnnotationUpsyncedFromCluster on an up-synced object in a workload workspace is the logical
	// cluster of the inventory workspace of the SyncTarget it came from.
	AnnotationUpsyncedFromCluster = "edge.kcp.io/upsynced-from-cluster"
	// AnnotationUpsyncHash on an up-synced object is the hash of what its writer (the syncer in
	// a mailbox, the up-sync return path in a workload workspace) last wrote.
	AnnotationUpsyncHash = "edge.kcp.io/upsync-hash"
	// LabelReturned "true" marks an up-synced object that the up-sync return path brought back
	// from a mailbox into a workload workspace (it also bears LabelUpsynced); the return path
	// updates and deletes only these there, and the placement translator never selects them for
	// down-sync.
	LabelReturned = "edge.kcp.io/returned"
	// LabelUpsyncNamespace "true" marks a namespace of a workload workspace that the up-sync
	// return path created to hold up-synced objects.
	LabelUpsyncNamespace = "edge.kcp.io/upsync-namespace"
)

// Names of the APIExports in the edge service provider workspace.
const (
	// EdgeAPIExportName serves the edge.kcp.io API.
	EdgeAPIExportName = GroupName
	// WorkloadsAPIExportName serves the common Kubernetes workload kinds (Deployments, Jobs,
	// Services, ...) so that workload and mailbox workspaces can hold them.
	WorkloadsAPIExportName = "workloads.edge.kcp.io"
	// MailboxAPIExportName serves what a mailbox holds: the SyncerConfig, the Assemblages and
	// their AssemblageParts, and a permission claim on the syncer's heartbeat Lease. Mailboxes
	// bind it, and nothing else, by their WorkspaceType.
	MailboxAPIExportName = "mailbox.edge.kcp.io"
	// ServiceProviderWorkspaceType is the WorkspaceType of the ESPW, created by 'kubectl edge init'
	// in the ESPW's parent: like kcp's universal type, but it may also hold mailbox workspaces.
	ServiceProviderWorkspaceType = "edge-service-provider"
	// MailboxWorkspaceType is the WorkspaceType of mailbox workspaces, in the ESPW: a lean type
	// whose only default APIBinding is to MailboxAPIExportName.
	MailboxWorkspaceType = "mailbox"
	// DefaultESPW is the default path of the edge service provider workspace.
	DefaultESPW = "root:espw"
)

// ReasonMailboxUnreachable: SyncerReady is Unknown because the kcp shard that holds the mailbox
// does not answer edge-controller-manager, past the grace period since the last heartbeat it
// saw; the message names the shard. The syncer counts as silent, as with ReasonHeartbeatStale.
const ReasonMailboxUnreachable = "MailboxUnreachable"

// SyncerSilent says whether a SyncTarget's SyncerReady reason means that its syncer counts as
// silent past the grace period: its destinations are stale.
func SyncerSilent(reason string) bool {
	return reason == ReasonHeartbeatStale || reason == ReasonMailboxUnreachable
}

// LeaderVersionLabel is the label on edge-controller-manager's leader election Lease (in the
// ESPW's default namespace) that holds the version of the replica that holds the Lease, written
// with each renewal, so that `kubectl edge version` can say which version runs the center's
// controllers.
const LeaderVersionLabel = "edge.kcp.io/leader-version"

// Push mode: the center runs the syncer of an edge cluster it can reach (package pushhost, in
// edge-controller-manager), instead of a syncer in the edge cluster.
const (
	// LabelSyncMode on a SyncTarget says who runs its syncer: SyncModePush, set by kubectl edge
	// ensure location --push, makes edge-controller-manager's push host run it at the center with
	// the edge kubeconfig of PushKubeconfigNamespace/<SyncTarget name> in the inventory workspace;
	// absent or SyncModePull, the syncer runs in the edge cluster (kubectl edge prep-for-syncer).
	LabelSyncMode = "edge.kcp.io/sync-mode"
	SyncModePush  = "push"
	SyncModePull  = "pull"
	// PushKubeconfigNamespace is the inventory workspace's namespace that holds the edge
	// kubeconfigs of its push SyncTargets, one Secret per SyncTarget, named as it, under the key
	// PushKubeconfigKey. Only the inventory admins and edge-controller-manager's user (RoleBinding
	// PushHostRole) read it.
	PushKubeconfigNamespace = "edge-mc-push"
	PushKubeconfigKey       = "kubeconfig"
	// AnnotationPushKubeconfigHash on a push SyncTarget is the SHA-256 of its stored kubeconfig,
	// set by kubectl edge ensure location --push, so that a new kubeconfig reaches the push host
	// as an update of the SyncTarget at once (it also reads the Secret again every 30 s).
	AnnotationPushKubeconfigHash = "edge.kcp.io/push-kubeconfig-sha256"
	// PushHostRole names the ClusterRole and ClusterRoleBinding (access to the inventory
	// workspace) and the Role and RoleBinding (reading the Secrets of PushKubeconfigNamespace)
	// that kubectl edge ensure location --push gives edge-controller-manager's user there.
	PushHostRole = "edge-mc:push-host"

	// SyncTargetEdgeReachable, on a push SyncTarget only: whether the push host reaches the
	// edge cluster with the stored kubeconfig. Written by the push host.
	SyncTargetEdgeReachable = "EdgeReachable"
	// ReasonEdgeReachable: the edge's API server answered the last probe (/readyz).
	ReasonEdgeReachable = "EdgeReachable"
	// ReasonEdgeUnauthorized: the edge's API server refused the stored credential (401 or 403);
	// the message carries the server's answer, never the credential.
	ReasonEdgeUnauthorized = "Unauthorized"
	// ReasonEdgeUnreachable: the edge's API server did not answer (down, or no route).
	ReasonEdgeUnreachable = "Unreachable"
	// ReasonEdgeKubeconfigInvalid: the stored kubeconfig is missing or cannot be used.
	ReasonEdgeKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonEdgeWaitingForMailbox: the syncer starts once the mailbox and its token are ready.
	ReasonEdgeWaitingForMailbox = "WaitingForMailbox"
)
