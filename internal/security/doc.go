// Package security holds how the connectors' connections are secured
// and what they must never show: the settings of a Kafka client (TLS,
// SASL PLAIN or SCRAM, named as RisingWave and librdkafka name them:
// properties.security.protocol, properties.sasl.mechanism, ...) and of a
// Redis client (AUTH with a password or an ACL user, TLS, or a
// redis:// / rediss:// URL), the kgo options and go-redis options they
// make, ${NAME} placeholders read from the environment, and the errors
// of a connection that the server refused.
//
// # Secrets
//
// A password is a Secret: it prints as *** with every fmt verb, in JSON
// and text encodings and in slog, and is kept in memory masked, so that
// a dump of a struct that holds it (a test's failure message, %+v of an
// unexported field) does not show it either. Reveal returns it to the
// client library that sends it; nothing else should call it. The
// settings' String forms, the SQL compiler's echo of options and every
// error built here print *** where a secret would be.
//
// # Refused connections are not outages
//
// A wrong password, a certificate the other side does not trust, or a
// plaintext client on a TLS port fails the same way on every attempt:
// retrying it for minutes only hides it. Classify turns such an error into
// an *Error ("<server>: authentication failed: ..." or "<server>: TLS
// handshake failed: ..."), which internal/retry never retries. A Kafka
// client is watched by a Guard (a kgo hook), because kgo retries a
// connection that the broker closes during authentication as if the
// broker were down: the Guard notices the failed authentications and
// TLS handshakes, and ends the operations bound to it (Bind) with the
// *Error. A server that is down is still an outage, retried as before.
package security
