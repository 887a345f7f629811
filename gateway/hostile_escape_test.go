package gateway_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
)

// fails checks a probe exited non-zero and said one of want.
func fails(want ...string) func(t *testing.T, r execResult, res *mcp.CallToolResult) {
	return func(t *testing.T, r execResult, res *mcp.CallToolResult) {
		t.Helper()
		out := r.Stdout + r.Stderr
		if r.ExitCode == 0 || !containsAny(out, want) {
			t.Errorf("want a failure saying one of %q; exit %d, output %q", want, r.ExitCode, out)
		}
	}
}

// prints checks a probe exited 0 and printed every one of want.
func prints(want ...string) func(t *testing.T, r execResult, res *mcp.CallToolResult) {
	return func(t *testing.T, r execResult, res *mcp.CallToolResult) {
		t.Helper()
		for _, w := range want {
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, w) {
				t.Errorf("want exit 0 and %q in stdout; exit %d, stdout %q, stderr %q", w, r.ExitCode, r.Stdout, r.Stderr)
			}
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// pySyscall calls a raw system call from Python and prints its errno;
// the probe fails (exit 1) unless the call was refused.
func pySyscall(nr int, args string) string {
	return `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(` + strconv.Itoa(nr) + `, ` + args + `)
e = ctypes.get_errno()
print("syscall ` + strconv.Itoa(nr) + ` returned", r, os.strerror(e) if r < 0 else "")
sys.exit(1 if r < 0 else 0)
'`
}

// pyConnect tries a TCP connection from inside the sandbox.
func pyConnect(host, port string) string {
	return `python3 -c '
import socket, sys
try:
    socket.create_connection(("` + host + `", ` + port + `), timeout=3)
except OSError as e:
    print("connect failed:", e)
    sys.exit(1)
print("connected")
'`
}

// TestHostileEscapeProbes runs privilege, escape and network probes in
// one attacker session: every one must fail, and say why.
// escapeProbes are the escape attempts that mean the same in any
// sandbox, a container or a pod: the caller's privileges, the kernel
// surface a sandbox must not reach, and name resolution.
func escapeProbes() []hostileCase {
	denied := []string{"Operation not permitted", "Permission denied", "must be superuser", "Read-only file system"}
	return []hostileCase{
		{name: "uid is 1000", command: `id -u`, check: prints("1000\n"), outcome: audit.OutcomeOK},
		{name: "no capabilities, no new privileges, seccomp on", command: `grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status`,
			check: prints("CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"), outcome: audit.OutcomeOK},
		{name: "mount", command: `mount -t tmpfs x /mnt`, check: fails(denied...)},
		{name: "unshare user namespace", command: `unshare -r true`, check: fails(denied...)},
		{name: "unshare mount namespace", command: `unshare -m true`, check: fails(denied...)},
		{name: "ptrace the runner", command: `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
r = libc.ptrace(16, pid, 0, 0)  # PTRACE_ATTACH
print("ptrace attach", pid, "returned", r, os.strerror(ctypes.get_errno()) if r < 0 else "")
if r == 0:  # let the runner go again, or every later call hangs
    os.waitpid(pid, 0x40000000)
    libc.ptrace(17, pid, 0, 0)
sys.exit(1 if r < 0 else 0)
' "$(` + runnerPid + `)"`, check: fails(denied...)},
		{name: "add_key", command: pySyscall(248, `b"user", b"k", b"v", 1, -2`), check: fails(denied...)},
		{name: "keyctl", command: pySyscall(250, `1, 0`), check: fails(denied...)},
		{name: "bpf", command: pySyscall(321, `0, 0, 0`), check: fails(denied...)},
		{name: "mknod", command: `mknod /tmp/x c 1 3`, check: fails(denied...)},
		{name: "raw socket", command: `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)'`, check: fails(denied...)},
		{name: "sysrq trigger", command: `echo b > /proc/sysrq-trigger`, check: fails(append(denied, "Directory nonexistent")...)},
		{name: "write to /sys", command: `echo 1 > /sys/kernel/mm/ksm/run`, check: fails(denied...)},
		{name: "write to /sys/fs/cgroup", command: `mkdir /sys/fs/cgroup/escape`, check: fails(denied...)},
		{name: "read /proc/kcore", command: `n=$(head -c 4096 /proc/kcore | wc -c); echo "read $n bytes"; [ "$n" = 0 ]`, check: prints("read 0 bytes"), outcome: audit.OutcomeOK},
		{name: "setuid binaries do not raise privileges", command: `find / -xdev -perm -4000 -type f 2>/dev/null | tr '\n' ' '; echo
for b in su passwd mount; do command -v $b >/dev/null && { $b </dev/null >/dev/null 2>&1; echo "$b exit $?"; }; done
su root -c 'id -u' </dev/null`, check: fails("Authentication failure", "must be run from a terminal", "Permission denied", "not found")},
		{name: "DNS", command: `python3 -c '
import socket, sys
try:
    socket.getaddrinfo("example.com", 80)
except OSError as e:
    print("lookup failed:", e)
    sys.exit(1)
'`, check: fails("lookup failed")},
	}
}

func TestHostileEscapeProbes(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	stop := startCanary(t, tg)
	c := legacyClient(t, tg.URL)
	u, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()

	cases := append(escapeProbes(), []hostileCase{
		{name: "no docker socket", command: `test -S /var/run/docker.sock || test -S /run/docker.sock`, check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
			if r.ExitCode == 0 {
				t.Errorf("a docker socket is in the sandbox")
			}
		}},
		{name: "no docker binary", command: `command -v docker || echo none`, check: prints("none\n"), outcome: audit.OutcomeOK},
		{name: "gateway port on loopback", command: pyConnect("127.0.0.1", port), check: fails("Connection refused")},
		{name: "gateway port on the docker bridge", command: pyConnect("172.17.0.1", port), check: fails("Network is unreachable")},
		{name: "cloud metadata", command: pyConnect("169.254.169.254", "80"), check: fails("Network is unreachable")},
	}...)
	for _, tc := range cases {
		if tc.outcome == "" {
			tc.outcome = audit.OutcomeError
		}
		t.Run(tc.name, func(t *testing.T) { runHostile(t, tg, c, tc) })
	}

	t.Run("/proc/1/environ holds no secrets", func(t *testing.T) {
		r, _ := shell(t, c, `tr '\0' '\n' < /proc/1/environ`, nil)
		var names []string
		for _, kv := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			name, value, _ := strings.Cut(kv, "=")
			names = append(names, name)
			upper := strings.ToUpper(name)
			if strings.HasPrefix(upper, "SANDGATE_") || containsAny(upper, []string{"TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL"}) ||
				strings.HasPrefix(value, "ey") || len(value) > 40 && !strings.Contains(value, "/") {
				t.Errorf("pid 1's environment holds a secret-like variable %s", name)
			}
		}
		t.Logf("pid 1's environment: %s", strings.Join(names, " "))
		// What the runner is started with stays the runner's: a command
		// gets an environment of its own (process.DefaultEnv).
		if r, _ := shell(t, c, `echo "${GOMAXPROCS-unset} ${TMPDIR-unset}"`, nil); strings.TrimSpace(r.Stdout) != "unset unset" {
			t.Errorf("a command sees the runner's GOMAXPROCS or TMPDIR: %q", r.Stdout)
		}
	})

	t.Run("cwd through /proc/self/fd is refused", func(t *testing.T) {
		res := call(t, c, "run_shell", map[string]any{"command": "pwd", "cwd": "/proc/self/fd/3"})
		t.Logf("cwd /proc/self/fd/3: isError %v: %q", res.IsError, text(res))
		if !res.IsError || !strings.Contains(text(res), "/proc/self/fd/3") {
			t.Errorf("want a clear error naming the cwd: %q", text(res))
		}
	})
	stop()
}
