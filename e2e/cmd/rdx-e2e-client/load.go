// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// loadStats is what a load run reports besides the number of keys acknowledged.
type loadStats struct {
	MaxGap   time.Duration // the longest time between two acknowledged writes (or the start and the first)
	GapStart time.Duration // when that gap began, since the start
	Failures int           // SET attempts that failed and were retried
	Sample   string        // the first failure
}

func stopKey(o options) string { return fmt.Sprintf("e2e:%s:stop", o.run) }

// load SETs e2e:<run>:0, 1, ... one at a time until stopKey exists (looked up every second) or --count keys are
// written. A failed SET is retried, same key and value, until it is acknowledged: the run measures how long writes
// stop while the cluster changes, and every key below the count it returns was acknowledged.
func load(ctx context.Context, rdb *redis.Client, o options) (int, loadStats, error) {
	var st loadStats
	start := time.Now()
	lastAck, lastStopCheck := start, start
	for i := 0; i < o.count; {
		if time.Since(lastStopCheck) >= time.Second {
			lastStopCheck = time.Now()
			n, err := rdb.Exists(ctx, stopKey(o)).Result()
			if err == nil && n == 1 {
				if gap := time.Since(lastAck); gap > st.MaxGap { // writes failing until the end count too
					st.MaxGap, st.GapStart = gap, lastAck.Sub(start)
				}
				return i, st, nil
			}
		}
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := rdb.Set(attempt, key(o, i), value(o, i), 0).Err()
		cancel()
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return i, st, fmt.Errorf("not stopped within --timeout (%d keys written): %w", i, ctx.Err())
			}
			st.Failures++
			if st.Sample == "" {
				st.Sample = fmt.Sprintf("SET %s at %.1fs: %v", key(o, i), now.Sub(start).Seconds(), err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if gap := now.Sub(lastAck); gap > st.MaxGap {
			st.MaxGap, st.GapStart = gap, lastAck.Sub(start)
		}
		lastAck = now
		i++
	}
	return o.count, st, nil
}

// stop makes a load run of the same --run end.
func stop(ctx context.Context, rdb *redis.Client, o options) error {
	if err := rdb.Set(ctx, stopKey(o), "1", 0).Err(); err != nil {
		return fmt.Errorf("SET %s: %w", stopKey(o), err)
	}
	return nil
}
