# Debian packages a script needs, installed with apt-get when missing (a fresh machine).
# Sourced by scripts/vboard, scripts/firmware, scripts/firmware-kernel-arm64 and
# scripts/sve-probe/run, each of which defines log and die first. apt-get's output is
# shown only when it fails; the package lists are updated once per run.
#   installed PKG            whether PKG is installed
#   install_packages PKG...  installs those of PKG... that are not
#   apt_update_once          apt-get update, the first time only
#   as_root CMD...           CMD as root (sudo when not root)
#   quiet CMD...             CMD, its output shown only when it fails (then the script ends)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# CMD..., its output shown only when it fails (then the script ends).
quiet() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    die "failed: $*"
  fi
}

apt_updated=0
apt_update_once() {
  [ "$apt_updated" = 1 ] && return 0
  log "apt-get update"
  quiet as_root apt-get update -qq
  apt_updated=1
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

install_packages() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} = 0 ] && return 0
  apt_update_once
  log "installing ${missing[*]}"
  quiet as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
