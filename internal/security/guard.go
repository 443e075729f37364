package security

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslFailuresToFail is how many connections in a row (with no request
// answered between them) the broker must close during SASL
// authentication for the Guard to call it refused: one could be a broker
// going down at that moment.
const saslFailuresToFail = 2

// Guard watches the connections of kgo clients to the brokers (it is a
// kgo hook: Opt), and fails for good where a TLS handshake fails on the
// certificates, or the brokers keep closing connections during SASL
// authentication (a Kafka broker answers a wrong password so, or with
// SASL_AUTHENTICATION_FAILED), which kgo would otherwise retry as an
// outage. The operations bound to it (Bind) then end, and Err says why.
// Its methods may be called from several goroutines.
type Guard struct {
	sec     Kafka
	brokers []string
	ctx     context.Context // cancelled, the failure as its cause, on the first failure
	cancel  context.CancelCauseFunc
	failure atomic.Pointer[Error]
	// sasl counts the connections in a row closed during SASL
	// authentication (a response read resets it: no lock per read).
	sasl atomic.Int32
}

// NewGuard is a guard of clients of brokers secured as k says.
func NewGuard(k Kafka, brokers []string) *Guard {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Guard{sec: k, brokers: brokers, ctx: ctx, cancel: cancel}
}

// Opt is the option that makes a client report its connections to g.
func (g *Guard) Opt() kgo.Opt { return kgo.WithHooks(g) }

// Connect makes a kgo client of brokers whose connections are
// secured as k says (opts are added after the seeds, the security's
// options and the guard's hook), and pings the brokers (Guard.Ping):
// an *Error where they refuse the connection. A ping that fails
// otherwise (the brokers down) is not an error here: the client retries
// as it does. The settings are checked first (an *OptionError, or a TLS
// file that cannot be read).
func (k Kafka) Connect(ctx context.Context, brokers []string, opts ...kgo.Opt) (*kgo.Client, *Guard, error) {
	sec, err := k.Opts()
	if err != nil {
		return nil, nil, err
	}
	g := NewGuard(k, brokers)
	all := append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, sec...)
	all = append(all, g.Opt())
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	if err := g.Ping(ctx, cl); IsFailure(err) {
		cl.Close()
		return nil, nil, err
	}
	return cl, g, nil
}

// Failure is the *Error that ended the guard, or nil.
func (g *Guard) Failure() error {
	if f := g.failure.Load(); f != nil {
		return f
	}
	return nil
}

// Done is closed at the guard's failure.
func (g *Guard) Done() <-chan struct{} { return g.ctx.Done() }

// Bind returns ctx, ended also by the guard's failure (with it as the
// cause); call cancel when the operation is over.
func (g *Guard) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(g.ctx, func() { cancel(context.Cause(g.ctx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// OnFailure calls f, in a goroutine of its own, at the guard's failure
// (at once where it has failed already); stop undoes that if it has not
// happened yet.
func (g *Guard) OnFailure(f func(error)) (stop func() bool) {
	return context.AfterFunc(g.ctx, func() { f(g.Failure()) })
}

// Err is what err, met by a client g watches, means: the guard's failure
// where there is one (an operation it ended), else err classified
// (Classify).
func (g *Guard) Err(err error) error {
	if err == nil {
		return nil
	}
	if f := g.Failure(); f != nil {
		return f
	}
	return Classify(g.server(), err)
}

func (g *Guard) server() string {
	if len(g.brokers) == 1 {
		return "kafka broker " + g.brokers[0]
	}
	return "kafka brokers " + strings.Join(g.brokers, ",")
}

func (g *Guard) fail(e *Error) {
	if g.failure.CompareAndSwap(nil, e) {
		g.cancel(e)
	}
}

// Ping asks the brokers for their metadata through cl, a client with
// g's hook, and says why that failed: nil, an *Error (the connection
// refused), or the ping's own error (the brokers down or unreachable: an
// outage). A connection closed at once is tried again, once, to tell a
// broker that went down at that moment from one that closes every
// connection of these settings: a SASL authentication (twice refused),
// a client without SASL where the broker requires it, or a plaintext
// client at a TLS port (the port then answers a TLS handshake).
func (g *Guard) Ping(ctx context.Context, cl *kgo.Client) error {
	if g.sec.TLS() {
		// A TLS client at a plaintext listener that does not close the
		// connection (kfake, kafka-local: the ClientHello reads as the
		// start of a long request) waits for an answer until the ping's
		// end, and never learns why: ask the port.
		for _, b := range g.brokers {
			if !speaksTLS(ctx, b) && speaksKafka(ctx, b) {
				return &Error{Server: "kafka broker " + b, Kind: TLSFailed, Err: fmt.Errorf("no answer to the TLS handshake within %v", probeTimeout),
					Hint: "the broker answers Kafka in plaintext on this port: is it a PLAINTEXT or SASL_PLAINTEXT listener?"}
			}
		}
	}
	var err error
	for range 2 {
		if f := g.Failure(); f != nil {
			return f
		}
		bctx, cancel := g.Bind(ctx)
		err = cl.Ping(bctx)
		cancel()
		if err == nil {
			return nil
		}
		if f := g.Failure(); f != nil {
			return f
		}
		if f := Classify(g.server(), err); IsFailure(f) {
			return f
		}
		if !closedAtOnce(err) || ctx.Err() != nil {
			return err
		}
	}
	if fe, ok := errors.AsType[*kgo.ErrFirstReadEOF](err); ok && strings.Contains(fe.Error(), "SASL") && !g.sec.SASL() {
		return &Error{Server: g.server(), Kind: AuthFailed, Err: err,
			Hint: "the broker requires SASL authentication: set " + KafkaProtocol + " to SASL_PLAINTEXT or SASL_SSL"}
	}
	for _, b := range g.brokers {
		tlsPort := speaksTLS(ctx, b)
		switch {
		case tlsPort && !g.sec.TLS():
			return &Error{Server: "kafka broker " + b, Kind: TLSFailed, Err: err,
				Hint: "the broker speaks TLS on this port and the client does not: set " + KafkaProtocol + " to SSL or SASL_SSL"}
		case !tlsPort && g.sec.TLS() && !errors.Is(err, context.DeadlineExceeded):
			return &Error{Server: "kafka broker " + b, Kind: TLSFailed, Err: err,
				Hint: "the broker does not answer a TLS handshake on this port: is it a PLAINTEXT or SASL_PLAINTEXT listener?"}
		}
	}
	return err
}

// The requests whose reads tell how authentication went.
var (
	keyApiVersions      = kmsg.ApiVersions.Int16()
	keySASLHandshake    = kmsg.SASLHandshake.Int16()
	keySASLAuthenticate = kmsg.SASLAuthenticate.Int16()
)

func brokerName(meta kgo.BrokerMetadata) string {
	return "kafka broker " + net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}

// OnBrokerConnect (kgo.HookBrokerConnect): a dial that failed on TLS
// (the TLS handshake is part of kgo's dial) fails the guard.
func (g *Guard) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	if kind, hint, ok := classify(err); ok {
		g.fail(&Error{Server: brokerName(meta), Kind: kind, Hint: hint, Err: err})
	}
}

// OnBrokerRead (kgo.HookBrokerRead): a TLS alert (a client certificate
// refused arrives with the first read under TLS 1.3), and connections
// closed during SASL authentication, fail the guard; a request answered
// on a connection past authentication resets the count of the latter.
func (g *Guard) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		if kind, hint, ok := classify(err); ok {
			g.fail(&Error{Server: brokerName(meta), Kind: kind, Hint: hint, Err: err})
			return
		}
	}
	switch {
	case key == keySASLHandshake || key == keySASLAuthenticate:
		if err == nil || !g.sec.SASL() || !closedAtOnce(err) {
			return
		}
		if g.sasl.Add(1) >= saslFailuresToFail {
			g.fail(&Error{Server: brokerName(meta), Kind: AuthFailed, Err: err,
				Hint: fmt.Sprintf("the broker closed the connection during SASL %s authentication as %s: wrong user name or password, or the mechanism not enabled for the user",
					g.sec.Mechanism, g.sec.Username)})
		}
	case err == nil && key != keyApiVersions && g.sasl.Load() != 0:
		g.sasl.Store(0)
	}
}

var (
	_ kgo.HookBrokerConnect = (*Guard)(nil)
	_ kgo.HookBrokerRead    = (*Guard)(nil)
)
