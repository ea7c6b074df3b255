#!/usr/bin/env bash
# Build the pinned Helm from the Go module proxy into build/tools/helm, once.
# Cached: a stamp file records the version built; a second run with the same
# pin returns at once. The chart tests (tests/helm) use this binary.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/build/tools"
STAMP="$TOOLS/.helm-version"

# The stamp holds the version; it is written only after a build with the flags below.
if [[ -x "$TOOLS/helm" && -f "$STAMP" && "$(cat "$STAMP")" == "$HELM_VERSION" ]]; then
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "ensure_helm: the Go toolchain is needed to build helm $HELM_VERSION (none on PATH)" >&2
  exit 1
fi
mkdir -p "$TOOLS"
echo "ensure_helm: building helm $HELM_VERSION into $TOOLS (first time: a few minutes)" >&2
start=$(date +%s)
# The -X flags are the ones Helm's own Makefile sets for a release. Without them
# `helm version` says "v3.22" and, worse, `helm template` and `helm lint` assume
# Kubernetes v1.20 (.Capabilities.KubeVersion): the Kubernetes version is the
# client-go minor (0.37 -> 1.37), as in Helm's Makefile.
K8S_MINOR=37
PKG=helm.sh/helm/v3
LDFLAGS="-w -s -X $PKG/internal/version.version=$HELM_VERSION -X $PKG/internal/version.gitTreeState=clean"
for p in pkg/lint/rules pkg/chartutil; do
  LDFLAGS+=" -X $PKG/$p.k8sVersionMajor=1 -X $PKG/$p.k8sVersionMinor=$K8S_MINOR"
done
# CGO off: a static binary, no C toolchain involved.
CGO_ENABLED=0 GOBIN="$TOOLS" go install -trimpath -ldflags "$LDFLAGS" "$PKG/cmd/helm@$HELM_VERSION"
echo "$HELM_VERSION" >"$STAMP"
echo "ensure_helm: built in $(($(date +%s) - start))s: $("$TOOLS/helm" version --short)" >&2
