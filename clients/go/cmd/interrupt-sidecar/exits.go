package main

// Every exit code the native binary returns, one name per code of
// sidecar/interrupt_sidecar/exits.py (the table the docs and --help are rendered from).
// Written by hand, not generated: the list is short and changes rarely, and
// tests/cli/test_exit_codes.py reads this file and fails unless every constant here
// equals Python's EXIT_* of the same name (exitCannotExecute = EXIT_CANNOT_EXECUTE)
// and every EXIT_* is here, so the two cannot drift apart silently. (gate.go's
// exitAborted is not one: it passes only between `run` and its own parked child.)
const (
	exitOK            = 0
	exitInternal      = 1
	exitUsage         = 2
	exitStartup       = 3 // serve's; never returned natively (serve is Python's)
	exitUnreachable   = 4
	exitRefused       = 5
	exitForced        = 6 // serve's; never returned natively
	exitInterrupted   = 124
	exitCannotExecute = 126
	exitNotFound      = 127
	exitSIGINT        = 130
)
