package kubernetes_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestConfigValidate covers what New refuses before it talks to the
// cluster.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*kubernetes.Config)
		wantErr bool
	}{
		{"defaults", func(*kubernetes.Config) {}, false},
		{"everything set", func(c *kubernetes.Config) {
			c.Image, c.RunnerImage, c.RuntimeClass, c.User, c.Instance = "a:1", "r:1", "gvisor", "1234:1234", "prod-1"
			c.GatewaySelector, c.GatewayNamespace = map[string]string{"app.kubernetes.io/name": "gw"}, "sandgate"
			c.ImagePullPolicy, c.CPURequest, c.MemoryRequest = corev1.PullNever, resource.MustParse("10m"), resource.MustParse("32Mi")
		}, false},
		{"no REST config", func(c *kubernetes.Config) { c.RESTConfig = nil }, true},
		{"no namespace", func(c *kubernetes.Config) { c.Namespace = "" }, true},
		{"bad namespace", func(c *kubernetes.Config) { c.Namespace = "Sand_Boxes" }, true},
		{"bad gateway namespace", func(c *kubernetes.Config) { c.GatewayNamespace = "a/b" }, true},
		{"short key", func(c *kubernetes.Config) { c.Key = make([]byte, 31) }, true},
		{"no key", func(c *kubernetes.Config) { c.Key = nil }, true},
		{"root uid", func(c *kubernetes.Config) { c.User = "0:1000" }, true},
		{"root gid", func(c *kubernetes.Config) { c.User = "1000:0" }, true},
		{"user name", func(c *kubernetes.Config) { c.User = "sandbox" }, true},
		{"uid beyond 32 bits", func(c *kubernetes.Config) { c.User = "4294967296:1000" }, true},
		{"instance with dot", func(c *kubernetes.Config) { c.Instance = "a.b" }, true},
		{"instance too long", func(c *kubernetes.Config) { c.Instance = string(make([]byte, 64)) }, true},
		{"bad selector value", func(c *kubernetes.Config) { c.GatewaySelector = map[string]string{"app": "a b"} }, true},
		{"bad pull policy", func(c *kubernetes.Config) { c.ImagePullPolicy = "Sometimes" }, true},
		{"workspace class", func(c *kubernetes.Config) { c.WorkspaceClass = "topolvm-provisioner" }, false},
		{"workspace in an emptyDir", func(c *kubernetes.Config) { c.WorkspaceClass = kubernetes.WorkspaceEmptyDir }, false},
		{"bad workspace class", func(c *kubernetes.Config) { c.WorkspaceClass = "Fast SSD" }, true},
		{"negative request", func(c *kubernetes.Config) { c.CPURequest = resource.MustParse("-1") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := baseConfig()
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate(%+v) = %v, want error %v", c, err, tt.wantErr)
			}
		})
	}
}
