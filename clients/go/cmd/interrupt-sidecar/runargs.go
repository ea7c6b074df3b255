package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The command line of `run`, read as the Python implementation's argparse parser reads it
// (sidecar/interrupt_sidecar/wrapper/command.py): the same options, abbreviations, value
// rules and error messages, so a line means the same thing, and fails the same way, under
// either implementation. tests/run/test_run.py holds both to the same assertions.

// tokenEnv is the attach token's variable (settings.TOKEN.env; the Go client's TokenEnv).
const tokenEnv = "INTERRUPT_SIDECAR_TOKEN"

// behaviors are the --behavior choices, in the Python parser's order (its error lists them).
var behaviors = []string{"EXTERNALLY_TERMINATED", "COOPERATIVE", "NON_INTERRUPTIBLE"}

// runOptionNames are the options of `run` that take a value, as argparse declares them
// (its abbreviation matching and "could match" messages follow this order).
var runOptionNames = []string{"--address", "--token", "--behavior", "--tool-name", "--tool-call-id", "--signal", "--kill-after"}

// uncheckedOptions take a value nothing checks when there is no token (direct.py's
// _UNCHECKED_OPTIONS): a line made of these and CMD is exec'd before any parsing.
var uncheckedOptions = map[string]bool{"--address": true, "--tool-name": true, "--tool-call-id": true}

// runUsage is what argparse prints above a usage error of `run` (at its default 80 columns).
const runUsage = `usage: interrupt-sidecar run [-h] [--address ADDRESS] [--token TOKEN]
                             [--behavior {EXTERNALLY_TERMINATED,COOPERATIVE,NON_INTERRUPTIBLE}]
                             [--tool-name TOOL_NAME]
                             [--tool-call-id TOOL_CALL_ID] [--signal SIGNAL]
                             [--kill-after DURATION]
                             ...
`

// topUsage is the top-level parser's, which reports arguments `run` did not recognise.
const topUsage = "usage: interrupt-sidecar [-h] [--version] COMMAND ...\n"

// runArgs is the parsed line: set holds the options given (a value may be empty).
type runArgs struct {
	values  map[string]string
	command []string
	help    bool
}

func (a *runArgs) value(name string) (string, bool) {
	v, ok := a.values[name]
	return v, ok
}

// usageError is argparse's error: the usage, then "PROG: error: MESSAGE"; exit 2.
type usageError struct {
	usage, prog, message string
}

func (e *usageError) Error() string {
	return e.usage + e.prog + ": error: " + e.message
}

// commandWithoutToken is direct.py's command_without_token: CMD ARGS when the line has no
// token and nothing to check, so it can be exec'd at once; nil when the full parser decides.
func commandWithoutToken(args []string) []string {
	if strings.TrimSpace(os.Getenv(tokenEnv)) != "" {
		return nil
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			if rest := args[i+1:]; len(rest) > 0 {
				return rest
			}
			return nil
		}
		if !strings.HasPrefix(arg, "-") {
			return args[i:] // argparse's REMAINDER: CMD and everything after it
		}
		name, _, hasValue := strings.Cut(arg, "=")
		if !uncheckedOptions[name] {
			return nil // --token, --behavior, --signal, --kill-after, --help, abbreviations
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return nil // a missing value: the full parser's usage error
			}
			i++
		}
	}
	return nil
}

var negativeNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// kind classifies one argument as argparse does: an option of `run` (name, and the value
// given with "=" if any), an unknown option ("O"), or a positional ("A").
type kind struct {
	option   string // "" unless a known option
	explicit *string
	unknown  bool
}

func classify(arg string) (kind, error) {
	if arg == "" || arg[0] != '-' || arg == "-" {
		return kind{}, nil
	}
	all := append([]string{"-h", "--help"}, runOptionNames...)
	for _, name := range all {
		if arg == name {
			return kind{option: name}, nil
		}
	}
	// NAME=VALUE, NAME a long option or a unique prefix of one (argparse's allow_abbrev; no
	// option of run is a prefix of another, so an exact name is never ambiguous).
	if strings.HasPrefix(arg, "--") {
		prefix, value, hasValue := strings.Cut(arg, "=")
		var matches []string
		for _, name := range all {
			if strings.HasPrefix(name, "--") && strings.HasPrefix(name, prefix) {
				matches = append(matches, name)
			}
		}
		if len(matches) > 1 {
			return kind{}, &usageError{runUsage, "interrupt-sidecar run",
				fmt.Sprintf("ambiguous option: %s could match %s", arg, strings.Join(matches, ", "))}
		}
		if len(matches) == 1 {
			k := kind{option: matches[0]}
			if hasValue {
				k.explicit = &value
			}
			return k, nil
		}
	} else if strings.HasPrefix(arg, "-h") {
		return kind{option: "-h"}, nil // -hVALUE: argparse's help (it prints the help, or rejects the value)
	}
	if negativeNumber.MatchString(arg) || strings.Contains(arg, " ") {
		return kind{}, nil
	}
	return kind{unknown: true}, nil
}

// parseRunArgs reads `run`'s arguments as argparse does: options until the first positional
// (or "--"), which starts CMD; everything from there on is CMD's.
func parseRunArgs(args []string) (*runArgs, error) {
	parsed := &runArgs{values: map[string]string{}}
	var unrecognized []string
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			break
		}
		k, err := classify(arg)
		if err != nil {
			return nil, err
		}
		if k.option == "" && !k.unknown {
			break // CMD
		}
		if k.unknown {
			unrecognized = append(unrecognized, arg)
			continue
		}
		if k.option == "-h" || k.option == "--help" {
			parsed.help = true
			return parsed, nil
		}
		var value string
		switch {
		case k.explicit != nil:
			value = *k.explicit
		case i+1 < len(args) && isValue(args[i+1]):
			i++
			value = args[i]
		default:
			return nil, &usageError{runUsage, "interrupt-sidecar run", "argument " + k.option + ": expected one argument"}
		}
		if k.option == "--behavior" {
			value = strings.ToUpper(value)
			if !contains(behaviors, value) {
				quoted := make([]string, len(behaviors))
				for j, b := range behaviors {
					quoted[j] = pyRepr(b)
				}
				return nil, &usageError{runUsage, "interrupt-sidecar run", fmt.Sprintf(
					"argument --behavior: invalid choice: %s (choose from %s)", pyRepr(value), strings.Join(quoted, ", "))}
			}
		}
		parsed.values[k.option] = value
	}
	parsed.command = append([]string(nil), args[i:]...)
	if len(parsed.command) > 0 && parsed.command[0] == "--" {
		parsed.command = parsed.command[1:]
	}
	if len(unrecognized) > 0 {
		return nil, &usageError{topUsage, "interrupt-sidecar", "unrecognized arguments: " + strings.Join(unrecognized, " ")}
	}
	return parsed, nil
}

// isValue is whether argparse takes arg as an option's value: not "--", not option-like.
func isValue(arg string) bool {
	if arg == "--" {
		return false
	}
	k, err := classify(arg)
	return err == nil && k.option == "" && !k.unknown
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

// pyRepr is Python's repr() of a str, for messages that quote a value as Python does.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !strconv.IsPrint(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !strconv.IsPrint(r) && r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !strconv.IsPrint(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
