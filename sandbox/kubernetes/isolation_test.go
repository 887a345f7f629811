package kubernetes_test

import (
	"bufio"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// nodeBridge is the node's address on the local cluster's pod network
// (deploy/kubernetes/local): where the kubelet, and every host service
// bound to all addresses, can be reached from a pod.
const nodeBridge = "10.244.0.1"

// probe is run inside a sandbox: it tries a TCP connect to every
// host:port argument at once and prints "target connected" or "target
// blocked (error)".
const probe = `
import socket, sys, threading
def try_one(t):
    host, port = t.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(3)
    try:
        s.connect((host.strip("[]"), int(port)))
        r = "connected"
    except Exception as e:
        r = "blocked (%s)" % type(e).__name__
    finally:
        s.close()
    print(t, r, flush=True)
ts = [threading.Thread(target=try_one, args=(t,)) for t in sys.argv[1:]]
[t.start() for t in ts]
[t.join() for t in ts]
`

// TestIsolation: from inside a sandbox pod, nothing on the network
// answers: not another sandbox's runner, not the API server, not the
// kubelet, not any other service of the node, not the outside world;
// while the host (where the test runs, as the gateway does) reaches the
// runners. The probe's own runner on the pod's loopback must answer,
// which shows the probe works.
func TestIsolation(t *testing.T) {
	for _, rtc := range runtimeClasses {
		t.Run(rtc, func(t *testing.T) {
			env := newEnv(t, rtc)
			a, b := env.create(t, sandbox.Spec{}), env.create(t, sandbox.Spec{})
			for _, sb := range []sandbox.Sandbox{a, b} {
				c, err := protocol.Dial(t.Context(), sb.Dial)
				if err != nil {
					t.Fatalf("the host cannot reach the runner of %s: %v", sb.ID(), err)
				}
				if err := c.Call(t.Context(), protocol.OpInfo, nil, nil); err != nil {
					t.Errorf("info from %s: %v", sb.ID(), err)
				}
				c.Close()
			}
			bIP := podIP(t, env, b)
			targets := append([]string{"127.0.0.1:7070", net.JoinHostPort(bIP, "7070"), net.JoinHostPort(bIP, "3128"),
				"1.1.1.1:443", "8.8.8.8:53"}, nodeTargets(t, env)...)
			out, code := exec(t, a, append([]string{"python3", "-c", probe}, targets...)...)
			if code != 0 {
				t.Fatalf("probe exited %d: %s", code, out)
			}
			results := map[string]string{}
			for line := range strings.Lines(out) {
				target, res, _ := strings.Cut(strings.TrimSpace(line), " ")
				results[target] = res
			}
			// The kubelet and the API server listen on the bridge and the
			// host reaches them: a blocked connect from the pod is the
			// policy's doing. (Gateway pods, whose policy allows it, reach
			// the API server there too: deploy/kubernetes_test.go.)
			for _, control := range []string{net.JoinHostPort(nodeBridge, "20250"), apiServerOnBridge(t, env)} {
				if c, err := net.DialTimeout("tcp", control, 3*time.Second); err != nil {
					t.Errorf("control: the host cannot reach %s: %v", control, err)
				} else {
					c.Close()
				}
			}
			for _, target := range targets {
				res, ok := results[target]
				want := "blocked"
				if target == "127.0.0.1:7070" {
					want = "connected"
				}
				if !ok || !strings.HasPrefix(res, want) {
					t.Errorf("from a sandbox, %s: %q, want %s", target, res, want)
				}
			}
			t.Logf("probed from %s (%s): %v", a.ID(), rtc, results)
		})
	}
}

// podIP returns the IP of sb's pod.
func podIP(t *testing.T, env *testEnv, sb sandbox.Sandbox) string {
	t.Helper()
	pod, err := env.cs.CoreV1().Pods(env.cfg.Namespace).Get(t.Context(), "sandgate-"+sb.ID(), metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		t.Fatalf("pod of %s: %v (IP %q)", sb.ID(), err, pod.Status.PodIP)
	}
	return pod.Status.PodIP
}

// apiServer returns the API server's host:port as the kubeconfig names it.
func apiServer(t *testing.T, env *testEnv) string {
	t.Helper()
	u, err := url.Parse(env.rc.Host)
	if err != nil {
		t.Fatalf("kubeconfig host %q: %v", env.rc.Host, err)
	}
	return u.Host
}

// apiServerOnBridge returns the API server's port on the node's bridge
// address, where the local cluster's API server listens.
func apiServerOnBridge(t *testing.T, env *testEnv) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(apiServer(t, env))
	return net.JoinHostPort(nodeBridge, port)
}

// nodeTargets are the node's services a pod could try: the API server
// as the kubeconfig names it and on the bridge, and every TCP port the
// host listens on for all addresses or for the bridge, on the bridge and
// on each of the host's other addresses.
func nodeTargets(t *testing.T, env *testEnv) []string {
	t.Helper()
	targets := []string{apiServer(t, env), apiServerOnBridge(t, env), net.JoinHostPort(nodeBridge, "20250")}
	addrs := []string{nodeBridge}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifAddrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && ip.IP.String() != nodeBridge {
			addrs = append(addrs, ip.IP.String())
		}
	}
	for _, l := range listening(t) {
		for _, addr := range addrs {
			if l.ip == "0.0.0.0" || l.ip == "::" || l.ip == addr {
				targets = append(targets, net.JoinHostPort(addr, strconv.Itoa(l.port)))
			}
		}
	}
	slices.Sort(targets)
	return slices.Compact(targets)
}

type listener struct {
	ip   string
	port int
}

// listening returns the host's listening TCP sockets from /proc/net.
func listening(t *testing.T) []listener {
	t.Helper()
	var ls []listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, _ := strings.Cut(fields[1], ":")
			port, err1 := strconv.ParseUint(hexPort, 16, 16)
			raw, err2 := hex.DecodeString(hexIP)
			if err1 != nil || err2 != nil {
				continue
			}
			// The kernel prints each 32-bit word in host (little-endian) order.
			for i := 0; i+4 <= len(raw); i += 4 {
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			ls = append(ls, listener{ip: net.IP(raw).String(), port: int(port)})
		}
		file.Close()
	}
	if len(ls) == 0 {
		t.Fatal("no listening sockets found in /proc/net: cannot test the node's isolation")
	}
	return ls
}
