package browser

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// worldJS is loaded into an isolated world of every document an action
// touches; it defines globalThis.__sandgate there.
//
//go:embed world.js
var worldJS string

const worldName = "sandgate"

// world returns the isolated world of the tab's current document and the
// document's loader id, creating the world when the document is new.
func (s *session) world() (runtime.ExecutionContextID, cdp.LoaderID, error) {
	tree, err := chromedp.Call(s.ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return 0, "", wrapf(err, "read the page's frame")
	}
	f := tree.FrameTree.Frame
	if s.t.world != 0 && s.t.worldDoc == f.LoaderID {
		return s.t.world, f.LoaderID, nil
	}
	w, err := chromedp.Call(s.ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: f.ID, WorldName: worldName})
	if err != nil {
		return 0, "", wrapf(err, "create an isolated world in the page")
	}
	r, err := chromedp.Call(s.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: worldJS, ContextID: w.ExecutionContextID})
	if err == nil && r.ExceptionDetails != nil {
		err = fmt.Errorf("%s", exceptionText(r.ExceptionDetails))
	}
	if err != nil {
		return 0, "", wrapf(err, "load sandgate's page script")
	}
	s.t.world, s.t.worldDoc = w.ExecutionContextID, f.LoaderID
	return s.t.world, f.LoaderID, nil
}

// js calls __sandgate.<fn>(args...) in the isolated world and returns the
// result: by value (JSON) unless byValue is false, when it is a handle.
func (s *session) js(fn string, byValue bool, args ...any) (*runtime.RemoteObject, error) {
	var b strings.Builder
	b.WriteString("__sandgate." + fn + "(")
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		b.Write(j)
	}
	b.WriteByte(')')
	for attempt := 0; ; attempt++ {
		w, _, err := s.world()
		if err != nil {
			return nil, err
		}
		r, err := chromedp.Call(s.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: b.String(), ContextID: w, ReturnByValue: &byValue})
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "Cannot find context") {
			s.t.world = 0 // the document was replaced under the same loader
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.ExceptionDetails != nil {
			return nil, fmt.Errorf("%s", exceptionText(r.ExceptionDetails))
		}
		return r.Result, nil
	}
}

// jsValue is js by value, decoded into v.
func (s *session) jsValue(v any, fn string, args ...any) error {
	r, err := s.js(fn, true, args...)
	if err != nil {
		return err
	}
	if len(r.Value) == 0 {
		return fmt.Errorf("__sandgate.%s returned %s", fn, r.Type)
	}
	return json.Unmarshal(r.Value, v)
}

// callOn calls __sandgate.<fn>(el, args...) on the element handle el in
// the isolated world and decodes the result into v (when not nil).
func (s *session) callOn(el runtime.RemoteObjectID, v any, fn string, args ...any) error {
	params := runtime.CallFunctionOnParams{
		FunctionDeclaration: "function(...a) { return __sandgate." + fn + "(this, ...a) }",
		ObjectID:            el,
		ReturnByValue:       ptr(true),
		AwaitPromise:        ptr(true),
	}
	for _, a := range args {
		j, err := json.Marshal(a)
		if err != nil {
			return err
		}
		params.Arguments = append(params.Arguments, &runtime.CallArgument{Value: j})
	}
	r, err := chromedp.Call(s.ctx, runtime.CallFunctionOn, params)
	if err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s", exceptionText(r.ExceptionDetails))
	}
	if v == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, v)
}

// exceptionText is the first line of a JavaScript exception, e.g.
// "ReferenceError: x is not defined".
func exceptionText(d *runtime.ExceptionDetails) string {
	text := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		text, _, _ = strings.Cut(d.Exception.Description, "\n    at ")
	} else if d.Exception != nil && len(d.Exception.Value) > 0 {
		text = "Uncaught " + string(d.Exception.Value)
	}
	return strings.TrimSpace(text)
}
