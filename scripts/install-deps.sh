#!/usr/bin/env bash
# Installs, from Debian's packages, whatever shoal needs that this machine lacks. Nothing else is downloaded.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  python3-matplotlib             # scripts/plot.py: the figures of docs/results.md
  openmpi-bin libopenmpi-dev     # MPI (default)
  mpich libmpich-dev             # MPI, side by side, for the second CI configuration
  libcereal-dev                  # serialization of non-trivial types
  libxxhash-dev                  # XXH3: the hash that places keys
  libabsl-dev                    # absl::flat_hash_map: flat local tables, the per-core baseline
  libfmt-dev libcli11-dev nlohmann-json3-dev   # shoal-bench: table output, options, JSON records
  libgtest-dev                   # tests
  clang                          # scripts/test.sh: the consumer project built by a second compiler
  iproute2                       # scripts/multihost.sh: emulated hosts (network namespaces, veth) for the multi-host tests
  zlib1g-dev                     # shoal-contig: gzip reads
  libdivide-dev                  # shoal-isx: a key's bucket without a hardware division
  libboost-dev                   # shoal-flights: Boost.Beast (header-only) HTTP + WebSocket
  chromium chromium-driver python3-selenium   # shoal-flights browser tests (tests/flights_browser.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "shoal: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
