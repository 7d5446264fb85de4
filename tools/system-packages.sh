#!/usr/bin/env bash
# Debian packages the test suite drives for real: the OCI runtime (runc), OCI clients (skopeo,
# umoci), a static busybox for test images, mmdebstrap for the container images (deploy/images),
# systemd-analyze for the service units, mkfs.ext4 for the sandbox's writable layers, and the
# benchmark harnesses whose output the adapters' tests read: hyperfine, Node.js with npm
# (tests/harnesses/js pins versions for Node >= 18), g++ with Google Benchmark and Catch2, Go,
# Ruby, and cargo with Criterion.rs; git for the asv project the asv test builds; Chromium, which
# the console's browser tests drive through Playwright (never a browser Playwright downloads),
# with a sans-serif font for its screenshots (only recommended by the package); jq, which the
# GitHub Actions workflow of docs/how-to/ uses as GitHub's runners have it;
# pg_dump, which backs up a PostgreSQL server; what the deploy guide (docs/how-to/deploy.md)
# installs and runs: python3-venv, PostgreSQL, Caddy, podman for its containers, and sudo for
# createuser and createdb; podman-docker, the `docker` command the images guide's push runs (a
# file of the package stands for it, as a Docker client elsewhere on PATH is not it);
# and ip, which puts server replicas in network namespaces of their own (tests/netns.py).
# Installs only what is missing; needs root + apt.
set -euo pipefail
declare -A wanted=([runc]=runc [skopeo]=skopeo [umoci]=umoci [busybox]=busybox-static [mkfs.ext4]=e2fsprogs [hyperfine]=hyperfine [node]=nodejs [npm]=npm
  [g++]=g++ [go]=golang-go [ruby]=ruby [git]=git [jq]=jq [mmdebstrap]=mmdebstrap [systemd-analyze]=systemd
  [pg_dump]=postgresql-client [sudo]=sudo [caddy]=caddy [ip]=iproute2 [podman]=podman)
# Libraries and headers have no command: a file of theirs stands for them. The Criterion test runs
# Debian's cargo by its path, whatever cargo (rustup's) comes first on PATH.
declare -A wanted_files=([/usr/include/benchmark/benchmark.h]=libbenchmark-dev
  [/usr/include/catch2/catch.hpp]=catch2 [/usr/bin/cargo]=cargo [/usr/bin/chromium]=chromium
  [/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf]=fonts-liberation
  [/usr/share/doc/python3-venv/copyright]=python3-venv [/usr/share/doc/postgresql/copyright]=postgresql
  [/usr/share/doc/podman-docker/copyright]=podman-docker)
# Rust crates sit in a folder named with their version, which differs between Debian releases.
declare -A wanted_globs=(['/usr/share/cargo/registry/criterion-[0-9]*/Cargo.toml']=librust-criterion-dev)
missing=()
for command in "${!wanted[@]}"; do
  command -v "$command" >/dev/null 2>&1 || missing+=("${wanted[$command]}")
done
for file in "${!wanted_files[@]}"; do
  [ -e "$file" ] || missing+=("${wanted_files[$file]}")
done
for pattern in "${!wanted_globs[@]}"; do
  compgen -G "$pattern" >/dev/null || missing+=("${wanted_globs[$pattern]}")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  # Not fatal: the tests that need these tools skip themselves where they are missing.
  echo "warning: missing system packages: ${missing[*]}; the tests that need them will skip" >&2
  exit 0
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
