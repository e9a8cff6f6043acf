package syncer

// Version is the version this syncer reports in its SyncerConfig's status.syncerVersion, so that
// operators see which edges run an old syncer. cmd/edge-syncer sets it from
// github.com/kcp-dev/edge-mc/pkg/version.Version, which the build sets.
var Version = "dev"
