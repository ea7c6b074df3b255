package main

import (
	"testing"
	"time"
)

func TestParseDurationIsSettingsParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"500ms": 500 * time.Millisecond, " 1m30s ": 90 * time.Second, "1.5s": 1500 * time.Millisecond,
		"250us": 250 * time.Microsecond, "2µs": 2 * time.Microsecond, "1h": time.Hour,
		"0.0000000019s": 1, // each term truncated to whole nanoseconds, as int(float * unit)
	} {
		if got, err := parseDuration(in, "--grace"); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5", "5 s", "-1s", "1sx", "1.5x", "soon", "3000000h", "2000000h2000000h"} {
		if _, err := parseDuration(bad, "--grace"); err == nil {
			t.Errorf("parseDuration(%q) accepted", bad)
		}
	}
	_, err := parseDuration(" soon ", "--budget")
	if want := "--budget: 'soon' is not a duration (examples: 500ms, 2s, 1m30s)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
