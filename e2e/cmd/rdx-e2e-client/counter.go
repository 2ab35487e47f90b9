// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// counter runs read-modify-writes from concurrent connections: 8 of them INCR one key --count times in all, after
// which the key must read --count (no increment lost or applied twice); 8 race SETNX on one fresh key and exactly
// one wins; GETSET returns the value it replaced. Commands are not retried (a retried INCR could apply twice), so
// any error fails the run.
func counter(ctx context.Context, addr string, o options) ([]string, error) {
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
		return checks, firstErr
	}
	if n, err := rdb.Get(ctx, k("counter")).Int(); err != nil || n != o.count {
		return checks, fmt.Errorf("after %d INCRs from %d connections the counter reads %d (err %v)", o.count, workers, n, err)
	}
	checks = append(checks, fmt.Sprintf("%d INCRs from %d connections: the counter reads %d", o.count, workers, o.count))
	if setnxWins != 1 {
		return checks, fmt.Errorf("%d connections raced SETNX on a fresh key: %d won, want exactly 1", workers, setnxWins)
	}
	checks = append(checks, fmt.Sprintf("%d connections raced SETNX on a fresh key: exactly one won", workers))
	if old, err := rdb.GetSet(ctx, k("counter"), "0").Result(); err != nil || old != fmt.Sprint(o.count) {
		return checks, fmt.Errorf("GETSET returned %q (err %v), want %d", old, err, o.count)
	}
	if n, err := rdb.Get(ctx, k("counter")).Int(); err != nil || n != 0 {
		return checks, fmt.Errorf("after GETSET the counter reads %d (err %v), want 0", n, err)
	}
	checks = append(checks, "GETSET returned the value it replaced")
	return checks, nil
}
