#!/usr/bin/env bash
# Makes a Debian machine ready to build and run this project's images with podman, without any
# image registry: podman and friends from apt, /etc/containers/containers.conf (if there is none),
# and the base images built from Debian's packages with mmdebstrap:
#   localhost/bookworm-slim     Debian bookworm minbase + CA certificates (for debian:bookworm-slim)
#   localhost/bookworm-python   + Python 3.11 in a venv on PATH (for python:3.11-slim-bookworm)
#   localhost/bookworm-redis    + Debian's redis-server (for redis:7-bookworm)
# Idempotent: each step is skipped when its result is already there. Needs root (or sudo).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# runc: crun refuses these hosts' hybrid cgroups; catatonit: the init of `--init` / `init: true`;
# netavark + aardvark-dns: compose networks where containers find each other by service name;
# iptables: netavark's firewall driver (without it every networked build step or container fails
# with "netavark: No such file or directory", as on a fresh machine that lacks it)
packages="podman buildah mmdebstrap runc catatonit netavark aardvark-dns iptables"
# shellcheck disable=SC2086
if ! dpkg -s $packages >/dev/null 2>&1; then
  echo "installing $packages with apt-get"
  $SUDO apt-get update -q
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -q $packages
fi

if [ ! -e /etc/containers/containers.conf ]; then
  echo "writing /etc/containers/containers.conf (runc, cgroupfs, ulimits, the host's CA bundle)"
  $SUDO install -m 0644 "$here/containers.conf" /etc/containers/containers.conf
fi

has_image() { $SUDO podman image exists "$1"; }

if ! has_image localhost/bookworm-slim; then
  tar="$(mktemp -d)/bookworm.tar"
  echo "building localhost/bookworm-slim with mmdebstrap"
  # the host's apt sources (a mirror or snapshot it can reach), else Debian's own
  sources=/etc/apt/sources.list.d/debian.sources
  [ -e "$sources" ] || sources=http://deb.debian.org/debian
  # as debian:bookworm-slim: no man pages, docs or translations, now or in later apt installs
  $SUDO mmdebstrap --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='cp "'"$here"'/apt-docker-clean.conf" "$1"/etc/apt/apt.conf.d/docker-clean' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
    bookworm "$tar" "$sources"
  $SUDO podman import --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' "$tar" localhost/bookworm-slim
  rm -rf "$(dirname "$tar")"
fi

if ! has_image localhost/bookworm-python; then
  $SUDO podman build -f "$here/python.Containerfile" -t localhost/bookworm-python "$here"
fi

if ! has_image localhost/bookworm-redis; then
  $SUDO podman build -f "$here/redis.Containerfile" --build-arg DEBIAN_IMAGE=localhost/bookworm-slim \
    -t localhost/bookworm-redis "$here"
fi
