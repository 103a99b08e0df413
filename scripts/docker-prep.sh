#!/usr/bin/env bash
# For the Docker leg of `npm test` (scripts/test-docker-leg.ts): a Docker daemon and the two base images the
# Dockerfile builds on, made offline from Debian packages. Prints, on stdout, the lines
#   BUILD_IMAGE=…  RUNTIME_IMAGE=…  DOCKERD_PID=… (only when this script started dockerd; the leg stops it)
# and exits 0; or prints one line on stderr saying why Docker cannot run here and exits 2 (the leg skips).
#
# - Missing packages (docker.io, debootstrap) are installed with apt-get (as root).
# - A daemon that already answers is used as it is; otherwise dockerd is started with --iptables=false
#   --bridge=none (no bridge network: the build and the container use --network=host).
# - Base images, kept in the daemon between runs (made only when missing, ~25 s):
#   runtime  gw-ci/debian:bookworm-minbase            `debootstrap --variant=minbase bookworm`
#   build    gw-ci/node:<node version>-<inputs hash>   the same plus this machine's Node.js and npm, its npm
#            settings and CA bundle (so npm trusts the registry it reaches), for `npm ci` in the build stage.
set -uo pipefail

skip() { echo "skipped: Docker image test ($*)" >&2; exit 2; }
say() { echo "docker-prep: $*" >&2; }

root=$([ "$(id -u)" = 0 ] && echo yes)
install() { # apt-get install, root only
  say "installing $*"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } >/dev/null 2>&1
}

if ! docker info >/dev/null 2>&1; then
  [ "$root" ] || skip "no Docker daemon answers and only root starts one here"
  command -v dockerd >/dev/null || install docker.io || skip "apt-get install docker.io failed"
  log=/tmp/gw-test-dockerd.log
  # setsid: the daemon outlives this script; the leg stops it by the pid printed below.
  setsid dockerd --iptables=false --bridge=none >"$log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || skip "dockerd exited at start: $(grep -m1 -i -E 'error|failed' "$log" || tail -n1 "$log")"
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    kill "$pid" 2>/dev/null
    skip "dockerd did not answer within 30 s: $(tail -n1 "$log")"
  fi
  say "started dockerd for this run (pid $pid, log $log)"
  echo "DOCKERD_PID=$pid"
fi

node_version=$(node --version)
npmrc=$(npm config get globalconfig 2>/dev/null)
ca=/etc/ssl/certs/ca-certificates.crt
inputs=$(cat "$ca" "$npmrc" 2>/dev/null | sha256sum | cut -c1-12)
RUNTIME_IMAGE=gw-ci/debian:bookworm-minbase
BUILD_IMAGE=gw-ci/node:${node_version#v}-$inputs
has() { docker image inspect "$1" >/dev/null 2>&1; }

if ! has "$RUNTIME_IMAGE" || ! has "$BUILD_IMAGE"; then
  [ "$root" ] || skip "the base images $RUNTIME_IMAGE and $BUILD_IMAGE are missing and only root makes them"
  command -v debootstrap >/dev/null || install debootstrap || skip "apt-get install debootstrap failed"
  rootfs=$(mktemp -d /var/tmp/gw-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  say "debootstrap --variant=minbase bookworm"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >/tmp/gw-test-debootstrap.log 2>&1 \
    || { echo "docker-prep: debootstrap failed, see /tmp/gw-test-debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  # This machine's apt settings for its mirror (e.g. snapshots whose Release files are past Valid-Until).
  for f in $(grep -l -E 'Check-Valid-Until|Check-Date' /etc/apt/apt.conf.d/* 2>/dev/null); do cp "$f" "$rootfs/etc/apt/apt.conf.d/"; done
  tar -C "$rootfs" -c . | docker import --change 'CMD ["bash"]' - "$RUNTIME_IMAGE" >/dev/null || exit 1
  node_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  mkdir -p "$rootfs/usr/lib/node_modules" "$rootfs/usr/etc" "$rootfs/etc/ssl/certs"
  cp "$(readlink -f "$(command -v node)")" "$rootfs/usr/bin/node"
  cp -a "$node_dir" "$rootfs/usr/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/bin/npx"
  [ -f "$npmrc" ] && cp "$npmrc" "$rootfs/usr/etc/npmrc"
  cp "$ca" "$rootfs$ca"
  tar -C "$rootfs" -c . | docker import --change 'CMD ["node"]' --change "ENV NODE_EXTRA_CA_CERTS=$ca" - "$BUILD_IMAGE" >/dev/null || exit 1
  # Earlier build bases (another Node.js or CA bundle) are superseded.
  docker image ls --format '{{.Repository}}:{{.Tag}}' gw-ci/node | grep -v -x -F "$BUILD_IMAGE" | xargs -r docker rmi >/dev/null
  say "made $RUNTIME_IMAGE and $BUILD_IMAGE"
fi
echo "BUILD_IMAGE=$BUILD_IMAGE"
echo "RUNTIME_IMAGE=$RUNTIME_IMAGE"
