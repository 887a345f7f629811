package main

import (
	"slices"
	"strings"
	"testing"
)

func TestListFlagKeepsCommaValues(t *testing.T) {
	var l listFlag
	if err := l.Set("--tools=files,exec,--memory=1GiB"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"--tools=files,exec", "--memory=1GiB"}; !slices.Equal(l, want) {
		t.Fatalf("got %q, want %q", l, want)
	}
}

func TestGatewayFlagsMustStayOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		ok    bool
	}{
		{[]string{"--addr=127.0.0.1:9000"}, true},
		{[]string{"--metrics-addr", "[::1]:9464"}, true},
		{[]string{"--metrics-addr="}, true},
		{[]string{"-addr", "0.0.0.0:8080"}, false},
		{[]string{"--metrics-addr=192.0.2.7:9464"}, false},
	} {
		err := checkGatewayFlags(tc.flags)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.flags, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%q: error %q does not say loopback", tc.flags, err)
		}
	}
}

func TestSumOfAddsEverySeries(t *testing.T) {
	m := map[string]float64{
		`sandgate_pool_ready{image="a"}`: 3,
		`sandgate_pool_ready{image="b"}`: 4,
		`sandgate_pool_readyness`:        100,
	}
	if got := sumOf(m, "sandgate_pool_ready"); got != 7 {
		t.Fatalf("sum %v, want 7", got)
	}
}
