# Shared settings for hack/ scripts. Source it; it defines no side effects beyond variables and helpers.
# Everything expensive is cached outside the repo, keyed by version, so a fresh clone reuses a warm machine's work
# and a fresh machine rebuilds it.
set -euo pipefail

RDX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RDX_CACHE=${RDX_CACHE:-$HOME/.cache/rdx}
K8S_VERSION=${K8S_VERSION:-v1.37.0}
K8S_STAGING_VERSION=${K8S_STAGING_VERSION:-v0.37.0}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CONTROLLER_TOOLS_VERSION=${CONTROLLER_TOOLS_VERSION:-v0.23.0}
# The images hack/images.sh builds and every cluster run (demo, e2e, the soft-RoCE VM) installs.
RDX_VERSION=${RDX_VERSION:-0.1.0}
ENGINE_IMAGE=ghcr.io/rdx-dev/rdx-engine:$RDX_VERSION
ENGINE_ROLLOUT_IMAGE=$ENGINE_IMAGE-rollout            # the same image under another tag: e2e's rolling image update
OPERATOR_IMAGE=ghcr.io/rdx-dev/rdx-operator:$RDX_VERSION
K8S_BIN=$RDX_CACHE/k8s/$K8S_VERSION/bin
TOOLS_BIN=$RDX_CACHE/tools/bin

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# apt_install installs Debian packages that are missing; no-op when all are present.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  # Serialized: make test prepares tiers in the background while others install, and apt takes one caller at a time.
  (
    exec 4>/var/lib/apt/.rdx-apt.lock
    flock -w 1800 4 || die "apt: timed out waiting for another rdx install"
    if [ ! -f /var/lib/apt/.rdx-updated ] || [ -n "$(find /var/lib/apt/.rdx-updated -mmin +720 2>/dev/null)" ]; then
      apt-get update -qq && touch /var/lib/apt/.rdx-updated
    fi
    DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      --no-install-recommends "${missing[@]}" >/dev/null
  )
}

require_go() {
  command -v go >/dev/null || die "go is not installed (need Go >= 1.26)"
}
