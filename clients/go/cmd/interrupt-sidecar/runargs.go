package main

import (
	"os"
	"strings"
)

// The command line of `run`, read as the Python implementation's argparse parser reads it
// (sidecar/interrupt_sidecar/wrapper/command.py): the same options, abbreviations, value
// rules and error messages, so a line means the same thing, and fails the same way, under
// either implementation. tests/run/test_run.py holds both to the same assertions.

// runParser is `run`'s grammar: its options in the order argparse declares them (its
// abbreviation matching and "could match" messages follow this order), all taking a value.
var runParser = parser{prog: "interrupt-sidecar run", usage: runUsage, options: []option{
	{name: "--address", takesValue: true},
	{name: "--token", takesValue: true},
	// type=str.upper, choices in the Python parser's order (its error lists them).
	{name: "--behavior", takesValue: true, upper: true, choices: []string{"EXTERNALLY_TERMINATED", "COOPERATIVE", "NON_INTERRUPTIBLE"}},
	{name: "--tool-name", takesValue: true},
	{name: "--tool-call-id", takesValue: true},
	{name: "--signal", takesValue: true},
	{name: "--kill-after", takesValue: true},
}}

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

// topParser is the top-level parser, which reports the arguments `run` did not recognise
// (parse_args, not the subparser, complains about extras).
var topParser = parser{prog: "interrupt-sidecar", usage: "usage: interrupt-sidecar [-h] [--version] COMMAND ...\n"}

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
		kind, err := runParser.classify(arg)
		if err != nil {
			return nil, err
		}
		if kind.unknown {
			unrecognized = append(unrecognized, arg)
			continue
		}
		if kind.option == nil {
			break // CMD
		}
		if kind.option == &helpOption {
			parsed.help = true
			return parsed, nil
		}
		value, err := runParser.optionValue(kind.option, kind.explicit, args, &i)
		if err != nil {
			return nil, err
		}
		parsed.values[kind.option.name] = value
	}
	parsed.command = append([]string(nil), args[i:]...)
	if len(parsed.command) > 0 && parsed.command[0] == "--" {
		parsed.command = parsed.command[1:]
	}
	if len(unrecognized) > 0 {
		return nil, topParser.fail("unrecognized arguments: %s", strings.Join(unrecognized, " "))
	}
	return parsed, nil
}
