#!/usr/bin/env bash
# Build benchrunner's server or runner image as an OCI image layout, from Debian packages and
# the project's wheel, with Debian's own tools: no base image from any registry.
#
#   deploy/images/build.sh server|runner --out DIR [--wheel FILE] [--cache DIR]
#   deploy/images/build.sh server|runner --debian-key
#
# Three layers, each a tar made here with a fixed order, owner and time:
#   1. Debian (mmdebstrap, essential variant, plus the packages below), the benchrunner user
#      (uid/gid 10001) and its data directory /var/lib/benchrunner;
#   2. /opt/benchrunner, a venv holding the wheel's run-time dependencies, pinned by
#      requirements.lock and installed with --require-hashes;
#   3. the wheel itself, installed into that venv without dependencies.
# The first two are kept in --cache under a hash of what made them, so a change to the source
# tree rebuilds only the third. The Debian layer's hash includes the archives' state
# (archive_key.py), so a package the archives update, a security fix say, makes it anew; without
# access to them the newest cached Debian layer is reused, with a warning. --debian-key prints
# that layer's key and exits.
#
# Environment: SOURCE_DATE_EPOCH (default: the last commit's time), DEBIAN_MIRROR (default
# http://deb.debian.org/debian; a snapshot.debian.org URL pins every package), DEBIAN_SECURITY
# (default http://deb.debian.org/debian-security; "none" leaves it out, which a snapshot wants),
# PYTHON (its pip builds the wheel when --wheel is not given, and downloads the dependencies;
# default .venv/bin/python).
# Needs root (mmdebstrap's root mode, chroot), mmdebstrap, umoci, GNU tar; network access to
# the Debian mirror (a build whose Debian layer is cached can do without) and to PyPI (through
# the host's pip configuration: the build's chroot itself stays offline).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
kind=${1:-}
shift || true
out="" wheel="" cache="${XDG_CACHE_HOME:-$HOME/.cache}/benchrunner-images" debian_key_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --debian-key) debian_key_only=1; shift ;;
    --out) out=$2; shift 2 ;;
    --wheel) wheel=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$kind" in
  # libstdc++6: the manylinux wheels of numpy and scipy link it, and expect it from the system.
  server) packages="python3,python3-venv,ca-certificates,libstdc++6" ;;
  # runc runs the image jobs; mkfs.ext4 and mount make their writable layers; setpriv (util-linux)
  # arms a job's leader with a parent-death signal.
  runner) packages="python3,python3-venv,ca-certificates,libstdc++6,runc,e2fsprogs,mount,util-linux" ;;
  *) echo "usage: build.sh server|runner --out DIR [--wheel FILE] [--cache DIR] | --debian-key" >&2; exit 2 ;;
esac

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
export SOURCE_DATE_EPOCH
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
suite=bookworm
sources=("deb $mirror $suite main" "deb $mirror $suite-updates main")
[ "$security" = none ] || sources+=("deb $security $suite-security main")
arch=$(dpkg --print-architecture)
# The Debian layer's key: how debian.sh makes it, and the archives' state.
recipe_key=$(printf '%s\n' "$kind" "$packages" "$SOURCE_DATE_EPOCH" "$suite" "${sources[@]}" \
  | cat - "$here/debian.sh" | sha256sum | cut -c1-16)
if archive_key=$(python3 "$here/archive_key.py" "$arch" "${sources[@]}"); then
  debian_key="$recipe_key-$archive_key"
else
  # Offline: the newest layer made the same way, whatever the archives held then.
  newest=$(find -H "$cache" -mindepth 1 -maxdepth 1 -name "debian-$kind-$recipe_key-*.tar" \
    -printf '%T@ %f\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2 || true)
  [ -n "$newest" ] || { echo "build.sh: no Debian layer is cached to build without the archives" >&2; exit 1; }
  echo "build.sh: WARNING: reusing the cached $newest; packages the archives updated since it was made are not in it" >&2
  debian_key=${newest#"debian-$kind-"}
  debian_key=${debian_key%.tar}
fi
if [ -n "$debian_key_only" ]; then
  echo "$debian_key"
  exit 0
fi

[ -n "$out" ] || { echo "build.sh: --out DIR is required" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "build.sh: must run as root (mmdebstrap root mode, chroot)" >&2; exit 1; }
for tool in mmdebstrap umoci tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is not installed (apt-get install $tool)" >&2; exit 1; }
done

created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
uid=10001

work=$(mktemp -d "${TMPDIR:-/tmp}/benchrunner-image.XXXXXX")
cleanup() {
  # A chroot's /proc or /dev may still be mounted if a step failed half-way.
  for mounted in "$work"/root/proc "$work"/root/dev; do
    mountpoint -q "$mounted" 2>/dev/null && umount -l "$mounted"
  done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$cache"

# A layer as a tar whose bytes depend only on the files' contents, modes and owners.
layer_tar() { # DIR OUT PATH...
  local dir=$1 tarball=$2
  shift 2
  tar -C "$dir" --sort=name --format=posix --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -cf "$tarball" "$@"
}

in_chroot() { # ROOT COMMAND...
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$@"
}

python=${PYTHON:-$repo/.venv/bin/python}
case "$arch" in
  amd64) machine=x86_64 ;;
  arm64) machine=aarch64 ;;
  *) echo "build.sh: no wheels are chosen for $arch yet" >&2; exit 1 ;;
esac
if [ -z "$wheel" ]; then
  "$python" -m pip wheel --quiet --no-deps -w "$work/wheel" "$repo"
  wheel=$(ls "$work"/wheel/benchrunner-*.whl)
fi
version=$(basename "$wheel" | cut -d- -f2)

# Layer 1: Debian, kept under its key (above).
base="$cache/debian-$kind-$debian_key.tar"
if [ ! -s "$base" ]; then
  echo "build.sh: layer 1, Debian $suite with $packages" >&2
  "$here/debian.sh" "$suite" "$packages" "$uid" "$work/debian.tar" "${sources[@]}"
  mv "$work/debian.tar" "$base"
  "$here/prune.sh" "$cache" "debian-$kind-*.tar" "${base##*/}"
fi

# Layer 2: the run-time dependencies.
python3 "$here/runtime_requirements.py" "$repo/requirements.lock" "$wheel" > "$work/runtime.txt"
mkdir "$work/root"
tar -C "$work/root" -xf "$base"
# Kept under a hash of what the venv is made of (venv_key.sh): the lock's entries and, from
# Debian, Python and the venv, ensurepip, pip and setuptools it installs; not the rest of Debian,
# so the server and the runner share it, and a build from a snapshot reuses it.
deps_key=$("$here/venv_key.sh" "$work/root" "$work/runtime.txt")
deps="$cache/venv-$deps_key.tar"
if [ ! -s "$deps" ]; then
  echo "build.sh: layer 2, /opt/benchrunner with $(grep -c '==' "$work/runtime.txt") locked packages" >&2
  # Downloaded here, with the host's pip settings (index, proxy, certificates), for the image's
  # Python and glibc; the chroot installs them offline, each checked against the lock's hashes.
  platforms=()
  for glibc in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${glibc}_$machine"); done
  "$python" -m pip download --quiet --no-deps --require-hashes --only-binary :all: \
    --implementation cp --python-version 3.11 --abi cp311 --abi abi3 --abi none \
    "${platforms[@]}" --platform "manylinux2014_$machine" \
    -d "$work/root/tmp/wheelhouse" -r "$work/runtime.txt"
  cp "$work/runtime.txt" "$work/root/tmp/runtime.txt"
  mount -t proc proc "$work/root/proc"
  in_chroot "$work/root" python3 -m venv /opt/benchrunner
  in_chroot "$work/root" /opt/benchrunner/bin/pip install --quiet --no-deps --require-hashes \
    --no-index --find-links /tmp/wheelhouse -r /tmp/runtime.txt
  umount "$work/root/proc"
  rm -rf "$work/root/tmp/runtime.txt" "$work/root/tmp/wheelhouse"
  layer_tar "$work/root" "$work/venv.tar" opt
  mv "$work/venv.tar" "$deps"
  "$here/prune.sh" "$cache" "venv-*.tar" "${deps##*/}"
else
  tar -C "$work/root" -xf "$deps"
fi

# Layer 3: benchrunner itself, the files its installation adds.
cp "$wheel" "$work/root/tmp/"
(cd "$work/root" && find opt/benchrunner | sort) > "$work/before.txt"
in_chroot "$work/root" /opt/benchrunner/bin/pip install --quiet --no-deps --no-index \
  "/tmp/$(basename "$wheel")"
in_chroot "$work/root" /opt/benchrunner/bin/pip check
# pip check reads metadata only: import what loads native code, as the server does.
in_chroot "$work/root" /opt/benchrunner/bin/python -c \
  'import numpy, scipy.stats, psycopg, argon2, cryptography.hazmat.bindings._rust, uvloop, benchrunner.server.app.factory'
rm -f "$work/root/tmp/$(basename "$wheel")"
(cd "$work/root" && find opt/benchrunner | sort) > "$work/after.txt"
comm -13 "$work/before.txt" "$work/after.txt" > "$work/added.txt"
layer_tar "$work/root" "$work/app.tar" --no-recursion -T "$work/added.txt"

# The image: the three layers and a configuration; every date is SOURCE_DATE_EPOCH. umoci
# compresses each layer as it adds it: the first two are added once, to a layout kept beside
# their tars, which each build copies (its blobs as hard links: umoci never rewrites a blob).
# The second is compressed once for every kind and Debian layer, in a layout of its own.
add_layer() { # IMAGE TAR WHAT
  umoci raw add-layer --image "$1" --history.created "$created" \
    --history.created_by "benchrunner deploy/images/build.sh: $3" "$2"
}
venv_layout="$cache/layout-venv-$deps_key"
if [ ! -s "$venv_layout/index.json" ]; then
  umoci init --layout "$work/venv-layout"
  umoci new --image "$work/venv-layout:venv"
  add_layer "$work/venv-layout:venv" "$deps" "run-time dependencies from requirements.lock"
  rm -rf "$venv_layout"
  mv "$work/venv-layout" "$venv_layout"
  "$here/prune.sh" "$cache" "layout-venv-*" "${venv_layout##*/}"
fi
lower="$cache/layout-$kind-$debian_key-$deps_key"
if [ ! -s "$lower/index.json" ]; then
  umoci init --layout "$work/lower"
  umoci new --image "$work/lower:$kind"
  add_layer "$work/lower:$kind" "$base" "Debian $suite: $packages"
  python3 "$here/append_layer.py" "$work/lower" "$kind" "$venv_layout" venv
  rm -rf "$lower"
  mv "$work/lower" "$lower"
  "$here/prune.sh" "$cache" "layout-$kind-*" "${lower##*/}"
fi
layout="$work/layout"
mkdir "$layout"
cp -al "$lower/blobs" "$layout/blobs"
cp "$lower/index.json" "$lower/oci-layout" "$layout/"
add_layer "$layout:$kind" "$work/app.tar" "benchrunner $version"
config=(--created "$created" --history.created "$created" --author benchrunner
  --config.env PATH=/opt/benchrunner/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --config.env LANG=C.UTF-8 --config.env PYTHONDONTWRITEBYTECODE=1
  --config.env BENCHRUNNER_DATA_DIR=/var/lib/benchrunner
  --config.entrypoint /opt/benchrunner/bin/benchrunner
  --config.volume /var/lib/benchrunner --config.workingdir /var/lib/benchrunner
  --config.label "org.opencontainers.image.title=benchrunner-$kind"
  --config.label "org.opencontainers.image.version=$version"
  --config.label "org.opencontainers.image.created=$created")
if [ "$kind" = server ]; then
  # The server needs no privilege: it runs as the benchrunner user, listens on all interfaces
  # of its network namespace, and keeps its state in the data volume.
  config+=(--config.user "$uid:$uid" --config.cmd server --config.exposedports 8080/tcp
    --config.env BENCHRUNNER_LISTEN_HOST=0.0.0.0 --config.env BENCHRUNNER_PORT=8080
    --config.env HOME=/var/lib/benchrunner)
else
  # The runner starts runc for image jobs: root in the container, with the host's cgroups and
  # loop devices (see docs/how-to/deploy.md).
  config+=(--config.user 0:0 --config.cmd runner --config.cmd up
    --config.env BENCHRUNNER_SPOOL=/var/lib/benchrunner/spool
    --config.env BENCHRUNNER_SANDBOX_DIR=/var/lib/benchrunner/sandbox
    --config.env HOME=/root)
fi
umoci config --image "$layout:$kind" --history.created_by "benchrunner deploy/images/build.sh: configuration" "${config[@]}"
umoci gc --layout "$layout"

rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$layout" "$out"
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$out/index.json")
echo "build.sh: $out:$kind benchrunner $version $manifest" >&2
