# SPDX-License-Identifier: GPL-2.0-or-later
# For the tests that change the machine (a sysctl, a CPU's online state):
# what they change is put back however they end. Sourced before lib.sh
# (which changes directory).
#
#   restore_on_exit 'echo 1 >/sys/devices/system/cpu/cpu1/online'
#
# runs the command from the test's EXIT trap (a normal end, a failure, or
# SIGINT/SIGTERM/SIGHUP: bash runs the EXIT trap for those) and, should the
# test be killed with SIGKILL (ctest's timeout does that), from a guard
# process outside the test's process group that waits for the test to go.
# The guard stands down when the trap did the work, so that it never undoes
# what the next test changed.

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	echo "SKIP: lib_restore.sh holds a helper of the integration tests; it is sourced, not a test"
	exit 77
fi

RESTORE_CMDS=()
RESTORE_DONE=${TMPDIR:-/tmp}/flamed-test-restored.$$

restore_now() {
	local i
	for i in "${!RESTORE_CMDS[@]}"; do
		eval "${RESTORE_CMDS[$i]}" 2>/dev/null || true
		: >"$RESTORE_DONE.$i"
	done
}

restore_on_exit() {
	local done=$RESTORE_DONE.${#RESTORE_CMDS[@]}
	RESTORE_CMDS+=("$1")
	rm -f "$done"
	# shellcheck disable=SC2016 # expanded by the guard's shell
	setsid -f bash -c '
		while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
		if [[ -e $2 ]]; then rm -f "$2"; else eval "$3"; fi' \
		flamed-test-guard "$$" "$done" "$1" </dev/null >/dev/null 2>&1
	trap 'restore_now; cleanup' EXIT
	trap 'exit 129' HUP
}
