package manifest

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles a JSON Schema document. References to anything
// outside the document are refused: the library's default loader would
// read files of the gateway's host for a "$ref": "file:///...", and a
// manifest must not make the gateway read or fetch anything.
func Compile(doc []byte) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const url = "manifest:///schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// noLoader refuses every external schema; the draft meta-schemas are
// built into the library and need no loader.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is outside the manifest; references to other files or URLs are not allowed", url)
}
