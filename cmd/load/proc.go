package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicksPerSecond is sysconf(_SC_CLK_TCK), the unit of utime and stime
// in /proc/PID/stat. It is 100 on every Linux architecture Go supports;
// reading it for real would need cgo.
const clockTicksPerSecond = 100

// processCPU returns the CPU time pid's live threads have used, to the
// nanosecond, from each thread's /proc/PID/task/TID/schedstat: the
// user plus system ticks of /proc/PID/stat are 10 ms apart, which a
// runner's share of a short phase (a burst of 50 starts is some 50 ms of
// runner CPU) counts to within a fifth. Go's threads live as long as
// the process. Without schedstat (a kernel without CONFIG_SCHED_INFO) it
// falls back to the ticks.
func processCPU(pid int) (time.Duration, error) {
	if d, err := threadsCPU(pid); err == nil {
		return d, nil
	}
	return statCPU(pid)
}

// threadsCPU sums the first field of schedstat, nanoseconds on a CPU,
// over pid's threads.
func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread exited meanwhile
			}
			return 0, err
		}
		ns, _, _ := strings.Cut(string(data), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), data)
		}
		sum += time.Duration(n)
	}
	return sum, nil
}

// statCPU returns the user plus system CPU time pid has used, from the
// clock ticks of /proc/PID/stat.
func statCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its closing parenthesis start at field 3 (state).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicksPerSecond, nil
}

// namedCPU returns the CPU time used by the live processes named name
// (their /proc/PID/comm). Processes that exit in between take theirs
// with them, so it is for phases in which they live throughout.
func namedCPU(name string) time.Duration {
	entries, _ := os.ReadDir("/proc")
	var sum time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || processName(pid) != name {
			continue
		}
		if d, err := processCPU(pid); err == nil {
			sum += d
		}
	}
	return sum
}

// hostBusy returns the CPU time all of the host's CPUs have spent busy
// (user, nice, system, irq, softirq, steal) since boot, from /proc/stat.
func hostBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// processStatus returns the fields of /proc/PID/status that this program
// reports: VmRSS (bytes) and Threads.
func processStatus(pid int) (rssBytes int64, threads int, err error) {
	fields, err := readKeyValues(fmt.Sprintf("/proc/%d/status", pid), ":")
	if err != nil {
		return 0, 0, err
	}
	rssBytes = parseKiB(fields["VmRSS"])
	threads, _ = strconv.Atoi(fields["Threads"])
	return rssBytes, threads, nil
}

// processName returns /proc/PID/comm.
func processName(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// memAvailable returns the host's MemAvailable in bytes.
func memAvailable() (int64, error) {
	fields, err := readKeyValues("/proc/meminfo", ":")
	if err != nil {
		return 0, err
	}
	v, ok := fields["MemAvailable"]
	if !ok {
		return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
	}
	return parseKiB(v), nil
}

// readKeyValues reads a file of "key<sep> value" lines.
func readKeyValues(path, sep string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), sep); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// parseKiB parses "1234 kB" into bytes; 0 when it cannot.
func parseKiB(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(s, "kB")), 10, 64)
	return n << 10
}

// mib formats bytes as MiB with one decimal.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
