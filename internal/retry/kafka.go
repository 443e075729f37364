package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/security"
)

// BrokerHook is a kgo hook (kgo.WithHooks) that reports a client's
// outages to O: a failed connection to a broker begins one (or goes on
// with it), the next connection made ends it. kgo itself retries what
// failed meanwhile.
type BrokerHook struct{ O *Outage }

func (h BrokerHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if security.Failed(err) {
		return // refused, not unreachable: a security.Guard's to report
	}
	if err != nil {
		h.O.Failed(fmt.Errorf("broker %s: %w", net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), err), 0)
		return
	}
	h.O.Recovered()
}

// KafkaTransient is whether err, met by a kgo client, is one the client
// gets over by itself once the brokers are back: a broker unreachable or
// its connection broken, a retriable Kafka error, or the group session
// lost (kgo joins again). Others (decoding, authorization, a closed
// client, a connection refused on its credentials or certificates:
// security.Failed) are not. kgo's ErrFirstReadEOF (a broker that
// closed the connection at once) counts as transient, where kgo itself
// does not retry it: a client's missing SASL or TLS is told at open by
// security.Guard's ping, and later a broker that restarts closes
// connections so, which the outage's budget bounds.
func KafkaTransient(err error) bool {
	if err == nil || errors.Is(err, kgo.ErrClientClosed) || security.Failed(err) {
		return false
	}
	if _, ok := errors.AsType[*kgo.ErrGroupSession](err); ok {
		return true
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Retriable
	}
	if kgo.IsRetryableBrokerErr(err) {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// ProduceSync is cl.ProduceSync bounded by ctx. kgo fails on its context
// no record it may have sent already (an idempotent or transactional
// producer's, a broker gone with the request in flight), and none while
// the brokers are unreachable: such a wait outlived any bound. Where ctx
// ends first, the client is closed, which fails every record buffered or
// in flight and ends the wait: the client is then unusable. The error is
// the first record's, or ctx's cause.
func ProduceSync(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) error {
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, recs...).FirstErr() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cl.Close()
		<-done
		return context.Cause(ctx)
	}
}
