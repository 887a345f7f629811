// Package base_test checks the sandgate/base image that images/build.sh
// builds (make images).
package base_test

import (
	"context"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const image = "sandgate/base:latest"

// shellScript exercises what a shell takes from its C library: number
// and float formatting, signal names and numbers, limits, the user
// database, locale-independent pattern matching on UTF-8 bytes, reads,
// here-documents and file descriptors.
const shellScript = `
printf '%d %5.2f %e %g %x %o %s|%c\n' 42 3.14159 12345.678 0.0001 255 8 str x
printf '%b\n' 'a\tb\0101'
echo -e 'x\ty'
echo $((9223372036854775807)) $((1<<62)) $((-7/2)) $((-7%2))
kill -l
kill -l 34; kill -l 64; kill -l 143
ulimit -a
umask
echo ~root ~sandbox ~nosuch
set -- -a -b val c; while getopts ab: o; do echo "$o ${OPTARG-}"; done; echo "$OPTIND"
trap 'echo usr1' USR1; kill -USR1 $$; trap
x=$(printf 'a\nb\n\n'); echo "[$x]"
v=héllo; echo ${#v} ${v#h?} ${v%llo}
case héllo in h?llo) echo one-byte;; h??llo) echo two-bytes;; *) echo none;; esac
cd /tmp && touch é.txt a.txt b.txt && echo *.txt [a-b].txt ?.txt nomatch*
command -v sh; type cd echo
exec 3>&1; echo fd3 >&3
read a b <<EOF
one two three
EOF
echo "$a|$b"
test -e /etc/passwd -a ! -d /etc/passwd && echo test-ok
(exit 3); echo "status $?"
sh -c 'kill -TERM $$'; echo "killed $?"
`

// TestShellIsStaticDash checks that /bin/sh is the image's own Debian
// dash built statically (images/static-sh.sh) and behaves like the
// packaged build, kept at /bin/dash.glibc, on a script that touches what
// a shell takes from its C library.
func TestShellIsStaticDash(t *testing.T) {
	sandboxtest.RequireImage(t, image)

	out := run(t, `readlink -f /bin/sh; cat /usr/share/sandgate/static-dash.version; dpkg-query -W -f '${Version}' dash`)
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || lines[0] != "/usr/bin/dash" || lines[1] != lines[2] {
		t.Fatalf("/bin/sh, static build's version, dash package's version = %q; want /usr/bin/dash and the same version twice", lines)
	}

	// Static: no program interpreter (ld.so) to load at every start.
	bin := filepath.Join(t.TempDir(), "dash")
	id := sandboxtest.DockerCLI(t, "create", image)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", id).Run() })
	sandboxtest.DockerCLI(t, "cp", "-L", id+":/bin/sh", bin)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("/bin/sh has a program interpreter: not the static build")
		}
	}

	static := run(t, "cd /tmp && exec /bin/sh -c \"$0\"", shellScript)
	packaged := run(t, "cd /tmp && exec /bin/dash.glibc -c \"$0\"", shellScript)
	if static != packaged {
		t.Errorf("the static dash and the packaged one disagree:\nstatic:\n%s\npackaged:\n%s", static, packaged)
	}
	for _, want := range []string{"RTMIN\nRTMAX\nTERM", "42  3.14 1.234568e+04", "usr1", "a.txt b.txt é.txt a.txt b.txt a.txt b.txt nomatch*", "killed 143"} {
		if !strings.Contains(static, want) {
			t.Errorf("the script's output lacks %q:\n%s", want, static)
		}
	}
}

// run runs script with bash -c (args after it) in a container of the
// image, hardened like a sandbox, with a writable /tmp, and returns its
// trimmed output, failing t on an error. The script's stderr goes to its
// stdout inside the container: docker carries the two apart, and their
// order would be lost.
func run(t *testing.T, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"run", "--rm", "--user", "1000:1000", "--read-only", "--network", "none",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--tmpfs", "/tmp",
		"-e", "LANG=C.UTF-8", image, "bash", "-c", "exec 2>&1\n" + script}, args...)
	out, err := exec.CommandContext(ctx, "docker", argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
