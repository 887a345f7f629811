package kubernetes

import rbacv1 "k8s.io/api/rbac/v1"

// Permissions are the API permissions the provider uses in
// Config.Namespace, and all it needs: pods and their Secrets made,
// read, watched until they run, patched with a sandbox's last use and
// allowlist (record.go), and deleted; each sandbox's workspace claim
// made, read (its size, at a pause) and deleted; the instance's NetworkPolicy made
// or restored; events watched so that a missing image fails a Create at
// once (optional: without it the pod's status says so, later). The
// Role in deploy/kubernetes grants exactly these; a test there compares.
var Permissions = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "update", "delete", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "create", "delete"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "create", "update"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"watch"}},
}
