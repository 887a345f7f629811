package browser

import (
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// maxFields bounds one fill_form.
const maxFields = 100

func checkFillForm(req protocol.BrowserRequest) error {
	if len(req.Fields) == 0 {
		return invalidf("fields is empty; give each field's ref or selector and value")
	}
	if len(req.Fields) > maxFields {
		return invalidf("%d fields; fill at most %d per call", len(req.Fields), maxFields)
	}
	for i, f := range req.Fields {
		if err := checkRefOrSelector(f.Ref, f.Selector); err != nil {
			return invalidf("field %d: %v", i+1, err)
		}
	}
	return nil
}

// runFillForm fills each field the way its kind takes input: typing for
// text, choosing for selects, clicking for checkboxes and radios, and
// setting the value for date, colour and range inputs.
func runFillForm(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	seq, _, _ := s.t.nav.state()
	for i, f := range req.Fields {
		what := fmt.Sprintf("field %d (%s)", i+1, describeTarget(f.Ref, f.Selector))
		if err := s.fillField(f, what); err != nil {
			return protocol.BrowserResult{}, err
		}
	}
	return s.afterInput(fmt.Sprintf("filled %d fields", len(req.Fields)), seq)
}

func (s *session) fillField(f protocol.FormField, what string) error {
	el, err := s.element(f.Ref, f.Selector)
	if err != nil {
		return wrapf(err, "%s", what)
	}
	var kind string
	if err := s.callOn(el, &kind, "kind"); err != nil {
		return wrapf(err, "inspect %s", what)
	}
	switch {
	case kind == "text":
		return s.fillText(el, what, f.Value)
	case kind == "select":
		_, err := s.selectOptions(el, what, []string{f.Value})
		return err
	case kind == "check" || kind == "check-aria":
		want, ok := parseBool(f.Value)
		if !ok {
			return invalidf("%s is a checkbox or radio button: give value true or false, not %q", what, f.Value)
		}
		var checked bool
		if err := s.callOn(el, &checked, "isChecked"); err != nil {
			return wrapf(err, "inspect %s", what)
		}
		if checked == want {
			return nil
		}
		return s.click(el, what)
	case kind == "value":
		var problem string
		if err := s.callOn(el, &problem, "setValue", f.Value); err != nil {
			return wrapf(err, "set %s", what)
		}
		if problem != "" {
			return failf("%s: %s", what, problem)
		}
		return nil
	}
	return failf("%s is %s, which is not a form field this can fill", what, strings.TrimPrefix(kind, "other:"))
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "on", "yes", "checked", "1":
		return true, true
	case "false", "off", "no", "unchecked", "0", "":
		return false, true
	}
	return false, false
}
