package browser

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// MaxValue bounds an evaluate result's JSON.
const MaxValue = 4 << 20

func checkEvaluate(req protocol.BrowserRequest) error {
	if strings.TrimSpace(req.Expression) == "" {
		return invalidf("expression is empty; give a JavaScript expression, a function, or a function body with return")
	}
	return nil
}

// runEvaluate runs JavaScript in the page's own world, where its globals
// are. The expression may be an expression ("document.title"), a function
// ("() => document.title", which is called), or a function body with
// return statements ("const h = ...; return h.length"); await works in
// all of them. Promises are awaited; the result comes back as JSON.
func runEvaluate(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	expr := strings.TrimSpace(req.Expression)
	r, err := s.evaluate(expr)
	for _, retry := range []struct{ when, wrap string }{
		{"Illegal return", "(async () => {\n%s\n})()"},
		{"await is only valid", "(async () => (\n%s\n))()"},
		{"await is only valid", "(async () => {\n%s\n})()"}, // statements with await, no return
	} {
		if err == nil && r.ExceptionDetails != nil && strings.Contains(exceptionText(r.ExceptionDetails), retry.when) {
			r, err = s.evaluate(fmt.Sprintf(retry.wrap, expr))
		}
	}
	if err == nil && r.ExceptionDetails == nil && r.Result.Type == runtime.RemoteObjectTypeFunction {
		r, err = s.evaluate("(" + expr + ")()")
	}
	switch {
	case err != nil && (strings.Contains(err.Error(), "reference chain is too long") || strings.Contains(err.Error(), "couldn't be returned by value")):
		return protocol.BrowserResult{}, failf("the result cannot be returned as JSON (it refers to itself, like window or a DOM node, or holds a bigint); return plain data instead")
	case err != nil:
		return protocol.BrowserResult{}, wrapf(err, "evaluate")
	case r.ExceptionDetails != nil:
		msg := exceptionText(r.ExceptionDetails)
		if strings.Contains(msg, "has already been declared") {
			msg += " (declarations stay in the page between calls; wrap the code in { } or a function)"
		}
		return protocol.BrowserResult{}, failf("the expression threw: %s", msg)
	}
	res := protocol.BrowserResult{}
	res.Value, res.Message = jsonOf(r.Result)
	if len(res.Value) > MaxValue {
		return protocol.BrowserResult{}, failf("the result is %d bytes of JSON, above the %d MiB limit; return less (e.g. slice it)", len(res.Value), MaxValue>>20)
	}
	res.URL, res.Title = s.pageInfo()
	return res, nil
}

func (s *session) evaluate(expr string) (*runtime.EvaluateResult, error) {
	r, err := chromedp.Call(s.ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ReturnByValue: ptr(true), AwaitPromise: ptr(true), UserGesture: ptr(true),
	})
	return &r, err
}

// jsonOf turns a by-value result into JSON; values JSON cannot hold
// (undefined, NaN, Infinity, -0, bigint) become null or a string, and the
// note says so.
func jsonOf(r *runtime.RemoteObject) (json.RawMessage, string) {
	switch {
	case r.Type == runtime.RemoteObjectTypeUndefined:
		return json.RawMessage("null"), "the expression returned undefined"
	case r.UnserializableValue != "":
		b, _ := json.Marshal(string(r.UnserializableValue))
		return b, fmt.Sprintf("%s is not representable in JSON; returned as a string", r.UnserializableValue)
	case len(r.Value) == 0:
		b, _ := json.Marshal(r.Description)
		return b, fmt.Sprintf("a %s cannot be returned as JSON; returned its description", r.Type)
	}
	return json.RawMessage(r.Value), ""
}
