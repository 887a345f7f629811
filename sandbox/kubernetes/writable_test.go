package kubernetes_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestWritablePlaces: what a sandbox pod's user can write, under each
// RuntimeClass. The runner's dir, the secret and the image are read-only;
// /tmp and /dev/shm are memory emptyDirs (tmpfs under runc; gVisor serves
// them through its gofer, 9p); /workspace is the pod's emptyDir on the
// node's disk (its size is the kubelet's to enforce, by eviction).
//
// /dev/termination-log is the kubelet's: a file under the pod's dir on
// the node, which it creates mode 0666 for any container user to write
// and binds at the container's terminationMessagePath, which cannot be
// left out. It is host disk the sandbox can write, bounded only by the
// fsize rlimit the runner sets on every process (the workspace size by
// default), which this test checks; README (Kubernetes) says so.
func TestWritablePlaces(t *testing.T) {
	for _, rtc := range runtimeClasses {
		t.Run(rtc, func(t *testing.T) {
			env := newEnv(t, rtc)
			sb := env.create(t, sandbox.Spec{})
			out, code := exec(t, sb, "sh", "-c", sandboxtest.WritablePlaces)
			if code != 0 {
				t.Fatalf("script exited %d: %s", code, out)
			}
			t.Logf("writable under %s:\n%s", rtc, out)
			got := map[string]string{}
			for line := range strings.Lines(out) {
				mp, fs, _ := strings.Cut(strings.TrimSpace(line), " ")
				got[mp] = fs
			}
			for _, mp := range []string{"/tmp", "/dev/shm", "/workspace"} {
				if _, ok := got[mp]; !ok {
					t.Errorf("%s is not writable", mp)
				}
			}
			if rtc == "runc" && (got["/tmp"] != "tmpfs" || got["/dev/shm"] != "tmpfs") {
				t.Errorf("/tmp is %q, /dev/shm %q; want memory (tmpfs)", got["/tmp"], got["/dev/shm"])
			}
			for mp, fs := range got {
				switch mp {
				case "/tmp", "/dev/shm", "/workspace", "/dev/mqueue", "/dev/termination-log":
				default:
					t.Errorf("the sandbox user can write %s (%s)", mp, fs)
				}
			}
			// Every process's files, the termination log's included, stop
			// at the fsize rlimit (ulimit -f counts 512-byte blocks).
			want := strconv.FormatInt(sandbox.DefaultLimits.WithDefaults().FileSizeBytes/512, 10)
			if out, _ := exec(t, sb, "sh", "-c", "ulimit -f"); strings.TrimSpace(out) != want {
				t.Errorf("ulimit -f = %q, want %s", strings.TrimSpace(out), want)
			}
		})
	}
}
