#!/usr/bin/env bash
# `make envtest`: build the real kube-apiserver and etcd once, from the Go module proxy, into a cache outside
# the repository; a second call finds them and returns at once.
#
#   scripts/envtest.sh           build what is missing, print the directory that holds both binaries
#   scripts/envtest.sh --print   print that directory only (no build; exit 1 when the binaries are not there)
#   scripts/envtest.sh --dir     print where the binaries go, built or not
#   scripts/envtest.sh --help    this text
#
# Versions are pinned by the two small Go modules under tools/envtest/ (their go.mod and go.sum are the source
# of truth; omectl/envtest/binaries.py reads the same two lines):
#   tools/envtest/kube-apiserver  k8s.io/kubernetes vX.Y.Z with `replace` of every staging module to v0.Y.Z
#   tools/envtest/etcd            go.etcd.io/etcd/server/v3 (the etcd main package)
# To move to another release: edit the `require` and every `replace` line in kube-apiserver/go.mod (one
# release for all k8s.io modules), run `go mod tidy` there, and commit go.mod and go.sum.
#
# Cache: ${OMECTL_ENVTEST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/omectl/envtest}/k8s-<ver>_etcd-<ver>/
# Builds use CGO_ENABLED=0, GOTOOLCHAIN=local and `nice`; a cold kube-apiserver build compiles ~1950 packages
# and takes many minutes on two cores (docs/real-api-server.md has the measured times).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/tools/envtest"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

module_version() { # <go.mod> <module path>: the version its require names
    awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}

K8S_VERSION="$(module_version "$TOOLS/kube-apiserver/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(module_version "$TOOLS/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[[ -n "$K8S_VERSION" && -n "$ETCD_VERSION" ]] || { echo "envtest: cannot read the pinned versions in $TOOLS" >&2; exit 2; }
CACHE_ROOT="${OMECTL_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/omectl/envtest}"
DEST="$CACHE_ROOT/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}"

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --print)
        [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]] || exit 1
        echo "$DEST"; exit 0 ;;
    --dir) echo "$DEST"; exit 0 ;;
    "") ;;
    *) echo "envtest: unknown argument $1 (try --help)" >&2; exit 2 ;;
esac

stamp_of() { # what a binary was built from: Go version and the module files
    (cd "$TOOLS/$1" && { go env GOVERSION; cat go.mod go.sum; } | sha256sum | cut -c1-16)
}

if ! command -v go >/dev/null 2>&1; then
    echo "envtest: Go is not installed; the real kube-apiserver and etcd cannot be built here" >&2
    exit 3
fi

exec 3>&1 1>&2  # progress on stderr; the directory alone on stdout
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=readonly"
mkdir -p "$DEST"

# build <name> <module dir> <package> [ldflags]: go build -v, with a progress line every 15 s and per 250 packages.
build() {
    local name="$1" dir="$TOOLS/$2" pkg="$3" ldflags="${4:-}"
    local stamp; stamp="$(stamp_of "$2")"
    if [[ -x "$DEST/$name" && "$(cat "$DEST/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
        echo "envtest: $name is built ($DEST/$name)"
        return 0
    fi
    local total; total="$(cd "$dir" && go list -deps "$pkg" | wc -l)"
    echo "envtest: building $name from $pkg (${total} packages; the first build of kube-apiserver takes" \
         "several minutes on two cores, a later one with a warm Go build cache seconds)"
    local log="$DEST/$name.build.log" start=$SECONDS
    rm -f "$DEST/$name.tmp"
    (cd "$dir" && nice -n 10 go build -v -trimpath -ldflags "-s -w $ldflags" -o "$DEST/$name.tmp" "$pkg") \
        >"$log" 2>&1 &
    local pid=$! last=$SECONDS shown=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        local done_; done_="$(grep -c -v -e '^go: ' -e '^#' "$log" 2>/dev/null || true)"
        if (( SECONDS - last >= 15 || done_ - shown >= 250 )); then
            echo "envtest: $name: still building, ${done_} packages compiled of at most ${total} ($((SECONDS - start)) s)"
            last=$SECONDS shown=$done_
        fi
    done
    if ! wait "$pid"; then
        echo "envtest: building $name failed after $((SECONDS - start)) s; the last lines of $log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
    mv -f "$DEST/$name.tmp" "$DEST/$name"
    echo "$stamp" >"$DEST/$name.stamp"
    echo "envtest: built $name in $((SECONDS - start)) s"
}

# kube-apiserver reports these in /version (kubectl and its dispatcher choose their client by it), as the
# release build's hack/lib/version.sh sets them.
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
version_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    version_ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    version_ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$version_ldflags"
printf 'kube-apiserver %s\netcd %s\n%s\n' "$K8S_VERSION" "$ETCD_VERSION" "$(go env GOVERSION)" >"$DEST/versions.txt"
echo "$DEST" >&3
