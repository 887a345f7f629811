package kubernetes

import (
	"slices"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/sandbox"
)

func TestIsolationProbe(t *testing.T) {
	for host, want := range map[string]string{
		"https://10.244.0.1:16443":         "10.244.0.1:16443",
		"https://10.96.0.1":                "10.96.0.1:443",
		"10.96.0.1:443":                    "10.96.0.1:443",
		"http://[fd00::1]:8080":            "[fd00::1]:8080",
		"https://kube.example:6443/prefix": "kube.example:6443",
		"":                                 "",
	} {
		if got := (Config{RESTConfig: &rest.Config{Host: host}}).withDefaults().IsolationProbe; got != want {
			t.Errorf("probe for API server %q = %q, want %q", host, got, want)
		}
	}
	if got := (Config{RESTConfig: &rest.Config{Host: "https://10.96.0.1"}, IsolationProbe: "-"}).withDefaults().IsolationProbe; got != "" {
		t.Errorf(`IsolationProbe "-" = %q, want none`, got)
	}
	cmd := runnerCommand(sandbox.Spec{}, Config{IsolationProbe: "10.244.0.1:16443"})
	if !slices.Equal(cmd[len(cmd)-2:], []string{"--await-blocked", "10.244.0.1:16443"}) {
		t.Errorf("runner command %v does not wait for the probe to be blocked", cmd)
	}
	if cmd := runnerCommand(sandbox.Spec{}, Config{}); slices.Contains(cmd, "--await-blocked") {
		t.Errorf("runner command %v waits for no probe", cmd)
	}
}
