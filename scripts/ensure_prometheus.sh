#!/bin/sh
# Install Debian's prometheus package (which carries promtool) when either binary
# is missing. The observability tests need both: promtool for `check metrics`
# and `test rules`, the server for the end-to-end scrape. Idempotent.
set -eu

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_prometheus: prometheus/promtool missing and no apt-get here; install Prometheus 2.x by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# The lock timeout: another install (a second checkout, a cold rehearsal) may hold
# dpkg's or apt's lock; without it apt-get fails at once.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
# --no-install-recommends: the web assets and node-exporter are not needed.
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null
# Debian starts the packaged service where an init system runs; the tests start
# their own server on a free port, so a packaged one is neither needed nor harmful.
command -v prometheus >/dev/null && command -v promtool >/dev/null
