package security

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Redacted is what a secret prints as.
const Redacted = "***"

// Secret is a password, printed as Redacted (empty where none is set).
// The zero Secret is none. Secrets compare equal when their values do.
type Secret struct {
	// x is the value XORed with pad: a reflective dump of a struct that
	// holds a Secret (spew, %v of an unexported field) shows noise.
	x string
}

// pad masks the secrets of this process.
var pad = func() [64]byte {
	var p [64]byte
	if _, err := rand.Read(p[:]); err != nil {
		panic(fmt.Sprintf("security: random pad: %v", err))
	}
	return p
}()

func mask(v string) string {
	b := []byte(v)
	for i := range b {
		b[i] ^= pad[i%len(pad)]
	}
	return string(b)
}

// NewSecret holds v as a Secret.
func NewSecret(v string) Secret { return Secret{x: mask(v)} }

// Reveal returns the secret's value, for the client library that sends
// it; never print it.
func (s Secret) Reveal() string { return mask(s.x) }

// IsSet is whether a value is set (an empty password is none).
func (s Secret) IsSet() bool { return s.x != "" }

// String is Redacted, or "" where no value is set.
func (s Secret) String() string {
	if !s.IsSet() {
		return ""
	}
	return Redacted
}

// GoString is for %#v.
func (s Secret) GoString() string { return "security.Secret(" + strconv.Quote(s.String()) + ")" }

// Format prints s as String with every verb (%s, %v, %q, %x, %d ...).
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(s.GoString()))
	case verb == 'q':
		_, _ = f.Write([]byte(strconv.Quote(s.String())))
	default:
		_, _ = f.Write([]byte(s.String()))
	}
}

// MarshalText is String's text (JSON, and any text encoding).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue is String's text for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// ExpandError is a placeholder that Expand could not replace: Offset is
// the byte offset of its "${" in the text.
type ExpandError struct {
	Offset int
	Msg    string
}

func (e *ExpandError) Error() string { return e.Msg }

// Expand replaces each ${NAME} in s by the value lookup gives NAME (the
// environment: os.LookupEnv); "$${" is a literal "${", and a "$" not
// followed by "{" is itself. NAME is letters, digits and _, not starting
// with a digit. A variable not set, a placeholder not closed or not a
// name is an *ExpandError. Values are not expanded again.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", &ExpandError{Offset: i, Msg: "'${' is not closed by '}' (write $${ for a literal ${)"}
			}
			name := s[i+2 : i+2+end]
			if !isName(name) {
				return "", &ExpandError{Offset: i, Msg: fmt.Sprintf("${%s}: not an environment variable's name (letters, digits and _, not starting with a digit; write $${ for a literal ${)", name)}
			}
			v, ok := lookup(name)
			if !ok {
				return "", &ExpandError{Offset: i, Msg: fmt.Sprintf("environment variable %s is not set", name)}
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
