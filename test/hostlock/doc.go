// Package hostlock claims a name among the processes of this machine, for
// test tooling that takes something fixed every process could take alike:
// test/kwokcluster's pod address range, test/gateway's listener
// addresses, and TCP ports (ClaimPort: ports the kernel never hands out
// itself) for the servers tests start and then talk to: those of the
// endpoint pickers test/endpointpicker starts, etcd's and kube-apiserver's
// (test/controlplane), kube-scheduler's and the LWS operator's
// (test/kwokcluster), and testenv.FreePort's. A claim is an exclusive
// flock(2) on a lock file of the name in a folder all the processes share
// (Dir: os.TempDir()). The kernel
// drops it when the holder releases it or ends, however it ends, so a run
// that crashed never strands a name; the lock file stays, empty and free.
//
// flock locks belong to the open file, not to the process: two claims of
// one name in one process conflict as in two processes, and a child that
// inherits the file (exec.Cmd.ExtraFiles) holds the claim with its parent
// and after it.
//
// This is test tooling. engine/ and internal/ never import it.
package hostlock
