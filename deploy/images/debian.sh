#!/usr/bin/env bash
# Layer 1 of benchrunner's images: a Debian root file system as a tar, made by mmdebstrap from
# Debian packages alone, with the benchrunner user and its data directory.
#
#   deploy/images/debian.sh SUITE PACKAGES UID OUT.tar SOURCE...
#
# PACKAGES is a comma-separated list added to the essential set; each SOURCE a sources.list
# line. With SOURCE_DATE_EPOCH set, mmdebstrap makes the same tar from the same packages.
set -euo pipefail
suite=$1 packages=$2 uid=$3 out=$4
shift 4
# Every .pyc comes from an explicit compilation (py3compile, hash-based under SOURCE_DATE_EPOCH),
# none from an import in a maintainer script: Python writes a timestamp-based one on import,
# and whether the import or the compilation wrote debpython's first varied from run to run.
export PYTHONDONTWRITEBYTECODE=1
mmdebstrap --mode=root --variant=essential --include="$packages" \
  --aptopt='Acquire::Languages "none"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook="echo 'benchrunner:x:$uid:$uid:benchrunner:/var/lib/benchrunner:/usr/sbin/nologin' >> \"\$1/etc/passwd\"" \
  --customize-hook="echo 'benchrunner:x:$uid:' >> \"\$1/etc/group\"" \
  --customize-hook="install -d -m 0750 -o $uid -g $uid \"\$1/var/lib/benchrunner\"" \
  --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1/usr/share/benchrunner-packages.txt"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
  "$suite" "$out" "$@"
