package sql

import (
	"errors"
	"strings"
	"sync"

	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/nexmark"
)

// Secrets in the text: option values read from the environment
// (${NAME}), the connections' security options (security.Kafka,
// security.Redis), and the values that are never shown again: in
// Options, Explain, errors and Caret they read *** (secretOption). Caret
// also hides the value of every option in a WITH list that no connector
// takes (maskedOption): its name says nothing of what it holds.

// expandOptions replaces the ${NAME} placeholders of every option value
// by the environment's values (env: os.LookupEnv); $${ is a literal ${.
// A variable not set is an error at its placeholder naming it and the
// option.
func expandOptions(stmts []*stmt, env func(string) (string, bool)) error {
	for _, st := range stmts {
		for i := range st.opts {
			o := &st.opts[i]
			v, err := security.Expand(o.val, env)
			if err != nil {
				var ee *security.ExpandError
				if errors.As(err, &ee) {
					return errAt(inValue(*o, ee.Offset), "option %s: %s", o.key, ee.Msg)
				}
				return errAt(o.valPos, "option %s: %v", o.key, err)
			}
			if v != o.val {
				o.val, o.expanded = v, true
			}
		}
	}
	return nil
}

// secretWords are the words that make an option's value a secret
// wherever its name holds one (in any case): Kafka client properties
// such as properties.sasl.jaas.config, properties.ssl.key.password or
// properties.sasl.oauthbearer.client.secret, a cloud token or
// credentials.
var secretWords = []string{"password", "passwd", "pwd", "secret", "jaas", "token", "credential", "private"}

// secretOption is whether the value of option key is a secret: shown
// as *** (a URL with its password as ***). Those are the connections'
// passwords and url, an option whose name holds one of secretWords, and
// an option the engine does not take whose name has a part (between
// '.', '_' or '-') that begins or ends with "key" (properties.ssl.key.pem,
// properties.ssl.keystore.key, api_key); the options the engine takes
// with "key" in their names (a sink's key column or template, tls.key
// and properties.ssl.key.location, which are paths) are shown.
func secretOption(key string) bool {
	key = strings.ToLower(key)
	switch key {
	case security.KafkaPassword, security.RedisPassword, security.RedisURL:
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(key, w) {
			return true
		}
	}
	if knownOption(key) {
		return false
	}
	for _, part := range strings.FieldsFunc(key, func(r rune) bool { return r == '.' || r == '_' || r == '-' }) {
		if strings.HasPrefix(part, "key") || strings.HasSuffix(part, "key") {
			return true
		}
	}
	return false
}

// knownOptions are the names of the options that some source, table or
// sink takes (the "valid:" lists of their errors).
var knownOptions = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, list := range [][]string{
		readerSourceOptions, {"path"}, generatorSourceOptions,
		kafkaSourceOptions, kafkaSinkOptions, redisSinkOptions, {security.RedisAddr}, nexmark.OptionNames(),
		rollingOptions, partitionOptions,
	} {
		for _, k := range list {
			m[k] = true
		}
	}
	for k := range legacyKeys {
		m[k] = true
	}
	return m
})

// knownOption is whether some source, table or sink takes option key.
func knownOption(key string) bool { return knownOptions()[strings.ToLower(key)] }

// maskedOption is whether Caret hides the value of option key: a secret
// option's, and in a WITH list that of an option no connector takes (a
// Kafka client property the engine does not read, a misspelt password:
// properties.sasl.pasword), whatever its name.
func maskedOption(key string, inWith bool) bool {
	return secretOption(key) || inWith && !knownOption(key)
}

// redactOption is an option's value as it may be shown.
func redactOption(key, val string) string {
	switch {
	case key == security.RedisURL:
		return security.RedactURL(val)
	case secretOption(key):
		return security.Redacted
	}
	return val
}

// optionErrorAt places a settings error of the security package at its
// option: the option's value or key where it was given, else the WITH.
func (s *optionSet) optionErrorAt(err error) error {
	var oe *security.OptionError
	if !errors.As(err, &oe) {
		return errAt(s.withPos, "%v", err)
	}
	msg := s.writtenNames(oe.Msg)
	for _, o := range s.opts {
		if o.key == oe.Option {
			if oe.Value {
				return errAt(o.valPos, "%s", msg)
			}
			return errAt(o.keyPos, "%s", msg)
		}
	}
	return errAt(s.withPos, "%s", msg)
}

// writtenNames is msg, which names options by their keys, with the names
// the WITH list gives them where renameLegacyOptions renamed them
// (connector.properties.sasl.mechanism for properties.sasl.mechanism).
func (s *optionSet) writtenNames(msg string) string {
	nameByte := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	for _, o := range s.opts {
		if o.written == "" {
			continue
		}
		var b strings.Builder
		for rest := msg; ; {
			i := strings.Index(rest, o.key)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			end := i + len(o.key)
			// a whole name: no name before it, and none after it (a
			// '.' after it ends a sentence unless a name goes on)
			whole := (i == 0 || !nameByte(rest[i-1]) && rest[i-1] != '.') &&
				(end == len(rest) || !nameByte(rest[end]) && !(rest[end] == '.' && end+1 < len(rest) && nameByte(rest[end+1])))
			b.WriteString(rest[:i])
			if whole {
				b.WriteString(o.written)
			} else {
				b.WriteString(o.key)
			}
			rest = rest[end:]
		}
		msg = b.String()
	}
	return msg
}

// getter reads options through s.get (which marks them taken).
func (s *optionSet) getter() func(string) (string, bool) {
	return func(key string) (string, bool) {
		o, ok := s.get(key)
		return o.val, ok
	}
}

// kafkaSecurity reads the properties.security.*, properties.sasl.* and
// properties.ssl.* options of a kafka source or sink.
func (s *optionSet) kafkaSecurity() (security.Kafka, error) {
	k, err := security.ParseKafka(s.getter())
	if err != nil {
		return k, s.optionErrorAt(err)
	}
	return k, nil
}

// redisServer reads a redis sink's server: addr ('host:port') or url
// ('redis://' or 'rediss://'), and username, password, tls, tls.ca,
// tls.cert, tls.key, tls.server_name.
func (s *optionSet) redisServer() (security.Redis, error) {
	_, hasAddr := s.get(security.RedisAddr)
	_, hasURL := s.get(security.RedisURL)
	if !hasAddr && !hasURL {
		return security.Redis{}, errAt(s.withPos, "%s needs the option addr (the Redis server, host:port) or url ('redis://host:port', 'rediss://...' for TLS)", s.what)
	}
	if o, ok := s.get(security.RedisAddr); ok {
		if o.val == "" {
			return security.Redis{}, errAt(o.valPos, "option addr is empty")
		}
		if strings.Contains(o.val, "://") || strings.Contains(o.val, "@") {
			// A URL may hold a password: not echoed (its caret line
			// masks it too: secretSpans).
			return security.Redis{}, errAt(o.valPos, "option addr is the server's host:port; a redis:// or rediss:// URL goes in url = '...'")
		}
		if msg := checkHostPort(o.val); msg != "" {
			return security.Redis{}, errAt(o.valPos, "addr = '%s' %s", o.val, msg)
		}
	}
	r, err := security.ParseRedis(s.getter())
	if err != nil {
		return r, s.optionErrorAt(err)
	}
	return r, nil
}

// span is a byte range [start, end) of the text.
type span struct{ start, end int }

// secretSpans are the byte ranges of text that hold the values of
// masked options (maskedOption: password, properties.sasl.password,
// url, properties.sasl.jaas.config, any option that no connector takes
// in a WITH list, ...), for Caret to mask: what follows "key =" (or
// "key" and a string, the '=' forgotten) up to the option's end,
// wherever the tokens show one, even in a text that does not parse;
// where it does not lex after such a key, the rest of the text.
func secretSpans(text string) []span {
	toks, lerr := lex(text)
	inWith := optionLists(toks)
	masked := func(i int) bool {
		key := keyBefore(toks, i)
		if key == "" {
			return false
		}
		// In a WITH list an option no connector takes is masked whatever
		// its name; elsewhere a key written as a string
		// ('properties.sasl.jaas.config' =) is an option's where its name
		// says secret: 'bid' = kind in a query is no option.
		return maskedOption(key, inWith[i-1]) || toks[i-1].kind == tString && secretOption(key) || key == security.RedisAddr
	}
	var out []span
	for i := 1; i < len(toks); i++ {
		if !masked(i) {
			continue
		}
		j := i
		if toks[j].op("=") {
			j++
		} else if toks[j].kind != tString {
			continue
		}
		if j == len(toks) || toks[j].kind == tEOF {
			continue
		}
		sp := span{toks[j].pos.off, tokenEnd(text, toks[j])}
		if key := keyBefore(toks, i); key == security.RedisAddr && !strings.Contains(text[sp.start:sp.end], "@") && !maskedOption(key, inWith[i-1]) {
			continue // a host:port, shown; a URL with a password in addr is masked
		}
		for _, n := range toks[j+1:] {
			if n.kind == tEOF || n.op(",") || n.op(")") || n.op(";") {
				break
			}
			sp.end = tokenEnd(text, n)
		}
		out = append(out, sp)
	}
	var le *Error
	if n := len(toks); n > 0 && errors.As(lerr, &le) {
		at := n
		if toks[n-1].op("=") && n > 1 {
			at = n - 1
		}
		if masked(at) {
			// From the key's '=' (or the key) to the end: the lexer
			// stopped in the value, which may go on over the lines
			// after (a string not closed).
			from := tokenEnd(text, toks[n-1])
			for from < len(text) && (text[from] == ' ' || text[from] == '\t') {
				from++
			}
			out = append(out, span{from, len(text)})
		}
	}
	return out
}

// optionLists says for each token whether it is in an option list:
// after "WITH (" and before the ')' that closes it.
func optionLists(toks []token) []bool {
	in := make([]bool, len(toks))
	depth := 0
	for i, t := range toks {
		switch {
		case depth == 0 && i > 0 && t.op("(") && toks[i-1].is("with"):
			depth = 1
			continue
		case depth > 0 && t.op("("):
			depth++
		case depth > 0 && t.op(")"):
			depth--
		}
		in[i] = depth > 0
	}
	return in
}

// hideSyntax replaces the message of a syntax error (the lexer's or the
// parser's, which quote the text they stop at) where that is in a secret
// span: its text may be a password's.
func hideSyntax(e *Error) {
	if e.secretAt(e.Offset) >= 0 {
		e.Msg = "an option's value that may be a secret does not read here (it is not shown): write it as a quoted string, '...', or as '${VARIABLE}' to read it from the environment"
	}
}

// keyBefore is the option name that ends before token i ('key', key,
// or a dotted name), lower case; "" where there is none.
func keyBefore(toks []token, i int) string {
	t := toks[i-1]
	switch {
	case t.kind == tString:
		return strings.ToLower(t.text)
	case t.kind != tIdent:
		return ""
	}
	key := t.text
	for j := i - 1; j >= 2 && toks[j-1].op(".") && toks[j-2].kind == tIdent; j -= 2 {
		key = toks[j-2].text + "." + key
	}
	return strings.ToLower(key)
}

// tokenEnd is the offset after token t in text.
func tokenEnd(text string, t token) int {
	switch {
	case t.kind == tString:
		return stringEnd(text, t.pos.off)
	case t.quoted:
		return t.pos.off + len(t.text) + 2
	}
	return t.pos.off + len(t.text)
}

// stringEnd is the offset after the '...' literal that starts at off
// (its closing quote; a quote written twice is one inside it), or the
// text's end.
func stringEnd(text string, off int) int {
	for j := off + 1; j < len(text); j++ {
		if text[j] == '\'' {
			if j+1 < len(text) && text[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(text)
}
