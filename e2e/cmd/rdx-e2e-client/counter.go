// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter runs read-modify-writes from concurrent connections: 8 of them INCR one key --count times in all, after
// which the key must read --count (no increment lost or applied twice); 8 race SETNX on one fresh key and exactly
// one wins; GETSET returns the value it replaced. Commands are not retried (a retried INCR could apply twice), so
// any error fails the run. The counter's reads are linearizable but for a protocol whose reads are sequentially
// consistent (--converge: they may show an older value for a moment).
func counter(ctx context.Context, addr string, o options) ([]string, staleness, error) {
	var st staleness
	opts := clientOptions(addr)
	opts.MaxRetries = -1 // none
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	var checks []string
	k := func(name string) string { return fmt.Sprintf("e2e:%s:rmw:%s", o.run, name) }
	const workers = 8
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	setnxWins := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				if firstErr == nil {
					firstErr = err
				}
			}
			for next.Add(1) <= int64(o.count) {
				if err := rdb.Incr(ctx, k("counter")).Err(); err != nil {
					fail(fmt.Errorf("INCR: %w", err))
					return
				}
			}
			won, err := rdb.SetNX(ctx, k("setnx"), "x", 0).Result()
			if err != nil {
				fail(fmt.Errorf("SETNX: %w", err))
				return
			}
			if won {
				mu.Lock()
				setnxWins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return checks, st, firstErr
	}
	if got, err := readUntil(ctx, rdb, k("counter"), fmt.Sprint(o.count), o, &st); err != nil {
		return checks, st, fmt.Errorf("after %d INCRs from %d connections the counter reads %q (err %v)", o.count, workers, got, err)
	}
	checks = append(checks, fmt.Sprintf("%d INCRs from %d connections: the counter reads %d", o.count, workers, o.count))
	if setnxWins != 1 {
		return checks, st, fmt.Errorf("%d connections raced SETNX on a fresh key: %d won, want exactly 1", workers, setnxWins)
	}
	checks = append(checks, fmt.Sprintf("%d connections raced SETNX on a fresh key: exactly one won", workers))
	if old, err := rdb.GetSet(ctx, k("counter"), "0").Result(); err != nil || old != fmt.Sprint(o.count) {
		return checks, st, fmt.Errorf("GETSET returned %q (err %v), want %d", old, err, o.count)
	}
	if got, err := readUntil(ctx, rdb, k("counter"), "0", o, &st); err != nil {
		return checks, st, fmt.Errorf("after GETSET the counter reads %q (err %v), want 0", got, err)
	}
	checks = append(checks, "GETSET returned the value it replaced")
	return checks, st, nil
}

// readUntil GETs key until it reads want, for up to o.converge (once when 0); it returns the last value read (and
// an error when that is not want). A first read that is not want counts in st.reads.
func readUntil(ctx context.Context, rdb *redis.Client, key, want string, o options, st *staleness) (string, error) {
	start := time.Now()
	for first := true; ; first = false {
		got, err := rdb.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return got, err
		}
		if err == nil && got == want {
			if !first {
				st.converged = max(st.converged, time.Since(start))
			}
			return got, nil
		}
		if first {
			st.reads++
		}
		if time.Since(start) >= o.converge {
			return got, fmt.Errorf("not %q after %s", want, o.converge)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
