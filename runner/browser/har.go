package browser

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/sandgate/sandgate/runner/protocol"
)

// maxPostData bounds a request body kept in a recording.
const maxPostData = 64 << 10

// recorder collects the requests of every tab from the Network domain's
// events (which chromedp enables on every tab) while a recording runs.
// Bodies of responses are not kept: the HAR has their sizes only.
type recorder struct {
	path    string
	began   time.Time
	entries []*harRecord
	open    map[string]*harRecord // by tab and request id, until it ends
	dropped int                   // requests beyond MaxHAREntries
}

// harRecord is one request as the events told it.
type harRecord struct {
	started  time.Time // wall clock
	startTS  float64   // the browser's monotonic seconds
	endTS    float64   // 0 while it runs
	req      *network.Request
	resType  network.ResourceType
	resp     *network.Response
	size     int64 // decoded body bytes
	encoded  float64
	errText  string
	finished bool
}

func newRecorder(path string) *recorder {
	return &recorder{path: path, began: time.Now(), open: map[string]*harRecord{}}
}

// event follows one Network event of the tab tabID.
func (r *recorder) event(tabID string, ev any) {
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		key := tabID + "/" + string(e.RequestID)
		if prev := r.open[key]; prev != nil && e.RedirectResponse != nil {
			// A redirect reuses the request id: the hop ends here.
			prev.resp, prev.endTS, prev.finished = e.RedirectResponse, float64(e.Timestamp), true
			delete(r.open, key)
		}
		if len(r.entries) >= protocol.MaxHAREntries {
			r.dropped++
			return
		}
		rec := &harRecord{started: time.UnixMicro(int64(float64(e.WallTime) * 1e6)), startTS: float64(e.Timestamp), req: e.Request, resType: e.Type}
		r.entries = append(r.entries, rec)
		r.open[key] = rec
	case *network.EventResponseReceived:
		if rec := r.open[tabID+"/"+string(e.RequestID)]; rec != nil {
			rec.resp, rec.resType = e.Response, e.Type
		}
	case *network.EventDataReceived:
		if rec := r.open[tabID+"/"+string(e.RequestID)]; rec != nil {
			rec.size += e.DataLength
		}
	case *network.EventLoadingFinished:
		key := tabID + "/" + string(e.RequestID)
		if rec := r.open[key]; rec != nil {
			rec.endTS, rec.encoded, rec.finished = float64(e.Timestamp), e.EncodedDataLength, true
			delete(r.open, key)
		}
	case *network.EventLoadingFailed:
		key := tabID + "/" + string(e.RequestID)
		if rec := r.open[key]; rec != nil {
			rec.endTS, rec.errText, rec.finished = float64(e.Timestamp), e.ErrorText, true
			if e.BlockedReason != "" {
				rec.errText += " (" + string(e.BlockedReason) + ")"
			}
			delete(r.open, key)
		}
	}
}

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), the parts a
// recording fills.
type (
	harFile struct {
		Log harLog `json:"log"`
	}
	harLog struct {
		Version string     `json:"version"`
		Creator harNamed   `json:"creator"`
		Pages   []any      `json:"pages"`
		Entries []harEntry `json:"entries"`
		Comment string     `json:"comment,omitempty"`
	}
	harNamed struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
		Value   string `json:"value,omitempty"`
	}
	harEntry struct {
		StartedDateTime string      `json:"startedDateTime"`
		Time            float64     `json:"time"`
		Request         harRequest  `json:"request"`
		Response        harResponse `json:"response"`
		Cache           struct{}    `json:"cache"`
		Timings         harTimings  `json:"timings"`
		ServerIPAddress string      `json:"serverIPAddress,omitempty"`
		ResourceType    string      `json:"_resourceType,omitempty"`
		Error           string      `json:"_error,omitempty"`
		Comment         string      `json:"comment,omitempty"`
	}
	harRequest struct {
		Method      string      `json:"method"`
		URL         string      `json:"url"`
		HTTPVersion string      `json:"httpVersion"`
		Cookies     []any       `json:"cookies"`
		Headers     []harNamed  `json:"headers"`
		QueryString []harNamed  `json:"queryString"`
		PostData    *harPayload `json:"postData,omitempty"`
		HeadersSize int         `json:"headersSize"`
		BodySize    int         `json:"bodySize"`
	}
	harResponse struct {
		Status      int64      `json:"status"`
		StatusText  string     `json:"statusText"`
		HTTPVersion string     `json:"httpVersion"`
		Cookies     []any      `json:"cookies"`
		Headers     []harNamed `json:"headers"`
		Content     harPayload `json:"content"`
		RedirectURL string     `json:"redirectURL"`
		HeadersSize int        `json:"headersSize"`
		BodySize    int64      `json:"bodySize"`
	}
	harPayload struct {
		Size     int64  `json:"size"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text,omitempty"`
	}
	harTimings struct {
		Blocked float64 `json:"blocked"`
		DNS     float64 `json:"dns"`
		Connect float64 `json:"connect"`
		SSL     float64 `json:"ssl"`
		Send    float64 `json:"send"`
		Wait    float64 `json:"wait"`
		Receive float64 `json:"receive"`
	}
)

// har builds the recording's HAR.
func (r *recorder) har() harFile {
	entries := make([]harEntry, 0, len(r.entries))
	for _, rec := range r.entries {
		entries = append(entries, rec.entry())
	}
	return harFile{Log: harLog{Version: "1.2", Creator: harNamed{Name: "sandgate", Version: "1"}, Pages: []any{}, Entries: entries}}
}

func (rec *harRecord) entry() harEntry {
	e := harEntry{StartedDateTime: rec.started.UTC().Format("2006-01-02T15:04:05.000Z"), ResourceType: strings.ToLower(string(rec.resType)), Error: rec.errText}
	e.Request = harRequest{Method: rec.req.Method, URL: rec.req.URL + rec.req.URLFragment, HTTPVersion: "HTTP/1.1", Cookies: []any{},
		Headers: harHeaders(rec.req.Headers), QueryString: query(rec.req.URL), HeadersSize: -1}
	if body := postData(rec.req); body != "" {
		e.Request.BodySize = len(body)
		e.Request.PostData = &harPayload{Size: int64(len(body)), MimeType: headerValue(rec.req.Headers, "Content-Type"), Text: cutText(body, maxPostData)}
	}
	e.Response = harResponse{Cookies: []any{}, Headers: []harNamed{}, HTTPVersion: "", HeadersSize: -1, BodySize: -1}
	if p := rec.resp; p != nil {
		e.Response.Status, e.Response.StatusText, e.Response.Headers = p.Status, p.StatusText, harHeaders(p.Headers)
		e.Response.HTTPVersion = strings.ToUpper(p.Protocol)
		e.Response.Content = harPayload{Size: rec.size, MimeType: p.MimeType}
		e.Response.RedirectURL = headerValue(p.Headers, "Location")
		e.ServerIPAddress = p.RemoteIPAddress
		if rec.finished && rec.encoded > 0 {
			e.Response.BodySize = int64(rec.encoded)
		}
	}
	if e.Request.HTTPVersion = e.Response.HTTPVersion; e.Request.HTTPVersion == "" {
		e.Request.HTTPVersion = "HTTP/1.1"
	}
	e.Time, e.Timings = rec.timings()
	if !rec.finished {
		e.Comment = "still loading when the recording stopped"
	}
	return e
}

// timings splits the request's time (ms) into HAR's phases from the
// response's resource timing; what the phases do not cover is blocked.
func (rec *harRecord) timings() (float64, harTimings) {
	t := harTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1}
	if !rec.finished {
		return 0, t
	}
	total := max((rec.endTS-rec.startTS)*1000, 0)
	var rt *network.ResourceTiming
	if rec.resp != nil {
		rt = rec.resp.Timing
	}
	if rt == nil {
		t.Wait = total
		return total, t
	}
	span := func(a, b float64) float64 {
		if a < 0 || b < a {
			return -1
		}
		return b - a
	}
	t.DNS, t.Connect, t.SSL = span(rt.DNSStart, rt.DNSEnd), span(rt.ConnectStart, rt.ConnectEnd), span(rt.SslStart, rt.SslEnd)
	t.Send = max(rt.SendEnd-rt.SendStart, 0)
	t.Wait = max(rt.ReceiveHeadersEnd-rt.SendEnd, 0)
	t.Receive = max(rec.endTS*1000-(rt.RequestTime*1000+rt.ReceiveHeadersEnd), 0)
	used := t.Send + t.Wait + t.Receive + max(t.DNS, 0) + max(t.Connect, 0)
	t.Blocked = max(total-used, 0)
	return t.Blocked + used, t
}

func harHeaders(h network.Headers) []harNamed {
	out := []harNamed{}
	for name, v := range h {
		for _, line := range strings.Split(fmt.Sprint(v), "\n") {
			out = append(out, harNamed{Name: name, Value: line})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func headerValue(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

func query(raw string) []harNamed {
	out := []harNamed{}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	for name, values := range u.Query() {
		for _, v := range values {
			out = append(out, harNamed{Name: name, Value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func postData(req *network.Request) string {
	var b strings.Builder
	for _, e := range req.PostDataEntries {
		b.Write(e.Bytes)
		if b.Len() > maxPostData {
			break
		}
	}
	return b.String()
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
