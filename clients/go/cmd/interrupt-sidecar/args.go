package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The coordinator commands' flags, parsed as Python's argparse parses them (the Python
// command line in sidecar/interrupt_sidecar/cli.py is the specification): `--flag VALUE`
// and `--flag=VALUE`, any unambiguous prefix of a long flag (argparse's allow_abbrev),
// options and the positional in any order, `--` ending the options, a value that looks
// like an option refused. Only what the command line accepts is parsed here: a usage
// error or `--help` is handed to the Python implementation (see usageOrHelp), which
// prints argparse's own usage text and exits 2, byte for byte the message a user knows.

// option is one flag of a command.
type option struct {
	name string // "--context"
	// takesValue: `--flag VALUE`; else a switch (store_true).
	takesValue bool
	// choices: the only values it accepts, when not empty.
	choices []string
}

// accepts is whether value is one of the option's choices (any value without choices).
func (o option) accepts(value string) bool {
	if len(o.choices) == 0 {
		return true
	}
	for _, choice := range o.choices {
		if value == choice {
			return true
		}
	}
	return false
}

// positional says whether a command takes an execution id: none, optional or required.
type positional int

const (
	noPositional positional = iota
	optionalPositional
	requiredPositional
)

// commandSpec is the grammar of one command.
type commandSpec struct {
	options    []option
	positional positional
}

// parsedArgs is what the command line said: the last value of each flag (every value of
// a repeatable one), the switches given, and the positional if any.
type parsedArgs struct {
	values     map[string][]string
	positional *string
}

// value is the last value given for flag (argparse's "store": the last one wins).
func (p parsedArgs) value(flag string) (string, bool) {
	v := p.values[flag]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// text is value, "" when the flag was not given (Python's `args.x or ""`).
func (p parsedArgs) text(flag string) string {
	v, _ := p.value(flag)
	return v
}

// on is whether a switch was given.
func (p parsedArgs) on(flag string) bool {
	_, given := p.values[flag]
	return given
}

// usageError is a command line argparse refuses (or `--help`): the Python implementation
// says why, in argparse's words.
type usageError struct {
	message string
	help    bool
}

func (e *usageError) Error() string { return e.message }

// negativeNumber is argparse's _negative_number_matcher: such an argument is a value.
var negativeNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// parseArgs parses args against spec, the way argparse would.
func parseArgs(spec commandSpec, args []string) (parsedArgs, error) {
	parsed := parsedArgs{values: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			// argparse drops the first "--"; everything after it is positional.
			for _, rest := range args[i+1:] {
				if err := parsed.takePositional(spec, rest); err != nil {
					return parsed, err
				}
			}
			break
		}
		opt, explicit, isOption, err := spec.lookup(arg)
		if err != nil {
			return parsed, err
		}
		if !isOption {
			if err := parsed.takePositional(spec, arg); err != nil {
				return parsed, err
			}
			continue
		}
		if opt.name == "--help" {
			return parsed, &usageError{message: "help", help: true}
		}
		switch {
		case !opt.takesValue && explicit != nil:
			return parsed, &usageError{message: fmt.Sprintf("argument %s: ignored explicit argument %q", opt.name, *explicit)}
		case !opt.takesValue:
			parsed.values[opt.name] = append(parsed.values[opt.name], "")
		case explicit != nil:
			if !opt.accepts(*explicit) {
				return parsed, &usageError{message: fmt.Sprintf("argument %s: invalid choice: %s", opt.name, pythonRepr(*explicit))}
			}
			parsed.values[opt.name] = append(parsed.values[opt.name], *explicit)
		default:
			if i+1 >= len(args) || args[i+1] == "--" {
				return parsed, &usageError{message: fmt.Sprintf("argument %s: expected one argument", opt.name)}
			}
			// argparse takes no value that looks like an option, known or not.
			if _, _, nextIsOption, unknown := spec.lookup(args[i+1]); nextIsOption || unknown != nil {
				return parsed, &usageError{message: fmt.Sprintf("argument %s: expected one argument", opt.name)}
			}
			i++
			if !opt.accepts(args[i]) {
				return parsed, &usageError{message: fmt.Sprintf("argument %s: invalid choice: %s", opt.name, pythonRepr(args[i]))}
			}
			parsed.values[opt.name] = append(parsed.values[opt.name], args[i])
		}
	}
	if spec.positional == requiredPositional && parsed.positional == nil {
		return parsed, &usageError{message: "the following arguments are required: execution_id"}
	}
	return parsed, nil
}

func (p *parsedArgs) takePositional(spec commandSpec, arg string) error {
	if spec.positional == noPositional || p.positional != nil {
		return &usageError{message: "unrecognized arguments: " + arg}
	}
	p.positional = &arg
	return nil
}

// lookup classifies arg as argparse's _parse_optional does: an option (exact, or the one
// long flag it is a prefix of, with an explicit `=VALUE`), or a value. An option-like
// argument that names no flag, or more than one, is a usage error.
func (spec commandSpec) lookup(arg string) (opt option, explicit *string, isOption bool, err error) {
	if len(arg) < 2 || arg[0] != '-' {
		return option{}, nil, false, nil
	}
	all := append([]option{{name: "--help"}, {name: "-h"}}, spec.options...)
	for _, o := range all {
		if o.name == arg {
			return canonical(o), nil, true, nil
		}
	}
	name, value, hasValue := strings.Cut(arg, "=")
	if hasValue {
		for _, o := range all {
			if o.name == name {
				return canonical(o), &value, true, nil
			}
		}
	}
	if strings.HasPrefix(arg, "--") {
		var matches []option
		for _, o := range all {
			if strings.HasPrefix(o.name, name) {
				matches = append(matches, o)
			}
		}
		if len(matches) > 1 {
			return option{}, nil, false, &usageError{message: "ambiguous option: " + arg}
		}
		if len(matches) == 1 {
			if hasValue {
				return canonical(matches[0]), &value, true, nil
			}
			return canonical(matches[0]), nil, true, nil
		}
	}
	if negativeNumber.MatchString(arg) || strings.Contains(arg, " ") {
		return option{}, nil, false, nil
	}
	return option{}, nil, false, &usageError{message: "unrecognized arguments: " + arg}
}

func canonical(o option) option {
	if o.name == "-h" {
		return option{name: "--help"}
	}
	return o
}
