// Package process runs commands for the runner: foreground calls that
// stream their output (Manager.Run), background processes with a bounded
// output log and writable stdin (Manager.Start, Output, Write, Signal),
// and the killing of every process a call started.
//
// Each call's root process is started with syscall.ForkExec as the leader
// of a new session, with the marker SANDGATE_CALL=<random id> in its
// environment and stdout and stderr on pipes the Manager reads. When the
// root exits (or the call times out, is cancelled, or the Manager closes)
// the Manager kills the root's process group and then sweeps /proc for
// the rest of the tree until a pass finds nothing; see tree for what the
// sweep finds and what escapes it. The first Manager makes the process a
// child subreaper, so orphans of a call are re-parented to the runner
// rather than to init, where the sweep still finds them and the runner
// reaps them. Where the runner is itself PID 1 of its container (on
// Kubernetes, with no init before it) every orphan of the container comes
// to it, also those of processes that entered from outside (kubectl
// exec), and the reaper below reaps them in the same way.
//
// Waiting is done with waitid/wait4 on specific pids, never wait4(-1) or
// exec.Cmd.Wait, so that other packages' os/exec children keep their exit
// statuses; see wait.go. Because the runner is a subreaper, orphans of
// those children also come to the runner: the reaper reaps any zombie
// child no tree claims after a grace period (orphanGrace), which an
// exec.Cmd owner must not exceed between its child's exit and its Wait.
//
// The container's cgroup remains the limit that always holds: its pids
// and memory limits bound what escapes, and removing the container ends
// everything.
package process
