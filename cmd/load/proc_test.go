package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcessCPU checks that processCPU counts this process's CPU time to
// within a few milliseconds of what the kernel's rusage reports for it,
// where /proc/PID/stat's ticks would be 10 ms apart.
func TestProcessCPU(t *testing.T) {
	pid := os.Getpid()
	before, err := threadsCPU(pid)
	if err != nil {
		t.Fatalf("schedstat: %v", err)
	}
	ruBefore := rusageCPU(t)
	// Spin until 50 ms of CPU are used, whatever else the machine does.
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		if rusageCPU(t)-ruBefore >= 50*time.Millisecond {
			break
		}
	}
	after, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	ru := rusageCPU(t) - ruBefore
	if ru < 50*time.Millisecond {
		t.Fatalf("spun for 30 s and used %v of CPU (x=%d)", ru, x)
	}
	got := after - before
	if diff := (got - ru).Abs(); diff > 5*time.Millisecond {
		t.Errorf("processCPU counted %v, rusage %v", got, ru)
	}
}

func rusageCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
