package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The one emulation of Python's argparse that every native command parses with: `run`
// (runargs.go) and the coordinator commands (args.go) read a line as their Python parsers
// do (sidecar/interrupt_sidecar/cli.py and wrapper/command.py are the specification),
// and fail with argparse's message: `--flag VALUE` and `--flag=VALUE`, any unambiguous
// prefix of a long flag (allow_abbrev), a value that looks like an option refused, a
// negative number or a string with a space taken as a value. What differs per command
// (REMAINDER for `run`, positionals and repeatable flags for the others) is the caller's.

// option is one flag of a command.
type option struct {
	name string // "--context"
	// takesValue: `--flag VALUE`; else a switch (store_true).
	takesValue bool
	// upper: argparse's type=str.upper (the value is upper-cased before choices apply).
	upper bool
	// choices: the only values it accepts, when not empty, in the Python parser's order
	// (its error lists them).
	choices []string
}

// parser is one command's grammar and how argparse would name it in an error.
type parser struct {
	// prog is argparse's prog ("interrupt-sidecar run"), the prefix of its error line.
	prog string
	// usage is the usage text argparse prints above the error line; empty where the
	// Python implementation prints it (the coordinator commands hand usage errors over).
	usage   string
	options []option
}

// usageError is a command line argparse refuses, or asks for the help: argparse prints
// the usage, then "PROG: error: MESSAGE", and exits 2.
type usageError struct {
	usage, prog, message string
	// help: -h/--help was given (no message; the help text is Python's).
	help bool
}

func (e *usageError) Error() string {
	return e.usage + e.prog + ": error: " + e.message
}

// fail is argparse's parser.error(message).
func (p *parser) fail(format string, args ...any) *usageError {
	return &usageError{usage: p.usage, prog: p.prog, message: fmt.Sprintf(format, args...)}
}

// negativeNumber is argparse's _negative_number_matcher: no option of ours looks like a
// negative number, so such an argument is a value.
var negativeNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// helpOption is argparse's -h/--help, which every parser has.
var helpOption = option{name: "--help"}

// argKind is how argparse classifies one argument (_parse_optional): a known option (with
// the value given after "=" if any), an unknown option-like argument, or a value.
type argKind struct {
	option   *option // nil unless a known option
	explicit *string
	unknown  bool
}

// classify is argparse's _parse_optional: an exact option, an exact option with `=VALUE`,
// the one long option the argument is a prefix of, or a value; an argument that is a
// prefix of several long options is an error.
func (p *parser) classify(arg string) (argKind, error) {
	if len(arg) < 2 || arg[0] != '-' {
		return argKind{}, nil // "", "-" and anything not starting with "-": a value
	}
	if opt := p.lookup(arg); opt != nil {
		return argKind{option: opt}, nil
	}
	name, value, hasValue := strings.Cut(arg, "=")
	if hasValue {
		if opt := p.lookup(name); opt != nil {
			return argKind{option: opt, explicit: &value}, nil
		}
	}
	if strings.HasPrefix(arg, "--") {
		var matches []*option
		for _, candidate := range p.all() {
			if strings.HasPrefix(candidate.name, name) {
				matches = append(matches, candidate)
			}
		}
		if len(matches) > 1 {
			names := make([]string, len(matches))
			for i, m := range matches {
				names[i] = m.name
			}
			return argKind{}, p.fail("ambiguous option: %s could match %s", arg, strings.Join(names, ", "))
		}
		if len(matches) == 1 {
			kind := argKind{option: matches[0]}
			if hasValue {
				kind.explicit = &value
			}
			return kind, nil
		}
	} else if strings.HasPrefix(arg, "-h") {
		// -hVALUE: the short flag with its value attached (argparse prints the help).
		return argKind{option: &helpOption}, nil
	}
	if negativeNumber.MatchString(arg) || strings.Contains(arg, " ") {
		return argKind{}, nil
	}
	return argKind{unknown: true}, nil
}

// lookup is the option named exactly name (-h is --help), or nil.
func (p *parser) lookup(name string) *option {
	if name == "-h" {
		return &helpOption
	}
	for _, candidate := range p.all() {
		if candidate.name == name {
			return candidate
		}
	}
	return nil
}

// all is the long options in argparse's order: --help first (add_help), then the command's.
func (p *parser) all() []*option {
	all := []*option{&helpOption}
	for i := range p.options {
		all = append(all, &p.options[i])
	}
	return all
}

// isValue is whether argparse takes arg as an option's value: not "--", not option-like
// (known, unknown or ambiguous).
func (p *parser) isValue(arg string) bool {
	if arg == "--" {
		return false
	}
	kind, err := p.classify(arg)
	return err == nil && kind.option == nil && !kind.unknown
}

// optionValue reads the value of opt at args[*i] (explicit: what followed "="), advancing
// *i past a separate value, and applies the option's type and choices.
func (p *parser) optionValue(opt *option, explicit *string, args []string, i *int) (string, error) {
	var value string
	switch {
	case !opt.takesValue && explicit != nil:
		return "", p.fail("argument %s: ignored explicit argument %s", opt.name, pythonRepr(*explicit))
	case !opt.takesValue:
		return "", nil
	case explicit != nil:
		value = *explicit
	case *i+1 < len(args) && p.isValue(args[*i+1]):
		*i++
		value = args[*i]
	default:
		return "", p.fail("argument %s: expected one argument", opt.name)
	}
	if opt.upper {
		value = strings.ToUpper(value)
	}
	if len(opt.choices) > 0 && !slices.Contains(opt.choices, value) {
		quoted := make([]string, len(opt.choices))
		for j, choice := range opt.choices {
			quoted[j] = pythonRepr(choice)
		}
		return "", p.fail("argument %s: invalid choice: %s (choose from %s)", opt.name, pythonRepr(value), strings.Join(quoted, ", "))
	}
	return value, nil
}
