package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds on what a manifest may declare: enough for any real tool, small
// enough that a manifest cannot make tools/list or a call's argv huge.
const (
	maxDescription = 4096
	maxArgs        = 256
	maxArgvBytes   = 64 << 10
)

// namePattern is MCP's tool name rule (letters, digits, _ - .), at most
// 64 characters so that clients that prefix a server name stay in their
// limits.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checker collects the problems of one manifest.
type checker struct {
	file     string
	opts     Options
	problems []error
}

func (c *checker) fail(field, format string, args ...any) {
	c.problems = append(c.problems, &FieldError{File: c.file, Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (c *checker) name(name string) {
	switch {
	case name == "":
		c.fail("name", "missing; give the tool's name, e.g. \"word_count\"")
	case !namePattern.MatchString(name):
		c.fail("name", "%q: use 1 to 64 letters, digits, '_', '-' or '.'", name)
	case slices.Contains(c.opts.Reserved, name):
		c.fail("name", "%q is a built-in tool's name; choose another", name)
	}
}

func (c *checker) description(d string) {
	switch {
	case strings.TrimSpace(d) == "":
		c.fail("description", "missing; say what the tool does, for the model that chooses it")
	case len(d) > maxDescription:
		c.fail("description", "%d bytes is above the %d byte limit", len(d), maxDescription)
	}
}

func (c *checker) command(argv []string) {
	size := 0
	for _, a := range argv {
		size += len(a)
		if strings.ContainsRune(a, 0) {
			c.fail("command", "an argument contains a NUL byte")
			return
		}
	}
	switch {
	case len(argv) == 0 || argv[0] == "":
		c.fail("command", "missing; give the argv to run in the sandbox, e.g. [\"python3\", \"/opt/tools/count.py\"]")
	case len(argv) > maxArgs:
		c.fail("command", "%d arguments is above the limit of %d", len(argv), maxArgs)
	case size > maxArgvBytes:
		c.fail("command", "%d bytes of arguments is above the limit of %d", size, maxArgvBytes)
	}
}

func (c *checker) scope(s string) {
	if !slices.Contains(c.opts.Scopes, s) {
		c.fail("scope", "%q: want one of %s (the scope a caller's token must carry)", s, strings.Join(c.opts.Scopes, ", "))
	}
}

func (c *checker) category(cat string) {
	if cat != CategoryCustom && !slices.Contains(c.opts.Categories, cat) {
		c.fail("category", "%q: want %s or one of %s", cat, CategoryCustom, strings.Join(c.opts.Categories, ", "))
	}
}

// timeout parses the manifest's timeout; "" is the gateway's call timeout.
func (c *checker) timeout(s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		c.fail("timeout", "%q: want a duration such as \"30s\" or \"2m\"", s)
	case d <= 0:
		c.fail("timeout", "%q: must be positive", s)
	case c.opts.MaxTimeout > 0 && d > c.opts.MaxTimeout:
		c.fail("timeout", "%s is above the gateway's call timeout of %s; lower it or raise --call-timeout", d, c.opts.MaxTimeout)
	default:
		return d
	}
	return 0
}

// schema checks and compiles an input or output schema: a JSON Schema
// object whose type is "object", as MCP requires of both.
func (c *checker) schema(field string, raw json.RawMessage, input bool) (json.RawMessage, *jsonschema.Schema) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		if input {
			c.fail(field, "missing; give a JSON Schema object, at least {\"type\": \"object\"}")
		}
		return nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		c.fail(field, "not a JSON object: %v", err)
		return nil, nil
	}
	if obj["type"] != "object" {
		c.fail(field, "\"type\" must be \"object\" (MCP tools take and give JSON objects)")
		return nil, nil
	}
	if input {
		props, _ := obj["properties"].(map[string]any)
		for _, r := range c.opts.ReservedArguments {
			if _, ok := props[r]; ok {
				c.fail(field, "property %q is reserved: the gateway adds it to every tool and does not pass it to the command", r)
			}
		}
	}
	if input && c.opts.CheckInputSchema != nil {
		if err := c.opts.CheckInputSchema(trimmed); err != nil {
			c.fail(field, "%v", err)
			return nil, nil
		}
	}
	sch, err := Compile(trimmed)
	if err != nil {
		c.fail(field, "invalid JSON Schema: %v", err)
		return nil, nil
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, trimmed) // valid: it was just decoded
	return compact.Bytes(), sch
}
