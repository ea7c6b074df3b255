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
# Where the runtime stage takes the wheels from: the build stage below, or (podman,
# through scripts/build_image.sh) that stage built first, named by its image ID.
ARG WHEELS=build

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
# binutils' strip and `wheel`, for the wheels below; this stage only.
RUN apt-get update && apt-get install -y --no-install-recommends binutils && pip install wheel
COPY clients/python/ clients/python/
COPY pyproject.toml README.md ./
COPY sidecar/ sidecar/
# Extensions lose their debug info here, so the runtime stage needs no binutils: uvloop's
# wheel ships loop.so with DWARF sections (13.6 MB; 1.9 MB without), a third of what
# the app adds to the base. `wheel pack` rewrites each wheel's RECORD with the new hashes.
# One RUN with the `pip wheel`: /wheels is made whole in a single layer.
RUN pip wheel --wheel-dir /wheels ./clients/python . \
 && for w in /wheels/*.whl; do \
      case "$w" in *-none-any.whl) continue ;; esac; \
      d="$(mktemp -d)" && python -m wheel unpack -d "$d" "$w" && rm "$w" \
      && find "$d" -name '*.so' -exec strip --strip-debug {} + \
      && python -m wheel pack -d /wheels "$d"/* && rm -rf "$d" || exit 1; \
    done

# -- runtime ---------------------------------------------------------------------
# An alias of the wheels' image: a mount's from= takes no ARG in BuildKit. Under podman
# WHEELS is the build stage's image ID, because podman cannot mount a stage that came whole
# from its layer cache, and keys a RUN --mount=from=STAGE by its text alone
# (containers/buildah#4375, #6609): it would fail, or install an earlier build's wheels.
FROM ${WHEELS} AS wheels

FROM ${BASE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Installed from the wheels alone: nothing is fetched in this stage. WHEELS, declared
# again, puts its value (under podman, an image ID) into this RUN's cache key.
ARG WHEELS
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
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
