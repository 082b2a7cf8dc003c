#!/usr/bin/env bash
# Installs the Debian packages FuseLens needs: Graphviz (`dot`) for layout, the GL and font
# libraries Qt loads even when it draws offscreen, and the xcb libraries its X11 window
# plugin links against (the list is `ldd` of PySide6's libqxcb.so, mapped to packages); ssh and rsync
# for runs on Ascend hosts, openssh-server for the tests' loopback host (/usr/sbin/sshd), and
# chromium for the lesson page's and the audit report's headless-browser tests, xvfb for the
# benchmarks of the window under a real X server (BENCH_PLATFORM=xcb). Root runs apt-get; anyone else is told
# the exact command and the set-up stops.
set -euo pipefail
pkgs=(graphviz libegl1 libgl1 libglib2.0-0 libfontconfig1 libdbus-1-3 fonts-dejavu-core
      libxkbcommon0 libxkbcommon-x11-0 libx11-xcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
      libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-sync1 libxcb-xfixes0 libxcb-xkb1
      openssh-client rsync openssh-server chromium xvfb)
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
