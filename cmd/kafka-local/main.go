// Command kafka-local runs a Kafka broker for development and tests:
// franz-go's kfake, in this process, with every record in memory. Topics
// are created on first use with --partitions partitions; --topic creates
// some at start. It runs until SIGINT or SIGTERM.
//
//	go run ./cmd/kafka-local --addr 127.0.0.1:9092 --partitions 4 --topic events
//
// It is not a production broker: there is one broker and no replication,
// and without --data-dir nothing is written to disk. With --data-dir DIR
// it saves its topics, records, group offsets and transactions there when
// stopped and loads them when started again: stopping it and starting it
// again on the same address rehearses a broker's restart.
//
// It can require what a secured Kafka does, so that a pipeline with
// properties.security.protocol = 'SASL_SSL' (or SSL, SASL_PLAINTEXT) can
// be tried on one machine: --tls-cert and --tls-key make the listener TLS
// with that certificate and key (PEM files); --sasl-mechanism (PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512, or a comma list of them) and
// --sasl-user require SASL authentication as that user, whose password
// is read from --sasl-password-file or else from the environment
// variable KAFKA_LOCAL_PASSWORD, never from a flag (a command line is
// seen by every user of the machine), and is never printed.
//
//	KAFKA_LOCAL_PASSWORD=... go run ./cmd/kafka-local --sasl-mechanism SCRAM-SHA-256 --sasl-user saber \
//	    --tls-cert server.pem --tls-key server-key.pem
//
// librdkafka's clients (kcat) authenticate too: the broker lists the
// SASL handshake version they look for.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/saber-hx/saber-hx/internal/kfakesasl"
)

// PasswordEnv is the environment variable that holds the SASL user's
// password where --sasl-password-file is not given.
const PasswordEnv = "KAFKA_LOCAL_PASSWORD"

var mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// topicList is a repeatable flag whose values may also be comma lists.
type topicList []string

func (l *topicList) String() string { return strings.Join(*l, ",") }

func (l *topicList) Set(v string) error {
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t == "" {
			return errors.New("empty topic name")
		}
		*l = append(*l, t)
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: 0 after a signal, 1 when the broker cannot start, 2
// for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kafka-local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "`host:port` to listen on (port 0: any free port)")
	parts := fs.Int("partitions", 1, "partitions of each topic created")
	var topics topicList
	fs.Var(&topics, "topic", "a topic to create at start (repeatable, or a comma list)")
	dataDir := fs.String("data-dir", "", "keep the broker's state in this `directory` across restarts (empty: in memory only)")
	mechList := fs.String("sasl-mechanism", "", "require SASL authentication with this `mechanism`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, or a comma list")
	user := fs.String("sasl-user", "", "the SASL `user` (a superuser) clients authenticate as")
	pwFile := fs.String("sasl-password-file", "", "read the SASL user's password from this `file` (else from $"+PasswordEnv+")")
	certFile := fs.String("tls-cert", "", "listen with TLS: the server's certificate, a PEM `file` (with --tls-key)")
	keyFile := fs.String("tls-key", "", "the server certificate's private key, a PEM `file` (with --tls-cert)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kafka-local [--addr host:port] [--partitions n] [--topic name]... [--data-dir dir]\n"+
			"                   [--sasl-mechanism m --sasl-user u [--sasl-password-file f]] [--tls-cert f --tls-key f]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kafka-local: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	if *parts < 1 || *parts > 1<<16 {
		fmt.Fprintf(stderr, "kafka-local: --partitions %d: want 1 to 65536\n", *parts)
		return 2
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintf(stderr, "kafka-local: --addr %q: %v\n", *addr, err)
		return 2
	}
	sasl, tlsConf, code := secureFlags(stderr, *mechList, *user, *pwFile, *certFile, *keyFile)
	if code != 0 {
		return code
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*parts),
		// kfake asks for the address it would pick; this broker listens
		// where it was told.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, *addr) }),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(*parts), topics...))
	}
	where := "data in memory only"
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
		where = "data kept in " + *dataDir
	}
	protocol := "PLAINTEXT"
	if sasl.user != "" {
		opts = append(opts, kfake.EnableSASL())
		for _, m := range sasl.mechanisms {
			opts = append(opts, kfake.Superuser(m, sasl.user, sasl.password))
		}
		protocol = "SASL_PLAINTEXT"
	}
	if tlsConf != nil {
		opts = append(opts, kfake.TLS(tlsConf))
		protocol = strings.Replace(protocol, "PLAINTEXT", "SSL", 1)
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "kafka-local: %v\n", err)
		return 1
	}
	defer c.Close()
	if sasl.user != "" {
		// kcat (librdkafka) authenticates only to a broker that lists
		// SaslHandshake v0; the broker asks itself for its list first.
		var self *tls.Config
		if tlsConf != nil {
			self = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // this process, asking itself
		}
		if err := kfakesasl.Advertise(ctx, c, self); err != nil {
			fmt.Fprintf(stderr, "kafka-local: %v\n", err)
			return 1
		}
		protocol += ", " + strings.Join(sasl.mechanisms, " or ") + " as user " + sasl.user
	}
	fmt.Fprintf(stdout, "kafka-local: a development broker (not for production; %s) listening on %s (%s), topics created with %d partitions\n",
		where, strings.Join(c.ListenAddrs(), ","), protocol, *parts)
	<-ctx.Done()
	return 0
}

// saslUser is the SASL superuser the broker requires.
type saslUser struct {
	mechanisms     []string
	user, password string
}

// secureFlags reads the SASL and TLS flags: the user (none without
// --sasl-mechanism), the listener's TLS configuration (nil without
// --tls-cert), or a non-zero exit code after saying what is wrong (2: a
// usage error, 1: a file that cannot be read). The password is never
// shown.
func secureFlags(stderr io.Writer, mechList, user, pwFile, certFile, keyFile string) (saslUser, *tls.Config, int) {
	usage := func(format string, args ...any) (saslUser, *tls.Config, int) {
		fmt.Fprintf(stderr, "kafka-local: "+format+"\n", args...)
		return saslUser{}, nil, 2
	}
	var sasl saslUser
	switch {
	case mechList == "" && (user != "" || pwFile != ""):
		return usage("--sasl-user and --sasl-password-file need --sasl-mechanism (%s)", strings.Join(mechanisms, ", "))
	case mechList != "":
		for _, m := range strings.Split(mechList, ",") {
			m = strings.ToUpper(strings.TrimSpace(m))
			if !slices.Contains(mechanisms, m) {
				return usage("--sasl-mechanism %q: want %s, or a comma list of them", m, strings.Join(mechanisms, ", "))
			}
			if !slices.Contains(sasl.mechanisms, m) {
				sasl.mechanisms = append(sasl.mechanisms, m)
			}
		}
		if user == "" {
			return usage("--sasl-mechanism needs --sasl-user")
		}
		sasl.user = user
		if pwFile != "" {
			b, err := os.ReadFile(pwFile)
			if err != nil {
				fmt.Fprintf(stderr, "kafka-local: --sasl-password-file: %v\n", err)
				return saslUser{}, nil, 1
			}
			sasl.password = strings.TrimRight(string(b), "\r\n")
		} else {
			sasl.password = os.Getenv(PasswordEnv)
		}
		if sasl.password == "" {
			return usage("--sasl-user %s has no password: give --sasl-password-file, or set %s (a password is never a flag)", user, PasswordEnv)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return usage("--tls-cert and --tls-key go together")
	}
	if certFile == "" {
		return sasl, nil, 0
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "kafka-local: --tls-cert %s, --tls-key %s: %v\n", certFile, keyFile, err)
		return saslUser{}, nil, 1
	}
	return sasl, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, 0
}
