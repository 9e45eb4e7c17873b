// Package detach starts processes that outlive the program that started
// them and stops them again by pid, possibly from another program: the local
// cluster's supervisor, and the demo's controller and simulated data plane
// when the demo keeps its environment (DEMO_KEEP=1).
//
// A pid read back from a state file may have been reused by an unrelated
// process. On Linux every check therefore also reads /proc/<pid>/cmdline and
// requires a marker (the folder the process works in) to appear in it, so
// Stop never signals a process that is not ours. Elsewhere only liveness is
// checked.
package detach
