package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// What the Python command line prints, written the way Python writes it, so that the two
// implementations' output is the same bytes: --json (json_format.MessageToDict with the
// proto field names, then json.dumps(indent=2)), `begin`'s export lines (shlex.quote),
// the values quoted in error messages (repr), and durations (settings.parse_duration).

// pythonJSON is json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True), indent=2).
//
// protojson already writes what MessageToDict builds (proto field names, enum names,
// 64-bit integers as strings, Timestamp and Duration with 0, 3, 6 or 9 fractional digits,
// fields in field-number order, unset fields left out), but its whitespace is
// deliberately unstable; so its compact output is re-read token by token, keeping the
// order, and written again with json.dumps's layout and escaping (ensure_ascii). One
// difference stays: a map's keys (labels) are sorted here, where Python's order is its
// hash table's, which no program can reproduce.
func pythonJSON(message proto.Message) (string, error) {
	compact, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(message)
	if err != nil {
		return "", err
	}
	decoder := json.NewDecoder(bytes.NewReader(compact))
	decoder.UseNumber()
	var out strings.Builder
	if err := writeValue(decoder, &out, 0); err != nil {
		return "", fmt.Errorf("re-reading the JSON of %s: %w", message.ProtoReflect().Descriptor().FullName(), err)
	}
	return out.String(), nil
}

// writeValue copies the next JSON value from decoder to out, as json.dumps(indent=2) lays it out.
func writeValue(decoder *json.Decoder, out *strings.Builder, depth int) error {
	token, err := decoder.Token()
	if err != nil {
		return err
	}
	switch t := token.(type) {
	case json.Delim:
		closing := map[json.Delim]string{'{': "}", '[': "]"}[t]
		out.WriteString(string(t))
		first := true
		for decoder.More() {
			if !first {
				out.WriteString(",")
			}
			first = false
			out.WriteString("\n" + strings.Repeat("  ", depth+1))
			if t == '{' {
				key, err := decoder.Token()
				if err != nil {
					return err
				}
				out.WriteString(pythonString(key.(string)) + ": ")
			}
			if err := writeValue(decoder, out, depth+1); err != nil {
				return err
			}
		}
		if _, err := decoder.Token(); err != nil { // the closing delimiter
			return err
		}
		if !first {
			out.WriteString("\n" + strings.Repeat("  ", depth))
		}
		out.WriteString(closing)
	case string:
		out.WriteString(pythonString(t))
	case json.Number:
		out.WriteString(t.String())
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %v", token)
	}
	return nil
}

// pythonString is a JSON string as json.dumps writes it with ensure_ascii: every character
// outside printable ASCII escaped, as \uXXXX (a surrogate pair above U+FFFF).
func pythonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= ' ' && r <= '~':
				b.WriteRune(r)
			case r > 0xFFFF:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// shellUnsafe is what shlex.quote quotes for: anything but [\w@%+=:,./-] (ASCII).
var shellUnsafe = regexp.MustCompile(`[^\w@%+=:,./-]`)

// shellQuote is Python's shlex.quote: the value as is when it is safe, else in single
// quotes with each ' written '"'"'.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if !shellUnsafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// pythonRepr is repr() of a str, as the Python command line quotes a value in an error.
func pythonRepr(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			// An undecodable byte: Python's argv holds it as a surrogate escape.
			fmt.Fprintf(&b, `\udc%02x`, s[i])
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && (r < ' ' || r == 0x7F):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && !unicode.IsPrint(r):
			switch {
			case r <= 0xFF:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xFFFF:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
