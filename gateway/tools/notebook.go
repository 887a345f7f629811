package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// notebook is a Jupyter notebook (nbformat 4) as run_notebook needs it:
// every field it does not touch (metadata, attachments, cell ids, fields of
// later minor versions) is kept as the raw JSON it was read as, so writing
// it back loses nothing. Only a code cell's outputs and execution_count
// are replaced.
type notebook struct {
	top   map[string]json.RawMessage
	cells []nbCell
}

// nbCell is one cell: its raw fields, and what run_notebook reads.
type nbCell struct {
	raw    map[string]json.RawMessage
	kind   string // cell_type: code, markdown, raw
	source string
}

// parseNotebook decodes an nbformat 4 notebook.
func parseNotebook(data []byte) (*notebook, error) {
	nb := &notebook{}
	if err := json.Unmarshal(data, &nb.top); err != nil {
		return nil, fmt.Errorf("the file is not a notebook (JSON): %w", err)
	}
	if nb.top == nil {
		return nil, errors.New("the file is not a notebook: want a JSON object with cells, metadata and nbformat")
	}
	var major int
	if err := json.Unmarshal(nb.top["nbformat"], &major); err != nil || major != 4 {
		return nil, fmt.Errorf("run_notebook reads nbformat 4 notebooks; this one says nbformat %s (convert it with jupyter nbconvert --to notebook)", orNone(nb.top["nbformat"]))
	}
	if lang := kernelLanguage(nb.top["metadata"]); lang != "" && lang != "python" {
		return nil, fmt.Errorf("the notebook's kernel language is %q; run_notebook runs python notebooks only", lang)
	}
	var raws []map[string]json.RawMessage
	if err := json.Unmarshal(nb.top["cells"], &raws); err != nil {
		return nil, fmt.Errorf("the notebook's cells are not a list of objects: %w", err)
	}
	for i, raw := range raws {
		c := nbCell{raw: raw}
		if raw == nil {
			return nil, fmt.Errorf("cell %d is not an object", i)
		}
		if err := json.Unmarshal(raw["cell_type"], &c.kind); err != nil {
			return nil, fmt.Errorf("cell %d has no cell_type string", i)
		}
		src, err := multiline(raw["source"])
		if err != nil {
			return nil, fmt.Errorf("cell %d's source: %w", i, err)
		}
		c.source = src
		nb.cells = append(nb.cells, c)
	}
	return nb, nil
}

func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	return string(raw)
}

// kernelLanguage is the language the notebook's metadata names, if any.
func kernelLanguage(meta json.RawMessage) string {
	var m struct {
		Kernelspec struct {
			Language string `json:"language"`
		} `json:"kernelspec"`
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	}
	_ = json.Unmarshal(meta, &m) // a notebook without them is fine
	if m.Kernelspec.Language != "" {
		return strings.ToLower(m.Kernelspec.Language)
	}
	return strings.ToLower(m.LanguageInfo.Name)
}

// multiline decodes nbformat's multiline string: a string or a list of
// strings to join; absent is empty.
func multiline(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of strings")
	}
	return strings.Join(parts, ""), nil
}

// lines splits s into nbformat's on-disk multiline form, each line
// keeping its newline, as Jupyter writes it.
func lines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// set replaces one of the cell's fields.
func (c *nbCell) set(key string, v any) {
	b, err := marshalPlain(v)
	if err != nil {
		panic(fmt.Sprintf("gateway: marshal notebook field %s: %v", key, err)) // only our own values get here
	}
	c.raw[key] = b
}

// encode writes the notebook as nbformat does: keys sorted, one-space
// indent, no HTML escaping, a final newline.
func (nb *notebook) encode() ([]byte, error) {
	cells := make([]map[string]json.RawMessage, len(nb.cells))
	for i, c := range nb.cells {
		cells[i] = c.raw
	}
	b, err := marshalPlain(cells)
	if err != nil {
		return nil, fmt.Errorf("encode the notebook's cells: %w", err)
	}
	top := make(map[string]json.RawMessage, len(nb.top))
	for k, v := range nb.top {
		top[k] = v
	}
	top["cells"] = b
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(top); err != nil {
		return nil, fmt.Errorf("encode the notebook: %w", err)
	}
	return buf.Bytes(), nil
}

// marshalPlain is json.Marshal without HTML escapes: a notebook's text
// keeps its < and & as Jupyter writes them. Escapes made here would stay
// when the value is embedded as a RawMessage.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// nbOutput is one nbformat 4 output; the fields set depend on OutputType.
type nbOutput struct {
	OutputType     string         `json:"output_type"`
	Name           string         `json:"name,omitempty"`            // stream
	Text           []string       `json:"text,omitempty"`            // stream
	ExecutionCount *int           `json:"execution_count,omitempty"` // execute_result
	Data           map[string]any `json:"data,omitempty"`            // execute_result, display_data
	Metadata       *struct{}      `json:"metadata,omitempty"`        // execute_result, display_data
	Ename          string         `json:"ename,omitempty"`           // error
	Evalue         *string        `json:"evalue,omitempty"`          // error
	Traceback      []string       `json:"traceback,omitempty"`       // error
}

// cellOutputs turns one interpreter result into nbformat outputs, in the
// order a notebook shows them: streams, the result, figures, the error.
func cellOutputs(r protocol.InterpResult, count int) []nbOutput {
	out := []nbOutput{}
	if r.Stdout != "" {
		out = append(out, nbOutput{OutputType: "stream", Name: "stdout", Text: lines(r.Stdout)})
	}
	if r.Stderr != "" {
		out = append(out, nbOutput{OutputType: "stream", Name: "stderr", Text: lines(r.Stderr)})
	}
	if r.HasResult {
		out = append(out, nbOutput{OutputType: "execute_result", ExecutionCount: &count, Metadata: &struct{}{},
			Data: map[string]any{"text/plain": lines(r.Result)}})
	}
	for _, png := range r.Figures {
		if !bytes.HasPrefix(png, pngMagic) {
			continue
		}
		out = append(out, nbOutput{OutputType: "display_data", Metadata: &struct{}{},
			Data: map[string]any{"image/png": base64.StdEncoding.EncodeToString(png), "text/plain": []string{"<Figure>"}}})
	}
	if r.Error != "" || r.TimedOut {
		out = append(out, errorOutput(r))
	}
	if r.Message != "" {
		out = append(out, nbOutput{OutputType: "stream", Name: "stderr", Text: lines("[sandgate: " + r.Message + "]\n")})
	}
	return out
}

// errorOutput is the error output of a failed cell: the exception's name,
// its message (the traceback's last line after "Name: "), the traceback's
// lines.
func errorOutput(r protocol.InterpResult) nbOutput {
	name, tb := r.ErrorName, strings.TrimRight(r.Error, "\n")
	if name == "" {
		name = "TimeoutError" // timed out before the interpreter could say
	}
	if tb == "" {
		tb = name + ": " + r.Message
	}
	value := ""
	tbLines := strings.Split(tb, "\n")
	last := tbLines[len(tbLines)-1]
	// A module's exception is written qualified (pkg.Error: msg).
	if i := strings.Index(last, name+":"); i >= 0 {
		value = strings.TrimSpace(last[i+len(name)+1:])
	}
	return nbOutput{OutputType: "error", Ename: name, Evalue: &value, Traceback: tbLines}
}
