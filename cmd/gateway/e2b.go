package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/auth/apikey"
	"github.com/sandgate/sandgate/gateway"
)

// setupE2B fills the E2B API's settings: its template aliases and the key
// that signs sandbox access tokens.
func setupE2B(cfg config, g *gateway.Config) error {
	if g.E2B.Disabled {
		return nil
	}
	templates := gateway.DefaultTemplates(g.Image)
	extra, err := templateAliases(cfg.E2BTemplates)
	if err != nil {
		return err
	}
	maps.Copy(templates, extra)
	g.E2B.Templates = templates
	if g.E2B.AccessKey, err = accessKey(cfg, g.VarDir); err != nil {
		return err
	}
	keys, err := apikey.Open(apiKeyFile(g.VarDir))
	if err != nil {
		return fmt.Errorf("open API keys: %w", err)
	}
	g.E2B.UseAPIKeys(keys)
	return nil
}

// templateAliases parses --e2b-templates.
func templateAliases(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range list(s) {
		id, image, ok := strings.Cut(pair, "=")
		if !ok || id == "" || image == "" {
			return nil, fmt.Errorf("--e2b-templates: %q is not ID=IMAGE", pair)
		}
		out[id] = image
	}
	return out, nil
}

// accessKey loads (or makes) the key of sandbox access tokens. Replicas
// of a Kubernetes deployment all hold the runner key, so without a key
// file of its own the access key is derived from that one.
func accessKey(cfg config, varDir string) ([]byte, error) {
	if cfg.E2BAccessKeyFile == "" && cfg.Provider == providerKubernetes {
		runnerKey := cfg.Kube.KeyFile
		if runnerKey == "" {
			runnerKey = filepath.Join(varDir, "runner.key")
		}
		key, err := loadOrMakeKey(runnerKey)
		if err != nil {
			return nil, err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("sandgate e2b access tokens"))
		return mac.Sum(nil), nil
	}
	path := cfg.E2BAccessKeyFile
	if path == "" {
		path = filepath.Join(varDir, "access.key")
	}
	return loadOrMakeKey(path)
}
