package redissink

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/internal/retry"
	"github.com/saber-hx/saber-hx/internal/security"
)

// DefaultRetryTimeout is a suggested RetryTimeout for a long-running
// sink (the command line's default): a server restarted by a deploy or a
// crash is back well within it.
const DefaultRetryTimeout = 2 * time.Minute

// retrier is what Hash and YSB share to carry a flush through an outage.
type retrier struct {
	policy retry.Policy
	outage *retry.Outage
}

func newRetrier(addr string, timeout time.Duration, logger func(string, ...any)) retrier {
	return retrier{policy: retry.Policy{Timeout: timeout}, outage: retry.NewOutage("redis "+addr, logger, 0)}
}

// do runs write until it succeeds, fails otherwise than on the
// connection, or the retry budget is spent. The rows a flush holds stay
// with it meanwhile: being absolute values, written again they leave the
// same data.
func (r *retrier) do(ctx context.Context, write func(context.Context) error) error {
	return retry.Do(ctx, r.policy, r.outage, connectionError, write)
}

// connectionError is whether err says the server could not be reached or
// the connection broke (refused, reset, closed, timed out): worth another
// try. A reply (WRONGTYPE, OOM, NOAUTH...) is not, but for LOADING and
// BUSY, a server that is starting or busy with a script; nor is the
// caller's context or the client closed by the caller, nor a connection
// the server refused (security.Failed: a TLS handshake that fails is a
// net.Error too).
func connectionError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) ||
		security.Failed(err) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		return strings.HasPrefix(msg, "LOADING ") || strings.HasPrefix(msg, "BUSY ")
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout)
}
