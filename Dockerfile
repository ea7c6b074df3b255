# syntax=docker/dockerfile:1
# The interrupt-sidecar daemon image (also the example agent's: it carries the
# Python client). Build from the repository root:
#   docker build -t REGISTRY/interrupt-sidecar:0.1.0 .
# The base is pinned to an exact tag, the interpreter the tests run on; pin its
# digest too when you publish (docker buildx imagetools inspect python:3.11.7-slim-bookworm).
# It is an argument only so that `make image` can build offline on a local
# stand-in (scripts/make_base_standin.sh) when no registry is reachable.
ARG BASE=python:3.11.7-slim-bookworm
# The native command line (/usr/local/bin/interrupt-sidecar: run, begin, interrupt,
# end and status without Python's start-up; docs/cli.md) comes from one of two stages:
#   go       built here from clients/go by the pinned Go image (what `docker build .` does);
#   context  build/native/interrupt-sidecar from the build context, built on the host
#            by `make -C clients/go native` (what `make image` does: no registry here
#            serves the Go image). The same static binary either way (CGO_ENABLED=0,
#            -trimpath), so the image does not depend on where it was built.
ARG NATIVE=go
ARG GO_IMAGE=golang:1.26.8-bookworm

# -- native: the Go binary (only the stage NATIVE names is built) -----------------
FROM ${GO_IMAGE} AS native-go
WORKDIR /src/clients/go
COPY clients/go/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/interrupt-sidecar ./cmd/interrupt-sidecar

FROM scratch AS native-context
COPY build/native/interrupt-sidecar /out/interrupt-sidecar

FROM native-${NATIVE} AS native

# -- build: wheels for the daemon, the client and every dependency --------------
FROM ${BASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY clients/python/ clients/python/
COPY pyproject.toml README.md ./
COPY sidecar/ sidecar/
RUN pip wheel --wheel-dir /wheels ./clients/python . \
 && sha256sum /wheels/*.whl > /wheels.sha256

# -- runtime ---------------------------------------------------------------------
FROM ${BASE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# The wheels' checksums, copied first so that a layer cache keys the install on them:
# podman's (buildah's) cache does not look into a stage bind-mounted by the RUN below, and
# would otherwise reuse an install of older wheels.
COPY --from=build /wheels.sha256 /usr/local/share/interrupt-sidecar/wheels.sha256
# Installed from the wheels alone: nothing is fetched in this stage.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels interrupt-sidecar interrupt-sidecar-client \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
# The native binary is `interrupt-sidecar`; the Python command it hands serve, top,
# demo and mcp to (exec: same pid, so `serve` stays PID 1) is pip's interrupt-sidecar-py,
# beside it. pip's own interrupt-sidecar script is replaced, not kept under another name.
COPY --from=native /out/interrupt-sidecar /usr/local/bin/interrupt-sidecar
# The chart runs every container of the pod as this uid: the daemon's socket is
# owner-only, and it signals only process groups of its own uid.
USER 65532:65532
ENTRYPOINT ["interrupt-sidecar"]
CMD ["serve"]
