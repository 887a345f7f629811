// Package interp is the sandbox's stateful code interpreter: one
// long-lived python3 per sandbox that keeps variables, imports and
// definitions between calls, the way a notebook kernel does.
//
// The Python side is driver.py, embedded in the runner and written to a
// temporary file when an interpreter starts (the root file system is
// read-only). The runner and the driver talk over two dedicated pipes,
// fd 3 (requests) and fd 4 (replies), one JSON object a line; the user's
// stdout and stderr are separate pipes the runner reads all the time, so
// output from Python, C extensions and child processes is captured alike
// and a cell can never corrupt the protocol. After each cell the driver
// writes a random per-cell fence to both output pipes before it replies;
// the runner cuts the cell's output there and strips the fence.
//
// A cell is compiled as a module; when its last statement is an
// expression, that expression is evaluated and its repr returned
// (Result), as in a notebook; None is no result. Exceptions come back as
// a traceback without the driver's frames. Every matplotlib figure still
// open after the cell (pyplot only, and only if the cell's code imported
// it) is saved as PNG with the Agg backend and closed.
//
// A timeout sends SIGINT to the interpreter: the driver raises
// KeyboardInterrupt in the cell, once, and never in its own bookkeeping,
// so the interpreter and its state survive. A cell that ignores the
// interrupt (C code that blocks SIGINT, a handler that swallows it) is
// killed with the interpreter after a grace, and a new interpreter is
// started at once. An interpreter that dies on its own, between calls or
// during one, is noticed by the next call, which starts a new one and
// says why the old one died; an OOM kill is told from other deaths with
// runner/process's rule (process.KilledByOOM), from the cgroup's OOM kill
// counter.
//
// The interpreter leads its own process group (killing it kills what its
// cells started) but stays in the runner's session, so runner/process's
// sweep never takes it for an escaped daemon of a call; it is reaped the
// moment it exits, well within the runner's orphan grace.
package interp
