#!/usr/bin/env bash
# Regenerates everything generated in this repository, from the API types and the pinned tools:
#   pkg/apis/edge/v1alpha1/zz_generated.deepcopy.go   deepcopy (controller-gen)
#   config/crds/                                       CRDs of edge.kcp.io (controller-gen)
#   config/exports/edge/                               APIResourceSchemas + APIExport edge.kcp.io (kcp apigen)
#   config/exports/mailbox/                            APIExport mailbox.edge.kcp.io, split off edge.kcp.io (hack/gen-mailbox-export)
#   config/workload-crds/                              CRDs of the Kubernetes workload kinds (hack/tools/kube/workload-crds)
#   config/exports/workloads/                          APIResourceSchemas + APIExport workloads.edge.kcp.io (hack/gen-workload-export)
#   docs/api-reference.md                              the API reference, from the CRDs (hack/gen-api-docs)
# An APIResourceSchema is immutable in kcp: both exporters give a changed schema a new name and
# keep the old name for an unchanged one.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export GONOSUMDB=${GONOSUMDB:-github.com/kcp-dev,k8s.io} GOTOOLCHAIN=${GOTOOLCHAIN:-local}

echo ">> deepcopy and CRDs (controller-gen)"
"$BIN/controller-gen" object paths=./pkg/apis/... \
  crd output:crd:artifacts:config=config/crds

echo ">> APIResourceSchemas and APIExport edge.kcp.io (apigen)"
mkdir -p config/exports/edge
log=$(mktemp); "$BIN/apigen" --input-dir config/crds --output-dir config/exports/edge >"$log" 2>&1 || { cat "$log" >&2; exit 1; }; rm -f "$log"

echo ">> APIExport mailbox.edge.kcp.io (SyncerConfig, Assemblage, AssemblagePart, split off edge.kcp.io)"
go run ./hack/gen-mailbox-export --edge-dir config/exports/edge --output-dir config/exports/mailbox

echo ">> CRDs of the Kubernetes workload kinds (from Kubernetes' OpenAPI definitions)"
(cd hack/tools/kube && GOFLAGS=-mod=mod go run ./workload-crds --output-dir ../../../config/workload-crds)

echo ">> APIResourceSchemas and APIExport workloads.edge.kcp.io"
go run ./hack/gen-workload-export --input-dir config/workload-crds --output-dir config/exports/workloads

echo ">> API reference docs/api-reference.md (from the CRDs)"
go run ./hack/gen-api-docs --crd-dir config/crds --output docs/api-reference.md

echo ">> CLI reference docs/cli-reference.md (from kubectl edge's command tree)"
go run ./hack/gen-cli-docs --output docs/cli-reference.md
