package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// singleTypeSchema rewrites a generated JSON schema so that every `type`
// names one type. mcp-go's generator (google/jsonschema-go) writes Go
// slices and pointers as ["null", T]; that is legal JSON Schema, but
// clients that map tool schemas onto a single-type dialect (the OpenAPI
// subset of Gemini function declarations, which the MCP Inspector's
// --strict check warns about) reject the tool or drop the constraint.
//
// The null branch is dropped, not split into anyOf: for the gateway's
// arguments null never means anything that absence does not (a nil slice
// or pointer is an omitted argument), and a required array is never
// meant to be null. A client that sends null for one of these fields gets
// the validator's error naming the field.
//
// Everything else, key order included (the generator keeps struct field
// order, which models read), stays as it was.
func singleTypeSchema(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := copyDroppingNull(dec, &out); err != nil {
		// The schemas are generated from our own structs at start-up.
		panic(fmt.Sprintf("gateway: rewrite generated input schema: %v", err))
	}
	return out.Bytes()
}

// copyDroppingNull copies one JSON value from dec to out in order,
// replacing the value of each "type" key of the form ["null", T] with T.
func copyDroppingNull(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return writeJSON(out, tok)
	}
	out.WriteString(delim.String())
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if delim == '[' {
			if err := copyDroppingNull(dec, out); err != nil {
				return err
			}
			continue
		}
		if err := copyMember(dec, out); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return err
	}
	if delim == '{' {
		out.WriteByte('}')
	} else {
		out.WriteByte(']')
	}
	return nil
}

// copyMember copies one "key": value pair of an object.
func copyMember(dec *json.Decoder, out *bytes.Buffer) error {
	key, err := dec.Token()
	if err != nil {
		return err
	}
	if err := writeJSON(out, key); err != nil {
		return err
	}
	out.WriteByte(':')
	if key != "type" {
		return copyDroppingNull(dec, out)
	}
	// A property may itself be called "type": only an array value is a
	// type union; anything else is copied like any other value.
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var types []any
	if json.Unmarshal(v, &types) == nil {
		if t, ok := nullableType(types); ok {
			return writeJSON(out, t)
		}
	}
	inner := json.NewDecoder(bytes.NewReader(v))
	inner.UseNumber()
	return copyDroppingNull(inner, out)
}

func writeJSON(out *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	out.Write(b)
	return err
}

// nullableType returns T when types is exactly {"null", T}. Other unions
// are left alone: none is generated today, and collapsing one would change
// what the tool accepts.
func nullableType(types []any) (string, bool) {
	if len(types) != 2 {
		return "", false
	}
	a, _ := types[0].(string)
	b, _ := types[1].(string)
	switch {
	case a == "null" && b != "" && b != "null":
		return b, true
	case b == "null" && a != "" && a != "null":
		return a, true
	}
	return "", false
}
