#!/usr/bin/env bash
# Installs the Debian packages llmprof builds and tests with, when missing. As root it runs
# apt-get; otherwise it says what to install and fails. Sourced by demo.sh and test.sh.
# The CUDA toolkit (CUPTI headers, for the collector) is not a Debian package: it is
# expected under /usr/local/cuda; without it everything but the collector builds.
lp_deps() {
    local pkgs=(cmake make gcc libc6-dev libiberty-dev libzstd-dev zlib1g-dev libjansson-dev libcmocka-dev libcsv-dev libsqlite3-dev libmicrohttpd-dev libarchive-dev python3-yaml "$@")
    local missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "llmprof needs these Debian packages: ${missing[*]}" >&2
        echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
        return 1
    fi
    echo "installing ${missing[*]} ..." >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
