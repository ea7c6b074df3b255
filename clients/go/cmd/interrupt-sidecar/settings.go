package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
)

// What the native commands share with interrupt_sidecar.settings: the names of the
// environment variables, a bad value's error and the duration grammar.

// The environment variables the native binary reads or writes, named once for every
// command (tests/test_settings.py checks each name is in Python's table). The client
// library reads INTERRUPT_SIDECAR_ADDRESS itself, through ResolveAddress, and owns the
// attach token's name.
const (
	// tokenEnv is the attach token of `run` (settings.TOKEN); `begin` prints it in its
	// export lines.
	tokenEnv = sidecar.TokenEnv
	// authTokenEnv is the coordinator credential a daemon's TCP listener requires
	// (settings.AUTH_TOKEN): the coordinator commands and `run`'s registration send it.
	authTokenEnv = "INTERRUPT_SIDECAR_AUTH_TOKEN"
	// executionEnv is the execution id `begin` exports (settings.EXECUTION_ENV).
	executionEnv = "INTERRUPT_SIDECAR_EXECUTION"
	// pythonEnv names the Python interpreter other subcommands are handed to, run as
	// `$INTERRUPT_SIDECAR_PYTHON -m interrupt_sidecar ARGS` (settings.PYTHON).
	pythonEnv = "INTERRUPT_SIDECAR_PYTHON"
)

// configError is a bad value found before anything is sent (Python's ConfigError): one
// line, "interrupt-sidecar COMMAND: MESSAGE", exit 2.
type configError string

func (e configError) Error() string { return string(e) }

// durationTerm is one term of settings.parse_duration's grammar: '500ms', '1.5s', '1m30s'.
var durationTerm = regexp.MustCompile(`^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)`)

var unitNanoseconds = map[string]float64{
	"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
}

// parseDuration is settings.parse_duration: the text (spaces around it ignored), each
// term truncated to a whole nanosecond as int(float(value) * unit). A term beyond
// time.Duration's range is refused (Python's integers have none; no grace or budget
// needs 292 years).
func parseDuration(text, name string) (time.Duration, error) {
	trimmed := strings.TrimSpace(text)
	var total time.Duration
	rest := trimmed
	for rest != "" {
		term := durationTerm.FindStringSubmatch(rest)
		if term == nil {
			break
		}
		value, err := strconv.ParseFloat(term[1], 64)
		ns := value * unitNanoseconds[term[2]]
		if err != nil || ns >= math.MaxInt64 || float64(total)+ns >= math.MaxInt64 {
			break
		}
		total += time.Duration(ns)
		rest = rest[len(term[0]):]
	}
	if trimmed == "" || rest != "" {
		return 0, configError(fmt.Sprintf("%s: %s is not a duration (examples: 500ms, 2s, 1m30s)", name, pythonRepr(trimmed)))
	}
	return total, nil
}
