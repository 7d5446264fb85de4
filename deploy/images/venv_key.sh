#!/usr/bin/env bash
# The cache key of layer 2 of benchrunner's images (deploy/images/build.sh): a hash of what the
# venv in /opt/benchrunner is made of.
#
#   deploy/images/venv_key.sh ROOT RUNTIME.txt     (as root: it runs ROOT's python3 in a chroot)
#
# ROOT is layer 1 unpacked, RUNTIME.txt the lock's entries the wheel needs. The key covers those
# entries, SOURCE_DATE_EPOCH, this script and build.sh's layer 2 step; and from Debian, only
# what the venv takes from it: the Python version and bytecode format, the venv and ensurepip
# modules and the pip and setuptools wheels they install. Not the packages' Debian revisions: a
# security update that leaves these files as they are (or a build without bookworm-security)
# makes the same venv, and finds it here.
set -euo pipefail
root=$1 runtime=$2
here=$(cd "$(dirname "$0")" && pwd)
{
  echo "$SOURCE_DATE_EPOCH"
  cat "$runtime"
  chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin python3 -c \
    'import importlib.util, platform; print(platform.python_version(), importlib.util.MAGIC_NUMBER.hex())'
  (cd "$root" && find usr/share/python-wheels usr/lib/python3*/venv usr/lib/python3*/ensurepip \
    -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  cat "$here/venv_key.sh"
  sed -n '/^# Layer 2/,/^# Layer 3/p' "$here/build.sh"
} | sha256sum | cut -c1-16
