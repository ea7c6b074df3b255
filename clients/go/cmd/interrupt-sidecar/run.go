package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
)

// `interrupt-sidecar run [OPTIONS] -- CMD ARGS...`, natively: the Python implementation
// (sidecar/interrupt_sidecar/wrapper/) is the specification, and tests/run holds both to
// the same assertions. Without a token CMD is exec'd (same pid); with one it runs gated in
// its own process group until that group is registered with the daemon (supervise.go).

// runOptions is what `run` was asked to do, flags and environment resolved.
type runOptions struct {
	command    []string
	address    string
	token      string
	behavior   sidecar.Behavior
	toolName   string
	toolCallID string
	signal     syscall.Signal
	killAfter  time.Duration
	// hasKillAfter: --kill-after was given (its zero is "at once", not "the grace").
	hasKillAfter bool
}

// say prints one line of the wrapper's own on stderr, as the Python wrapper does.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "interrupt-sidecar run: "+format+"\n", args...)
}

// runCommand implements `interrupt-sidecar run` and returns its exit code (when it does
// not become CMD).
func runCommand(args []string) int {
	// The fast path: no token and nothing to check, so exec CMD before anything else.
	if command := commandWithoutToken(args); command != nil {
		return execCommand(command)
	}
	parsed, err := parseRunArgs(args)
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(os.Stderr, usage.Error())
		return exitUsage
	}
	if parsed.help {
		// The help text is rendered from the Python tables (settings, exit codes): one source.
		return delegateToPython(append([]string{"run"}, args...))
	}
	// The token makes the command a tool: an explicit --token "" is sent (and refused by the
	// daemon); an empty variable means "no sidecar".
	token, explicit := parsed.value("--token")
	if !explicit {
		token = strings.TrimSpace(os.Getenv(tokenEnv))
	}
	options, err := resolveOptions(parsed, token)
	if err != nil {
		say("%s", err)
		return exitUsage
	}
	if !explicit && token == "" {
		return execCommand(options.command)
	}
	return runSupervised(options)
}

// resolveOptions checks the values in the Python wrapper's order (command.py's _options),
// so a line with several mistakes reports the same one first.
func resolveOptions(parsed *runArgs, token string) (*runOptions, error) {
	if len(parsed.command) == 0 {
		return nil, configError("name the command to run: interrupt-sidecar run [OPTIONS] -- CMD ARGS...")
	}
	options := &runOptions{command: parsed.command, token: token, behavior: sidecar.ExternallyTerminated}
	if name, ok := parsed.value("--behavior"); ok {
		options.behavior = map[string]sidecar.Behavior{
			"EXTERNALLY_TERMINATED": sidecar.ExternallyTerminated,
			"COOPERATIVE":           sidecar.Cooperative,
			"NON_INTERRUPTIBLE":     sidecar.NonInterruptible,
		}[name]
	}
	if text, ok := parsed.value("--kill-after"); ok {
		if options.behavior != sidecar.ExternallyTerminated {
			return nil, configError("--kill-after applies to EXTERNALLY_TERMINATED only (nothing is SIGKILLed otherwise)")
		}
		duration, err := parseDuration(text, "--kill-after")
		if err != nil {
			return nil, err
		}
		options.killAfter, options.hasKillAfter = duration, true
	}
	address, _ := parsed.value("--address")
	options.address = sidecar.ResolveAddress(address)
	options.toolName, _ = parsed.value("--tool-name")
	if options.toolName == "" {
		// os.path.basename: what follows the last "/" (so "dir/" names nothing).
		options.toolName = options.command[0][strings.LastIndex(options.command[0], "/")+1:]
	}
	options.toolCallID, _ = parsed.value("--tool-call-id")
	signalText, ok := parsed.value("--signal")
	if !ok {
		signalText = "TERM"
	}
	signal, err := parseSignal(signalText)
	if err != nil {
		return nil, err
	}
	options.signal = signal
	return options, nil
}

// parseSignal is command.py's parse_signal: "TERM", "SIGTERM" or "15" → 15.
func parseSignal(text string) (syscall.Signal, error) {
	if text != "" && strings.Trim(text, "0123456789") == "" {
		number, err := strconv.Atoi(text)
		if err != nil || !validSignal(number) {
			return 0, configError(fmt.Sprintf("--signal %s: not a signal number on this host", text))
		}
		return syscall.Signal(number), nil
	}
	name := strings.ToUpper(text)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if number, ok := signalNumbers[name]; ok {
		return number, nil
	}
	return 0, configError(fmt.Sprintf("--signal %s: not a signal name (e.g. TERM, INT, HUP)", pythonRepr(text)))
}
