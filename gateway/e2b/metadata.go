package e2b

import "fmt"

// Bounds of a sandbox's metadata. It is kept in the provider's record
// (container labels, Kubernetes annotations, whose total is capped at
// 256 KiB) and sent back on every list, so it must stay small; E2B
// clients use it for a few ids and tags.
const (
	MaxMetadataKeys  = 32
	MaxMetadataKey   = 64  // bytes
	MaxMetadataValue = 512 // bytes
)

// checkMetadata says what is wrong with metadata, or "".
func checkMetadata(metadata map[string]string) string {
	if len(metadata) > MaxMetadataKeys {
		return fmt.Sprintf("metadata has %d keys; at most %d are kept", len(metadata), MaxMetadataKeys)
	}
	for k, v := range metadata {
		switch {
		case k == "":
			return "metadata has an empty key; name every value"
		case len(k) > MaxMetadataKey:
			return fmt.Sprintf("metadata key %.20q... is %d bytes long; keys are at most %d bytes", k, len(k), MaxMetadataKey)
		case len(v) > MaxMetadataValue:
			return fmt.Sprintf("metadata value of %q is %d bytes long; values are at most %d bytes", k, len(v), MaxMetadataValue)
		}
	}
	return ""
}
