package security

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The options of a Redis connection.
const (
	RedisAddr       = "addr"
	RedisURL        = "url"
	RedisUsername   = "username"
	RedisPassword   = "password"
	RedisTLS        = "tls"
	RedisCA         = "tls.ca"
	RedisCert       = "tls.cert"
	RedisKey        = "tls.key"
	RedisServerName = "tls.server_name"
)

// RedisOptions are the option names above but addr, in that order.
var RedisOptions = []string{RedisURL, RedisUsername, RedisPassword, RedisTLS, RedisCA, RedisCert, RedisKey, RedisServerName}

// Redis is a Redis server and how to connect to it.
type Redis struct {
	Addr string // host:port
	// Username is an ACL user ("": the default user); Password its
	// password, or the server's requirepass ("": no AUTH).
	Username string
	Password Secret
	// DB is the database number (a URL's path).
	DB int
	// TLS makes the connection TLS; CA is a PEM file of the authorities
	// that sign the server's certificate ("": the system's), Cert and
	// Key the client's certificate and key (a server with
	// tls-auth-clients), ServerName the name its certificate must have
	// ("": Addr's host).
	TLS           bool
	CA, Cert, Key string
	ServerName    string
}

// ParseRedisURL reads redis://[user[:password]@]host[:port][/db], or
// rediss://... for TLS (port 6379 where none is given). Errors quote
// nothing of the URL but its scheme.
func ParseRedisURL(raw string) (Redis, error) {
	var r Redis
	u, err := url.Parse(raw)
	if err != nil {
		// Not url.Parse's error: its text quotes the URL, or a part of
		// it that may be the password.
		return r, errors.New("not a URL of the form redis://[user[:password]@]host[:port][/db] (rediss:// for TLS)")
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		r.TLS = true
	default:
		return r, fmt.Errorf("the scheme is %q: want redis:// or rediss:// (TLS)", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return r, errors.New("no host: want redis://[user[:password]@]host[:port][/db]")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return r, errors.New("a query or fragment is not supported: want redis://[user[:password]@]host[:port][/db] and the other options (tls.ca, ...) apart")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" || strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return r, errors.New("no host: want redis://[user[:password]@]host[:port][/db]")
	}
	if port == "" {
		port = "6379"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return r, errors.New("the port is not a number from 1 to 65535")
	}
	r.Addr = net.JoinHostPort(host, port)
	if u.User != nil {
		r.Username = u.User.Username()
		if p, ok := u.User.Password(); ok {
			r.Password = NewSecret(p)
		} else if r.Username != "" {
			// redis://password@host: a password alone, as redis-cli reads it.
			r.Password, r.Username = NewSecret(r.Username), ""
		}
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return r, errors.New("the database (the path) is not a number, as in redis://host:6379/0")
		}
		r.DB = n
	}
	return r, nil
}

// ParseRedis reads a Redis sink's options (get returns an option's
// value as written, and whether it was given): addr or url, username,
// password, tls ('true' or 'false'), tls.ca, tls.cert, tls.key,
// tls.server_name. Errors are *OptionError and never show a password.
func ParseRedis(get func(string) (string, bool)) (Redis, error) {
	var r Redis
	addr, hasAddr := get(RedisAddr)
	raw, hasURL := get(RedisURL)
	switch {
	case hasAddr && hasURL:
		return r, &OptionError{RedisURL, false, fmt.Sprintf("give either %s or %s, not both", RedisAddr, RedisURL)}
	case hasURL:
		var err error
		if r, err = ParseRedisURL(raw); err != nil {
			// Not the value: where it does not parse, what is the
			// password in it is not known.
			return r, &OptionError{RedisURL, true, fmt.Sprintf("option %s: %v", RedisURL, err)}
		}
	case hasAddr:
		r.Addr = addr
	}
	if v, ok := get(RedisUsername); ok {
		if hasURL && r.Username != "" {
			return r, &OptionError{RedisUsername, false, fmt.Sprintf("the user is given in %s already", RedisURL)}
		}
		if v == "" {
			return r, &OptionError{RedisUsername, true, fmt.Sprintf("option %s is empty", RedisUsername)}
		}
		r.Username = v
	}
	if v, ok := get(RedisPassword); ok {
		if hasURL && r.Password.IsSet() {
			return r, &OptionError{RedisPassword, false, fmt.Sprintf("the password is given in %s already", RedisURL)}
		}
		if v == "" {
			return r, &OptionError{RedisPassword, true, fmt.Sprintf("option %s is empty", RedisPassword)}
		}
		r.Password = NewSecret(v)
	}
	if v, ok := get(RedisTLS); ok {
		switch strings.ToLower(v) {
		case "true":
			r.TLS = true
		case "false":
			if r.TLS {
				return r, &OptionError{RedisTLS, true, fmt.Sprintf("%s = '%s', but the URL is rediss:// (TLS)", RedisTLS, v)}
			}
		default:
			return r, &OptionError{RedisTLS, true, fmt.Sprintf("%s = '%s' is not valid (valid: true, false)", RedisTLS, v)}
		}
	}
	for _, f := range []struct {
		opt string
		dst *string
	}{{RedisCA, &r.CA}, {RedisCert, &r.Cert}, {RedisKey, &r.Key}, {RedisServerName, &r.ServerName}} {
		if v, ok := get(f.opt); ok {
			if v == "" {
				return r, &OptionError{f.opt, true, fmt.Sprintf("option %s is empty", f.opt)}
			}
			if !r.TLS {
				return r, &OptionError{f.opt, false, fmt.Sprintf("option %s applies with %s = 'true' (or a rediss:// URL)", f.opt, RedisTLS)}
			}
			*f.dst = v
		}
	}
	return r, r.Validate()
}

// Validate checks the settings: an address, TLS files with TLS only, a
// client certificate with its key, a user name with a password.
func (r Redis) Validate() error {
	if r.Addr == "" {
		return &OptionError{RedisAddr, false, "no Redis server: give addr ('host:port') or url ('redis://host:port')"}
	}
	if r.Username != "" && !r.Password.IsSet() {
		return &OptionError{RedisUsername, false, fmt.Sprintf("option %s needs %s (the ACL user's)", RedisUsername, RedisPassword)}
	}
	if !r.TLS {
		for _, f := range []struct{ opt, v string }{{RedisCA, r.CA}, {RedisCert, r.Cert}, {RedisKey, r.Key}, {RedisServerName, r.ServerName}} {
			if f.v != "" {
				return &OptionError{f.opt, false, fmt.Sprintf("option %s applies with %s = 'true' (or a rediss:// URL)", f.opt, RedisTLS)}
			}
		}
	}
	switch {
	case r.Cert != "" && r.Key == "":
		return &OptionError{RedisCert, false, fmt.Sprintf("option %s needs %s (the client's private key)", RedisCert, RedisKey)}
	case r.Key != "" && r.Cert == "":
		return &OptionError{RedisKey, false, fmt.Sprintf("option %s needs %s (the client's certificate)", RedisKey, RedisCert)}
	}
	return nil
}

// Secured is whether the connection authenticates or uses TLS.
func (r Redis) Secured() bool { return r.TLS || r.Password.IsSet() }

// TLSConfig is the connection's TLS configuration, its files read (nil
// without TLS).
func (r Redis) TLSConfig() (*tls.Config, error) {
	if !r.TLS {
		return nil, nil
	}
	return tlsFiles{ca: r.CA, cert: r.Cert, key: r.Key, caOpt: RedisCA, certOpt: RedisCert, keyOpt: RedisKey,
		serverName: r.ServerName}.config()
}

// Options are the go-redis options of the connection.
func (r Redis) Options() (*redis.Options, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	tc, err := r.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", r.Addr, err)
	}
	return &redis.Options{Addr: r.Addr, Username: r.Username, Password: r.Password.Reveal(), DB: r.DB, TLSConfig: tc}, nil
}

// NewClient is a client of the server (no connection made yet). The
// first one silences go-redis's process-wide logger, which logs each
// failed dial of a pool, a line every few hundred milliseconds while a
// server is down: saber-hx's clients report an outage themselves, once.
// An embedding program that wants go-redis's lines sets its logger
// (redis.SetLogger) after it.
func (r Redis) NewClient() (*redis.Client, error) {
	o, err := r.Options()
	if err != nil {
		return nil, err
	}
	silenceRedisLog.Do(func() { redis.SetLogger(discardLog{}) })
	return redis.NewClient(o), nil
}

var silenceRedisLog sync.Once

type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}

// Connect is a client of the server that answered a PING: where the
// server refused the password or the TLS handshake, or speaks TLS to a
// plaintext client, an *Error; another failure is "redis ADDR: ping:
// ..." (the server down: an outage).
func (r Redis) Connect(ctx context.Context) (*redis.Client, error) {
	c, err := r.NewClient()
	if err != nil {
		return nil, err
	}
	if err := r.Check(ctx, c); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Check sends c (a client of this server) a PING, and returns what its
// failure means as Connect does.
func (r Redis) Check(ctx context.Context, c *redis.Client) error {
	addr := c.Options().Addr
	server := "redis " + addr
	if tc := c.Options().TLSConfig; tc != nil {
		// A plaintext server reads a TLS client's hello as the start of
		// a command and waits for the rest: go-redis would wait out its
		// timeouts, dial after dial. A handshake of its own, bounded,
		// tells that server from one that refuses the certificates.
		if err := handshake(ctx, addr, tc); err != nil {
			if f := Classify(server, err); IsFailure(f) {
				return f
			}
			if speaksRESP(ctx, addr) {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no answer to the TLS handshake within %v", probeTimeout)
				}
				return &Error{Server: server, Kind: TLSFailed, Err: err,
					Hint: "the server does not speak TLS on this port: it answered in plaintext"}
			}
		}
	}
	err := c.Ping(ctx).Err()
	if err == nil {
		return nil
	}
	if f := Classify(server, err); IsFailure(f) {
		return f
	}
	if !r.TLS && closedAtOnce(err) && speaksTLS(ctx, addr) {
		return &Error{Server: server, Kind: TLSFailed, Err: err,
			Hint: "the server speaks TLS on this port and the client does not: set tls = 'true', or use a rediss:// URL"}
	}
	return fmt.Errorf("%s: ping: %w", server, err)
}

// String describes the connection, the password as ***:
// "rediss://alice:***@host:6380/0, CA /etc/ca.pem".
func (r Redis) String() string {
	scheme := "redis"
	if r.TLS {
		scheme = "rediss"
	}
	s := scheme + "://"
	switch {
	case r.Username != "" && r.Password.IsSet():
		s += r.Username + ":" + Redacted + "@"
	case r.Username != "":
		s += r.Username + "@"
	case r.Password.IsSet():
		s += ":" + Redacted + "@"
	}
	s += r.Addr
	if r.DB != 0 {
		s += "/" + strconv.Itoa(r.DB)
	}
	if r.CA != "" {
		s += ", CA " + r.CA
	}
	if r.Cert != "" {
		s += ", client certificate " + r.Cert
	}
	if r.ServerName != "" {
		s += ", server name " + r.ServerName
	}
	return s
}

// RedactURL is raw with the password of its user information, if any,
// as ***; text that is not a URL with user information is returned
// with everything between "://" and the last "@" as ***.
func RedactURL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	user := rest[:at]
	if c := strings.IndexByte(user, ':'); c >= 0 {
		user = user[:c+1] + Redacted
	} else {
		user = Redacted // redis://password@host
	}
	return raw[:i+3] + user + rest[at:]
}
