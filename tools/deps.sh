#!/bin/sh
# Installs the Debian packages the build and tests need, only those missing.
set -e
need=""
pkg-config --exists jansson 2>/dev/null || need="$need libjansson-dev"
pkg-config --exists cmocka 2>/dev/null || need="$need libcmocka-dev"
pkg-config --exists libmicrohttpd 2>/dev/null || need="$need libmicrohttpd-dev"
pkg-config --exists libcurl 2>/dev/null || need="$need libcurl4-openssl-dev"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
command -v jq >/dev/null 2>&1 || need="$need jq"
# the installed man page is rendered by man (tests/cli/test_install.sh)
command -v man >/dev/null 2>&1 || need="$need man-db"
# ONNX's own test models: the graph reader's tests read every one (skipped when absent)
[ -d /usr/share/libonnx-testdata/data ] || need="$need libonnx-testdata"
# the page's browser test: Debian's chromium, driven from node by playwright-core
[ -x /usr/bin/chromium ] || need="$need chromium"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
    echo "vramfit: installing:$need" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || true
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $need >&2
fi
# playwright-core at the version tests/page/package-lock.json pins (no browser download: it drives /usr/bin/chromium)
cd "$(dirname "$0")/../tests/page"
if [ ! -f node_modules/.vramfit-installed ] || [ package-lock.json -nt node_modules/.vramfit-installed ]; then
    echo "vramfit: installing tests/page/node_modules (npm ci)" >&2
    npm ci --no-audit --no-fund --prefer-offline >&2
    touch node_modules/.vramfit-installed
fi
