#!/usr/bin/env bash
# Runs a command on a brand-new minimal Debian 12 root, as a new user's machine would: nothing
# of ours installed, Debian's pristine packages (CMake's own modules among them), only what
# scripts/install_deps.sh installs. CI runs the README's test command this way (.ci/run).
#
#   scripts/fresh_root.sh scripts/test.sh build-ci      # the README's test command
#   scripts/fresh_root.sh scripts/train.sh --epochs 1   # or its training command
#
# The root is made with debootstrap --variant=minbase from the apt sources this machine is
# configured with, then gets: /proc, /sys and /dev (with /dev/shm and /dev/pts) of the host;
# read-only, the CUDA toolkit under /usr/local/cuda, which every machine of this project's kind
# has; this repository at /pe-actor (read-write: build trees land in it); and caches that
# only make reruns faster (downloaded .debs, ccache, pip's downloads) under PE_FRESH_CACHE
# (default /var/cache/pe-actor-fresh-root). The command runs there as root, from /pe-actor,
# with a clean environment (PATH, HOME, LANG, TERM, CI and every PE_* variable).
#
# Failing to make the root is an error (exit 2), never a fallback to the host. The mounts live
# in a private mount namespace; afterwards every one is taken down (umount -R, checked in
# /proc/mounts) before the root is removed with rm --one-file-system, and a root left by a
# killed run is swept the same way on the next start. Exit status: the command's, or 2 for a
# failure of this script.
set -euo pipefail

suite=bookworm
roots_dir=${PE_FRESH_ROOTS:-/var/tmp/pe-actor-fresh-roots}
cache_dir=${PE_FRESH_CACHE:-/var/cache/pe-actor-fresh-root}
repo=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "fresh_root: $*" >&2; exit 2; }
say() { echo "fresh_root: $*" >&2; }

(( $# > 0 )) || die "usage: scripts/fresh_root.sh CMD [ARGS...] (e.g. scripts/test.sh build-ci)"
[[ $(id -u) -eq 0 ]] || die "making a root (debootstrap, mount, chroot) needs root; run as root or with sudo"
[[ $(uname -s) == Linux ]] || die "needs Linux (mount namespaces, chroot)"

# The mounts below `dir`, deepest first, from /proc/mounts (whose paths escape spaces).
mounts_under() {
  awk -v d="$1" '{ gsub(/\\040/, " ", $2); if ($2 == d || index($2, d "/") == 1) print $2 }' \
    /proc/mounts | sort -r
}

# Takes down every mount below `dir`, then removes it; refuses to remove a root that still has
# a mount in it (the repository is bound read-write: deleting through it would delete the
# checkout, and --one-file-system does not tell a bind mount of the same disk apart).
remove_root() {
  local dir=$1 m
  [[ -d $dir ]] || return 0
  for m in $(mounts_under "$dir"); do umount -R "$m" 2>/dev/null || true; done
  for m in $(mounts_under "$dir"); do umount -R -l "$m" 2>/dev/null || true; done
  if [[ -n $(mounts_under "$dir") ]]; then
    say "not removing $dir: still mounted there: $(mounts_under "$dir" | tr '\n' ' ')"
    return 1
  fi
  rm -rf --one-file-system "$dir"
}

need_host_tool() { # tool package
  command -v "$1" >/dev/null && return 0
  say "installing $2 on this machine (it makes the root)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >&2 ||
    die "could not install $2, which makes the root"
}

# The Debian mirror this machine's apt uses for $suite, main.
host_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk -v s="$suite" '
      /^[[:space:]]*$/ { if (ok && uri != "") { print uri; exit } ok = 0; uri = ""; next }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
      /^Enabled:[[:space:]]*no/ { uri = ""; ok = 0 }
      END { if (ok && uri != "") print uri }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk -v s="$suite" '$1 == "deb" && $3 == s { print $2 }' "$f"
  done
}

need_host_tool debootstrap debootstrap
need_host_tool unshare util-linux

# Everything below runs in a mount namespace of its own, private: no mount made for the root
# can propagate back to the host's /dev or /sys, and a run killed outright leaves no mount
# behind (the namespace's mounts end with its last process).
if [[ -z ${PE_FRESH_NAMESPACE:-} ]]; then
  PE_FRESH_NAMESPACE=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
mirror=$(host_mirror | head -n1)
[[ -n $mirror ]] || die "no apt source for Debian $suite in /etc/apt/sources.list{,.d}: nothing to make the root from"

mkdir -p "$roots_dir" "$cache_dir"/{debootstrap,apt-archives/partial,ccache,pip} ||
  die "cannot create $roots_dir or $cache_dir"

# Roots of killed runs: their lock is free (a running one holds its lock until it ends).
for old in "$roots_dir"/root.*; do
  [[ -d $old ]] || continue
  exec {old_lock}>"$old.lock"
  if flock -n "$old_lock"; then
    say "removing the root of an earlier run that did not clean up: $old"
    remove_root "$old" && rm -f "$old.lock"
  fi
  exec {old_lock}>&-
done

root=$(mktemp -d "$roots_dir/root.XXXXXX")
exec {lock}>"$root.lock"
flock -n "$lock" || die "cannot lock $root.lock"
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  rm -f "$root.debootstrap.log"
  if remove_root "$root"; then rm -f "$root.lock"; else status=2; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$SECONDS
say "making a minimal Debian $suite root in $root from $mirror"
debootstrap --variant=minbase --cache-dir="$cache_dir/debootstrap" "$suite" "$root" "$mirror" \
  >"$root.debootstrap.log" 2>&1 || {
  tail -n 20 "$root.debootstrap.log" >&2
  die "debootstrap failed (log above): the root could not be made"
}
rm -f "$root.debootstrap.log"

# apt: this machine's sources (security updates included), nothing else of the host's.
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] && cp "$f" "$root$f"
done
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# How this machine reaches the registries, as for apt: its own CAs (Debian's place for them,
# which ca-certificates adds to the root's store when install_deps installs it; an
# intercepting proxy's among them) and pip's configuration.
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
[[ -f /etc/pip.conf ]] && cp -L /etc/pip.conf "$root/etc/pip.conf"

bind() { # source target [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2" || die "cannot bind $1 at $2"
  if [[ ${3:-} == ro ]]; then
    mount -o remount,bind,ro "$2" || die "cannot make $2 read-only"
  fi
}
# The root onto itself first, so that / is a mount point inside the chroot as on a machine:
# `ip netns exec` (the network-namespace tests) makes / a slave mount and fails where it is not.
mount --bind "$root" "$root" || die "cannot bind $root onto itself"
mount -t proc proc "$root/proc" || die "cannot mount /proc in the root"
mount --rbind /sys "$root/sys" || die "cannot bind /sys in the root"
mount --rbind /dev "$root/dev" || die "cannot bind /dev in the root"
if [[ -e /usr/local/cuda ]]; then
  cuda=$(readlink -f /usr/local/cuda)
  bind "$cuda" "$root$cuda" ro
  [[ $cuda == /usr/local/cuda ]] || ln -sfn "$cuda" "$root/usr/local/cuda"
else
  say "this machine has no /usr/local/cuda: the root gets none either"
fi
bind "$repo" "$root/pe-actor"
bind "$cache_dir/apt-archives" "$root/var/cache/apt/archives"
bind "$cache_dir/ccache" "$root/root/.cache/ccache"
bind "$cache_dir/pip" "$root/root/.cache/pip"
# apt downloads as _apt: its partial folder in the shared cache must be that user's.
chroot "$root" chown _apt:root /var/cache/apt/archives/partial 2>/dev/null || true
say "root ready in $((SECONDS - start)) s; running: $*"

env_args=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
          LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}"
          CCACHE_DIR=/root/.cache/ccache CCACHE_COMPILERCHECK=content)
# Passed through: the project's settings, and how this machine reaches the network (proxies,
# CA bundles, pip's index and time-out); not a local wheel folder (PIP_FIND_LINKS), which the
# root does not have.
network_vars='^(https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|PIP_CERT|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|PIP_TRUSTED_HOST|PIP_DEFAULT_TIMEOUT)$'
while IFS='=' read -r name _; do
  if [[ $name == PE_* && $name != PE_FRESH_* ]] || [[ $name =~ $network_vars ]]; then
    env_args+=("$name=${!name}")
  fi
done < <(env)

set +e
chroot "$root" /usr/bin/env -i "${env_args[@]}" /bin/bash -c 'cd /pe-actor && exec "$@"' bash "$@"
status=$?
set -e
say "the command exited with $status after $((SECONDS - start)) s in the root"
exit "$status"
