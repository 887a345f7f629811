package tools

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argValidator checks tool arguments against each tool's input schema
// before anything runs. mcp-go can do this too, but its messages print Go
// structs ("&{Missing:[command]}"); a model or a person must be able to
// read what to fix. Custom tools come and go while calls are checked
// (put, drop), hence the lock.
type argValidator struct {
	mu      sync.RWMutex
	schemas map[string]*jsonschema.Schema
	printer *message.Printer
}

func newArgValidator(defs []toolDef) (*argValidator, error) {
	v := &argValidator{schemas: map[string]*jsonschema.Schema{}, printer: message.NewPrinter(language.English)}
	c := jsonschema.NewCompiler()
	for _, d := range defs {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.tool.InputSchema))
		if err != nil {
			return nil, fmt.Errorf("parse %s input schema: %w", d.tool.Name, err)
		}
		url := "tool:" + d.tool.Name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("add %s input schema: %w", d.tool.Name, err)
		}
		if v.schemas[d.tool.Name], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("compile %s input schema: %w", d.tool.Name, err)
		}
	}
	return v, nil
}

// check returns nil when args fit tool's schema, or an error listing every
// problem as "where: what". args must be decoded JSON (maps, slices,
// float64, string, bool, nil), which the validator reads as it is.
func (v *argValidator) check(tool string, args map[string]any) error {
	v.mu.RLock()
	sch := v.schemas[tool]
	v.mu.RUnlock()
	if sch == nil {
		return nil
	}
	if args == nil {
		args = map[string]any{}
	}
	err := sch.Validate(args)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	return fmt.Errorf("invalid arguments for %s: %s (see the tool's input schema)", tool, v.explain(verr))
}

// explain lists a validation error's problems as "where: what; ...".
func (v *argValidator) explain(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err.Error()
	}
	var problems []string
	v.collect(verr, &problems)
	return strings.Join(problems, "; ")
}

// put sets a tool's compiled input schema, replacing any earlier one.
func (v *argValidator) put(tool string, sch *jsonschema.Schema) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.schemas[tool] = sch
}

// drop forgets tools' schemas.
func (v *argValidator) drop(tools ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, t := range tools {
		delete(v.schemas, t)
	}
}

func (v *argValidator) collect(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		where := "arguments"
		if len(e.InstanceLocation) > 0 {
			where = strings.Join(e.InstanceLocation, ".")
		}
		*out = append(*out, where+": "+e.ErrorKind.LocalizedString(v.printer))
		return
	}
	for _, c := range e.Causes {
		v.collect(c, out)
	}
}
