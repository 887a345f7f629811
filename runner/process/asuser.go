package process

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// AsUserEnv, in the environment of the runner binary, makes it a
// trampoline: ExecAsUser gives its thread what StartAsUser gives a
// process, UserNice and the user timer slack, and executes the program
// the variable names. It is for programs that a library starts from a
// thread of its own, out of StartAsUser's reach: chromedp starts Chromium
// so, and without it Chromium, and every page's scripts, ran at the
// runner's own priority.
const AsUserEnv = "SANDGATE_EXEC_AS_USER"

// asUserSlackEnv carries the user timer slack to the trampoline.
const asUserSlackEnv = "SANDGATE_EXEC_AS_USER_SLACK"

// AsUserEnviron returns the environment entries that make the runner
// binary execute path as user code (see AsUserEnv).
func AsUserEnviron(path string) []string {
	env := []string{AsUserEnv + "=" + path}
	if ns := userTimerSlack.Load(); ns > 0 {
		env = append(env, asUserSlackEnv+"="+strconv.FormatInt(ns, 10))
	}
	return env
}

// ExecAsUser is the trampoline, for the first thing the runner's main
// does: without AsUserEnv it returns nil at once; with it, it executes
// the program it names, with the runner's arguments after its own name,
// at UserNice and with the user timer slack, and returns only the error
// that kept it from doing so.
func ExecAsUser() error {
	path, ok := os.LookupEnv(AsUserEnv)
	if !ok {
		return nil
	}
	slack := os.Getenv(asUserSlackEnv)
	os.Unsetenv(AsUserEnv)
	os.Unsetenv(asUserSlackEnv)
	runtime.LockOSThread()
	ns, _ := strconv.ParseInt(slack, 10, 64)
	if err := asUserThread(ns); err != nil {
		return fmt.Errorf("lower the priority of %s: %w", path, err)
	}
	argv := append([]string{path}, os.Args[1:]...)
	return fmt.Errorf("execute %s: %w", path, syscall.Exec(path, argv, os.Environ()))
}
