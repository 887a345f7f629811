package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// A tool's arguments, decoded once at the edge (toolcall.go), are bound
// to the tool's argument struct here.

// bindArgs fills the struct *v from decoded JSON arguments as
// json.Unmarshal would from their text. String members, which carry the
// large payloads (file contents, code), are assigned without being
// encoded and decoded again; the rest go through encoding/json one member
// at a time.
func bindArgs(args map[string]any, v any) error {
	rv := reflect.ValueOf(v).Elem()
	fields := argFields(rv.Type())
	// Case-insensitive matches first, so that an exact one, set after,
	// wins when both are present.
	for _, exact := range []bool{false, true} {
		for key, val := range args {
			i, ok := fields.byName(key)
			if _, isExact := fields[key]; !ok || isExact != exact {
				continue // unknown members are ignored, as json.Unmarshal does
			}
			if err := setField(rv.Field(i), val); err != nil {
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

// fieldIndex maps JSON member names to struct field indexes.
type fieldIndex map[string]int

// byName finds a member as encoding/json does: the exact name first, then
// any case-insensitive match.
func (fi fieldIndex) byName(key string) (int, bool) {
	if i, ok := fi[key]; ok {
		return i, true
	}
	for name, i := range fi {
		if strings.EqualFold(name, key) {
			return i, true
		}
	}
	return 0, false
}

// argFields lists t's exported fields by their JSON names. The argument
// structs are flat (no embedded structs, which this does not follow).
func argFields(t reflect.Type) fieldIndex {
	fi := fieldIndex{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fi[name] = i
	}
	return fi
}
