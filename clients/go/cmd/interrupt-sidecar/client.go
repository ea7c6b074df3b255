package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	sidecar "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The coordinator commands (begin, interrupt, end, status): the same flags, environment,
// output and exit codes as the Python implementation's (sidecar/interrupt_sidecar/cli.py,
// which is their specification; tests/cli holds both to the same assertions).

// coordinatorSpec is a coordinator command's grammar: cli.py's `common` parent parser's
// flags first (argparse adds a parent's before the command's own), then the command's.
func coordinatorSpec(name string, takes positional, own ...option) commandSpec {
	common := []option{{name: "--address", takesValue: true}, {name: "--json"}}
	return commandSpec{
		parser:     parser{prog: "interrupt-sidecar " + name, options: append(common, own...)},
		positional: takes,
	}
}

var specs = map[string]commandSpec{
	"begin": coordinatorSpec("begin", noPositional,
		option{name: "--id", takesValue: true},
		option{name: "--parent", takesValue: true},
		option{name: "--context", takesValue: true},
		option{name: "--grace", takesValue: true},
		option{name: "--budget", takesValue: true},
		option{name: "--lease-ttl", takesValue: true},
		option{name: "--label", takesValue: true},
		option{name: "--session", takesValue: true},
		option{name: "--task", takesValue: true},
	),
	"interrupt": coordinatorSpec("interrupt", optionalPositional,
		option{name: "--context", takesValue: true},
		option{name: "--session", takesValue: true},
		option{name: "--task", takesValue: true},
		option{name: "--reason", takesValue: true, choices: reasons()},
		option{name: "--detail", takesValue: true},
	),
	"end":    coordinatorSpec("end", requiredPositional),
	"status": coordinatorSpec("status", optionalPositional, option{name: "--context", takesValue: true}, option{name: "--all"}),
}

// clientCommand runs one coordinator command and returns its exit code.
func clientCommand(name string, args []string) int {
	parsed, err := parseArgs(specs[name], args)
	if err != nil {
		return usageOrHelp(name, args, err)
	}
	// Ctrl+C before the answer: 130 and no output, as the Python command (KeyboardInterrupt).
	// An inherited SIG_IGN (a background job) stays ignored, as Python leaves it.
	if !signal.Ignored(os.Interrupt) {
		interrupted := make(chan os.Signal, 1)
		signal.Notify(interrupted, os.Interrupt)
		go func() {
			<-interrupted
			os.Exit(exitSIGINT)
		}()
	}

	address := sidecar.ResolveAddress(parsed.text("--address"))
	call := map[string]func(context.Context, pb.CoordinatorServiceClient, parsedArgs) (proto.Message, string, error){
		"begin":     begin,
		"interrupt": interrupt,
		"end":       end,
		"status":    statusOf,
	}[name]
	message, human, err := withClient(address, func(ctx context.Context, client pb.CoordinatorServiceClient) (proto.Message, string, error) {
		return call(ctx, client, parsed)
	})
	if err != nil {
		return report(name, address, err)
	}
	if parsed.on("--json") {
		text, err := pythonJSON(message)
		if err != nil {
			fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: %v\n", name, err)
			return exitInternal
		}
		human = text
	}
	fmt.Println(human)
	return exitOK
}

// report prints why a command failed and returns its exit code, in cli.py's words.
func report(name, address string, err error) int {
	var refusal configError
	if errors.As(err, &refusal) {
		fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: %s\n", name, refusal)
		return exitUsage
	}
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: %v\n", name, err)
		return exitInternal
	}
	if st.Code() == codes.Unavailable {
		fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: cannot reach the daemon at %s: %s\n", name, address, st.Message())
		return exitUnreachable
	}
	fmt.Fprintf(os.Stderr, "interrupt-sidecar %s: %s: %s\n", name, sidecar.CodeName(st.Code()), st.Message())
	return exitRefused
}

// withClient runs fn with a client of the daemon at address, carrying the coordinator
// credential (INTERRUPT_SIDECAR_AUTH_TOKEN) when one is set. Like the Python command: no
// deadline, no retry, plaintext (a TCP daemon beyond loopback is reached through TLS by
// the client libraries, not by the command line).
func withClient(address string, fn func(context.Context, pb.CoordinatorServiceClient) (proto.Message, string, error)) (proto.Message, string, error) {
	conn, err := dialCoordinator(address)
	if err != nil {
		return nil, "", status.Error(codes.Unavailable, err.Error())
	}
	defer conn.Close()
	return fn(withCredential(context.Background()), pb.NewCoordinatorServiceClient(conn))
}

// dialCoordinator is a plaintext connection to the daemon's coordinator service, for the
// coordinator commands and for `run`'s settling GetExecution alike.
func dialCoordinator(address string) (*grpc.ClientConn, error) {
	return grpc.NewClient(grpcTarget(address), grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// withCredential is ctx carrying the coordinator credential (INTERRUPT_SIDECAR_AUTH_TOKEN)
// as `authorization: Bearer TOKEN`, when one is set (a TCP listener requires it).
func withCredential(ctx context.Context) context.Context {
	if token := strings.TrimSpace(os.Getenv(authTokenEnv)); token != "" {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return ctx
}

// grpcTarget is the client library's rule (unix: and scheme:// targets as they are,
// HOST:PORT through the passthrough resolver, as Python's grpc dials it: no DNS lookup).
func grpcTarget(address string) string {
	if strings.Contains(address, "://") || strings.HasPrefix(address, "unix:") {
		return address
	}
	return "passthrough:///" + address
}

func begin(ctx context.Context, client pb.CoordinatorServiceClient, args parsedArgs) (proto.Message, string, error) {
	labels := map[string]string{}
	for _, item := range args.values["--label"] {
		key, value, found := strings.Cut(item, "=")
		if !found {
			return nil, "", configError(fmt.Sprintf("--label %s: expected KEY=VALUE", pythonRepr(item)))
		}
		labels[key] = value
	}
	request := &pb.BeginExecutionRequest{
		ExecutionId:       args.text("--id"),
		ParentExecutionId: args.text("--parent"),
		ContextId:         args.text("--context"),
		Labels:            labels,
		SessionId:         args.text("--session"),
		TaskId:            args.text("--task"),
	}
	for _, d := range []struct {
		flag string
		into **durationpb.Duration
	}{{"--grace", &request.Grace}, {"--budget", &request.Budget}, {"--lease-ttl", &request.LeaseTtl}} {
		text, given := args.value(d.flag)
		if !given {
			continue
		}
		duration, err := parseDuration(text, d.flag)
		if err != nil {
			return nil, "", err
		}
		*d.into = durationpb.New(duration)
	}
	response, err := client.BeginExecution(ctx, request)
	if err != nil {
		return nil, "", err
	}
	exports := fmt.Sprintf("export %s=%s\nexport %s=%s",
		executionEnv, shellQuote(response.GetExecutionId()), tokenEnv, shellQuote(response.GetAttachToken()))
	return response, exports, nil
}

func interrupt(ctx context.Context, client pb.CoordinatorServiceClient, args parsedArgs) (proto.Message, string, error) {
	request := &pb.InterruptRequest{Detail: args.text("--detail")}
	named := 0
	executionID := ""
	if args.positional != nil {
		executionID = *args.positional
	}
	// The order of cli.py's dict: the first target named is the one sent (only one may be).
	for _, target := range []struct {
		value string
		set   func(string)
	}{
		{executionID, func(v string) { request.Target = &pb.InterruptRequest_ExecutionId{ExecutionId: v} }},
		{args.text("--context"), func(v string) { request.Target = &pb.InterruptRequest_ContextId{ContextId: v} }},
		{args.text("--session"), func(v string) { request.Target = &pb.InterruptRequest_SessionId{SessionId: v} }},
		{args.text("--task"), func(v string) { request.Target = &pb.InterruptRequest_TaskId{TaskId: v} }},
	} {
		if target.value != "" {
			named++
			target.set(target.value)
		}
	}
	if named != 1 {
		return nil, "", configError("name one target: an execution id, --context, --session or --task")
	}
	// A session or a task names its own reason (SESSION_RELEASED, TASK_CANCELLED) unless one is given.
	reason := args.text("--reason")
	if reason == "" && (executionID != "" || args.text("--context") != "") {
		reason = "USER_SIGINT"
	}
	if reason != "" {
		request.Reason = pb.InterruptReason(pb.InterruptReason_value["INTERRUPT_REASON_"+reason])
	}
	response, err := client.Interrupt(ctx, request)
	if err != nil {
		return nil, "", err
	}
	lines := make([]string, 0, len(response.GetOutcomes()))
	for _, o := range response.GetOutcomes() {
		state := "already tripped"
		if o.GetTripped() {
			state = "tripped"
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s", o.GetExecutionId(), state, reasonName(o.GetReason())))
	}
	if len(lines) == 0 {
		return response, "no live execution matched", nil
	}
	return response, strings.Join(lines, "\n"), nil
}

func end(ctx context.Context, client pb.CoordinatorServiceClient, args parsedArgs) (proto.Message, string, error) {
	response, err := client.EndExecution(ctx, &pb.EndExecutionRequest{ExecutionId: *args.positional})
	if err != nil {
		return nil, "", err
	}
	return response, response.GetExecution().GetExecutionId() + "\tended", nil
}

func statusOf(ctx context.Context, client pb.CoordinatorServiceClient, args parsedArgs) (proto.Message, string, error) {
	if args.positional != nil && *args.positional != "" {
		response, err := client.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: *args.positional})
		if err != nil {
			return nil, "", err
		}
		return response, statusLine(response.GetExecution()), nil
	}
	response, err := client.ListExecutions(ctx, &pb.ListExecutionsRequest{
		ContextId:    args.text("--context"),
		IncludeEnded: args.on("--all"),
	})
	if err != nil {
		return nil, "", err
	}
	lines := make([]string, 0, len(response.GetExecutions()))
	for _, e := range response.GetExecutions() {
		lines = append(lines, statusLine(e))
	}
	if len(lines) == 0 {
		return response, "no executions", nil
	}
	return response, strings.Join(lines, "\n"), nil
}

// statusLine is one execution as `status` prints it (one line, also of the list).
func statusLine(e *pb.Execution) string {
	state := "live"
	if e.GetEnded() {
		state = "ended"
	}
	if e.GetCancelled() {
		state += ", cancelled (" + reasonName(e.GetReason()) + ")"
	}
	context := ""
	if e.GetContextId() != "" {
		context = "\tcontext=" + e.GetContextId()
	}
	return fmt.Sprintf("%s\t%s\ttools=%d\toverruns=%d%s", e.GetExecutionId(), state, e.GetAttachedTools(), e.GetGraceOverruns(), context)
}

// reasons are the names `interrupt --reason` accepts: the wire's, without their prefix
// and without UNSPECIFIED (cli.REASONS).
func reasons() []string {
	var names []string
	for number := int32(1); ; number++ {
		name, known := pb.InterruptReason_name[number]
		if !known {
			return names
		}
		names = append(names, strings.TrimPrefix(name, "INTERRUPT_REASON_"))
	}
}

func reasonName(reason pb.InterruptReason) string {
	return strings.TrimPrefix(reason.String(), "INTERRUPT_REASON_")
}
