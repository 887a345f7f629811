package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// manifestsDir is the kustomization of deploy/kubernetes.
const manifestsDir = "kubernetes"

// The names deploy/kubernetes gives its namespaces and objects.
const (
	gatewayNamespace = "sandgate"
	sandboxNamespace = "sandgate-sandboxes"
	gatewayName      = "sandgate-gateway"
)

// kustomization is the part of a kustomization.yaml the tests read.
type kustomization struct {
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name      string   `json:"name"`
		Namespace string   `json:"namespace"`
		Envs      []string `json:"envs"`
	} `json:"configMapGenerator"`
}

// strict decodes Kubernetes objects and refuses unknown fields, so a
// misspelt or misplaced field fails the test instead of being dropped
// by the API server.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decodeAll decodes every document of a YAML stream into typed objects,
// with their apiVersion and kind set.
func decodeAll(t *testing.T, name string, r io.Reader) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	yr := k8syaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		objs = append(objs, obj)
	}
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

// readKustomization reads dir/kustomization.yaml.
func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// readEnvFile reads a kustomize env file: KEY=VALUE lines, # comments.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		env[k] = v
	}
	return env
}
