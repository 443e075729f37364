package security

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"strings"
)

// CommandLine is the settings of a connection as a command line gives
// them (saber-hx's flags): the options given, under the names the user
// knows them by, read by the rules of ParseKafka and ParseRedis, with a
// password from a file or an environment variable, never from the
// command line itself (which shows in ps and in the shell's history).
type CommandLine struct {
	// Given are the options given, their values as given; the password
	// option's value (KafkaPassword, RedisPassword) is the path of a
	// file that holds the password. Redis's RedisAddr may hold a URL,
	// redis://[user@]host[:port][/db] (rediss:// for TLS): read as
	// RedisURL, its user as RedisUsername, a password in it refused.
	Given map[string]string
	// Names are how the command line names the options
	// ("--kafka-sasl-mechanism"), in the errors; the password's is the
	// file's.
	Names map[string]string
	// PasswordEnv is the environment variable that holds the password
	// where no file is given (for Kafka, read with a SASL_* protocol
	// only); Lookup reads it (nil: os.LookupEnv).
	PasswordEnv string
	Lookup      func(string) (string, bool)
}

// Kafka reads the settings of a Kafka client. Errors are *OptionError,
// naming the options as Names does.
func (c CommandLine) Kafka() (Kafka, error) {
	sasl := strings.HasPrefix(strings.ToUpper(c.Given[KafkaProtocol]), "SASL_")
	pw, ok, err := c.password(KafkaPassword, sasl)
	if err != nil {
		return Kafka{}, err
	}
	k, err := ParseKafka(c.getter(c.Given, KafkaPassword, pw, ok))
	return k, c.rename(err, KafkaPassword)
}

// Redis reads the settings of a Redis client. Errors are *OptionError,
// naming the options as Names does.
func (c CommandLine) Redis() (Redis, error) {
	given := maps.Clone(c.Given)
	if raw, ok := given[RedisAddr]; ok && strings.Contains(raw, "://") {
		delete(given, RedisAddr)
		rest, user, err := c.splitURL(raw)
		if err != nil {
			return Redis{}, err
		}
		given[RedisURL] = rest
		if user != "" {
			if _, ok := given[RedisUsername]; ok {
				return Redis{}, &OptionError{RedisUsername, false, fmt.Sprintf("%s: the user is given in %s's URL already", c.name(RedisUsername), c.name(RedisAddr))}
			}
			given[RedisUsername] = user
		}
	}
	pw, ok, err := c.password(RedisPassword, true)
	if err != nil {
		return Redis{}, err
	}
	r, err := ParseRedis(c.getter(given, RedisPassword, pw, ok))
	return r, c.rename(err, RedisPassword)
}

// getter is given's values, the password option's value pw (where ok).
func (c CommandLine) getter(given map[string]string, pwOption, pw string, ok bool) func(string) (string, bool) {
	return func(option string) (string, bool) {
		if option == pwOption {
			return pw, ok
		}
		v, given := given[option]
		return v, given
	}
}

func (c CommandLine) name(option string) string {
	if n, ok := c.Names[option]; ok {
		return n
	}
	return option
}

// password reads the password: from the file given, else (where env)
// from PasswordEnv where it is set. A file that cannot be read or is
// empty, and a variable set but empty, are *OptionError.
func (c CommandLine) password(option string, env bool) (pw string, ok bool, err error) {
	if path, given := c.Given[option]; given {
		if path == "" {
			return "", false, &OptionError{option, true, fmt.Sprintf("%s \"\": name a file", c.name(option))}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false, &OptionError{option, true, fmt.Sprintf("%s: %v", c.name(option), err)}
		}
		// One line ending, as an editor or echo leaves it, is not the
		// password's.
		pw = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if pw == "" {
			return "", false, &OptionError{option, true, fmt.Sprintf("%s %s: the file is empty", c.name(option), path)}
		}
		return pw, true, nil
	}
	if !env || c.PasswordEnv == "" {
		return "", false, nil
	}
	lookup := c.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	pw, ok = lookup(c.PasswordEnv)
	if ok && pw == "" {
		return "", false, &OptionError{option, true, fmt.Sprintf("the environment variable %s is set but empty", c.PasswordEnv)}
	}
	return pw, ok, nil
}

// splitURL takes the user out of a Redis URL, which a command line
// gives as user@ (the url option reads a lone user@ as a password, as
// redis-cli does): the URL without it, and the user. A password in the
// URL is refused; the error names it, never shows it.
func (c CommandLine) splitURL(raw string) (rest, user string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return raw, "", nil // ParseRedis says what is wrong, without quoting it
	}
	if _, ok := u.User.Password(); ok {
		return "", "", &OptionError{RedisAddr, true, fmt.Sprintf("%s: a password in the URL is refused (a command line shows in ps and in the shell's history): "+
			"give it in %s or in the environment variable %s", c.name(RedisAddr), c.name(RedisPassword), c.PasswordEnv)}
	}
	user = u.User.Username()
	u.User = nil
	return u.String(), user, nil
}

// rename is err, an *OptionError of ParseKafka or ParseRedis, naming the
// options as Names does (the password's as its file's or PasswordEnv),
// without the SQL's hint on ${VARIABLE}.
func (c CommandLine) rename(err error, pwOption string) error {
	oe, ok := errors.AsType[*OptionError](err)
	if !ok {
		return err
	}
	names := maps.Clone(c.Names)
	if n, ok := names[pwOption]; ok && c.PasswordEnv != "" {
		names[pwOption] = n + " (or " + c.PasswordEnv + ")"
	}
	msg := strings.ReplaceAll(oe.Msg, " (write it as '${VARIABLE}' to read it from the environment)", "")
	words := strings.Split(msg, " ")
	for i, w := range words {
		name := strings.TrimRight(w, ",:)")
		if n, ok := names[name]; ok {
			words[i] = n + w[len(name):]
		}
	}
	return &OptionError{Option: oe.Option, Value: oe.Value, Msg: strings.Join(words, " ")}
}
