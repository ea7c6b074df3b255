package main

// The coordinator commands' flags, read with the shared argparse emulation (argparse.go):
// options and the positional in any order, `--` ending the options. Only what the command
// line accepts is parsed here: a usage error or `--help` is handed to the Python
// implementation (see usageOrHelp), which prints argparse's own usage text and exits 2,
// byte for byte the message a user knows.

// positional says whether a command takes an execution id: none, optional or required.
type positional int

const (
	noPositional positional = iota
	optionalPositional
	requiredPositional
)

// commandSpec is the grammar of one command.
type commandSpec struct {
	parser
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
		kind, err := spec.classify(arg)
		if err != nil {
			return parsed, err
		}
		switch {
		case kind.unknown:
			return parsed, spec.fail("unrecognized arguments: %s", arg)
		case kind.option == nil:
			if err := parsed.takePositional(spec, arg); err != nil {
				return parsed, err
			}
			continue
		case kind.option == &helpOption:
			return parsed, &usageError{prog: spec.prog, help: true}
		}
		value, err := spec.optionValue(kind.option, kind.explicit, args, &i)
		if err != nil {
			return parsed, err
		}
		parsed.values[kind.option.name] = append(parsed.values[kind.option.name], value)
	}
	if spec.positional == requiredPositional && parsed.positional == nil {
		return parsed, spec.fail("the following arguments are required: execution_id")
	}
	return parsed, nil
}

func (p *parsedArgs) takePositional(spec commandSpec, arg string) error {
	if spec.positional == noPositional || p.positional != nil {
		return spec.fail("unrecognized arguments: %s", arg)
	}
	p.positional = &arg
	return nil
}
