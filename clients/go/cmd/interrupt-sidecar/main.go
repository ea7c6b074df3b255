// Command interrupt-sidecar is the native command line of interrupt-sidecar: `run` and the
// coordinator commands (begin, interrupt, end, status) without a Python interpreter's
// start-up, on the Go client. Every other subcommand (serve, top, demo, mcp, --help) is
// handed to the Python implementation unchanged (see python.go).
//
// Why it exists, with the numbers: docs/performance-footprint.md.
package main

import "os"

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch runs `interrupt-sidecar ARGS` and returns the exit code.
func dispatch(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCommand(args[1:])
		case gatedChildMode: // run's parked child, re-executed by run itself (gate.go)
			return runGatedChild(args[1:])
		case "begin", "interrupt", "end", "status":
			return clientCommand(args[0], args[1:])
		}
	}
	return delegateToPython(args)
}
