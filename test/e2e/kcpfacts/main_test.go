// Package kcpfacts checks, against the pinned kcp, each kcp behaviour that edge-mc is built on,
// as edge-mc uses it and as a user would see it, without edge-controller-manager: if kcp changes
// one of them, a test here names the behaviour, where the other packages would only show a
// controller that stopped converging.
//
//   - Every APIExport of the ESPW gets an APIExportEndpointSlice of its own name, without anyone
//     creating it, whose endpoint is a virtual workspace that lists, across all workspaces at
//     once, the export's resources in the workspaces that bind it, and the claimed resources in
//     those that accepted the claims; nothing of any other workspace (endpoints_test.go).
//   - A binding whose permission claims are not accepted gives the export's virtual workspace no
//     access to the claimed resources; accepting them (kubectl edge ensure wmw) does, to read
//     and to write; a claim's verbs bound what the virtual workspace allows (claims_test.go).
//   - A workspace of edge-mc's WorkspaceType mailbox gets its one default APIBinding, to
//     mailbox.edge.kcp.io, bound and with every claim accepted, without anyone creating it
//     (workspacetype_test.go).
//   - A ServiceAccount token minted in one workspace, as the mailbox controller mints the
//     syncer's, is accepted there and refused in every other workspace (token_test.go).
//
// docs/development.md lists these behaviours with the tests of every package that check them.
package kcpfacts

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
