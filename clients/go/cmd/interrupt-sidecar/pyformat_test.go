package main

import (
	"testing"

	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The expected values are what Python prints for the same input (shlex.quote, repr,
// json.dumps); tests/cli compares the two implementations end to end.

func TestShellQuoteIsShlexQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":              "''",
		"abc":           "abc",
		"a=b:c,d./-%+@": "a=b:c,d./-%+@",
		"a b":           "'a b'",
		"x;y":           "'x;y'",
		"it's":          `'it'"'"'s'`,
		"é":             "'é'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPythonReprQuotesAsPythonDoes(t *testing.T) {
	for in, want := range map[string]string{
		"a":        `'a'`,
		"it's":     `"it's"`,
		`say "hi"`: `'say "hi"'`,
		`both ' "`: `'both \' "'`,
		"tab\t":    `'tab\t'`,
		"\x7f":     `'\x7f'`,
		"é":        `'é'`,
		"\u00a0":   `'\xa0'`,
		`back\`:    `'back\\'`,
	} {
		if got := pythonRepr(in); got != want {
			t.Errorf("pythonRepr(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPythonStringEscapesAsJSONDumpsWithEnsureASCII(t *testing.T) {
	in := "q\" \\ \t\x01\x7f é 😀 /<>"
	want := `"q\" \\ \t\u0001\u007f \u00e9 \ud83d\ude00 /<>"`
	if got := pythonString(in); got != want {
		t.Errorf("pythonString(%q) = %s, want %s", in, got, want)
	}
}

func TestPythonJSONIsIndentedLikeJSONDumps(t *testing.T) {
	message := &pb.InterruptResponse{Outcomes: []*pb.InterruptOutcome{
		{ExecutionId: "a", Tripped: true, Reason: pb.InterruptReason_INTERRUPT_REASON_USER_SIGINT},
		{ExecutionId: "b"},
	}}
	want := `{
  "outcomes": [
    {
      "execution_id": "a",
      "tripped": true,
      "reason": "INTERRUPT_REASON_USER_SIGINT"
    },
    {
      "execution_id": "b"
    }
  ]
}`
	for range 5 { // protojson's whitespace varies from run to run; the result must not
		got, err := pythonJSON(message)
		if err != nil || got != want {
			t.Fatalf("pythonJSON = %s, %v; want %s", got, err, want)
		}
	}
	empty, _ := pythonJSON(&pb.InterruptResponse{})
	grace, _ := pythonJSON(&pb.Execution{Grace: durationpb.New(1500e6), Labels: map[string]string{}})
	if empty != "{}" || grace != "{\n  \"grace\": \"1.500s\"\n}" {
		t.Errorf("got %q and %q", empty, grace)
	}
}
