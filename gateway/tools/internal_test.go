package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

func TestOutputKeepsSplitUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"ascii", []string{"ab", "cd"}, "abcd"},
		{"two-byte rune split", []string{"caf\xc3", "\xa9!"}, "café!"},
		{"four-byte rune split thrice", []string{"\xf0", "\x9f\x98", "\x80"}, "😀"},
		{"invalid bytes replaced", []string{"a\xffb"}, "a\uFFFDb"},
		{"dangling start at the end", []string{"x\xe2\x82"}, "x\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &output{limit: 1 << 20}
			for _, c := range tt.chunks {
				o.stdout.WriteString(o.decode(0, []byte(c)))
			}
			o.flush()
			if got := o.stdout.String(); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnabledTools(t *testing.T) {
	t.Parallel()
	names := func(cfg Config) []string {
		var out []string
		for _, d := range enabledTools(cfg) {
			out = append(out, d.tool.Name)
		}
		return out
	}
	if got := names(Config{}); len(got) != 49 {
		t.Fatalf("default tool set has %d tools: %v", len(got), got)
	}
	got := names(Config{Categories: []string{catFiles}, DisabledTools: []string{"write_file", "edit_file", "make_directory", "move_path", "remove_path"}})
	if !slices.Equal(got, []string{"read_file", "list_directory", "file_info", "search_files", "search_code"}) {
		t.Fatalf("files minus writes: %v", got)
	}
	got = names(Config{EnabledTools: []string{"run_shell", "audit_log"}})
	if !slices.Equal(got, []string{"run_shell", "audit_log"}) {
		t.Fatalf("only run_shell and audit_log: %v", got)
	}
	open := func(cfg Config) []string {
		var out []string
		for _, d := range enabledTools(cfg) {
			if d.tool.Annotations.OpenWorldHint {
				out = append(out, d.tool.Name)
			}
		}
		return out
	}
	if got := open(Config{}); !slices.Equal(got, []string{"http_request"}) {
		t.Errorf("open-world tools without egress: %v, want only http_request", got)
	}
	p, err := egress.NewTenantPolicy([]string{"example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := open(Config{EgressPolicy: egress.Tenants{Deployment: p}}); !slices.Contains(got, "run_shell") || !slices.Contains(got, "browser_navigate") || slices.Contains(got, "read_file") {
		t.Errorf("open-world tools with egress: %v", got)
	}
	for _, d := range toolDefs() {
		if strings.TrimSpace(d.tool.Description) == "" {
			t.Errorf("tool %s lacks a description", d.tool.Name)
		}
	}
}

func TestOutputBoundsAnUntrustedRunner(t *testing.T) {
	t.Parallel()
	o := &output{limit: 1000}
	chunk := protocolChunk(strings.Repeat("y\n", 150)) // 300 bytes
	for range 10 {
		o.event(chunk)
	}
	if o.stdout.Len() != 900 || !o.over[0] {
		t.Fatalf("kept %d bytes (over=%v); want 900 and the overflow flagged", o.stdout.Len(), o.over[0])
	}
}

func protocolChunk(s string) protocol.Event {
	return protocol.Event{Type: protocol.EventStdout, Data: []byte(s)}
}

func TestCallLimits(t *testing.T) {
	t.Parallel()
	l := newCallLimits(60) // one a second, bursts of 60
	now := time.Unix(1000, 0)
	for i := range 60 {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("call %d of the burst refused", i+1)
		}
	}
	ok, wait := l.allow("a", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("61st call: ok=%v wait=%v; want refused for up to 1 s", ok, wait)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Fatal("tenant b paid for tenant a's calls")
	}
	if ok, _ := l.allow("a", now.Add(time.Second)); !ok {
		t.Fatal("a second later the bucket should have one call again")
	}
	l.prune(now.Add(10 * time.Minute))
	if len(l.buckets) != 0 {
		t.Fatalf("%d idle buckets left after prune", len(l.buckets))
	}
}

// TestCallTimeoutIsSentAsConfigured: the gateway sends its own call
// timeout, whatever its size, as the runner's timeout: --call-timeout 20m
// means 20 minutes, not the runner's old 10-minute cap.
func TestCallTimeoutIsSentAsConfigured(t *testing.T) {
	t.Parallel()
	cfg := Config{Limits: sandbox.Limits{CallTimeout: 20 * time.Minute}}
	c := &call{g: &Toolbox{cfg: cfg}}
	for _, tt := range []struct {
		asked float64
		want  time.Duration
	}{{0, 20 * time.Minute}, {30, 30 * time.Second}, {3600, 20 * time.Minute}} {
		ms, err := c.timeoutMs(tt.asked)
		if err != nil || time.Duration(ms)*time.Millisecond != tt.want {
			t.Errorf("timeout %v s with --call-timeout 20m: sent %d ms, %v; want %v", tt.asked, ms, err, tt.want)
		}
	}
}

// TestRunCodeSchemaNamesEveryLanguage keeps run_code's (static) schema
// description in step with protocol.Languages and their aliases.
func TestRunCodeSchemaNamesEveryLanguage(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(codeTools()[0].tool)
	if err != nil {
		t.Fatal(err)
	}
	var tool struct {
		InputSchema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatal(err)
	}
	desc := tool.InputSchema.Properties["language"].Description
	names := strings.NewReplacer("(", " ", ")", " ", ",", " ").Replace(protocol.LanguageNames())
	for _, name := range strings.Fields(names) {
		if !strings.Contains(desc, name) {
			t.Errorf("run_code's language description %q does not mention %q", desc, name)
		}
	}
}
