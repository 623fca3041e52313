# lab_env.sh: the set-up the lab scripts of bench/ share (sourced, not run).
#
# It sets here (bench/), root (the checkout), tmp (a temporary directory),
# state (a state directory for emulab under it) and bin (EMULAB_BIN, or the
# commands built from this checkout into tmp), defines emulab() to run
# "$bin/emulab", and on exit, Ctrl-C or an error takes down every lab under
# state and removes tmp.

here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
state="$tmp/state"
mkdir -p "$state"
bin="${EMULAB_BIN:-}"
if [[ -z "$bin" ]]; then
	bin="$tmp/bin"
	echo "building emulab, emuswitch, emunic ..." >&2
	(cd "$root" && go build -o "$bin/" ./cmd/...)
fi
emulab() { "$bin/emulab" "$@"; }

lab_env_cleanup() {
	for l in $(ls "$state" 2>/dev/null); do
		emulab down --state-dir "$state" "$l" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap lab_env_cleanup EXIT INT TERM
