package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Every subcommand the binary does not implement (serve, top, demo, mcp, no subcommand,
// --help, --version) is the Python implementation's: the binary *becomes* it with
// execve, argv and environment unchanged. Same pid, so `serve` as a container's PID 1
// receives SIGTERM itself and its exit code is the container's; no process stays between.

const (
	// pythonScript is the pure-Python command line's console script (pyproject.toml).
	pythonScript = "interrupt-sidecar-py"
)

// pythonCommand is the argv prefix that runs the Python implementation, the first found of:
// $INTERRUPT_SIDECAR_PYTHON -m interrupt_sidecar; interrupt-sidecar-py beside this binary
// (the same installation: a virtual environment's bin/, the image's /usr/local/bin);
// interrupt-sidecar-py on PATH; python3 -m interrupt_sidecar.
func pythonCommand() ([]string, error) {
	if interpreter := strings.TrimSpace(os.Getenv(pythonEnv)); interpreter != "" {
		path, err := exec.LookPath(interpreter)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", pythonEnv, interpreter, err)
		}
		return []string{path, "-m", "interrupt_sidecar"}, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), pythonScript)
		if info, err := os.Stat(beside); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return []string{beside}, nil
		}
	}
	if path, err := exec.LookPath(pythonScript); err == nil {
		return []string{path}, nil
	}
	if path, err := exec.LookPath("python3"); err == nil {
		return []string{path, "-m", "interrupt_sidecar"}, nil
	}
	return nil, fmt.Errorf("no Python implementation found: set %s to a Python interpreter that has "+
		"interrupt-sidecar installed, or put %s on PATH", pythonEnv, pythonScript)
}

// delegateToPython execs the Python implementation with args; it returns only when that
// cannot be done: the shell's 127 (not found) or 126 (cannot be run), the reason on stderr.
func delegateToPython(args []string) int {
	prefix, err := pythonCommand()
	if err != nil {
		fmt.Fprintf(os.Stderr, "interrupt-sidecar: %s needs the Python implementation: %v\n", describeArgs(args), err)
		return exitNotFound
	}
	argv := append(prefix, args...)
	err = syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "interrupt-sidecar: cannot run the Python implementation %s: %v\n", argv[0], err)
	return execFailureCode(errnoOf(err))
}

func describeArgs(args []string) string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "this command"
	}
	return args[0]
}

// usageOrHelp answers `NAME ARGS` that the native parser refused or that asked for
// --help: the Python implementation prints argparse's usage or help text and exits as
// argparse does (2, or 0 for help). Without one, the binary says why itself, with exit 2.
func usageOrHelp(name string, args []string, refused error) int {
	if _, err := pythonCommand(); err == nil {
		return delegateToPython(append([]string{name}, args...))
	}
	var usage *usageError
	if errors.As(refused, &usage) && usage.help {
		fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: the help is printed by the Python implementation, which was not found\n", name)
	} else {
		fmt.Fprintln(os.Stderr, refused) // argparse's line: "interrupt-sidecar NAME: error: ..."
	}
	return exitUsage
}
