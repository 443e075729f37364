// Package kfakesasl lets librdkafka's clients (kcat) authenticate to a
// kfake cluster with SASL. librdkafka requires the broker to serve
// SaslHandshake version 0 before it will authenticate at all, though it
// then uses version 1 with SaslAuthenticate, as kgo does; kfake serves
// version 1 only. Advertise makes the cluster's ApiVersions answer list
// version 0 too (and nothing else changed), which is all librdkafka
// needs.
package kfakesasl

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Advertise installs, on c, an answer to ApiVersions that is c's own
// with SaslHandshake from version 0. c's own answer is asked for first,
// over a connection made with tc (nil: plaintext; a client certificate
// where c requires one).
func Advertise(ctx context.Context, c *kfake.Cluster, tc *tls.Config) error {
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "saber-hx", "1"
	own, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kfake's ApiVersions: %w", err)
	}
	maxVersion := own.GetVersion()
	keys := slices.Clone(own.ApiKeys)
	for i := range keys {
		if keys[i].ApiKey == kmsg.SASLHandshake.Int16() {
			keys[i].MinVersion = 0
		}
	}
	c.ControlKey(kmsg.ApiVersions.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ApiVersionsRequest)
		if req.Version > maxVersion {
			return nil, nil, false // kfake's own downgrade answer
		}
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = slices.Clone(keys)
		resp.SupportedFeatures = own.SupportedFeatures
		resp.FinalizedFeatures = own.FinalizedFeatures
		resp.FinalizedFeaturesEpoch = own.FinalizedFeaturesEpoch
		return resp, nil, true
	})
	return nil
}
