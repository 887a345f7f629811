package kubernetes

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// TestClassify: what a starting pod's status makes Create do.
func TestClassify(t *testing.T) {
	t.Parallel()
	cfg := Config{RunnerImage: "sandgate/runner:latest"}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	exited := func(code int32, reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	tests := []struct {
		name    string
		status  corev1.PodStatus
		deleted bool
		wantIP  string
		wantErr error
		wantMsg string
	}{
		{"just created", corev1.PodStatus{Phase: corev1.PodPending}, false, "", nil, ""},
		{"unschedulable waits", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient memory"}}},
			false, "", nil, ""},
		{"initialising with an IP: dial", corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.244.0.9",
			InitContainerStatuses: []corev1.ContainerStatus{{Name: InitContainerName, State: running}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: ContainerName, State: waiting("PodInitializing", "")}}},
			false, "10.244.0.9", nil, ""},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9",
			ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: running}}}, false, "10.244.0.9", nil, ""},
		{"sandbox image never pulled", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, Image: "img:1", State: waiting("ErrImageNeverPull", `Container image "img:1" is not present`)}}},
			false, "", sandbox.ErrImageMissing, "load-image.sh img:1"},
		{"sandbox image pull backoff", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, Image: "img:1", State: waiting("ImagePullBackOff", "Back-off")}}},
			false, "", sandbox.ErrImageMissing, "img:1"},
		{"runner image missing", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: InitContainerName, Image: "sandgate/runner:latest", State: waiting("ErrImagePull", "no registry")}}},
			false, "", sandbox.ErrRunnerMissing, "load-image.sh sandgate/runner:latest"},
		{"install failed", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: InitContainerName, State: exited(1, "Error", "runner install: read-only file system")}}},
			false, "", sandbox.ErrStartFailed, "read-only file system"},
		{"install done", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: InitContainerName, State: exited(0, "Completed", "")}}}, false, "", nil, ""},
		{"runner exited", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9", ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, State: exited(1, "Error", "runner: --secret-file: no such file")}}},
			false, "", sandbox.ErrStartFailed, "no such file"},
		{"bad config", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, State: waiting("CreateContainerConfigError", "secret not found")}}},
			false, "", sandbox.ErrStartFailed, "secret not found"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "ephemeral storage"},
			false, "", sandbox.ErrStartFailed, "Evicted"},
		{"being deleted", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9"}, true, "", sandbox.ErrStartFailed, "deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sandgate-x"}, Status: tt.status}
			if tt.deleted {
				pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			v := classify(pod, cfg)
			if v.ip != tt.wantIP {
				t.Errorf("ip = %q, want %q", v.ip, tt.wantIP)
			}
			if tt.wantErr == nil && v.err != nil || tt.wantErr != nil && !errors.Is(v.err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", v.err, tt.wantErr)
			}
			if tt.wantErr != nil && !strings.Contains(v.err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want it to mention %q", v.err, tt.wantMsg)
			}
			if tt.wantErr == nil && v.state == "" {
				t.Error("no state for a timeout's message")
			}
		})
	}
}

// TestState: only a live, running runner container counts as running,
// so that the gateway sees a deleted, evicted or failed pod as dead.
func TestState(t *testing.T) {
	t.Parallel()
	run := []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	done := []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
	now := &metav1.Time{Time: time.Now()}
	tests := []struct {
		name    string
		deleted *metav1.Time
		status  corev1.PodStatus
		want    string
	}{
		{"running", nil, corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: run}, StateRunning},
		{"terminating", now, corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: run}, StateTerminating},
		{"evicted", nil, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, StateEvicted},
		{"evicted, runner exited cleanly", nil, corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}}}, StateEvicted},
		{"deadline", nil, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}, "failed"},
		{"runner exited, phase not yet updated", nil, corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: done}, "exited"},
		{"pending", nil, corev1.PodStatus{Phase: corev1.PodPending}, "pending"},
		{"no phase", nil, corev1.PodStatus{}, "pending"},
		{"running without IP", nil, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: run}, "pending"},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tt.deleted}, Status: tt.status}
		if got := state(pod); got != tt.want {
			t.Errorf("%s: state = %q, want %q", tt.name, got, tt.want)
		}
		if alive := tt.want == StateRunning || tt.want == StatePending; dead(state(pod)) == alive {
			t.Errorf("%s: dead = %v, want %v", tt.name, !alive, !alive)
		}
	}
}

// TestMetaRoundTrip: Info rebuilt from an object's metadata is the Spec
// it was made from, and filters match by the full owner and session,
// not by their label hashes alone.
func TestMetaRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := Config{Namespace: "ns", Instance: "ci"}
	now := time.Date(2026, 11, 26, 12, 0, 0, 123, time.UTC)
	spec := sandbox.Spec{ID: "abc", Image: "img:1", Owner: strings.Repeat("o", 100), Session: "a/b:c", Tenant: "t",
		Network: []string{"example.com:443", "*.example.org"}, ExpiresAt: now.Add(time.Hour), Pool: "sandgate/base:latest"}
	m := meta(spec, cfg, now)
	info := infoFromMeta(m)
	want := sandbox.Info{ID: spec.ID, Image: spec.Image, Owner: spec.Owner, Session: spec.Session, Tenant: spec.Tenant,
		Network: spec.Network, Pool: spec.Pool, CreatedAt: now, ExpiresAt: spec.ExpiresAt}
	if info.ID != want.ID || info.Image != want.Image || info.Owner != want.Owner || info.Session != want.Session ||
		info.Tenant != want.Tenant || strings.Join(info.Network, " ") != strings.Join(want.Network, " ") || info.Pool != want.Pool ||
		!info.CreatedAt.Equal(want.CreatedAt) || !info.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("infoFromMeta = %+v, want %+v", info, want)
	}
	if !ours(m, cfg) || ours(m, Config{Instance: "other"}) {
		t.Error("ours: instance scoping is wrong")
	}
	if m.Labels[LabelTenantHash] != labelHash(spec.Tenant) {
		t.Errorf("tenant hash label = %q, want labelHash(%q)", m.Labels[LabelTenantHash], spec.Tenant)
	}
	for _, f := range []sandbox.Filter{{}, {Owner: spec.Owner}, {Session: spec.Session}, {Owner: spec.Owner, Session: spec.Session},
		{Tenant: spec.Tenant}, {ID: spec.ID}} {
		if !matches(m, f) {
			t.Errorf("matches(%+v) = false", f)
		}
	}
	// Same hash label (as if two values collided), other annotation.
	forged := *m.DeepCopy()
	forged.Annotations[AnnotationOwner] = "someone else"
	if matches(forged, sandbox.Filter{Owner: spec.Owner}) {
		t.Error("an owner-hash match without the owner annotation matched")
	}
	forged.Annotations[AnnotationTenant] = "another tenant"
	if matches(forged, sandbox.Filter{Tenant: spec.Tenant}) || matches(m, sandbox.Filter{ID: "other"}) {
		t.Error("a tenant-hash match without the tenant annotation, or another id, matched")
	}
	// What a replica recorded on the Secret wins over what the pod was
	// made with.
	secret := *m.DeepCopy()
	used := now.Add(time.Minute)
	secret.Annotations[AnnotationLastUsed] = used.Format(time.RFC3339Nano)
	secret.Annotations[AnnotationNetwork] = `["example.com:443"]`
	if got := withRecord(info, secret); !got.LastUsed.Equal(used) || strings.Join(got.Network, " ") != "example.com:443" || got.Owner != spec.Owner {
		t.Errorf("withRecord = %+v: want last use %v and the recorded network", got, used)
	}
	if got := infoFromMeta(meta(sandbox.Spec{ID: "x"}, cfg, now)).Network; got != nil {
		t.Errorf("no network: got %v, want nil", got)
	}
}

// TestEventFailure: the kubelet's events about an image it cannot get
// fail a Create at once, naming the right image.
func TestEventFailure(t *testing.T) {
	t.Parallel()
	cfg := Config{RunnerImage: "sandgate/runner:latest"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName, Image: "img:1"}}}}
	ev := func(typ, reason, path, msg string) *corev1.Event {
		return &corev1.Event{Type: typ, Reason: reason, Message: msg, InvolvedObject: corev1.ObjectReference{FieldPath: path}}
	}
	tests := []struct {
		name    string
		event   *corev1.Event
		wantErr error
		wantMsg string
	}{
		{"never pull", ev("Warning", "ErrImageNeverPull", "spec.containers{sandbox}", `Container image "img:1" is not present with pull policy of Never`),
			sandbox.ErrImageMissing, "load-image.sh img:1"},
		{"pull failed", ev("Warning", "Failed", "spec.containers{sandbox}", `Failed to pull image "img:1": dial tcp: lookup registry`),
			sandbox.ErrImageMissing, "img:1"},
		{"runner image", ev("Warning", "ErrImageNeverPull", "spec.initContainers{install-runner}", "not present"),
			sandbox.ErrRunnerMissing, "load-image.sh sandgate/runner:latest"},
		{"other failure", ev("Warning", "Failed", "spec.containers{sandbox}", "Error: container create failed"), nil, ""},
		{"normal", ev("Normal", "Pulled", "spec.containers{sandbox}", "already present"), nil, ""},
	}
	for _, tt := range tests {
		err := eventFailure(tt.event, pod, cfg)
		if tt.wantErr == nil && err != nil || tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg)) {
			t.Errorf("%s: err = %v, want %v mentioning %q", tt.name, err, tt.wantErr, tt.wantMsg)
		}
	}
}
