#!/usr/bin/env bash
# Build a pinned one-node Kubernetes control plane and kubelet from the Go
# module proxy into build/kubernetes/bin, once: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy (Services) and
# kubectl, which the e2e test drives the cluster with. No prebuilt binary is downloaded: every one is
# compiled from the module of its pinned release.
#
# Cached: a stamp records the versions built; a second run with the same pins
# returns at once. Cold, on 2 shared cores, expect tens of minutes (the kubelet
# alone is ~8 minutes on 2 idle cores); run it with `nice`.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/build/kubernetes"
BIN="$OUT/bin"
STAMP="$OUT/.version"
# etcd: the version Kubernetes itself pins in its go.mod (read from it below).
WANT="kubernetes=$K8S_VERSION"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "ensure_kubernetes: the Go toolchain is needed to build Kubernetes $K8S_VERSION" >&2
  exit 1
fi

# The staging modules (k8s.io/api, client-go, kubelet, ...) are published as
# v0.<minor>.<patch> releases; k8s.io/kubernetes's own go.mod points them at
# ./staging, which a module that requires it cannot use. So a small module
# requires k8s.io/kubernetes and replaces each staging module with its release.
SRC="$OUT/src"
mkdir -p "$SRC" "$BIN"
cd "$SRC"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
echo "ensure_kubernetes: building Kubernetes $K8S_VERSION (staging $STAGING_VERSION) into $BIN" >&2
start=$(date +%s)
rm -f go.mod go.sum
go mod init k8s-node-build >/dev/null 2>&1
go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
KMOD="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION"
{
  echo "require k8s.io/kubernetes $K8S_VERSION"
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$KMOD/go.mod" | awk -v v="$STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
} >>go.mod
ETCD_VERSION="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$KMOD/go.mod")"
# A blank-import file makes `go mod tidy` keep every package the build names.
cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
go mod tidy >/dev/null 2>&1 || go mod tidy
# The version flags hack/lib/version.sh sets for a release: the binaries report
# it, and kube-apiserver derives its emulation version from it.
MINOR="${K8S_VERSION#v1.}"
MINOR="${MINOR%%.*}"
LDFLAGS="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
  LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
# One `go build` for all of them: the packages they share compile once.
# CGO off, as Kubernetes' own release builds of these binaries.
CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy \
  k8s.io/kubernetes/cmd/kubectl
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
echo "$WANT" >"$STAMP"
echo "ensure_kubernetes: built in $(($(date +%s) - start))s: $("$BIN/kubelet" --version), etcd $ETCD_VERSION" >&2
