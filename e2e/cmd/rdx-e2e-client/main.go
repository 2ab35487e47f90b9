// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Command rdx-e2e-client is the e2e suite's Redis client: it runs as a pod inside the cluster and talks to a
// TxCluster's endpoint Service with go-redis, so the suite exercises the same path an application uses.
//
//	rdx-e2e-client write  --addr host:port --run ID --count N   SET e2e:<run>:<i> to a value derived from run and i
//	rdx-e2e-client verify --addr host:port --run ID --count N   GET every one of them back and compare
//	                      [--converge D]                        (re-reading a stale key for up to D: zab's reads)
//	rdx-e2e-client txn    --addr host:port --run ID             MULTI/EXEC, and WATCH with and without a conflict
//	rdx-e2e-client load   --addr host:port --run ID --count N   write like `write`, retrying each key until it is
//	                                                            acknowledged, until `stop` (or N keys); reports how
//	                                                            many, and the longest time writes stopped
//	rdx-e2e-client stop   --addr host:port --run ID             make the load run of that ID end
//	rdx-e2e-client counter --addr host:port --run ID --count N  INCR one key N times from 8 connections and read N
//	                       [--converge D]                       back; race SETNX; GETSET (read-modify-writes)
//
// Every subcommand prints one JSON line {"op":..., "ok":true|false, ...} last and exits non-zero on failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

type result struct {
	Op      string   `json:"op"`
	OK      bool     `json:"ok"`
	Keys    int      `json:"keys,omitempty"`
	Seconds float64  `json:"seconds"`
	Checks  []string `json:"checks,omitempty"`
	Error   string   `json:"error,omitempty"`
	// verify, counter with --converge: reads that did not show a completed write at first, and how long the
	// last of them took to show it
	StaleReads       int     `json:"stale_reads,omitempty"`
	ConvergedSeconds float64 `json:"converged_seconds,omitempty"`
	// load only
	MaxGapSeconds   float64 `json:"max_gap_seconds,omitempty"`
	GapStartSeconds float64 `json:"gap_start_seconds,omitempty"`
	Failures        int     `json:"failures,omitempty"`
	FirstFailure    string  `json:"first_failure,omitempty"`
}

type options struct {
	addr    string
	run     string
	count   int
	timeout time.Duration
	// converge is how long a read that does not show a completed write yet is read again (verify, counter): a
	// protocol whose reads are sequentially consistent (zab: a member reads its own copy) may return an older value
	// for a moment; 0 (linearizable reads): the first read must show it.
	converge time.Duration
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rdx-e2e-client write|verify|txn|load|stop|counter --addr host:port --run ID [--count N]")
		os.Exit(2)
	}
	op := os.Args[1]
	fs := flag.NewFlagSet(op, flag.ExitOnError)
	var o options
	fs.StringVar(&o.addr, "addr", "", "endpoint host:port")
	fs.StringVar(&o.run, "run", "", "run id: key prefix and value seed")
	fs.IntVar(&o.count, "count", 100, "number of keys (write, verify; load: at most)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline of the whole subcommand")
	fs.DurationVar(&o.converge, "converge", 0, "verify, counter: read a stale key again for up to this long (0: never)")
	_ = fs.Parse(os.Args[2:])
	if err := o.validate(op); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	rdb := newClient(o.addr)
	defer rdb.Close()

	start := time.Now()
	res := result{Op: op}
	var err error
	switch op {
	case "write":
		res.Keys, err = write(ctx, rdb, o)
	case "verify":
		var st staleness
		res.Keys, st, err = verify(ctx, rdb, o)
		res.StaleReads, res.ConvergedSeconds = st.reads, st.converged.Seconds()
	case "txn":
		res.Checks, err = txn(ctx, rdb, newClient(o.addr), o)
	case "load":
		var st loadStats
		res.Keys, st, err = load(ctx, rdb, o)
		res.MaxGapSeconds, res.GapStartSeconds = st.MaxGap.Seconds(), st.GapStart.Seconds()
		res.Failures, res.FirstFailure = st.Failures, st.Sample
	case "stop":
		err = stop(ctx, rdb, o)
	case "counter":
		var st staleness
		res.Checks, st, err = counter(ctx, o.addr, o)
		res.StaleReads, res.ConvergedSeconds = st.reads, st.converged.Seconds()
	default:
		fmt.Fprintf(os.Stderr, "error: unknown subcommand %q\n", op)
		os.Exit(2)
	}
	res.Seconds = time.Since(start).Seconds()
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	if err != nil {
		os.Exit(1)
	}
}

func (o options) validate(op string) error {
	if o.converge != 0 && op != "verify" && op != "counter" {
		return fmt.Errorf("--converge applies to verify and counter (their read-backs), not %s", op)
	}
	switch {
	case o.addr == "":
		return errors.New("--addr is required")
	case o.run == "":
		return errors.New("--run is required")
	case o.count < 1 || o.count > 1_000_000:
		return fmt.Errorf("--count %d out of range 1..1000000", o.count)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive")
	case o.converge < 0 || o.converge > o.timeout/2:
		return fmt.Errorf("--converge %s out of range 0..half of --timeout (%s)", o.converge, o.timeout)
	}
	return nil
}

func newClient(addr string) *redis.Client { return redis.NewClient(clientOptions(addr)) }

func clientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    10 * time.Second,
		PoolSize:        8,
		MaxRetries:      5, // a connection to a pod that just went away is retried on another
		MinRetryBackoff: 50 * time.Millisecond,
		MaxRetryBackoff: time.Second,
		DisableIdentity: true,
	}
}

func key(o options, i int) string   { return fmt.Sprintf("e2e:%s:%d", o.run, i) }
func value(o options, i int) string { return fmt.Sprintf("v:%s:%d:%x", o.run, i, uint32(i)*2654435761) }

// write SETs every key one command at a time, so each acknowledged SET is a write the server committed.
func write(ctx context.Context, rdb *redis.Client, o options) (int, error) {
	for i := 0; i < o.count; i++ {
		if err := rdb.Set(ctx, key(o, i), value(o, i), 0).Err(); err != nil {
			return i, fmt.Errorf("SET %s: %w", key(o, i), err)
		}
	}
	return o.count, nil
}

// verify GETs every key and reports how many are missing or wrong (and the first few of them). With --converge a
// key that reads stale is read again until it shows its value or the time is up (staleness).
func verify(ctx context.Context, rdb *redis.Client, o options) (int, staleness, error) {
	var st staleness
	pending := make([]int, o.count)
	for i := range pending {
		pending[i] = i
	}
	var start time.Time // the end of the first pass: --converge is the time stale keys get from then on
	for round := 0; ; round++ {
		bad, err := readBack(ctx, rdb, o, pending)
		if err != nil {
			return o.count - len(pending), st, err
		}
		if round == 0 {
			st.reads, start = len(bad), time.Now()
		}
		if len(bad) == 0 {
			if round > 0 {
				st.converged = time.Since(start)
			}
			return o.count, st, nil
		}
		if time.Since(start) >= o.converge {
			sample := []string{}
			for _, m := range bad[:min(5, len(bad))] {
				sample = append(sample, fmt.Sprintf("%s=%q", key(o, m.i), m.got))
			}
			return o.count, st, fmt.Errorf("%d of %d keys missing or wrong (after %s), e.g. %v", len(bad), o.count,
				o.converge, sample)
		}
		pending = pending[:0]
		for _, m := range bad {
			pending = append(pending, m.i)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readBack GETs the keys `which` (pipelined in batches: a round trip per batch, not per key, so 120k keys take
// seconds) and returns those whose reply is not the value written, with what they read.
func readBack(ctx context.Context, rdb *redis.Client, o options, which []int) ([]misread, error) {
	const batch = 200
	var bad []misread
	for first := 0; first < len(which); first += batch {
		part := which[first:min(first+batch, len(which))]
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range part {
				p.Get(ctx, key(o, i))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("GET %s..%s: %w", key(o, part[0]), key(o, part[len(part)-1]), err)
		}
		for j, c := range cmds {
			got, err := c.(*redis.StringCmd).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, fmt.Errorf("GET %s: %w", key(o, part[j]), err)
			}
			if err != nil {
				got = "<missing>"
			}
			if got != value(o, part[j]) {
				bad = append(bad, misread{part[j], got})
			}
		}
	}
	return bad, nil
}

type misread struct {
	i   int // the key's index
	got string
}

// staleness counts the reads that did not show a completed write at first (--converge).
type staleness struct {
	reads     int
	converged time.Duration // from the first read to the one that showed the last of them
}

// txn runs MULTI/EXEC and the WATCH protocol. other is a second client (its own connections, possibly to another
// pod behind the Service) that makes the conflicting write.
func txn(ctx context.Context, rdb, other *redis.Client, o options) ([]string, error) {
	defer other.Close()
	var checks []string
	pass := func(format string, a ...any) { checks = append(checks, fmt.Sprintf(format, a...)) }
	k := func(name string) string { return fmt.Sprintf("e2e:%s:txn:%s", o.run, name) }

	// MULTI/EXEC: every queued command runs, in order, with its own reply.
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k("a"), "1", 0)
		p.Set(ctx, k("b"), "2", 0)
		p.IncrBy(ctx, k("counter"), 5)
		p.Get(ctx, k("a"))
		return nil
	})
	if err != nil {
		return checks, fmt.Errorf("MULTI/EXEC: %w", err)
	}
	if got := cmds[3].(*redis.StringCmd).Val(); got != "1" || cmds[2].(*redis.IntCmd).Val() != 5 {
		return checks, fmt.Errorf("MULTI/EXEC replies: GET a=%q INCRBY counter=%d, want 1 and 5", got, cmds[2].(*redis.IntCmd).Val())
	}
	if vals, err := other.MGet(ctx, k("a"), k("b"), k("counter")).Result(); err != nil || fmt.Sprint(vals) != "[1 2 5]" {
		return checks, fmt.Errorf("after EXEC another client reads %v (err %v), want [1 2 5]", vals, err)
	}
	pass("MULTI/EXEC: SET, SET, INCRBY, GET committed together and visible to another connection")

	// WATCH without a conflict: the transaction commits.
	err = rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, k("counter")).Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, k("counter"), n+1, 0)
			return nil
		})
		return err
	}, k("counter"))
	if err != nil {
		return checks, fmt.Errorf("WATCH without conflict: %w", err)
	}
	if n, err := other.Get(ctx, k("counter")).Int(); err != nil || n != 6 {
		return checks, fmt.Errorf("WATCH without conflict: counter=%d (err %v), want 6", n, err)
	}
	pass("WATCH counter, GET, MULTI SET EXEC without a concurrent write: committed (counter 6)")

	// WATCH with a conflict: another client writes the watched key between WATCH and EXEC, so EXEC aborts.
	err = rdb.Watch(ctx, func(tx *redis.Tx) error {
		if _, err := tx.Get(ctx, k("counter")).Int(); err != nil {
			return err
		}
		if err := other.Set(ctx, k("counter"), 100, 0).Err(); err != nil {
			return fmt.Errorf("conflicting SET: %w", err)
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, k("counter"), 7, 0)
			return nil
		})
		return err
	}, k("counter"))
	if !errors.Is(err, redis.TxFailedErr) {
		return checks, fmt.Errorf("WATCH with a conflicting write: EXEC returned %v, want an aborted transaction (nil reply)", err)
	}
	if n, err := rdb.Get(ctx, k("counter")).Int(); err != nil || n != 100 {
		return checks, fmt.Errorf("after the aborted EXEC counter=%d (err %v), want the conflicting write's 100", n, err)
	}
	pass("WATCH counter, concurrent SET from another connection, EXEC: aborted (nil), counter keeps 100")

	// DISCARD drops the queued commands (sent as raw commands: go-redis discards pipelines client-side).
	conn := rdb.Conn()
	defer conn.Close()
	for _, c := range [][]any{{"MULTI"}, {"SET", k("discarded"), "x"}, {"DISCARD"}} {
		if reply, err := conn.Do(ctx, c...).Text(); err != nil {
			return checks, fmt.Errorf("%v: %w", c, err)
		} else if want := map[bool]string{true: "QUEUED", false: "OK"}[c[0] == "SET"]; reply != want {
			return checks, fmt.Errorf("%v replied %q, want %q", c, reply, want)
		}
	}
	if n, err := other.Exists(ctx, k("discarded")).Result(); err != nil || n != 0 {
		return checks, fmt.Errorf("DISCARD: key exists=%d (err %v), want 0", n, err)
	}
	pass("MULTI SET DISCARD: nothing written")
	return checks, nil
}
