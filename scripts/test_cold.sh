#!/usr/bin/env bash
# `make test-cold`: run CI's command (`CI=true bash .ci/run`) the way a fresh machine
# would, to catch a missing install step or a step that only passes with a warm cache.
#
#   bash scripts/test_cold.sh            # rehearse the committed HEAD of this checkout
#   KEEP=1 bash scripts/test_cold.sh     # keep the throwaway directory afterwards
#
# What is cold:
# - the checkout: a fresh `git clone` of HEAD (uncommitted changes are not in it), inside
#   a directory only its owner can enter (mktemp -d makes it 0700), as many home
#   directories are, so tests that run code as another uid meet that case too;
# - HOME: a new, empty one, so pip's, npm's, Go's (build and module), cargo's registry
#   and Maven's caches all start empty. Configuration that is not a cache is copied in
#   (.gitconfig, .npmrc, go's env file, pip.conf, cargo's config, Maven's settings.xml);
# - podman's store: a throwaway graphroot and runroot (CONTAINERS_STORAGE_CONF), so the
#   image's stand-in base and every layer are built again.
# What cannot be made cold: Debian's installed packages and apt's cache (podman,
# prometheus, ... stay installed once a run installed them), and the toolchains the
# machine comes with (Go in /usr/local/go, rustup's toolchains, pyenv's Python, the JDK).
#
# Prints the wall time of the whole run and leaves its log in build/cold/last-run.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG_DIR="$ROOT/build/cold"
LOG="$LOG_DIR/last-run.log"
mkdir -p "$LOG_DIR"

if [[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]]; then
  echo "test-cold: the working tree has uncommitted changes; only HEAD ($(git -C "$ROOT" rev-parse --short HEAD)) is rehearsed" >&2
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/interrupt-sidecar-cold.XXXXXX")" # mode 0700
REPO="$TMP/repo"
NEW_HOME="$TMP/home"
STORE="$TMP/containers"
mkdir -p "$NEW_HOME" "$STORE/storage" "$STORE/run"

cleanup() {
  local rc=$?
  # Best effort, and never the script's status: under `set -e -o pipefail` the mount
  # listing below (grep finding nothing) ended the trap before the directory was removed,
  # and turned a passing run's 0 into 1.
  set +e +o pipefail
  # Containers and images of the throwaway store, then whatever overlay mounts remain
  # below it, so that removing the directory cannot fail on a busy mount.
  if command -v podman >/dev/null 2>&1 && [[ -d "$STORE/storage" ]]; then
    CONTAINERS_STORAGE_CONF="$TMP/storage.conf" podman rm -af -t 0 >/dev/null 2>&1 || true
    CONTAINERS_STORAGE_CONF="$TMP/storage.conf" podman rmi -af >/dev/null 2>&1 || true
  fi
  findmnt -rn -o TARGET | grep -F "$TMP/" | sort -r | while read -r mnt; do umount -l "$mnt" || true; done
  if [[ "${KEEP:-}" == 1 ]]; then
    echo "test-cold: kept $TMP" >&2
  else
    rm -rf "$TMP"
  fi
  exit "$rc"
}
trap cleanup EXIT

cat >"$TMP/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$STORE/storage"
runroot = "$STORE/run"
EOF

# Configuration, not caches, from the real HOME.
for file in .gitconfig .npmrc .config/go/env .config/pip/pip.conf .pip/pip.conf .cargo/config.toml .m2/settings.xml; do
  if [[ -f "$HOME/$file" ]]; then
    mkdir -p "$(dirname "$NEW_HOME/$file")"
    cp "$HOME/$file" "$NEW_HOME/$file"
  fi
done

git clone --quiet --no-local "$ROOT" "$REPO"
echo "test-cold: $(git -C "$REPO" rev-parse --short HEAD) in $REPO (HOME=$NEW_HOME, podman store $STORE)" >&2

# The toolchains stay where the machine has them: rustup's proxies need RUSTUP_HOME, pyenv
# its root; everything that caches follows the new HOME (XDG_* unset, CARGO_HOME,
# GOPATH/GOCACHE/GOMODCACHE and npm's cache default to HOME).
RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
start=$(date +%s)
set +e
(
  cd "$REPO" &&
    env -u XDG_CACHE_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u GOPATH -u GOCACHE -u GOMODCACHE \
      -u CARGO_HOME -u npm_config_cache -u MAVEN_OPTS -u PIP_CACHE_DIR \
      HOME="$NEW_HOME" RUSTUP_HOME="$RUSTUP_HOME" CARGO_HOME="$NEW_HOME/.cargo" \
      CONTAINERS_STORAGE_CONF="$TMP/storage.conf" CI=true \
      bash .ci/run </dev/null
) 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(($(date +%s) - start))
echo "test-cold: .ci/run exited $rc after ${elapsed} s ($((elapsed / 60)) min $((elapsed % 60)) s), cold; log: $LOG" | tee -a "$LOG"
exit "$rc"
