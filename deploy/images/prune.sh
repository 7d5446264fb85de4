#!/usr/bin/env bash
# Remove from a build cache the entries of one kind that are not the current one: older layers
# and layouts that a new key replaced.
#
#   deploy/images/prune.sh CACHE PATTERN KEEP
#
# CACHE may be a symbolic link (a cache moved to a larger disk): it is followed, so its entries
# are found. Every entry directly in it whose name matches the shell PATTERN, but is not named
# KEEP, is removed, file or directory alike.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: prune.sh CACHE PATTERN KEEP" >&2; exit 2; }
cache=$1 pattern=$2 keep=$3
# -H: the starting point is followed when it is a link; without it find examines the link
# itself and finds nothing to remove.
find -H "$cache" -mindepth 1 -maxdepth 1 -name "$pattern" ! -name "$keep" -exec rm -rf {} +
