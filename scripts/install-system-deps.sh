#!/usr/bin/env bash
# Installs the Debian packages FuseLens needs: Graphviz (`dot`) for layout, and the X/GL
# libraries Qt loads even when it draws offscreen. Root runs apt-get; anyone else is told
# the exact command and the set-up stops.
set -euo pipefail
pkgs=(graphviz libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libfontconfig1 libdbus-1-3 fonts-dejavu-core)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then
  echo "Installing system packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "FuseLens needs these Debian packages: ${missing[*]}" >&2
  echo "Run:  sudo apt-get install -y ${missing[*]}" >&2
  echo "then run make again." >&2
  exit 1
fi
