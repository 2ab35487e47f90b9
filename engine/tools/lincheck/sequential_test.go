// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The sequential-reads model (--reads sequential): writes linearizable, a read may return an older state of the key
// than the latest, but none older than what its client has already written or read, and none from a write that had
// not begun when it returned. Each case gives its verdict under both models.
func TestSequentialReads(t *testing.T) {
	for _, tc := range []struct {
		name         string
		seqOK, linOK bool
		lines        []string
	}{
		// (1) A stale read by another client, after a later write completed.
		{"stale read by another client", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"incr","by":1,"out":2,"start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"stale read of the initial absent state", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"get","out":null,"start":2,"end":3}`,
		}},
		{"stale read of a value deleted since (del without a count)", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		// (2) A client reads an older value than its own completed write.
		{"read older than the client's own write", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"read older than the client's own incr", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":2,"end":3}`,
		}},
		{"read of the client's own write while another client wrote since", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":2,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"read older than what a failed setnx saw", false, false, []string{
			`{"client":1,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"setnx","in":"y","out":false,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":4,"end":5}`,
		}},
		{"read older than what a failed cas saw", false, false, []string{
			`{"client":1,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"cas","expect":"z","in":"y","out":false,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":4,"end":5}`,
		}},
		{"read older than the client's own del without a count", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		// (3) One client's reads go backwards.
		{"reads going backwards", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
		}},
		{"stale reads going forwards", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":6,"end":7}`,
		}},
		// A value written twice: a read takes its earliest place in the write order, so a later read may still
		// return what was written in between (but not after it read the second copy).
		{"a value written twice", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"set","in":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":8,"end":9}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":10,"end":11}`,
		}},
		{"a value written twice, then read going backwards", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"set","in":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":8,"end":9}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":10,"end":11}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":12,"end":13}`,
		}},
		// (4) A read returns a value whose write began after the read returned.
		{"read from the future", false, false, []string{
			`{"client":1,"key":"a","op":"get","out":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"x","start":2,"end":3}`,
		}},
		{"read concurrent with the write", true, true, []string{
			`{"client":1,"key":"a","op":"get","out":"x","start":0,"end":2}`,
			`{"client":0,"key":"a","op":"set","in":"x","start":1,"end":3}`,
		}},
		// (5) Read-modify-writes are linearizable: a lost update between two INCRs.
		{"lost update", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":1,"start":2,"end":3}`,
		}},
		{"lost update between concurrent incrs", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":10}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":1,"start":1,"end":9}`,
		}},
		{"getset reading a stale value", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"getset","in":"3","out":"1","start":4,"end":5}`,
		}},
		{"two setnx win", false, false, []string{
			`{"client":0,"key":"a","op":"setnx","in":"x","out":true,"start":0,"end":10}`,
			`{"client":1,"key":"a","op":"setnx","in":"y","out":true,"start":0,"end":10}`,
		}},
		{"read of a value never written", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"get","out":"ghost","start":2,"end":3}`,
		}},
		// (6) A write of unknown outcome moves no floor: the client that sent it may still read the older value,
		// even after another client saw the write applied.
		{"unknown-outcome write moves no floor", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":5,"end":6}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":7,"end":8}`,
		}},
		{"the same write known moves the floor", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":5,"end":6}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":7,"end":8}`,
		}},
		{"unknown-outcome incr seen applied by one client, not by another", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"start":0}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":5,"end":6}`,
			`{"client":2,"key":"a","op":"get","out":null,"start":7,"end":8}`,
		}},
	} {
		ops := history(t, tc.lines...)
		for _, m := range []struct {
			model Consistency
			ok    bool
		}{{SequentialReads, tc.seqOK}, {Linearizable, tc.linOK}} {
			r := Check(ops, m.model, time.Minute)
			if r.Model != m.model.Name || r.OK != m.ok || len(r.Illegal) != map[bool]int{true: 0, false: 1}[m.ok] {
				t.Errorf("%s under %s: %+v, want ok=%t", tc.name, m.model.Name, r, m.ok)
				continue
			}
			if m.ok {
				continue
			}
			html := filepath.Join(t.TempDir(), "v.html")
			if key, _, err := Visualize(ops, m.model, r.Illegal, html); err != nil || key != "a" {
				t.Fatalf("%s under %s: visualize: key %q, %v", tc.name, m.model.Name, key, err)
			}
			b, err := os.ReadFile(html)
			if err != nil || !strings.Contains(string(b), "a get") && !strings.Contains(string(b), "a incr") &&
				!strings.Contains(string(b), "a setnx") {
				t.Errorf("%s under %s: visualization lacks the operations (%v, %d bytes)", tc.name, m.model.Name, err, len(b))
			}
		}
	}
}

// The visualization of the sequential-reads model describes its states: the latest value and, for each client
// whose next call is a get, whether that get could already return what it returned.
func TestSequentialReadsVisualization(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
		`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
	)
	html := filepath.Join(t.TempDir(), "v.html")
	if _, n, err := Visualize(ops, SequentialReads, []string{"a"}, html); err != nil || n != 3 {
		t.Fatalf("visualize: %d operations, %v; want 3", n, err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "c0 waits for") {
		t.Errorf("visualization lacks the clients' reads (%v)", err)
	}
	m := SequentialReads.Model(operations(ops))
	got, want := m.DescribeState(steps(t, m, ops[:2]...)), `"2"; c0 waits for "1"`
	if got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}

func operations(ops []Op) []porcupine.Operation {
	var h []porcupine.Operation
	for i := range ops {
		h = append(h, operation(&ops[i]))
	}
	return h
}

// steps applies the operations to the model's initial state, in order.
func steps(t *testing.T, m porcupine.Model, ops ...Op) any {
	t.Helper()
	s := m.Init()
	for _, op := range ops {
		o := operation(&op)
		ok, next := m.Step(s, o.Input, o.Output)
		if !ok {
			t.Fatalf("%s is illegal in state %s", m.DescribeOperation(o.Input, o.Output), m.DescribeState(s))
		}
		s = next
	}
	return s
}

// Steps never change the state they start from (Porcupine backtracks to it); two write orders are the same state
// when they leave the same latest value and the same reads possible, and Hash agrees with Equal.
func TestSequentialStates(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":1,"key":"a","op":"get","out":"1","start":2,"end":3}`,
		`{"client":2,"key":"a","op":"incr","by":1,"out":2,"start":4,"end":5}`,
		`{"client":1,"key":"a","op":"get","out":"2","start":6,"end":7}`,
		`{"client":1,"key":"a","op":"get","out":"3","start":8,"end":9}`,
	)
	m := SequentialReads.Model(operations(ops))
	s0 := m.Init()
	s1 := steps(t, m, ops[0])
	before := m.DescribeState(s1)
	s2 := steps(t, m, ops[:2]...)
	if _, again := m.Step(s1, operation(&ops[1]).Input, operation(&ops[1]).Output); !m.Equal(again, s2) {
		t.Errorf("the same step twice: %s, %s", m.DescribeState(again), m.DescribeState(s2))
	}
	s3 := steps(t, m, ops[:3]...)
	if m.DescribeState(s1) != before || m.Equal(s1, s2) || m.Equal(s2, s3) || m.Equal(s0, s1) {
		t.Errorf("a step changed its state: %s, then %s", before, m.DescribeState(s1))
	}
	if m.DescribeState(s0) != `absent; c1 waits for "1"` || m.DescribeState(s1) != `"1"; c1 may read "1"` ||
		m.DescribeState(s3) != `"2"; c1 may read "2"` || m.DescribeState(steps(t, m, ops[:4]...)) != `"2"; c1 waits for "3"` {
		t.Errorf("states %s, %s, %s", m.DescribeState(s0), m.DescribeState(s1), m.DescribeState(s3))
	}
	if t3 := steps(t, m, ops[:3]...); !m.Equal(s3, t3) || m.Hash(s3) != m.Hash(t3) {
		t.Errorf("equal states differ: %s (%x), %s (%x)", m.DescribeState(s3), m.Hash(s3), m.DescribeState(t3), m.Hash(t3))
	}
	// Client 1's next reads are "1", "2", "3" (nothing read yet). Writes of unknown outcome by client 0, in two
	// orders: the same state when they leave the same reads possible, whatever else differs; different otherwise.
	sets := func(values ...string) []Op {
		var o []Op
		for i, v := range values {
			o = append(o, Op{Client: 0, Key: "a", Kind: "set", In: &v, Start: int64(100 + i)}) // no end
		}
		return o
	}
	for _, tc := range []struct {
		a, b  []string
		equal bool
	}{
		{[]string{"9", "1", "7"}, []string{"8", "1", "7"}, true},  // "1" readable in both; "2" in neither
		{[]string{"1", "2", "7"}, []string{"2", "1", "7"}, false}, // 1 then 2 readable, or only 1
		{[]string{"1", "2", "3", "7"}, []string{"1", "3", "2", "7"}, false},
		{[]string{"1", "2", "3"}, []string{"1", "1", "2", "3"}, true}, // "1" twice: the first place counts
		{[]string{"2", "7"}, []string{"7"}, true},                     // "2" before "1" is of no use
		{[]string{"7"}, []string{"8"}, false},                         // the latest value differs
	} {
		a, b := steps(t, m, sets(tc.a...)...), steps(t, m, sets(tc.b...)...)
		if m.Equal(a, b) != tc.equal || tc.equal && m.Hash(a) != m.Hash(b) {
			t.Errorf("write orders %v and %v: %s, %s: equal %t, want %t", tc.a, tc.b, m.DescribeState(a),
				m.DescribeState(b), m.Equal(a, b), tc.equal)
		}
	}
}

// Random small histories of three clients, checked by Porcupine and by brute force (every order of the operations that respects
// real time, each operation applied by a plain slice-based statement of the sequential-reads rule, or by the
// linearizable step): the verdicts agree under both models, and sequential reads never refuse what linearizability
// accepts.
func TestSequentialReadsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []string{"1", "2"}
	counts := map[[2]bool]int{}
	for iter := 0; iter < 6000; iter++ {
		n := 2 + rng.IntN(5)
		var lines []string
		var next [3]int // each client's calls one after another (its session); clients run concurrently
		for i := 0; i < n; i++ {
			client := rng.IntN(3)
			start := next[client] + rng.IntN(4)
			next[client] = start + rng.IntN(6)
			end := fmt.Sprintf(`,"end":%d`, next[client])
			next[client]++
			v := values[rng.IntN(2)]
			var body string
			switch k := rng.IntN(10); {
			case k < 4:
				out := "null"
				if rng.IntN(3) > 0 {
					out = `"` + values[rng.IntN(2)] + `"`
				}
				body = `"op":"get","out":` + out
			case k < 6:
				body = `"op":"set","in":"` + v + `"`
			case k < 7:
				body = fmt.Sprintf(`"op":"incr","by":1,"out":%d`, 1+rng.IntN(3))
			case k < 8:
				body = `"op":"del","out":` + fmt.Sprint(rng.IntN(2))
			case k < 9:
				body = `"op":"cas","expect":"` + values[rng.IntN(2)] + `","in":"` + v + `","out":` + fmt.Sprint(rng.IntN(2) == 0)
			default:
				body = `"op":"getset","in":"` + v + `","out":"` + values[rng.IntN(2)] + `"`
			}
			if !strings.Contains(body, `"get"`) && rng.IntN(5) == 0 { // unknown outcome
				if i := strings.Index(body, `,"out":`); i >= 0 {
					body = body[:i]
				}
				end = ""
			}
			lines = append(lines, fmt.Sprintf(`{"client":%d,"key":"a",%s,"start":%d%s}`, client, body, start, end))
		}
		ops := history(t, lines...)
		if err := SequentialReads.Validate(ops); err != nil {
			t.Fatal(err)
		}
		seq, lin := Check(ops, SequentialReads, time.Minute).OK, Check(ops, Linearizable, time.Minute).OK
		if want := bruteForce(ops, refSeqStep, refSeqState{writes: []register{{}}, floors: map[int]int{}}); seq != want {
			t.Fatalf("sequential reads: porcupine %t, brute force %t:\n%s", seq, want, strings.Join(lines, "\n"))
		}
		linStep := func(s any, c call, out Output) (bool, any) { return step(s, c, out) }
		if want := bruteForce(ops, linStep, register{}); lin != want {
			t.Fatalf("linearizability: porcupine %t, brute force %t:\n%s", lin, want, strings.Join(lines, "\n"))
		}
		if lin && !seq {
			t.Fatalf("linearizable but not sequential:\n%s", strings.Join(lines, "\n"))
		}
		counts[[2]bool{seq, lin}]++
	}
	if counts[[2]bool{true, false}] == 0 || counts[[2]bool{true, true}] == 0 || counts[[2]bool{false, false}] == 0 {
		t.Errorf("the random histories do not cover the verdicts: %v", counts)
	}
	t.Logf("verdicts [sequential linearizable]: %v", counts)
}

// refSeqState is the sequential-reads rule as the README states it, on a plain slice, copied at every step.
type refSeqState struct {
	writes []register
	floors map[int]int
}

func refSeqStep(state any, c call, out Output) (bool, any) {
	s := state.(refSeqState)
	next := refSeqState{writes: append([]register(nil), s.writes...), floors: map[int]int{}}
	for k, v := range s.floors {
		next.floors[k] = v
	}
	if c.In.Kind == "get" {
		if !out.Known {
			return true, next
		}
		for i := s.floors[c.Client]; i < len(s.writes); i++ {
			if sameValue(s.writes[i], out.Value) {
				next.floors[c.Client] = i
				return true, next
			}
		}
		return false, nil
	}
	ok, r := step(s.writes[len(s.writes)-1], c, out)
	if !ok {
		return false, nil
	}
	if r != s.writes[len(s.writes)-1] {
		next.writes = append(next.writes, r.(register))
	}
	if c.Done {
		next.floors[c.Client] = len(next.writes) - 1
	}
	return true, next
}

// bruteForce tries every order of ops that respects real time (an operation that returned before another began
// comes first; one of unknown outcome never returned).
func bruteForce(ops []Op, stepf func(any, call, Output) (bool, any), init any) bool {
	used := make([]bool, len(ops))
	var try func(state any, left int) bool
	try = func(state any, left int) bool {
		if left == 0 {
			return true
		}
		for i := range ops {
			if used[i] {
				continue
			}
			blocked := false // some unused operation returned before this one began
			for j := range ops {
				if !used[j] && j != i && ops[j].ReturnTime() < ops[i].Start {
					blocked = true
					break
				}
			}
			if blocked {
				continue
			}
			op := operation(&ops[i])
			if ok, next := stepf(state, op.Input.(call), op.Output.(Output)); ok {
				used[i] = true
				if try(next, left-1) {
					return true
				}
				used[i] = false
			}
		}
		return false
	}
	return try(init, len(ops))
}

// With sequential reads, a key whose history is linearizable is accepted by that check first (the common case, and
// fast where the sequential-reads search is slow: a client stalled across thousands of writes); a key with a stale
// read is then searched with the sequential-reads model.
func TestSequentialReadsTriesLinearizabilityFirst(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":1,"key":"a","op":"get","out":"1","start":2,"end":3}`,
		`{"client":0,"key":"b","op":"set","in":"1","start":0,"end":1}`,
		`{"client":0,"key":"b","op":"set","in":"2","start":2,"end":3}`,
		`{"client":1,"key":"b","op":"get","out":"1","start":4,"end":5}`, // stale
	)
	r := Check(ops, SequentialReads, 10*time.Second)
	if !r.OK || r.Keys != 2 || r.AcceptedByStronger == nil || *r.AcceptedByStronger != 1 {
		t.Fatalf("report %+v: want ok, key a accepted as linearizable and b by the sequential-reads search", r)
	}
	if r := Check(ops, Linearizable, 10*time.Second); r.OK || r.AcceptedByStronger != nil {
		t.Fatalf("report %+v: want key b illegal, and no count of keys a stronger model accepted", r)
	}
}

// A history like a paused follower's (zab, a member stopped for 1.5 s): one client's get stays in flight across
// thousands of concurrent writes of few values, another client reads a stale value (so the key is not
// linearizable and the sequential-reads search runs). The search decides it: legal as recorded, illegal once that
// client had written after the value it reads. With the write order in the state, such a history of 9397
// operations was undecided after minutes.
func TestSequentialReadsDecidesAHistoryWithAStalledClient(t *testing.T) {
	for _, illegal := range []bool{false, true} {
		ops := stalledClientHistory(rand.New(rand.NewPCG(7, 8)), illegal)
		r := Check(ops, SequentialReads, 20*time.Second)
		if r.OK == illegal || len(r.Undecided) != 0 || *r.AcceptedByStronger != 0 {
			t.Errorf("%d operations, the stale reader wrote first: %t: %+v", len(ops), illegal, r)
		}
		t.Logf("%d operations, illegal %t: decided in %.2f s", len(ops), illegal, r.Seconds)
	}
}

// stalledClientHistory simulates one key: clients 0-5 get, set, getset and del (three values), each call taking
// effect at a random point of its interval; client 6's get spans nearly the whole run, and
// client 7 reads, near the end, the unique value "m" written halfway (after writing "w" itself, if illegal).
func stalledClientHistory(rng *rand.Rand, illegal bool) []Op {
	type placed struct {
		op    Op
		point int64
	}
	var calls []placed
	add := func(client int, kind, value string, start, end int64) {
		op := Op{Client: client, Key: "a", Kind: kind, Start: start, End: &end}
		if kind == "set" || kind == "getset" {
			op.In = &value
		}
		calls = append(calls, placed{op, start + rng.Int64N(end-start+1)})
	}
	const rounds = 900
	for c := 0; c < 6; c++ {
		at := int64(100)
		for i := 0; i < rounds; i++ {
			start := at + rng.Int64N(5)
			end := start + 5 + rng.Int64N(20)
			at = end + 1
			kind, value := []string{"get", "set", "getset", "del"}[rng.IntN(4)], fmt.Sprint(1+rng.IntN(3))
			if c == 0 && i == rounds/2 {
				kind, value = "set", "m"
			}
			add(c, kind, value, start, end)
		}
	}
	var middle int64
	for _, c := range calls {
		if c.op.In != nil && *c.op.In == "m" {
			middle = *c.op.End
		}
	}
	add(6, "get", "", 110, 13000)
	if illegal {
		add(7, "set", "w", middle+10, middle+20)
	}
	add(7, "get", "", 13010, 13020)
	calls[len(calls)-1].point = middle + 1 // it reads "m": stale
	sort.Slice(calls, func(i, j int) bool { return calls[i].point < calls[j].point })
	var reg register
	ops := make([]Op, 0, len(calls))
	for _, c := range calls {
		op := c.op
		out := func(v any) { op.Out, _ = json.Marshal(v) }
		read := func() any {
			if reg.present {
				return reg.value
			}
			return nil
		}
		switch op.Kind {
		case "get":
			if op.Client == 7 {
				out("m")
			} else {
				out(read())
			}
		case "getset":
			out(read())
			reg = register{true, *op.In}
		case "set":
			reg = register{true, *op.In}
		case "del":
			out(map[bool]int{true: 1, false: 0}[reg.present])
			reg = register{}
		}
		ops = append(ops, op)
	}
	return ops
}

// The model needs sessions: a history where one client's calls overlap on a key is refused with the client and
// the two calls (linearizability does not care); a call without an end may overlap the client's later ones.
func TestSequentialReadsRefusesOverlappingCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	for _, tc := range []struct {
		lines []string
		code  int
		err   string
	}{
		{[]string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":5}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":3,"end":8}`,
		}, 2, `client 0's calls on key "a" overlap (set at 0..5, get at 3..8)`},
		{[]string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":3,"end":8}`,
			`{"client":0,"key":"b","op":"get","out":null,"start":4,"end":6}`,
		}, 0, ""},
	} {
		if err := os.WriteFile(path, []byte(HistoryHeader+"\n"+strings.Join(tc.lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		if code := run([]string{"--reads", "sequential", path}, &stdout, &stderr); code != tc.code ||
			!strings.Contains(stderr.String(), tc.err) || (tc.code == 2) != (stdout.Len() == 0) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.lines, code, stdout.String(),
				stderr.String(), tc.code, tc.err)
		}
		if code := run([]string{path}, &stdout, &stderr); code != 0 {
			t.Errorf("%v: linearizability: exit %d, want 0", tc.lines, code)
		}
	}
}
