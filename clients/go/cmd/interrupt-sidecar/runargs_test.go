package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The same table as tests/run/test_direct.py holds the Python fast path to: which lines are
// exec'd at once without a token, and which are left to the full parser (so its checks stay).

func TestLinesWithoutAnythingToCheckExecAtOnce(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct{ args, command []string }{
		{[]string{"--", "ls", "-la"}, []string{"ls", "-la"}},
		{[]string{"ls", "-la", "--token", "x"}, []string{"ls", "-la", "--token", "x"}}, // after CMD, all is CMD's
		{[]string{"--tool-name", "grep", "--", "grep", "-r", "x"}, []string{"grep", "-r", "x"}},
		{[]string{"--tool-call-id=c7", "--address", "unix:///s", "--", "true"}, []string{"true"}},
		{[]string{"--", "--", "x"}, []string{"--", "x"}},
	} {
		if got := commandWithoutToken(tc.args); !reflect.DeepEqual(got, tc.command) {
			t.Errorf("commandWithoutToken(%q) = %q, want %q", tc.args, got, tc.command)
		}
	}
}

func TestAnythingElseGoesToTheFullParser(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, args := range [][]string{
		{},
		{"--"},
		{"--token", "t", "--", "true"}, // a token: supervised
		{"--token=", "--", "true"},     // an empty token is sent (and refused): not this path
		{"--behavior", "COOPERATIVE", "--", "true"}, // a checked option
		{"--signal", "BOGUS", "--", "true"},
		{"--kill-after", "soon", "--", "true"},
		{"--help"},
		{"--tool", "x", "--", "true"}, // an abbreviation: the parser decides
		{"--tool-name"},               // a missing value
		{"--tool-name", "--", "true"},
	} {
		if got := commandWithoutToken(args); got != nil {
			t.Errorf("commandWithoutToken(%q) = %q, want nil", args, got)
		}
	}
}

func TestATokenInTheEnvironmentMeansSupervised(t *testing.T) {
	t.Setenv(tokenEnv, "ist1.x.y")
	if got := commandWithoutToken([]string{"--", "true"}); got != nil {
		t.Errorf("with a token: %q, want nil", got)
	}
	t.Setenv(tokenEnv, "  ") // blank: no sidecar, as the full subcommand reads it
	if got := commandWithoutToken([]string{"--", "true"}); !reflect.DeepEqual(got, []string{"true"}) {
		t.Errorf("with a blank token: %q, want [true]", got)
	}
}

func TestTheParserReadsLinesAsArgparseDoes(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		values  map[string]string
		command []string
		err     string
	}{
		{args: []string{"--beh", "cooperative", "--", "x"}, values: map[string]string{"--behavior": "COOPERATIVE"}, command: []string{"x"}},
		{args: []string{"--signal", "-5", "x"}, values: map[string]string{"--signal": "-5"}, command: []string{"x"}},
		{args: []string{"--token=", "x", "--token", "y"}, values: map[string]string{"--token": ""}, command: []string{"x", "--token", "y"}},
		{args: []string{"--tool", "x"}, err: "ambiguous option: --tool could match --tool-name, --tool-call-id"},
		{args: []string{"--tool-name", "--", "x"}, err: "argument --tool-name: expected one argument"},
		{args: []string{"--bogus", "x"}, err: "unrecognized arguments: --bogus"},
		{args: []string{"--behavior", "thread_interrupt"}, err: "invalid choice: 'THREAD_INTERRUPT'"},
	} {
		parsed, err := parseRunArgs(tc.args)
		if tc.err != "" {
			var usage *usageError
			if !errors.As(err, &usage) || !strings.Contains(usage.Error(), tc.err) {
				t.Errorf("parseRunArgs(%q) = %v, want an error with %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(parsed.values, tc.values) || !reflect.DeepEqual(parsed.command, tc.command) {
			t.Errorf("parseRunArgs(%q) = %+v, %v", tc.args, parsed, err)
		}
	}
}

func TestSignalsAreReadAsPythonReadsThem(t *testing.T) {
	for text, want := range map[string]int{"TERM": 15, "sigint": 2, "9": 9, "SIGRTMAX": 64, "iot": 6} {
		if got, err := parseSignal(text); err != nil || int(got) != want {
			t.Errorf("parseSignal(%q) = %v, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"0", "32", "65", "BOGUS", "-5", ""} {
		if _, err := parseSignal(text); err == nil {
			t.Errorf("parseSignal(%q) accepted", text)
		}
	}
}
