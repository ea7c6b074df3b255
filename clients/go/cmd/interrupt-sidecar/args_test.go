package main

import (
	"errors"
	"reflect"
	"testing"
)

func parse(t *testing.T, command string, args ...string) parsedArgs {
	t.Helper()
	parsed, err := parseArgs(specs[command], args)
	if err != nil {
		t.Fatalf("%s %v: %v", command, args, err)
	}
	return parsed
}

func refused(t *testing.T, command string, args ...string) *usageError {
	t.Helper()
	_, err := parseArgs(specs[command], args)
	var usage *usageError
	if !errors.As(err, &usage) {
		t.Fatalf("%s %v: accepted (%v), argparse refuses it", command, args, err)
	}
	return usage
}

func TestFlagsAsArgparseReadsThem(t *testing.T) {
	p := parse(t, "begin", "--cont", "c", "--id=x", "--label", "a=1", "--label=b=2", "--grace", "-5", "--json")
	if p.text("--context") != "c" || p.text("--id") != "x" || !p.on("--json") || p.text("--grace") != "-5" {
		t.Errorf("parsed %v", p.values)
	}
	if !reflect.DeepEqual(p.values["--label"], []string{"a=1", "b=2"}) {
		t.Errorf("labels %v", p.values["--label"])
	}
	if p := parse(t, "interrupt", "--reason", "LEASE_LOST", "--", "-odd-id"); *p.positional != "-odd-id" {
		t.Errorf("positional %v", *p.positional)
	}
	if p := parse(t, "status", "--context", "c", "x", "--al"); *p.positional != "x" || !p.on("--all") {
		t.Errorf("status %v %v", p.values, p.positional)
	}
	if p := parse(t, "interrupt", "--detail", "a -b"); p.text("--detail") != "a -b" {
		t.Errorf("a value with a space is a value: %v", p.values)
	}
}

func TestWhatArgparseRefusesGoesToIt(t *testing.T) {
	// --address or --all, in argparse's words (the same parser as run's: argparse.go).
	if got := refused(t, "status", "--a").Error(); got != "interrupt-sidecar status: error: ambiguous option: --a could match --address, --all" {
		t.Errorf("ambiguous: %s", got)
	}
	refused(t, "status", "--json=yes")          // a switch takes no value
	refused(t, "interrupt", "x", "--detail")    // no value
	refused(t, "interrupt", "--detail", "-x")   // a value that looks like an option
	refused(t, "interrupt", "--reason", "SOON") // not a choice
	refused(t, "interrupt", "a", "b")           // one positional
	refused(t, "end")                           // a required positional
	refused(t, "begin", "positional")           // none at all
	if !refused(t, "begin", "--he").help || !refused(t, "end", "-h").help {
		t.Error("help is a usage error with help set")
	}
}
