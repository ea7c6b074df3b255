#!/usr/bin/env bash
# `make image`: build the repository's Dockerfile with podman (buildah's
# builder) as localhost/interrupt-sidecar:VERSION, and save it as a docker
# archive in build/image/ for container runtimes that load archives (the
# Kubernetes e2e imports it into containerd).
#
# The base: the Dockerfile's pinned default (python:3.11.7-slim-bookworm) when
# podman's store has it — `podman pull python:3.11.7-slim-bookworm` once on a
# machine that reaches a registry — or IMAGE_BASE=REF to name one; otherwise a
# local stand-in made from Debian's packages (scripts/make_base_standin.sh),
# said loudly, since no registry may be reachable. Nothing here pulls: a pull
# would send traffic to a registry this machine may not be allowed to reach.
#
# The native binary (/usr/local/bin/interrupt-sidecar) is built on the host by
# `make -C clients/go native` and copied from the build context (NATIVE=context).
#
# Prints the image's name on stdout; progress goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/ensure_podman.sh"
export CONTAINERS_CONF="$ROOT/build/podman/containers.conf"
VERSION="$(awk -F'"' '/^appVersion:/ {print $2}' "$ROOT/helm/interrupt-sidecar/Chart.yaml")"
NAME="${IMAGE_NAME:-localhost/interrupt-sidecar:$VERSION}"
PINNED="$(sed -n 's/^ARG BASE=//p' "$ROOT/Dockerfile")"
OUT="$ROOT/build/image"
mkdir -p "$OUT"

base="${IMAGE_BASE:-}"
if [[ -z "$base" ]]; then
  if podman image exists "$PINNED"; then
    base="$PINNED"
  else
    base="$(bash "$ROOT/scripts/make_base_standin.sh")"
    echo "build_image: $PINNED is not in podman's store: building on the stand-in $base" >&2
    echo "build_image: (podman pull $PINNED, or IMAGE_BASE=REF, to build on the real base)" >&2
  fi
fi

# The machine's CA bundle, when TLS here is re-signed by a proxy (PIP_CERT
# names it): mounted, for the RUN steps only, over the base's own bundle
# /etc/ssl/certs/ca-certificates.crt, a file both bases have, so that nothing of
# this machine ends up in the image (a mount on a path the image lacks would
# leave an empty file behind). Debian's pip (the stand-in's) reads that bundle;
# the real base's pip reads its own certifi bundle and needs no help on a
# machine whose TLS is not re-signed. The Dockerfile is unchanged.
mounts=()
cert="${PIP_CERT:-}"
if [[ -n "$cert" && -f "$cert" ]]; then
  mounts+=(--volume "$(readlink -f "$cert"):/etc/ssl/certs/ca-certificates.crt:ro")
fi

# The native command line, built here with the host's Go toolchain and taken from the
# build context (the Dockerfile's NATIVE=context): no registry here serves the golang
# image its default stage builds in. The same static, trimmed binary either way.
command -v go >/dev/null || { echo "build_image: the native binary needs the go command" >&2; exit 1; }
make --no-print-directory -C "$ROOT/clients/go" native >&2

start=$(date +%s)
# --network host: pip reaches PyPI through the machine's own network; podman
# needs no network backend of its own.
# The build stage first, for its image ID, which the runtime stage mounts the
# wheels from (the Dockerfile's WHEELS). podman cannot bind-mount a stage that
# came whole from its layer cache ("couldn't find .../merged/wheels"), and keys a
# RUN --mount=from=STAGE by the command's text alone, not the stage's files
# (containers/buildah#4375, #6609): the runtime stage would fail, or install the
# wheels of an earlier build. An image ID in the command changes with the wheels.
wheels="$(podman build --network host --layers --build-arg "BASE=$base" "${mounts[@]}" \
  --target build -q -f "$ROOT/Dockerfile" "$ROOT" 2>"$OUT/build-stage.log")" ||
  { tail -30 "$OUT/build-stage.log" >&2; exit 1; }
podman build --network host --layers --build-arg "BASE=$base" --build-arg NATIVE=context --build-arg "WHEELS=$wheels" "${mounts[@]}" \
  --label "org.opencontainers.image.version=$VERSION" \
  -t "$NAME" -f "$ROOT/Dockerfile" "$ROOT" >"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log" >&2; exit 1; }
echo "build_image: built $NAME on $base in $(($(date +%s) - start))s" >&2
echo "$base" >"$OUT/base"
rm -f "$OUT/interrupt-sidecar.tar"
podman save --quiet --format docker-archive -o "$OUT/interrupt-sidecar.tar" "$NAME" >/dev/null
echo "$NAME"
