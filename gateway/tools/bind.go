package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// A tool's arguments are bound to its argument struct, from which
// google/jsonschema-go also generates the tool's input schema, and
// the validator checks calls against that schema. Binder and generator
// must therefore read a struct alike: both promote the fields of an
// embedded struct as encoding/json does (args.go shares arguments so).
// Where encoding/json and the generator would part ways, argFields
// refuses the struct: an embedded field with a JSON name or "-", which
// encoding/json reads as one object member or ignores but the generator
// flattens all the same; an embedded pointer, which the binder would have
// to allocate (encoding/json cannot, for an unexported type); an embedded
// non-struct; and two fields with one JSON name, where encoding/json's
// depth rule and the generator's last-one-wins disagree. Such a struct
// is a programming error, which argsSchema makes a start-up panic.

// argsSchema sets the input schema of a tool whose arguments bind to T,
// generated from T (a field's `jsonschema` tag is its description),
// after checking that the binder reads T as the generator does. Tools
// are built at start-up, so a struct argFields refuses, or one the
// generator cannot describe, stops the gateway there instead of failing
// every call of the tool.
func argsSchema[T any]() mcpapi.ToolOption {
	if _, err := argFields(reflect.TypeFor[T]()); err != nil {
		panic("gateway: " + err.Error())
	}
	raw, err := generateSchema[T]()
	if err != nil {
		panic(fmt.Sprintf("gateway: input schema of %s: %v", reflect.TypeFor[T](), err))
	}
	return mcpapi.WithRawInputSchema(raw)
}

// generateSchema returns the JSON schema of T as google/jsonschema-go
// writes it: struct fields in order, a field's `jsonschema` tag as its
// description, additional properties refused.
func generateSchema[T any]() (json.RawMessage, error) {
	schema, err := jsonschema.For[T](&jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		return nil, err
	}
	return json.Marshal(schema)
}

// bindArgs fills the struct *v from decoded JSON arguments as
// json.Unmarshal would from their text. String members, which carry the
// large payloads (file contents, code), are assigned without being
// encoded and decoded again; the rest go through encoding/json one member
// at a time.
func bindArgs(args map[string]any, v any) error {
	rv := reflect.ValueOf(v).Elem()
	fields, err := argFields(rv.Type())
	if err != nil {
		return err
	}
	// Case-insensitive matches first, so that an exact one, set after,
	// wins when both are present.
	for _, exact := range []bool{false, true} {
		for key, val := range args {
			index, ok := fields.byName(key)
			if _, isExact := fields[key]; !ok || isExact != exact {
				continue // unknown members are ignored, as json.Unmarshal does
			}
			if err := setField(rv.FieldByIndex(index), val); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return nil
}

func setField(f reflect.Value, val any) error {
	if s, isString := val.(string); isString && f.Kind() == reflect.String {
		f.SetString(s)
		return nil
	}
	raw, err := json.Marshal(val)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, f.Addr().Interface())
}

// fieldIndex maps JSON member names to struct field index paths, as
// reflect.Value.FieldByIndex takes them (longer than one for a field
// promoted from an embedded struct).
type fieldIndex map[string][]int

// byName finds a member as encoding/json does: the exact name first, then
// any case-insensitive match.
func (fi fieldIndex) byName(key string) ([]int, bool) {
	if index, ok := fi[key]; ok {
		return index, true
	}
	for name, index := range fi {
		if strings.EqualFold(name, key) {
			return index, true
		}
	}
	return nil, false
}

// argLayouts caches argFields by type: a struct's layout never changes.
var argLayouts sync.Map // reflect.Type → argLayout

type argLayout struct {
	fields fieldIndex
	err    error
}

// argFields lists the JSON members of the argument struct t, embedded
// structs' fields promoted, or says why t cannot be an argument struct.
func argFields(t reflect.Type) (fieldIndex, error) {
	if l, ok := argLayouts.Load(t); ok {
		return l.(argLayout).fields, l.(argLayout).err
	}
	fi := fieldIndex{}
	var err error
	if t.Kind() != reflect.Struct {
		err = errors.New("not a struct")
	} else {
		err = addArgFields(fi, t, nil)
	}
	if err != nil {
		fi, err = nil, fmt.Errorf("argument struct %s: %w", t, err)
	}
	argLayouts.Store(t, argLayout{fi, err})
	return fi, err
}

// addArgFields adds the fields of struct t, found at index path at, to fi.
func addArgFields(fi fieldIndex, t reflect.Type, at []int) error {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(slices.Clip(at), i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous {
			if err := embeddable(f, tag, name); err != nil {
				return err
			}
			if err := addArgFields(fi, f.Type, index); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fi[name]; dup {
			return fmt.Errorf("two fields have the JSON name %q", name)
		}
		fi[name] = index
	}
	return nil
}

// embeddable says why the embedded field f cannot be flattened alike by
// encoding/json, the schema generator and the binder, or returns nil.
func embeddable(f reflect.StructField, tag, name string) error {
	switch {
	case f.Type.Kind() == reflect.Pointer:
		return fmt.Errorf("embedded field %s is a pointer: embed the struct itself", f.Name)
	case f.Type.Kind() != reflect.Struct:
		return fmt.Errorf("embedded field %s is not a struct: give it a field name", f.Name)
	case tag == "-":
		return fmt.Errorf(`embedded field %s is tagged json:"-", which the schema generator does not honour: remove it or the tag`, f.Name)
	case name != "":
		return fmt.Errorf("embedded field %s has the JSON name %q, which the schema generator does not honour: give it a field name or drop the JSON name", f.Name, name)
	}
	return nil
}
