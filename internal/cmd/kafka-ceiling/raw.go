package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRead reads the topic's partitions (from starts, total records) the
// way a consumer could that leaves franz-go's consumer out: one
// goroutine sends fetch requests to the leader and reads only the
// record batches' headers of each response, enough to know where the
// next fetch starts, and sends the next at once; `parsers` goroutines
// check, decompress and parse the batches (kgo.ProcessFetchPartition,
// what the consumer runs on its goroutine per broker before it fetches
// again). It returns the records parsed.
func rawRead(ctx context.Context, cl *kgo.Client, topic string, starts map[int32]int64, total int64, parsers int) (int64, error) {
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return 0, err
	}
	td, ok := md.Topics[topic]
	if !ok {
		return 0, fmt.Errorf("metadata of %s: no such topic", topic)
	}
	if td.Err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, td.Err)
	}
	leader := int32(-1)
	for _, p := range td.Partitions {
		if leader >= 0 && p.Leader != leader {
			return 0, fmt.Errorf("partitions of %s have several leaders: --raw reads from one broker", topic)
		}
		leader = p.Leader
	}
	type work struct {
		rp     kmsg.FetchResponseTopicPartition
		offset int64
	}
	var read atomic.Int64
	todo := make(chan work, 4*parsers)
	rctx, done := context.WithCancel(ctx)
	defer done()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	dec := kgo.DefaultDecompressor()
	for range parsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range todo {
				fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: w.rp.Partition, Offset: w.offset}, &w.rp, dec, nil)
				if fp.Err != nil {
					select {
					case errs <- fmt.Errorf("partition %d: %w", w.rp.Partition, fp.Err):
					default: // one is enough
					}
					done()
					continue
				}
				if read.Add(int64(len(fp.Records))) >= total {
					done()
				}
			}
		}()
	}
	next := map[int32]int64{}
	for p, o := range starts {
		next[p] = o
	}
	br := cl.Broker(int(leader))
	var ferr error
	for rctx.Err() == nil {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 8<<20
		req.SessionEpoch = -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, td.ID
		for p, o := range next {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, o, 1<<20, -1, -1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
		// A fetch names its offsets: sent again on a new connection where
		// one died, it reads the same records.
		resp, err := br.RetriableRequest(rctx, req)
		if err != nil {
			if rctx.Err() == nil {
				ferr = err
			}
			break
		}
		fr := resp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			ferr = err
			break
		}
		for _, rt := range fr.Topics {
			for _, rp := range rt.Partitions {
				o := next[rp.Partition]
				n, err := nextOffset(rp.RecordBatches, o)
				if err != nil {
					ferr = fmt.Errorf("partition %d: %w", rp.Partition, err)
					break
				}
				next[rp.Partition] = n
				if len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 {
					select {
					case todo <- work{rp, o}:
					case <-rctx.Done():
					}
				}
			}
		}
		if ferr != nil {
			break
		}
	}
	done()
	close(todo)
	wg.Wait()
	if ferr != nil {
		return read.Load(), ferr
	}
	select {
	case err := <-errs:
		return read.Load(), err
	default:
	}
	return read.Load(), nil
}

// nextOffset is the offset after the last whole record batch of
// batches (at: the fetch's offset, where nothing whole is there). Only
// the headers are read: a batch's first offset (bytes 0-7), its length
// (8-11), its magic (16) and its last offset delta (23-26).
func nextOffset(batches []byte, at int64) (int64, error) {
	for len(batches) >= 27 {
		size := 12 + int(int32(binary.BigEndian.Uint32(batches[8:])))
		if size > len(batches) {
			break // cut short by the fetch's byte limit
		}
		if magic := batches[16]; magic != 2 {
			return 0, fmt.Errorf("record batch of magic %d: --raw reads magic 2 only", magic)
		}
		at = int64(binary.BigEndian.Uint64(batches)) + int64(int32(binary.BigEndian.Uint32(batches[23:]))) + 1
		batches = batches[size:]
	}
	return at, nil
}
